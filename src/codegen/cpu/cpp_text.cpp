#include "codegen/cpu/cpp_text.h"

#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>
#include <unordered_set>

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

}  // namespace

[[noreturn]] void unsupported(const std::string& what) {
  fail_internal(fmt::format("C++ emitter: {} not supported yet", what), __FILE__, __LINE__);
}

// The C++ type a global buffer element is stored as.
std::string storage_type(DType t) {
  if (t == DType::f16 || t == DType::bf16) return "uint16_t";
  // A bool is one byte of 0 or 1 either way; GCC vectorises no loop that loads
  // `bool` (a causal mask's load kept a softmax's row loop scalar), and does one
  // that loads uint8_t and converts.
  if (t == DType::boolean) return "uint8_t";
  return compute_type(t);
}

void check_identifier(const std::string& name) {
  if (!common::is_free_identifier(name, cpp_reserved_words())) {
    unsupported(fmt::format("the name '{}' (a C++ keyword, reserved or not an identifier)", name));
  }
}

std::string float_literal(double v, DType t) {
  const std::string type = t == DType::f64 ? "double" : "float";
  if (std::isnan(v)) return fmt::format("std::numeric_limits<{}>::quiet_NaN()", type);
  if (std::isinf(v)) {
    return fmt::format("{}std::numeric_limits<{}>::infinity()", v < 0 ? "-" : "", type);
  }
  const std::string digits = common::float_digits(v);
  if (t == DType::f32) return fmt::format("float({})", digits);
  if (is_narrow_float(t)) return round_to_narrow(t, digits);
  return fmt::format("double({})", digits);
}

std::string int_literal(int64_t v, DType t) {
  if (std::optional<std::string> special = common::special_int_literal(v, t)) return *special;
  if (t == DType::i64) return fmt::format("int64_t({}LL)", v);
  return fmt::format("{}({})", compute_type(t), v);
}


std::string op_text(OpKind k, DType in, const std::string& t, const std::vector<std::string>& a, const kir::Expr& e) {
  if (k == OpKind::Select) {
    // Both operands evaluated, so loads in them vectorise (stitch_cpu_runtime.h).
    return fmt::format("stitch_select<{}>({}, {}, {})", compute_type(e->operands[1].dtype()), a[0], a[1], a[2]);
  }
  if ((k == OpKind::And || k == OpKind::Or) && in == DType::boolean) {
    // Not && or ||: their right operand's loads would be conditional, and keep the loop scalar.
    return fmt::format("static_cast<bool>({} {} {})", a[0], k == OpKind::And ? '&' : '|', a[1]);
  }
  if (std::optional<std::string> text = common::operator_text(k, in, t, a, e)) return *text;
  auto call = [&](std::string_view helper) { return common::helper_call(helper, t, a); };
  auto std_call = [&](std::string_view fn) {
    if (!is_float(in)) unsupported(fmt::format("{} on {}", op_name(k), dtype_name(in)));
    return a.size() == 1 ? fmt::format("std::{}({})", fn, a[0]) : fmt::format("std::{}({}, {})", fn, a[0], a[1]);
  };
  switch (k) {
    case OpKind::Neg: return call("stitch_neg");
    case OpKind::Abs: return call("stitch_abs");
    case OpKind::Exp: return std_call("exp");
    case OpKind::Exp2: return std_call("exp2");
    case OpKind::Log: return std_call("log");
    case OpKind::Log2: return std_call("log2");
    case OpKind::Log1p:
      if (!is_float(in)) unsupported(fmt::format("log1p on {}", dtype_name(in)));
      return call("stitch_log1p");
    case OpKind::Expm1: return std_call("expm1");
    case OpKind::Sqrt: return std_call("sqrt");
    case OpKind::Sin: return std_call("sin");
    case OpKind::Cos: return std_call("cos");
    case OpKind::Tan: return std_call("tan");
    case OpKind::Tanh:
      if (!is_float(in)) unsupported(fmt::format("tanh on {}", dtype_name(in)));
      return call("stitch_tanh");
    case OpKind::Erf:
      if (!is_float(in)) unsupported(fmt::format("erf on {}", dtype_name(in)));
      return call("stitch_erf");
    case OpKind::Floor: return std_call("floor");
    case OpKind::Ceil: return std_call("ceil");
    case OpKind::Atan2: return std_call("atan2");
    case OpKind::Rsqrt: return call("stitch_rsqrt");
    case OpKind::Reciprocal: return call("stitch_reciprocal");
    case OpKind::Sigmoid: return call("stitch_sigmoid");
    case OpKind::Relu: return call("stitch_relu");
    case OpKind::Round: return call("stitch_round");
    case OpKind::Sign: return call("stitch_sign");
    case OpKind::IsNan: return call("stitch_isnan");
    case OpKind::IsInf: return call("stitch_isinf");
    case OpKind::Add: return call("stitch_add");
    case OpKind::Sub: return call("stitch_sub");
    case OpKind::Mul: return call("stitch_mul");
    case OpKind::Div: return call("stitch_div");
    case OpKind::Rem: return call("stitch_rem");
    case OpKind::Pow: return call(is_float(in) ? "stitch_pow" : "stitch_ipow");
    case OpKind::Max: return call("stitch_max");
    case OpKind::Min: return call("stitch_min");
    case OpKind::Clamp: return call("stitch_clamp");
    default: unsupported(fmt::format("the op {}", op_name(k)));
  }
}

// docs/semantics.md, Casts. The CPU rounding helpers round a float or a double
// once to f16/bf16 (stitch_cpu_runtime.h; a float by the fast path).
std::string cast_text(const std::string& value, DType from, DType to, bool in_range) {
  return common::cast_text(value, from, to, in_range);
}

}  // namespace stitch::codegen::cpu
