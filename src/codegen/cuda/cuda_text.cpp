#include "codegen/cuda/cuda_text.h"

#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>
#include <string>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "stitch/error.h"

namespace stitch::codegen::cuda {
namespace {

const std::unordered_set<std::string_view>& cuda_reserved_words() {
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

class CudaText final : public common::TargetText {
 public:
  std::string storage_type(DType t) const override {
    if (t == DType::f16) return "__half";
    if (t == DType::bf16) return "__nv_bfloat16";
    return common::compute_type(t);
  }
  std::string narrow_text(DType t, const std::string& value) const override {
    if (t == DType::f16) return fmt::format("__float2half_rn({})", value);
    if (t == DType::bf16) return fmt::format("stitch_bf16_of_rounded({})", value);
    return value;
  }
  std::string widen_text(DType t, const std::string& element) const override {
    if (t == DType::f16) return fmt::format("__half2float({})", element);
    if (t == DType::bf16) return fmt::format("stitch_bf16_to_float({})", element);
    return element;
  }

 protected:
  std::string_view emitter_name() const override { return "CUDA"; }
  std::string_view language() const override { return "CUDA C++"; }
  const std::unordered_set<std::string_view>& reserved_words() const override { return cuda_reserved_words(); }
  std::string non_finite_literal(double v, const std::string& type) const override {
    if (std::isnan(v)) return fmt::format("stitch_nan<{}>()", type);
    return fmt::format("{}stitch_inf<{}>()", v < 0 ? "-" : "", type);
  }
  std::string f64_literal(const std::string& digits) const override { return digits; }
  // Index literals read best bare; C++ gives a decimal literal beyond int a 64-bit type anyway.
  std::string i64_literal(int64_t v) const override {
    return v > -(int64_t{1} << 31) && v < (int64_t{1} << 31) ? fmt::format("{}", v) : fmt::format("{}LL", v);
  }
  std::optional<common::OpSpelling> spelling(OpKind k) const override {
    switch (k) {
      case OpKind::Exp: case OpKind::Exp2: case OpKind::Log: case OpKind::Log2: case OpKind::Log1p:
      case OpKind::Expm1: case OpKind::Sin: case OpKind::Cos: case OpKind::Tan: case OpKind::Tanh:
      case OpKind::Erf: case OpKind::Floor: case OpKind::Ceil: case OpKind::Atan2:
      case OpKind::Pow: return common::OpSpelling::Math;
      case OpKind::Sqrt: case OpKind::Rsqrt: case OpKind::Reciprocal: case OpKind::Sigmoid:
      case OpKind::Round: return common::OpSpelling::FloatHelper;
      default: return std::nullopt;
    }
  }
  // The C math function in the operand's precision (expf vs exp).
  std::string math_call(std::string_view fn, DType in, const std::vector<std::string>& a) const override {
    const std::string name = in == DType::f64 ? std::string(fn) : std::string(fn) + "f";
    return a.size() == 1 ? fmt::format("{}({})", name, a[0]) : fmt::format("{}({}, {})", name, a[0], a[1]);
  }
};

}  // namespace

const common::TargetText& cuda_text() {
  static const CudaText text;
  return text;
}

}  // namespace stitch::codegen::cuda
