#include "codegen/cuda/cuda_text.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
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

std::string compute_type(DType t) {
  switch (t) {
    case DType::f16:
    case DType::bf16:
    case DType::f32: return "float";
    case DType::f64: return "double";
    case DType::i8: return "int8_t";
    case DType::i32: return "int32_t";
    case DType::i64: return "int64_t";
    case DType::boolean: return "bool";
  }
  STITCH_ASSERT(false, "unknown dtype");
}

std::string storage_type(DType t) {
  if (t == DType::f16) return "__half";
  if (t == DType::bf16) return "__nv_bfloat16";
  return compute_type(t);
}

bool is_narrow_float(DType t) { return t == DType::f16 || t == DType::bf16; }

std::string round_to_narrow(DType t, const std::string& value) {
  return fmt::format("{}({})", t == DType::f16 ? "stitch_round_f16" : "stitch_round_bf16", value);
}

// Names go in unchanged, so the generated code reads like the printed kernel;
// a name CUDA would misread is refused rather than silently renamed.
void check_identifier(const std::string& name) {
  bool valid = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0]));
  for (char c : name) valid = valid && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  if (!valid || reserved_words().count(name) || name.rfind("stitch_", 0) == 0 || name.rfind("__", 0) == 0) {
    unsupported(fmt::format("the name '{}' (a CUDA C++ keyword, reserved or not an identifier)", name));
  }
}

std::string float_literal(double v, DType t) {
  const std::string type = t == DType::f64 ? "double" : "float";
  if (std::isnan(v)) return fmt::format("stitch_nan<{}>()", type);
  if (std::isinf(v)) return fmt::format("{}stitch_inf<{}>()", v < 0 ? "-" : "", type);
  char buf[64];
  // Shortest round-trip text of the double, then rounded once to the dtype by
  // the compiler (f32) or by the narrow rounding helper (f16, bf16).
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string digits(buf, r.ptr);
  if (t == DType::f32) return fmt::format("float({})", digits);
  if (is_narrow_float(t)) return round_to_narrow(t, digits);
  return digits;
}

std::string int_literal(int64_t v, DType t) {
  if (t == DType::boolean) return v != 0 ? "true" : "false";
  if (v == std::numeric_limits<int64_t>::min()) return "(-9223372036854775807LL - 1)";
  // Index literals read best bare; C++ gives a decimal literal beyond int a 64-bit type anyway.
  if (t == DType::i64) return v > -(int64_t{1} << 31) && v < (int64_t{1} << 31) ? fmt::format("{}", v) : fmt::format("{}LL", v);
  return fmt::format("{}({})", compute_type(t), v);
}

std::string op_text(OpKind k, DType in, const std::string& t, const std::vector<std::string>& a,
                    const kir::Expr& e) {
  auto call = [&](std::string_view helper) {
    std::string args;
    for (size_t i = 0; i < a.size(); ++i) args += (i ? ", " : "") + a[i];
    return fmt::format("{}<{}>({})", helper, t, args);
  };
  auto float_call = [&](std::string_view helper) {
    if (!is_float(in)) unsupported(fmt::format("{} on {}", op_name(k), dtype_name(in)));
    return call(helper);
  };
  const bool boolean = in == DType::boolean;
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
    case OpKind::Not:
      return boolean ? fmt::format("(!{})", a[0]) : fmt::format("static_cast<{}>(~{})", t, a[0]);
    case OpKind::Add: return call("stitch_add");
    case OpKind::Sub: return call("stitch_sub");
    case OpKind::Mul: return call("stitch_mul");
    case OpKind::Div:
    case OpKind::Rem: {
      // A positive literal divisor needs no zero or -1 check (docs/kernel-ir.md).
      int64_t divisor = 0;
      if (in == DType::i64 && kir::is_int_constant(e->operands[1], &divisor) && divisor > 0) {
        return fmt::format("({} {} {})", a[0], k == OpKind::Div ? '/' : '%', a[1]);
      }
      return call(k == OpKind::Div ? "stitch_div" : "stitch_rem");
    }
    case OpKind::Pow: return is_float(in) ? math_call("pow", in, a) : call("stitch_ipow");
    case OpKind::Max: return call("stitch_max");
    case OpKind::Min: return call("stitch_min");
    case OpKind::And:
      return boolean ? fmt::format("({} && {})", a[0], a[1])
                     : fmt::format("static_cast<{}>({} & {})", t, a[0], a[1]);
    case OpKind::Or:
      return boolean ? fmt::format("({} || {})", a[0], a[1])
                     : fmt::format("static_cast<{}>({} | {})", t, a[0], a[1]);
    case OpKind::Xor:
      return boolean ? fmt::format("({} != {})", a[0], a[1])
                     : fmt::format("static_cast<{}>({} ^ {})", t, a[0], a[1]);
    case OpKind::Eq: return fmt::format("({} == {})", a[0], a[1]);
    case OpKind::Ne: return fmt::format("({} != {})", a[0], a[1]);
    case OpKind::Lt: return fmt::format("({} < {})", a[0], a[1]);
    case OpKind::Le: return fmt::format("({} <= {})", a[0], a[1]);
    case OpKind::Gt: return fmt::format("({} > {})", a[0], a[1]);
    case OpKind::Ge: return fmt::format("({} >= {})", a[0], a[1]);
    case OpKind::Select: {
      const std::string type = compute_type(e->operands[1].dtype());
      return fmt::format("({} ? static_cast<{}>({}) : static_cast<{}>({}))", a[0], type, a[1], type, a[2]);
    }
    case OpKind::Clamp: return call("stitch_clamp");
    default: unsupported(fmt::format("the op {}", op_name(k)));
  }
}

std::string cast_text(const std::string& value, DType from, DType to) {
  if (from == to) return value;
  const std::string target = compute_type(to);
  if (to == DType::boolean) return fmt::format("({} != 0)", value);
  if (from == DType::boolean) {
    return is_narrow_float(to) ? fmt::format("({} ? 1.0f : 0.0f)", value)
                               : fmt::format("static_cast<{}>({})", target, value);
  }
  if (is_float(from) && is_float(to)) {
    // From float (f32/f16/bf16 compute) or double: one rounding either way.
    if (is_narrow_float(to)) return round_to_narrow(to, value);
    return fmt::format("static_cast<{}>({})", target, value);
  }
  if (is_float(from)) return fmt::format("stitch_float_to_int<{}>({})", target, value);
  if (is_float(to)) {
    // i64 -> f32/f64 is one rounding (cvt.rn); to a narrow float, round to odd first.
    if (is_narrow_float(to)) return round_to_narrow(to, fmt::format("stitch_i64_to_f64_round_to_odd({})", value));
    return fmt::format("static_cast<{}>({})", target, value);
  }
  // Integer -> integer wraps (modulo 2^n).
  return fmt::format("static_cast<{}>({})", target, value);
}

}  // namespace stitch::codegen::cuda
