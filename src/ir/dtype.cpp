#include "stitch/dtype.h"

#include "stitch/error.h"

namespace stitch {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::f32: return "f32";
    case DType::f64: return "f64";
    case DType::i8: return "i8";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::boolean: return "bool";
  }
  STITCH_ASSERT(false, "unknown dtype");
}

std::optional<DType> parse_dtype(std::string_view s) {
  for (DType t : kAllDTypes) {
    if (dtype_name(t) == s) return t;
  }
  return std::nullopt;
}

int dtype_size(DType t) {
  switch (t) {
    case DType::f16:
    case DType::bf16: return 2;
    case DType::f32:
    case DType::i32: return 4;
    case DType::f64:
    case DType::i64: return 8;
    case DType::i8:
    case DType::boolean: return 1;
  }
  STITCH_ASSERT(false, "unknown dtype");
}

}  // namespace stitch
