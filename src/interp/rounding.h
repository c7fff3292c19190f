// Rounding a wide value (double or int64) to a dtype: the single step every
// op ends with (docs/semantics.md, "Rounding").
#pragma once

#include <cstdint>
#include <type_traits>

#include "stitch/dtype.h"
#include "stitch/error.h"

namespace stitch::interp {

// The value `v` takes in `dtype` (a float dtype): round to nearest even.
double round_to_float_dtype(double v, DType dtype);
// The value `v` takes in `dtype` (an integer or bool dtype): two's-complement
// wrap to the width, or 0/1 for bool.
int64_t wrap_to_int_dtype(int64_t v, DType dtype);

// One functor type per dtype, so loops can round inside their body without a
// per-element switch.
struct KeepValue {
  template <class T> T operator()(T v) const { return v; }
};
struct RoundToF32 {
  double operator()(double v) const { return static_cast<float>(v); }
};
struct RoundToHalfFloat {  // f16 or bf16
  DType dtype;
  double operator()(double v) const { return round_to_float_dtype(v, dtype); }
};
struct WrapToI8 {
  int64_t operator()(int64_t v) const { return static_cast<int8_t>(v); }
};
struct WrapToI32 {
  int64_t operator()(int64_t v) const { return static_cast<int32_t>(v); }
};
struct ToBool {
  int64_t operator()(int64_t v) const { return v != 0; }
};

// Calls body(rounder) with the functor that rounds storage type T (double or
// int64_t) to `dtype`.
template <class T, class Body>
void with_rounding(DType dtype, Body&& body) {
  if constexpr (std::is_same_v<T, double>) {
    switch (dtype) {
      case DType::f64: return body(KeepValue{});
      case DType::f32: return body(RoundToF32{});
      case DType::f16:
      case DType::bf16: return body(RoundToHalfFloat{dtype});
      default: break;
    }
  } else {
    switch (dtype) {
      case DType::i64: return body(KeepValue{});
      case DType::i32: return body(WrapToI32{});
      case DType::i8: return body(WrapToI8{});
      case DType::boolean: return body(ToBool{});
      default: break;
    }
  }
  STITCH_ASSERT(false, "with_rounding: storage type does not match the dtype");
}

}  // namespace stitch::interp
