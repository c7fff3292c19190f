// Element types of the Graph IR (DESIGN.md, Graph IR).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace stitch {

enum class DType : uint8_t { f16, bf16, f32, f64, i8, i32, i64, boolean };

inline constexpr DType kAllDTypes[] = {DType::f16, DType::bf16, DType::f32, DType::f64,
                                       DType::i8,  DType::i32,  DType::i64, DType::boolean};

// Text-format spelling: f16 bf16 f32 f64 i8 i32 i64 bool.
std::string_view dtype_name(DType t);
std::optional<DType> parse_dtype(std::string_view s);

int dtype_size(DType t);  // bytes per element
inline bool is_float(DType t) {
  return t == DType::f16 || t == DType::bf16 || t == DType::f32 || t == DType::f64;
}
inline bool is_integer(DType t) { return t == DType::i8 || t == DType::i32 || t == DType::i64; }
inline bool is_bool(DType t) { return t == DType::boolean; }

}  // namespace stitch
