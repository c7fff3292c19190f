// The spellings of the C++ and CUDA emitters (docs/cpu-backend.md and
// docs/cuda-backend.md, Mapping): one text interface, TargetText, with what
// both write the same way (compute types, identifier rules, literals, the ops
// written as a plain C operator or a runtime helper, casts); each target
// supplies only what differs (storage types, reserved words, math functions,
// its non-finite literals and its f16/bf16 conversions).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "kir/expr.h"
#include "stitch/dtype.h"
#include "stitch/ops.h"

namespace stitch::codegen::common {

// The C type a value of `t` is computed in: f16 and bf16 compute in float.
std::string compute_type(DType t);
bool is_narrow_float(DType t);
// Rounds a float or double expression to an f16/bf16 compute value.
std::string round_to_narrow(DType t, const std::string& value);

// True when `name` is a C identifier outside `reserved` and the names the
// generated code keeps for itself (stitch_*, __*).
bool is_free_identifier(const std::string& name, const std::unordered_set<std::string_view>& reserved);

// Shortest round-trip text of `v` in scientific form (finite `v`).
std::string float_digits(double v);
// A boolean literal, or the most negative i64 (which has no literal of its own in C).
std::optional<std::string> special_int_literal(int64_t v, DType t);

// `helper<t>(a...)`: a templated runtime helper applied to the operands.
std::string helper_call(std::string_view helper, const std::string& t, const std::vector<std::string>& a);
// The ops both targets write as a C operator or cast (logic, bitwise,
// comparison, select, i64 division by a positive literal); nullopt otherwise.
std::optional<std::string> operator_text(OpKind k, DType in, const std::string& t, const std::vector<std::string>& a,
                                         const kir::Expr& e);
// docs/semantics.md, Casts. `value` is in `from`'s compute type; a float
// rounded to f16/bf16 goes to the rounding helper as it is.
std::string cast_text(const std::string& value, DType from, DType to, bool in_range = false);

// How a target writes an elementwise op that is not a C operator.
enum class OpSpelling {
  Helper,       // the runtime's templated helper stitch_<op> (stitch_ipow for an integer pow)
  FloatHelper,  // the same, for float operands only
  Math,         // the target's math function (math_call)
};

class TargetText {
 public:
  virtual ~TargetText() = default;

  // InternalError("<language> emitter: WHAT not supported yet").
  [[noreturn]] void unsupported(const std::string& what) const;
  // KIR names go into the generated code unchanged; a name the target's
  // compiler would misread is refused (unsupported).
  void check_identifier(const std::string& name) const;
  std::string float_literal(double v, DType t) const;
  std::string int_literal(int64_t v, DType t) const;
  // The elementwise op `k` on operand texts `a` (computed in `in`, C type
  // `t`); `e` is the op node, for literal divisors.
  std::string op_text(OpKind k, DType in, const std::string& t, const std::vector<std::string>& a,
                      const kir::Expr& e) const;
  std::string cast_text(const std::string& value, DType from, DType to, bool in_range = false) const {
    return common::cast_text(value, from, to, in_range);
  }

  // The type a global buffer element is stored as.
  virtual std::string storage_type(DType t) const = 0;
  // A stored f16/bf16 element of `t` from its compute value (already rounded
  // to the dtype: exact), and a compute value from a stored element; other
  // dtypes pass through.
  virtual std::string narrow_text(DType t, const std::string& value) const = 0;
  virtual std::string widen_text(DType t, const std::string& element) const = 0;

 protected:
  virtual std::string_view emitter_name() const = 0;  // "C++", "CUDA": in messages
  virtual std::string_view language() const = 0;      // "C++", "CUDA C++"
  virtual const std::unordered_set<std::string_view>& reserved_words() const = 0;
  // NaN or an infinity of C type `type` ("float", "double").
  virtual std::string non_finite_literal(double v, const std::string& type) const = 0;
  virtual std::string f64_literal(const std::string& digits) const = 0;
  virtual std::string i64_literal(int64_t v) const = 0;
  // An op this target writes its own way, before the shared rules; nullopt: the rules.
  virtual std::optional<std::string> own_op_text(OpKind, DType, const std::vector<std::string>&, const kir::Expr&) const {
    return std::nullopt;
  }
  // How the target writes op `k`; nullopt: by the runtime helper both have,
  // where there is one.
  virtual std::optional<OpSpelling> spelling(OpKind k) const = 0;
  // The target's math function `fn` (an op's name) on float operands of `in`.
  virtual std::string math_call(std::string_view fn, DType in, const std::vector<std::string>& a) const = 0;
};

}  // namespace stitch::codegen::common
