// Unary, binary, select and clamp: the op is chosen once per node, then a
// typed loop applies its scalar semantics (scalar_semantics.h) to every element.
#include <fmt/format.h>

#include <cmath>
#include <cstdint>

#include "interp/op_evaluators.h"
#include "interp/scalar_semantics.h"
#include "interp/strided_loop.h"

namespace stitch::interp {

namespace {

// Each loop rounds inside its body (with_rounding picks the functor once),
// so a result is written once instead of written and then rounded in a second pass.
template <class In, class Out, class F>
WideBuffer map_unary(const OpCall& call, F f) {
  WideBuffer out = call.make_output();
  const In* x = call.in(0).data<In>();
  Out* y = out.data<Out>();
  const int64_t n = out.numel();
  with_rounding<Out>(out.dtype(), [&](auto round) {
    for (int64_t i = 0; i < n; ++i) y[i] = round(f(x[i]));
  });
  return out;
}

template <class In, class Out, class F>
WideBuffer map_binary(const OpCall& call, F f) {
  WideBuffer out = call.make_output();
  const WideBuffer& a = call.in(0);
  const WideBuffer& b = call.in(1);
  const In* pa = a.data<In>();
  const In* pb = b.data<In>();
  Out* y = out.data<Out>();
  const std::vector<int64_t>& shape = out.shape();
  with_rounding<Out>(out.dtype(), [&](auto round) {
    if (a.shape() == shape && b.shape() == shape) {
      const int64_t n = out.numel();
      for (int64_t i = 0; i < n; ++i) y[i] = round(f(pa[i], pb[i]));
      return;
    }
    for_each_strided<3>(shape,
                        {contiguous_strides(shape), broadcast_strides(a.shape(), shape),
                         broadcast_strides(b.shape(), shape)},
                        {0, 0, 0}, [&](const Offsets<3>& o) { y[o[0]] = round(f(pa[o[1]], pb[o[2]])); });
  });
  return out;
}

// Operand 0 has storage In0; operands 1 and 2 have storage T, as the result does.
template <class In0, class T, class F>
WideBuffer map_ternary(const OpCall& call, F f) {
  WideBuffer out = call.make_output();
  const In0* p0 = call.in(0).data<In0>();
  const T* p1 = call.in(1).data<T>();
  const T* p2 = call.in(2).data<T>();
  T* y = out.data<T>();
  const std::vector<int64_t>& shape = out.shape();
  with_rounding<T>(out.dtype(), [&](auto round) {
    for_each_strided<4>(shape,
                        {contiguous_strides(shape), broadcast_strides(call.in(0).shape(), shape),
                         broadcast_strides(call.in(1).shape(), shape), broadcast_strides(call.in(2).shape(), shape)},
                        {0, 0, 0, 0}, [&](const Offsets<4>& o) { y[o[0]] = round(f(p0[o[1]], p1[o[2]], p2[o[3]])); });
  });
  return out;
}

[[noreturn]] void unhandled(const OpCall& call, const char* what) {
  STITCH_ASSERT(false, fmt::format("interpreter: {} {} on {} is not handled", what, op_name(call.op()),
                                   dtype_name(call.in(0).dtype())));
}

WideBuffer float_unary(const OpCall& call) {
  using D = double;
  switch (call.op()) {
    case OpKind::Neg: return map_unary<D, D>(call, [](D x) { return -x; });
    case OpKind::Abs: return map_unary<D, D>(call, [](D x) { return std::fabs(x); });
    case OpKind::Exp: return map_unary<D, D>(call, [](D x) { return std::exp(x); });
    case OpKind::Exp2: return map_unary<D, D>(call, [](D x) { return std::exp2(x); });
    case OpKind::Log: return map_unary<D, D>(call, [](D x) { return std::log(x); });
    case OpKind::Log2: return map_unary<D, D>(call, [](D x) { return std::log2(x); });
    case OpKind::Log1p: return map_unary<D, D>(call, [](D x) { return std::log1p(x); });
    case OpKind::Expm1: return map_unary<D, D>(call, [](D x) { return std::expm1(x); });
    case OpKind::Sqrt: return map_unary<D, D>(call, [](D x) { return std::sqrt(x); });
    case OpKind::Rsqrt: return map_unary<D, D>(call, scalar::rsqrt);
    case OpKind::Reciprocal: return map_unary<D, D>(call, [](D x) { return 1.0 / x; });
    case OpKind::Sin: return map_unary<D, D>(call, [](D x) { return std::sin(x); });
    case OpKind::Cos: return map_unary<D, D>(call, [](D x) { return std::cos(x); });
    case OpKind::Tan: return map_unary<D, D>(call, [](D x) { return std::tan(x); });
    case OpKind::Tanh: return map_unary<D, D>(call, [](D x) { return std::tanh(x); });
    case OpKind::Sigmoid: return map_unary<D, D>(call, scalar::sigmoid);
    case OpKind::Erf: return map_unary<D, D>(call, [](D x) { return std::erf(x); });
    case OpKind::Relu: return map_unary<D, D>(call, scalar::relu);
    case OpKind::Floor: return map_unary<D, D>(call, [](D x) { return std::floor(x); });
    case OpKind::Ceil: return map_unary<D, D>(call, [](D x) { return std::ceil(x); });
    case OpKind::Round: return map_unary<D, D>(call, scalar::round_half_even);
    case OpKind::Sign: return map_unary<D, D>(call, scalar::sign);
    case OpKind::IsNan: return map_unary<D, int64_t>(call, [](D x) -> int64_t { return std::isnan(x); });
    case OpKind::IsInf: return map_unary<D, int64_t>(call, [](D x) -> int64_t { return std::isinf(x); });
    default: unhandled(call, "unary");
  }
}

WideBuffer int_unary(const OpCall& call) {
  using I = int64_t;
  const bool is_bool_operand = is_bool(call.in(0).dtype());
  switch (call.op()) {
    case OpKind::Neg: return map_unary<I, I>(call, scalar::wrapping_neg);
    case OpKind::Abs: return map_unary<I, I>(call, scalar::wrapping_abs);
    case OpKind::Sign: return map_unary<I, I>(call, scalar::int_sign);
    case OpKind::Relu: return map_unary<I, I>(call, scalar::int_relu);
    case OpKind::Not:
      if (is_bool_operand) return map_unary<I, I>(call, [](I x) -> I { return x == 0; });
      return map_unary<I, I>(call, [](I x) { return ~x; });
    case OpKind::IsNan:
    case OpKind::IsInf: return map_unary<I, I>(call, [](I) -> I { return 0; });
    default: unhandled(call, "unary");
  }
}

WideBuffer float_binary(const OpCall& call) {
  using D = double;
  using I = int64_t;
  switch (call.op()) {
    case OpKind::Add: return map_binary<D, D>(call, [](D a, D b) { return a + b; });
    case OpKind::Sub: return map_binary<D, D>(call, [](D a, D b) { return a - b; });
    case OpKind::Mul: return map_binary<D, D>(call, [](D a, D b) { return a * b; });
    case OpKind::Div: return map_binary<D, D>(call, [](D a, D b) { return a / b; });
    case OpKind::Rem: return map_binary<D, D>(call, [](D a, D b) { return std::fmod(a, b); });
    case OpKind::Pow: return map_binary<D, D>(call, [](D a, D b) { return std::pow(a, b); });
    case OpKind::Max: return map_binary<D, D>(call, scalar::maximum);
    case OpKind::Min: return map_binary<D, D>(call, scalar::minimum);
    case OpKind::Atan2: return map_binary<D, D>(call, [](D a, D b) { return std::atan2(a, b); });
    case OpKind::Eq: return map_binary<D, I>(call, [](D a, D b) -> I { return a == b; });
    case OpKind::Ne: return map_binary<D, I>(call, [](D a, D b) -> I { return a != b; });
    case OpKind::Lt: return map_binary<D, I>(call, [](D a, D b) -> I { return a < b; });
    case OpKind::Le: return map_binary<D, I>(call, [](D a, D b) -> I { return a <= b; });
    case OpKind::Gt: return map_binary<D, I>(call, [](D a, D b) -> I { return a > b; });
    case OpKind::Ge: return map_binary<D, I>(call, [](D a, D b) -> I { return a >= b; });
    default: unhandled(call, "binary");
  }
}

// Integers and bools; bools are 0/1, so the bitwise ops are the logical ones.
WideBuffer int_binary(const OpCall& call) {
  using I = int64_t;
  switch (call.op()) {
    case OpKind::Add: return map_binary<I, I>(call, scalar::wrapping_add);
    case OpKind::Sub: return map_binary<I, I>(call, scalar::wrapping_sub);
    case OpKind::Mul: return map_binary<I, I>(call, scalar::wrapping_mul);
    case OpKind::Div: return map_binary<I, I>(call, scalar::int_div);
    case OpKind::Rem: return map_binary<I, I>(call, scalar::int_rem);
    case OpKind::Pow: return map_binary<I, I>(call, scalar::int_pow);
    case OpKind::Max: return map_binary<I, I>(call, [](I a, I b) { return a >= b ? a : b; });
    case OpKind::Min: return map_binary<I, I>(call, [](I a, I b) { return a <= b ? a : b; });
    case OpKind::And: return map_binary<I, I>(call, [](I a, I b) { return a & b; });
    case OpKind::Or: return map_binary<I, I>(call, [](I a, I b) { return a | b; });
    case OpKind::Xor: return map_binary<I, I>(call, [](I a, I b) { return a ^ b; });
    case OpKind::Eq: return map_binary<I, I>(call, [](I a, I b) -> I { return a == b; });
    case OpKind::Ne: return map_binary<I, I>(call, [](I a, I b) -> I { return a != b; });
    case OpKind::Lt: return map_binary<I, I>(call, [](I a, I b) -> I { return a < b; });
    case OpKind::Le: return map_binary<I, I>(call, [](I a, I b) -> I { return a <= b; });
    case OpKind::Gt: return map_binary<I, I>(call, [](I a, I b) -> I { return a > b; });
    case OpKind::Ge: return map_binary<I, I>(call, [](I a, I b) -> I { return a >= b; });
    default: unhandled(call, "binary");
  }
}

}  // namespace

WideBuffer evaluate_unary(const OpCall& call) {
  return call.in(0).holds_floats() ? float_unary(call) : int_unary(call);
}

WideBuffer evaluate_binary(const OpCall& call) {
  return call.in(0).holds_floats() ? float_binary(call) : int_binary(call);
}

WideBuffer evaluate_select_clamp(const OpCall& call) {
  using D = double;
  using I = int64_t;
  if (call.op() == OpKind::Select) {
    return with_storage_type(call.out_dtype, [&]<class T>() {
      return map_ternary<I, T>(call, [](I c, T a, T b) { return c != 0 ? a : b; });
    });
  }
  STITCH_ASSERT(call.op() == OpKind::Clamp, "evaluate_select_clamp: not select or clamp");
  if (call.in(0).holds_floats()) return map_ternary<D, D>(call, scalar::clamp);
  return map_ternary<I, I>(call, scalar::int_clamp);
}

}  // namespace stitch::interp
