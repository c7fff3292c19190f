// How Kernel IR types, literals, ops and casts are spelled in the generated
// CUDA C (docs/cuda-backend.md, Mapping): every rule is a helper of
// stitch_cuda_runtime.cuh, a CUDA math function or a C operator, chosen here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/common/c_text.h"
#include "kir/expr.h"
#include "stitch/dtype.h"
#include "stitch/ops.h"

namespace stitch::codegen::cuda {

// InternalError("CUDA emitter: WHAT not supported yet").
[[noreturn]] void unsupported(const std::string& what);

using common::cast_text;
using common::compute_type;
using common::is_narrow_float;
using common::round_to_narrow;

// The CUDA type a global buffer element is stored as (__half, __nv_bfloat16).
std::string storage_type(DType t);

// KIR names go into CUDA C unchanged; a name CUDA would misread is refused.
void check_identifier(const std::string& name);

std::string float_literal(double v, DType t);
std::string int_literal(int64_t v, DType t);

// The elementwise op `k` on operand texts `a` (computed in `in`, CUDA type `t`);
// `e` is the op node, for literal divisors.
std::string op_text(OpKind k, DType in, const std::string& t, const std::vector<std::string>& a,
                    const kir::Expr& e);

}  // namespace stitch::codegen::cuda
