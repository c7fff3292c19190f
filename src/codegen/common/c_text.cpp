#include "codegen/common/c_text.h"

#include <cctype>
#include <cmath>
#include <charconv>
#include <cstdint>
#include <limits>

#include <fmt/format.h>

#include "stitch/error.h"

namespace stitch::codegen::common {

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

bool is_narrow_float(DType t) { return t == DType::f16 || t == DType::bf16; }

std::string round_to_narrow(DType t, const std::string& value) {
  return fmt::format("{}({})", t == DType::f16 ? "stitch_round_f16" : "stitch_round_bf16", value);
}

// KIR names go into the generated code unchanged, so it reads like the printed
// kernel; the emitters refuse a name that fails here rather than rename it.
bool is_free_identifier(const std::string& name, const std::unordered_set<std::string_view>& reserved) {
  bool valid = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0]));
  for (char c : name) valid = valid && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  return valid && !reserved.count(name) && name.rfind("stitch_", 0) != 0 && name.rfind("__", 0) != 0;
}

// The compiler (f32) or the narrow rounding helper (f16, bf16) then rounds
// these digits once to the dtype.
std::string float_digits(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  return std::string(buf, r.ptr);
}

std::optional<std::string> special_int_literal(int64_t v, DType t) {
  if (t == DType::boolean) return v != 0 ? "true" : "false";
  if (v == std::numeric_limits<int64_t>::min()) return "(-9223372036854775807LL - 1)";
  return std::nullopt;
}

std::string helper_call(std::string_view helper, const std::string& t, const std::vector<std::string>& a) {
  std::string args;
  for (size_t i = 0; i < a.size(); ++i) args += (i ? ", " : "") + a[i];
  return fmt::format("{}<{}>({})", helper, t, args);
}

std::optional<std::string> operator_text(OpKind k, DType in, const std::string& t, const std::vector<std::string>& a,
                                         const kir::Expr& e) {
  const bool boolean = in == DType::boolean;
  switch (k) {
    case OpKind::Not: return boolean ? fmt::format("(!{})", a[0]) : fmt::format("static_cast<{}>(~{})", t, a[0]);
    case OpKind::Div:
    case OpKind::Rem: {
      // A positive literal divisor needs no zero or -1 check (docs/kernel-ir.md).
      int64_t divisor = 0;
      if (in == DType::i64 && kir::is_int_constant(e->operands[1], &divisor) && divisor > 0) {
        return fmt::format("({} {} {})", a[0], k == OpKind::Div ? '/' : '%', a[1]);
      }
      return std::nullopt;
    }
    case OpKind::And:
      return boolean ? fmt::format("({} && {})", a[0], a[1]) : fmt::format("static_cast<{}>({} & {})", t, a[0], a[1]);
    case OpKind::Or:
      return boolean ? fmt::format("({} || {})", a[0], a[1]) : fmt::format("static_cast<{}>({} | {})", t, a[0], a[1]);
    case OpKind::Xor:
      return boolean ? fmt::format("({} != {})", a[0], a[1]) : fmt::format("static_cast<{}>({} ^ {})", t, a[0], a[1]);
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
    default: return std::nullopt;
  }
}

std::string cast_text(const std::string& value, DType from, DType to, bool in_range) {
  if (from == to) return value;
  const std::string target = compute_type(to);
  if (to == DType::boolean) return fmt::format("({} != 0)", value);
  if (from == DType::boolean) {
    return is_narrow_float(to) ? fmt::format("({} ? 1.0f : 0.0f)", value)
                               : fmt::format("static_cast<{}>({})", target, value);
  }
  if (is_float(from) && is_float(to)) {
    if (is_narrow_float(to)) return round_to_narrow(to, value);
    return fmt::format("static_cast<{}>({})", target, value);
  }
  if (is_float(from)) {
    // Known finite and inside the target's range: C++'s truncation is the
    // saturating one's value there.
    if (in_range) return fmt::format("static_cast<{}>({})", target, value);
    return fmt::format("stitch_float_to_int<{}>({})", target, value);
  }
  if (is_float(to)) {
    // i64 -> f32/f64 is one rounding; to a narrow float, round to odd first.
    if (is_narrow_float(to)) return round_to_narrow(to, fmt::format("stitch_i64_to_f64_round_to_odd({})", value));
    return fmt::format("static_cast<{}>({})", target, value);
  }
  // Integer -> integer wraps (modulo 2^n, as GCC, NVCC and C++20 define it).
  return fmt::format("static_cast<{}>({})", target, value);
}

namespace {

// The ops both targets may call a runtime helper stitch_<op> for.
bool has_shared_helper(OpKind k) {
  switch (k) {
    case OpKind::Neg: case OpKind::Abs: case OpKind::Sqrt: case OpKind::Rsqrt: case OpKind::Reciprocal:
    case OpKind::Log1p: case OpKind::Tanh: case OpKind::Erf: case OpKind::Sigmoid: case OpKind::Relu:
    case OpKind::Round: case OpKind::Sign: case OpKind::IsNan: case OpKind::IsInf: case OpKind::Add:
    case OpKind::Sub: case OpKind::Mul: case OpKind::Div: case OpKind::Rem: case OpKind::Pow: case OpKind::Max:
    case OpKind::Min: case OpKind::Clamp: return true;
    default: return false;
  }
}

}  // namespace

void TargetText::unsupported(const std::string& what) const {
  fail_internal(fmt::format("{} emitter: {} not supported yet", emitter_name(), what), __FILE__,
                __LINE__);
}

void TargetText::check_identifier(const std::string& name) const {
  if (!is_free_identifier(name, reserved_words())) {
    unsupported(fmt::format("the name '{}' (a {} keyword, reserved or not an identifier)", name, language()));
  }
}

std::string TargetText::float_literal(double v, DType t) const {
  if (std::isnan(v) || std::isinf(v)) return non_finite_literal(v, t == DType::f64 ? "double" : "float");
  const std::string digits = float_digits(v);
  if (t == DType::f32) return fmt::format("float({})", digits);
  if (is_narrow_float(t)) return round_to_narrow(t, digits);
  return f64_literal(digits);
}

std::string TargetText::int_literal(int64_t v, DType t) const {
  if (std::optional<std::string> special = special_int_literal(v, t)) return *special;
  if (t == DType::i64) return i64_literal(v);
  return fmt::format("{}({})", compute_type(t), v);
}

std::string TargetText::op_text(OpKind k, DType in, const std::string& t, const std::vector<std::string>& a,
                                const kir::Expr& e) const {
  if (std::optional<std::string> text = own_op_text(k, in, a, e)) return *text;
  if (std::optional<std::string> text = operator_text(k, in, t, a, e)) return *text;
  if (k == OpKind::Pow && !is_float(in)) return helper_call("stitch_ipow", t, a);
  std::optional<OpSpelling> how = spelling(k);
  if (!how) {
    if (!has_shared_helper(k)) unsupported(fmt::format("the op {}", op_name(k)));
    how = OpSpelling::Helper;
  }
  const std::string helper = fmt::format("stitch_{}", op_name(k));
  switch (*how) {
    case OpSpelling::Helper: return helper_call(helper, t, a);
    case OpSpelling::FloatHelper:
      if (!is_float(in)) unsupported(fmt::format("{} on {}", op_name(k), dtype_name(in)));
      return helper_call(helper, t, a);
    case OpSpelling::Math:
      if (!is_float(in)) unsupported(fmt::format("{} on {}", op_name(k), dtype_name(in)));
      return math_call(op_name(k), in, a);
  }
  STITCH_ASSERT(false, "unknown op spelling");
}

}  // namespace stitch::codegen::common
