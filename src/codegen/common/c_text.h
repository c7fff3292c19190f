// The spellings the C++ and CUDA emitters share (docs/cpu-backend.md and
// docs/cuda-backend.md, Mapping): compute types, identifier rules, literal
// digits, and the ops both write as a plain C operator. Each target keeps its
// own storage types, math functions and runtime helper names.
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

}  // namespace stitch::codegen::common
