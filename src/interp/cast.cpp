// cast(x, to=dtype) between any two dtypes (docs/semantics.md, "Casts").
#include "interp/op_evaluators.h"

#include <cstdint>
#include "interp/scalar_semantics.h"

namespace stitch::interp {

namespace {

template <class In, class Out, class F>
void convert_each(const WideBuffer& in, WideBuffer& out, F f) {
  const In* x = in.data<In>();
  Out* y = out.data<Out>();
  const int64_t n = out.numel();
  for (int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
}

// Each integer once correctly rounded to the float dtype `to`.
void int_to_float(const WideBuffer& in, WideBuffer& out) {
  switch (out.dtype()) {
    case DType::f64:
      convert_each<int64_t, double>(in, out, [](int64_t v) { return static_cast<double>(v); });
      return;
    case DType::f32:
      convert_each<int64_t, double>(in, out, [](int64_t v) { return double{static_cast<float>(v)}; });
      return;
    default: {
      const DType to = out.dtype();
      convert_each<int64_t, double>(in, out, [to](int64_t v) {
        return round_to_float_dtype(scalar::int_to_double_round_to_odd(v), to);
      });
      return;
    }
  }
}

}  // namespace

WideBuffer evaluate_cast(const OpCall& call) {
  const WideBuffer& in = call.in(0);
  WideBuffer out = call.make_output();
  const DType from = in.dtype();
  const DType to = out.dtype();
  if (is_float(from) && is_float(to)) {
    convert_each<double, double>(in, out, [](double v) { return v; });
  } else if (is_float(from) && is_bool(to)) {
    // NaN != 0, so NaN casts to true, as in C and numpy.
    convert_each<double, int64_t>(in, out, [](double v) -> int64_t { return v != 0.0; });
  } else if (is_float(from)) {
    convert_each<double, int64_t>(in, out, [to](double v) { return scalar::float_to_int_saturating(v, to); });
  } else if (is_float(to)) {
    int_to_float(in, out);
  } else {
    convert_each<int64_t, int64_t>(in, out, [](int64_t v) { return v; });
  }
  round_to_dtype(out);
  return out;
}

}  // namespace stitch::interp
