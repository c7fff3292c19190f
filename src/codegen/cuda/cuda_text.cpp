#include "codegen/cuda/cuda_text.h"

#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>
#include <unordered_set>

#include <fmt/format.h>

#include "stitch/error.h"

namespace stitch::codegen::cuda {
namespace {

const std::unordered_set<std::string_view>& reserved_words() {
  static const std::unordered_set<std::string_view> words = {
      "alignas", "alignof", "and", "asm", "auto", "bool", "break", "case", "catch", "char", "class",
      "const", "constexpr", "continue", "default", "delete", "do", "double", "else", "enum",
      "explicit", "export", "extern", "false", "float", "for", "friend", "goto", "if", "inline",
      "int", "long", "mutable", "namespace", "new", "noexcept", "not", "nullptr", "operator", "or",
      "private", "protected", "public", "register", "return", "short", "signed", "sizeof", "static",
      "struct", "switch", "template", "this", "throw", "true", "try", "typedef", "typename", "union",
      "unsigned", "using", "virtual", "void", "volatile", "while", "xor", "int8_t", "int32_t",
      "int64_t", "uint8_t", "uint32_t", "uint64_t",
      // CUDA's built-in variables and the math functions the emitter calls.
      "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "half", "exp", "expf", "exp2",
      "exp2f", "expm1", "expm1f", "log", "logf", "log2", "log2f", "log1p", "log1pf", "sin", "sinf",
      "cos", "cosf", "tan", "tanf", "tanh", "tanhf", "erf", "erff", "floor", "floorf", "ceil",
      "ceilf", "atan2", "atan2f", "pow", "powf", "fabs", "fmod", "rint", "ldexp"};
  return words;
}

// The C math function for `fn` in the operand's precision (expf vs exp).
std::string math_call(std::string_view fn, DType in, const std::vector<std::string>& a) {
  if (!is_float(in)) unsupported(fmt::format("{} on {}", fn, dtype_name(in)));
  const std::string name = in == DType::f64 ? std::string(fn) : std::string(fn) + "f";
  return a.size() == 1 ? fmt::format("{}({})", name, a[0]) : fmt::format("{}({}, {})", name, a[0], a[1]);
}

}  // namespace

[[noreturn]] void unsupported(const std::string& what) {
  fail_internal(fmt::format("CUDA emitter: {} not supported yet", what), __FILE__, __LINE__);
}

std::string storage_type(DType t) {
  if (t == DType::f16) return "__half";
  if (t == DType::bf16) return "__nv_bfloat16";
  return compute_type(t);
}

void check_identifier(const std::string& name) {
  if (!common::is_free_identifier(name, reserved_words())) {
    unsupported(fmt::format("the name '{}' (a CUDA C++ keyword, reserved or not an identifier)", name));
  }
}

std::string float_literal(double v, DType t) {
  const std::string type = t == DType::f64 ? "double" : "float";
  if (std::isnan(v)) return fmt::format("stitch_nan<{}>()", type);
  if (std::isinf(v)) return fmt::format("{}stitch_inf<{}>()", v < 0 ? "-" : "", type);
  const std::string digits = common::float_digits(v);
  if (t == DType::f32) return fmt::format("float({})", digits);
  if (is_narrow_float(t)) return round_to_narrow(t, digits);
  return digits;
}

std::string int_literal(int64_t v, DType t) {
  if (std::optional<std::string> special = common::special_int_literal(v, t)) return *special;
  // Index literals read best bare; C++ gives a decimal literal beyond int a 64-bit type anyway.
  if (t == DType::i64) return v > -(int64_t{1} << 31) && v < (int64_t{1} << 31) ? fmt::format("{}", v) : fmt::format("{}LL", v);
  return fmt::format("{}({})", compute_type(t), v);
}

std::string op_text(OpKind k, DType in, const std::string& t, const std::vector<std::string>& a,
                    const kir::Expr& e) {
  if (std::optional<std::string> text = common::operator_text(k, in, t, a, e)) return *text;
  auto call = [&](std::string_view helper) { return common::helper_call(helper, t, a); };
  auto float_call = [&](std::string_view helper) {
    if (!is_float(in)) unsupported(fmt::format("{} on {}", op_name(k), dtype_name(in)));
    return call(helper);
  };
  switch (k) {
    case OpKind::Neg: return call("stitch_neg");
    case OpKind::Abs: return call("stitch_abs");
    case OpKind::Exp: return math_call("exp", in, a);
    case OpKind::Exp2: return math_call("exp2", in, a);
    case OpKind::Log: return math_call("log", in, a);
    case OpKind::Log2: return math_call("log2", in, a);
    case OpKind::Log1p: return math_call("log1p", in, a);
    case OpKind::Expm1: return math_call("expm1", in, a);
    case OpKind::Sin: return math_call("sin", in, a);
    case OpKind::Cos: return math_call("cos", in, a);
    case OpKind::Tan: return math_call("tan", in, a);
    case OpKind::Tanh: return math_call("tanh", in, a);
    case OpKind::Erf: return math_call("erf", in, a);
    case OpKind::Floor: return math_call("floor", in, a);
    case OpKind::Ceil: return math_call("ceil", in, a);
    case OpKind::Atan2: return math_call("atan2", in, a);
    case OpKind::Sqrt: return float_call("stitch_sqrt");
    case OpKind::Rsqrt: return float_call("stitch_rsqrt");
    case OpKind::Reciprocal: return float_call("stitch_reciprocal");
    case OpKind::Sigmoid: return float_call("stitch_sigmoid");
    case OpKind::Round: return float_call("stitch_round");
    case OpKind::Relu: return call("stitch_relu");
    case OpKind::Sign: return call("stitch_sign");
    case OpKind::IsNan: return call("stitch_isnan");
    case OpKind::IsInf: return call("stitch_isinf");
    case OpKind::Add: return call("stitch_add");
    case OpKind::Sub: return call("stitch_sub");
    case OpKind::Mul: return call("stitch_mul");
    case OpKind::Div: return call("stitch_div");
    case OpKind::Rem: return call("stitch_rem");
    case OpKind::Pow: return is_float(in) ? math_call("pow", in, a) : call("stitch_ipow");
    case OpKind::Max: return call("stitch_max");
    case OpKind::Min: return call("stitch_min");
    case OpKind::Clamp: return call("stitch_clamp");
    default: unsupported(fmt::format("the op {}", op_name(k)));
  }
}

}  // namespace stitch::codegen::cuda
