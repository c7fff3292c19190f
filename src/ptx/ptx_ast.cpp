#include "ptx/ptx_ast.h"

#include <array>
#include <utility>

namespace stitch::ptx {

namespace {

constexpr std::array<std::pair<Type, const char*>, 20> kTypeNames{{
    {Type::Pred, "pred"}, {Type::B8, "b8"},       {Type::B16, "b16"},   {Type::B32, "b32"},       {Type::B64, "b64"},
    {Type::B128, "b128"}, {Type::U8, "u8"},       {Type::U16, "u16"},   {Type::U32, "u32"},       {Type::U64, "u64"},
    {Type::S8, "s8"},     {Type::S16, "s16"},     {Type::S32, "s32"},   {Type::S64, "s64"},       {Type::F16, "f16"},
    {Type::F16x2, "f16x2"}, {Type::BF16, "bf16"}, {Type::BF16x2, "bf16x2"}, {Type::F32, "f32"}, {Type::F64, "f64"},
}};

}  // namespace

std::optional<Type> parse_type(std::string_view name) {
  if (!name.empty() && name.front() == '.') name.remove_prefix(1);
  for (const auto& [t, n] : kTypeNames) {
    if (name == n) return t;
  }
  return std::nullopt;
}

const char* type_name(Type t) {
  for (const auto& [type, n] : kTypeNames) {
    if (type == t) return n;
  }
  return "?";
}

int type_bytes(Type t) {
  switch (t) {
    case Type::Pred:
    case Type::B8:
    case Type::U8:
    case Type::S8: return 1;
    case Type::B16:
    case Type::U16:
    case Type::S16:
    case Type::F16:
    case Type::BF16: return 2;
    case Type::B32:
    case Type::U32:
    case Type::S32:
    case Type::F32:
    case Type::F16x2:
    case Type::BF16x2: return 4;
    case Type::B64:
    case Type::U64:
    case Type::S64:
    case Type::F64: return 8;
    case Type::B128: return 16;
  }
  return 0;
}

}  // namespace stitch::ptx
