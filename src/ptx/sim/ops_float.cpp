// Floating-point arithmetic (docs/ptx-interpreter.md, Rounding and
// Approximate functions): f32 and f64 under .rn/.rz/.rm/.rp, .ftz and .sat,
// fma with a single rounding, min/max with PTX's NaN rules, and the
// approximate functions modelled by float.cpp.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "ptx/sim/decode.h"
#include "ptx/sim/exec.h"
#include "ptx/sim/float.h"

namespace stitch::ptx::sim {

namespace {

template <class T>
T flush_if(T v, bool ftz) {
  if constexpr (std::is_same_v<T, float>) {
    return ftz ? flush(v) : v;
  } else {
    return v;
  }
}

template <class T>
T finish(T r, uint8_t flags) {
  r = flush_if(r, (flags & kFlagFtz) != 0);
  return (flags & kFlagSat) ? saturate(r) : r;
}

template <class T, class Op>
void float_unary(Exec& x, const DInst& in, uint32_t mask) {
  const auto a = x.src(in.ops[1], 1);
  uint64_t* d = x.dst(in.ops[0], 0);
  const bool ftz = (in.flags & kFlagFtz) != 0;
  const Rounding m = static_cast<Rounding>(in.mode);
  for_lanes(mask, [&](unsigned l) { d[l] = bits(finish(Op::apply(flush_if(as<T>(a[l]), ftz), m), in.flags)); });
}

template <class T, class Op>
void float_binary(Exec& x, const DInst& in, uint32_t mask) {
  const auto a = x.src(in.ops[1], 1);
  const auto b = x.src(in.ops[2], 2);
  uint64_t* d = x.dst(in.ops[0], 0);
  const bool ftz = (in.flags & kFlagFtz) != 0;
  const Rounding m = static_cast<Rounding>(in.mode);
  for_lanes(mask, [&](unsigned l) {
    d[l] = bits(finish(Op::apply(flush_if(as<T>(a[l]), ftz), flush_if(as<T>(b[l]), ftz), m), in.flags));
  });
}

template <class T>
void float_fma(Exec& x, const DInst& in, uint32_t mask) {
  const auto a = x.src(in.ops[1], 1);
  const auto b = x.src(in.ops[2], 2);
  const auto c = x.src(in.ops[3], 3);
  uint64_t* d = x.dst(in.ops[0], 0);
  const bool ftz = (in.flags & kFlagFtz) != 0;
  const Rounding m = static_cast<Rounding>(in.mode);
  for_lanes(mask, [&](unsigned l) {
    const T va = flush_if(as<T>(a[l]), ftz), vb = flush_if(as<T>(b[l]), ftz), vc = flush_if(as<T>(c[l]), ftz);
    T r;
    if constexpr (std::is_same_v<T, float>) {
      r = m == Rounding::Nearest ? std::fma(va, vb, vc) : f32_fma(va, vb, vc, m);
    } else {
      r = f64_fma(va, vb, vc, m);
    }
    d[l] = bits(finish(r, in.flags));
  });
}

struct Add {
  static float apply(float a, float b, Rounding m) { return m == Rounding::Nearest ? a + b : f32_add(a, b, m); }
  static double apply(double a, double b, Rounding m) { return f64_add(a, b, m); }
};
struct Sub {
  static float apply(float a, float b, Rounding m) { return m == Rounding::Nearest ? a - b : f32_add(a, -b, m); }
  static double apply(double a, double b, Rounding m) { return f64_add(a, -b, m); }
};
struct Mul {
  static float apply(float a, float b, Rounding m) { return m == Rounding::Nearest ? a * b : f32_mul(a, b, m); }
  static double apply(double a, double b, Rounding m) { return f64_mul(a, b, m); }
};
// The IEEE quotient; div.approx and div.full too (their stated error bounds
// of 2 ulp contain the correctly rounded result).
struct Div {
  static float apply(float a, float b, Rounding m) { return f32_div(a, b, m); }
  static double apply(double a, double b, Rounding m) { return f64_div(a, b, m); }
};
// min/max: a NaN operand yields the other; -0 is below +0.
template <bool kMax>
struct MinMax {
  template <class T>
  static T apply(T a, T b, Rounding) {
    if (std::isnan(a)) return std::isnan(b) ? std::numeric_limits<T>::quiet_NaN() : b;
    if (std::isnan(b)) return a;
    if (a == b) return (std::signbit(a) == kMax) ? b : a;
    return (a > b) == kMax ? a : b;
  }
};
struct CopySign {
  template <class T>
  static T apply(T a, T b, Rounding) { return std::copysign(b, a); }
};
struct Neg { template <class T> static T apply(T a, Rounding) { return -a; } };
struct Abs { template <class T> static T apply(T a, Rounding) { return std::fabs(a); } };
struct Sqrt {
  static float apply(float a, Rounding m) { return f32_sqrt(a, m); }
  static double apply(double a, Rounding m) { return f64_sqrt(a, m); }
};
struct Rcp {
  static float apply(float a, Rounding m) { return f32_div(1.0f, a, m); }
  static double apply(double a, Rounding m) { return f64_div(1.0, a, m); }
};
struct RcpApprox { template <class T> static T apply(T a, Rounding) { return approx_rcp(a); } };
struct RsqrtApprox { template <class T> static T apply(T a, Rounding) { return approx_rsqrt(a); } };
struct SqrtApprox { static float apply(float a, Rounding) { return approx_sqrt(a); } };
struct Ex2 { static float apply(float a, Rounding) { return approx_ex2(a); } };
struct Lg2 { static float apply(float a, Rounding) { return approx_lg2(a); } };
struct Sin { static float apply(float a, Rounding) { return approx_sin(a); } };
struct Cos { static float apply(float a, Rounding) { return approx_cos(a); } };
struct Tanh { static float apply(float a, Rounding) { return approx_tanh(a); } };

template <class T>
void testp(Exec& x, const DInst& in, uint32_t mask) {
  const auto a = x.src(in.ops[1], 1);
  uint32_t result = 0;
  for_lanes(mask, [&](unsigned l) {
    const T v = as<T>(a[l]);
    bool r = false;
    switch (in.mode) {
      case 0: r = std::isfinite(v); break;
      case 1: r = std::isinf(v); break;
      case 2: r = !std::isnan(v); break;
      case 3: r = std::isnan(v); break;
      case 4: r = std::fpclassify(v) == FP_NORMAL; break;
      default: r = std::fpclassify(v) == FP_SUBNORMAL; break;
    }
    if (r) result |= 1u << l;
  });
  x.set_pred(in.ops[0], result, mask);
}

template <class Op>
Handler pick_unary(Type t) {
  if (t == Type::F32) return &float_unary<float, Op>;
  if constexpr (requires { Op::apply(1.0, Rounding::Nearest); }) {
    if (t == Type::F64) return &float_unary<double, Op>;
  }
  return nullptr;
}

template <class Op>
Handler pick_binary(Type t) {
  if (t == Type::F32) return &float_binary<float, Op>;
  if (t == Type::F64) return &float_binary<double, Op>;
  return nullptr;
}

}  // namespace

bool decode_float(const Instruction& in, Mods& mods, OperandDecoder& d, DInst& out) {
  const std::string& op = in.opcode;
  static const char* const kOps[] = {"add", "sub", "mul", "fma", "mad", "div", "abs", "neg", "min", "max",
                                     "sqrt", "rcp", "rsqrt", "ex2", "lg2", "sin", "cos", "tanh", "copysign", "testp"};
  bool known = false;
  for (const char* k : kOps) known = known || op == k;
  if (!known) return false;
  const std::optional<Rounding> rounding = mods.take_rounding();
  const bool ftz = mods.take("ftz");
  const bool sat = mods.take("sat");
  const bool approx = mods.take("approx");
  const bool full = mods.take("full");
  if (op == "testp") {
    const int kind = mods.take_one({"finite", "infinite", "number", "notanumber", "normal", "subnormal"});
    if (kind < 0) d.fail("needs a test (.finite, .infinite, .number, .notanumber, .normal, .subnormal)");
    const Type t = single_type(mods, d, in);
    expect_operands(in, 2, d);
    out.ops[0] = d.pred(in.operands[0]);
    out.ops[1] = d.value(in.operands[1], t);
    out.mode = static_cast<uint8_t>(kind);
    out.fn = t == Type::F32 ? &testp<float> : t == Type::F64 ? &testp<double> : nullptr;
    if (out.fn == nullptr) d.fail("needs .f32 or .f64");
    return true;
  }
  const Type t = single_type(mods, d, in);
  if (t != Type::F32 && t != Type::F64) {
    d.fail(fmt::format("{} arithmetic is not supported by the PTX interpreter (only f32 and f64)", type_name(t)));
  }
  // rcp.approx.ftz.f64 and rsqrt.approx.ftz.f64 exist; f64 subnormals are then kept (flushing them is not modelled).
  if (ftz && t != Type::F32 && !approx) d.fail(".ftz applies to .f32 only");
  out.mode = static_cast<uint8_t>(rounding.value_or(Rounding::Nearest));
  out.flags = static_cast<uint8_t>((ftz && t == Type::F32 ? kFlagFtz : 0) | (sat ? kFlagSat : 0));
  const bool ternary = op == "fma" || op == "mad";
  const bool unary = op == "abs" || op == "neg" || op == "sqrt" || op == "rcp" || op == "rsqrt" || op == "ex2" ||
                     op == "lg2" || op == "sin" || op == "cos" || op == "tanh";
  const int sources = ternary ? 3 : unary ? 1 : 2;
  expect_operands(in, static_cast<size_t>(sources + 1), d);
  out.ops[0] = d.dest(in.operands[0]);
  for (int i = 1; i <= sources; ++i) out.ops[i] = d.value(in.operands[i], t);
  auto need_rounding = [&] {
    if (!rounding) d.fail("needs a rounding modifier (.rn, .rz, .rm or .rp)");
  };
  auto only_f32 = [&] {
    if (t != Type::F32) d.fail("supported for .f32 only");
  };
  if (ternary) {
    if (t == Type::F64 || op == "fma") need_rounding();
    out.fn = t == Type::F32 ? &float_fma<float> : &float_fma<double>;
  } else if (op == "add") {
    out.fn = pick_binary<Add>(t);
  } else if (op == "sub") {
    out.fn = pick_binary<Sub>(t);
  } else if (op == "mul") {
    out.fn = pick_binary<Mul>(t);
  } else if (op == "div") {
    if (!approx && !full) need_rounding();
    out.fn = pick_binary<Div>(t);
  } else if (op == "min") {
    out.fn = pick_binary<MinMax<false>>(t);
  } else if (op == "max") {
    out.fn = pick_binary<MinMax<true>>(t);
  } else if (op == "copysign") {
    out.fn = pick_binary<CopySign>(t);
  } else if (op == "abs") {
    out.fn = pick_unary<Abs>(t);
  } else if (op == "neg") {
    out.fn = pick_unary<Neg>(t);
  } else if (op == "sqrt") {
    if (approx) {
      only_f32();
      out.fn = pick_unary<SqrtApprox>(t);
    } else {
      need_rounding();
      out.fn = pick_unary<Sqrt>(t);
    }
  } else if (op == "rcp") {
    if (approx) {
      out.fn = pick_unary<RcpApprox>(t);
    } else {
      need_rounding();
      out.fn = pick_unary<Rcp>(t);
    }
  } else if (op == "rsqrt") {
    if (!approx) d.fail("needs .approx");
    out.fn = pick_unary<RsqrtApprox>(t);
  } else {
    if (!approx) d.fail("needs .approx");
    only_f32();
    out.fn = op == "ex2" ? pick_unary<Ex2>(t) : op == "lg2" ? pick_unary<Lg2>(t) : op == "sin" ? pick_unary<Sin>(t)
             : op == "cos" ? pick_unary<Cos>(t) : pick_unary<Tanh>(t);
  }
  if (out.fn == nullptr) d.fail("unsupported type");
  return true;
}

}  // namespace stitch::ptx::sim
