// How Kernel IR types, literals, ops and casts are spelled in the generated
// CUDA C (docs/cuda-backend.md, Mapping): the GPU's side of the text
// interface (codegen/common/c_text.h), each rule a helper of
// stitch_cuda_runtime.cuh, a CUDA math function or a C operator.
#pragma once

#include "codegen/common/c_text.h"

namespace stitch::codegen::cuda {

const common::TargetText& cuda_text();

}  // namespace stitch::codegen::cuda
