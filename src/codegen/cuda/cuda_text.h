// How Kernel IR types, literals, ops and casts are spelled in the generated
// CUDA C (docs/cuda-backend.md, Mapping): every rule is a helper of
// stitch_cuda_runtime.cuh, a CUDA math function or a C operator, chosen here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kir/expr.h"
#include "stitch/dtype.h"
#include "stitch/ops.h"

namespace stitch::codegen::cuda {

// InternalError("CUDA emitter: WHAT not supported yet").
[[noreturn]] void unsupported(const std::string& what);

// The CUDA type a value of `t` is computed in: f16 and bf16 compute in float.
std::string compute_type(DType t);
// The CUDA type a global buffer element is stored as (__half, __nv_bfloat16).
std::string storage_type(DType t);
bool is_narrow_float(DType t);
// Rounds a float or double expression to an f16/bf16 compute value.
std::string round_to_narrow(DType t, const std::string& value);

// KIR names go into CUDA C unchanged; a name CUDA would misread is refused.
void check_identifier(const std::string& name);

std::string float_literal(double v, DType t);
std::string int_literal(int64_t v, DType t);

// The elementwise op `k` on operand texts `a` (computed in `in`, CUDA type `t`);
// `e` is the op node, for literal divisors.
std::string op_text(OpKind k, DType in, const std::string& t, const std::vector<std::string>& a,
                    const kir::Expr& e);
// docs/semantics.md, Casts. `value` is in `from`'s compute type.
std::string cast_text(const std::string& value, DType from, DType to);

}  // namespace stitch::codegen::cuda
