// How Kernel IR types, literals, ops and casts are spelled in the generated
// C++ (docs/cpu-backend.md, Mapping): every rule is a helper of
// stitch_cpu_runtime.h, a std:: function or a C operator, chosen here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/common/c_text.h"
#include "kir/expr.h"
#include "stitch/dtype.h"
#include "stitch/ops.h"

namespace stitch::codegen::cpu {

// InternalError("C++ emitter: WHAT not supported yet").
[[noreturn]] void unsupported(const std::string& what);

using common::compute_type;
using common::is_narrow_float;
using common::round_to_narrow;

// The C++ type a global buffer element is stored as (f16/bf16: uint16_t bits).
std::string storage_type(DType t);

// KIR names go into C++ unchanged; a name C++ would misread is refused.
void check_identifier(const std::string& name);

std::string float_literal(double v, DType t);
std::string int_literal(int64_t v, DType t);

// The elementwise op `k` on operand texts `a` (computed in `in`, C++ type `t`);
// `e` is the op node, for literal divisors.
std::string op_text(OpKind k, DType in, const std::string& t, const std::vector<std::string>& a, const kir::Expr& e);
// docs/semantics.md, Casts. `value` is in `from`'s compute type.
std::string cast_text(const std::string& value, DType from, DType to, bool in_range = false);

}  // namespace stitch::codegen::cpu
