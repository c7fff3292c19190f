// dot(a, b) on the GPU (DESIGN.md, Fusion planners: "dots are library calls";
// docs/cuda-runtime.md, Dots): float dtypes through cuBLAS on the context's
// stream with the handle the context keeps; integer and bool dots, which
// cuBLAS cannot do exactly, through the CPU's exact loop on a host copy.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/cuda/context.h"
#include "stitch/dtype.h"

namespace stitch::runtime::cuda {

// numpy matmul semantics, as runtime/cpu/dot_call.h; shapes are concrete and
// every buffer is contiguous. Throws UserError when cuBLAS cannot be loaded.
void run_gpu_dot(CudaContext& context, DType dtype, const std::vector<int64_t>& a_shape,
                 const std::vector<int64_t>& b_shape, const std::vector<int64_t>& out_shape, CUdeviceptr a,
                 CUdeviceptr b, CUdeviceptr out);

}  // namespace stitch::runtime::cuda
