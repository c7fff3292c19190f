#include "interp/rounding.h"

#include <cstdint>

#include "stitch/tensor.h"

namespace stitch::interp {

double round_to_float_dtype(double v, DType dtype) {
  switch (dtype) {
    case DType::f16: return f16_bits_to_f32(f64_to_f16_bits(v));
    case DType::bf16: return bf16_bits_to_f32(f64_to_bf16_bits(v));
    case DType::f32: return static_cast<float>(v);
    case DType::f64: return v;
    default: break;
  }
  STITCH_ASSERT(false, "round_to_float_dtype: not a float dtype");
}

int64_t wrap_to_int_dtype(int64_t v, DType dtype) {
  // Narrowing to a signed type is modular since C++20.
  switch (dtype) {
    case DType::i8: return static_cast<int8_t>(v);
    case DType::i32: return static_cast<int32_t>(v);
    case DType::i64: return v;
    case DType::boolean: return v != 0;
    default: break;
  }
  STITCH_ASSERT(false, "wrap_to_int_dtype: not an integer or bool dtype");
}

}  // namespace stitch::interp
