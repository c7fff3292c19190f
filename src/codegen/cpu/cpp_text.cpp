#include "codegen/cpu/cpp_text.h"

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "stitch/error.h"

namespace stitch::codegen::cpu {
namespace {

const std::unordered_set<std::string_view>& cpp_reserved_words() {
  static const std::unordered_set<std::string_view> words = {
      "alignas", "alignof", "and", "asm", "auto", "bool", "break", "case", "catch", "char",
      "class", "const", "constexpr", "continue", "default", "delete", "do", "double", "else",
      "enum", "explicit", "export", "extern", "false", "float", "for", "friend", "goto", "if",
      "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "nullptr",
      "operator", "or", "private", "protected", "public", "register", "return", "short",
      "signed", "sizeof", "static", "struct", "switch", "template", "this", "throw", "true",
      "try", "typedef", "typename", "union", "unsigned", "using", "virtual", "void", "volatile",
      "while", "xor", "std", "int8_t", "int32_t", "int64_t", "uint16_t"};
  return words;
}

class CppText final : public common::TargetText {
 public:
  std::string storage_type(DType t) const override {
    if (t == DType::f16 || t == DType::bf16) return "uint16_t";
    // A bool is one byte of 0 or 1 either way; GCC vectorises no loop that loads
    // `bool` (a causal mask's load kept a softmax's row loop scalar), and does one
    // that loads uint8_t and converts.
    if (t == DType::boolean) return "uint8_t";
    return common::compute_type(t);
  }
  std::string narrow_text(DType t, const std::string& value) const override {
    if (t == DType::f16) return fmt::format("stitch_to_f16_bits({})", value);
    if (t == DType::bf16) return fmt::format("stitch_to_bf16_bits({})", value);
    return value;
  }
  std::string widen_text(DType t, const std::string& element) const override {
    if (t == DType::f16) return fmt::format("stitch_f16_bits_to_f32({})", element);
    if (t == DType::bf16) return fmt::format("stitch_bf16_bits_to_f32({})", element);
    return element;
  }

 protected:
  std::string_view emitter_name() const override { return "C++"; }
  std::string_view language() const override { return "C++"; }
  const std::unordered_set<std::string_view>& reserved_words() const override { return cpp_reserved_words(); }
  std::string non_finite_literal(double v, const std::string& type) const override {
    if (std::isnan(v)) return fmt::format("std::numeric_limits<{}>::quiet_NaN()", type);
    return fmt::format("{}std::numeric_limits<{}>::infinity()", v < 0 ? "-" : "", type);
  }
  std::string f64_literal(const std::string& digits) const override { return fmt::format("double({})", digits); }
  std::string i64_literal(int64_t v) const override { return fmt::format("int64_t({}LL)", v); }
  std::optional<std::string> own_op_text(OpKind k, DType in, const std::vector<std::string>& a,
                                         const kir::Expr& e) const override {
    if (k == OpKind::Select) {
      // Both operands evaluated, so loads in them vectorise (stitch_cpu_runtime.h).
      return fmt::format("stitch_select<{}>({}, {}, {})", common::compute_type(e->operands[1].dtype()), a[0], a[1],
                         a[2]);
    }
    if ((k == OpKind::And || k == OpKind::Or) && in == DType::boolean) {
      // Not && or ||: their right operand's loads would be conditional, and keep the loop scalar.
      return fmt::format("static_cast<bool>({} {} {})", a[0], k == OpKind::And ? '&' : '|', a[1]);
    }
    return std::nullopt;
  }
  std::optional<common::OpSpelling> spelling(OpKind k) const override {
    switch (k) {
      case OpKind::Exp: case OpKind::Exp2: case OpKind::Log: case OpKind::Log2: case OpKind::Expm1:
      case OpKind::Sqrt: case OpKind::Sin: case OpKind::Cos: case OpKind::Tan: case OpKind::Floor:
      case OpKind::Ceil: case OpKind::Atan2: return common::OpSpelling::Math;
      case OpKind::Log1p: case OpKind::Tanh: case OpKind::Erf: return common::OpSpelling::FloatHelper;
      default: return std::nullopt;
    }
  }
  std::string math_call(std::string_view fn, DType, const std::vector<std::string>& a) const override {
    return a.size() == 1 ? fmt::format("std::{}({})", fn, a[0]) : fmt::format("std::{}({}, {})", fn, a[0], a[1]);
  }
};

}  // namespace

const common::TargetText& cpp_text() {
  static const CppText text;
  return text;
}

}  // namespace stitch::codegen::cpu
