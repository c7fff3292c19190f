// Kernel IR -> CUDA C (DESIGN.md, Kernel IR; docs/cuda-backend.md). The grid
// loop is blockIdx.x, a thread region is threadIdx.x (or warp and lane), the
// other loops are plain for loops; shared buffers, barriers and reductions map
// to __shared__ arrays, __syncthreads and the shuffle helpers of
// stitch_cuda_runtime.cuh. Kernels verify before emission; a construct the
// emitter does not handle raises InternalError("CUDA emitter: ... not supported yet").
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kir/kernel.h"

namespace stitch::codegen::cuda {

// One kernel as an `extern "C" __global__` definition (no helper header): for
// golden tests. Parameters follow the Kernel IR order, buffers then scalars:
// a buffer is `const T*` (read) or `T*` with T the storage type (__half and
// __nv_bfloat16 for f16/bf16, bool one byte); a scalar is passed by value in its
// compute type (f16/bf16 scalars as a float holding the already rounded value).
std::string emit_cuda(const kir::Kernel& kernel);

// A complete, self-contained translation unit: the embedded helper header
// (with cuda_fp16.h/cuda_bf16.h only when a kernel uses f16 or bf16), then
// every kernel. NVRTC needs the toolkit's include directory only in that case.
std::string emit_cuda_translation_unit(const std::vector<kir::Kernel>& kernels);

// True when the kernel stores, loads or computes an f16 or bf16 value.
bool uses_narrow_floats(const kir::Kernel& kernel);

// The text of stitch_cuda_runtime.cuh, embedded at build time.
std::string_view cuda_runtime_header_text();

}  // namespace stitch::codegen::cuda
