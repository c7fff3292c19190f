// Kernel IR -> C++ for the CPU back end (DESIGN.md, Kernel IR; docs/cpu-backend.md).
// The grid loop becomes an OpenMP parallel loop over blocks; each thread region
// is split into phases at barriers and reductions, each phase a loop over the
// block's threads. Kernels verify before emission; a construct the emitter does
// not handle yet raises InternalError("C++ emitter: ... not supported yet").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kir/kernel.h"

namespace stitch::codegen::cpu {

// The calling convention of every emitted kernel (docs/cpu-backend.md, ABI):
//   extern "C" void NAME(void* const* buffers, const int64_t* scalars);
// buffers[i] points at the i-th buffer parameter's first element (f16 and bf16 as
// uint16_t bit patterns, bool as one byte 0/1); scalars[j] is the j-th scalar
// parameter in a 64-bit slot: integers and bools sign-extended, floats as the
// bits of a double.
inline constexpr std::string_view kKernelSignature = "void(void* const*, const int64_t*)";

// One kernel as a C++ function definition (no helper header): for golden tests.
std::string emit_cpp_kernel(const kir::Kernel& kernel);

// A complete translation unit: the embedded helper header, then every kernel.
std::string emit_cpp_translation_unit(const std::vector<kir::Kernel>& kernels);

// The text of stitch_cpu_runtime.h, embedded at build time.
std::string_view cpu_runtime_header_text();

}  // namespace stitch::codegen::cpu
