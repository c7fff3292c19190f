// What the GPU suites share: a CUDA executable's results checked against the
// interpreter's under the documented allowance (stitch::output_allowance,
// src/tensor/compare.h; docs/testing.md, "Tolerances of the compiled back
// ends"), seeded inputs, and readable failures.
#pragma once

#include <cstdint>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "interpreter_differential.h"
#include "runtime/cuda/cuda_executable.h"
#include "stitch/graph.h"
#include "stitch/tensor.h"

namespace stitch::gpu_testing {

// Runs `source` on the interpreter and `exe` on the GPU with the same inputs;
// "" when they agree. When the interpreter rejects the inputs (UserError),
// the executable must reject them too, with a UserError.
std::string check_against_interpreter(runtime::cuda::CudaExecutable& exe, const Graph& source,
                                      const SymbolBindings& symbols, const std::vector<Tensor>& inputs);

// Seeded inputs for every parameter of `g` with its symbols bound by
// `symbols`; parameters that index a gather hold indices in range.
std::vector<Tensor> seeded_inputs(const Graph& g, uint64_t seed, const SymbolBindings& symbols);

// An exception's message; for NVRTC's rejection (cpu::CompileError) with the
// start of NVRTC's log, which what() leaves out.
std::string describe_failure(const std::exception& e);

// "B=7, N=7", for messages; "static" when empty.
std::string describe_bindings(const SymbolBindings& symbols);

// The comparison and the scratch directory are the CPU suites' own
// (tests/support/interpreter_differential.h).
using testing::compare_with_interpreter_outputs;
using testing::ScratchDirectory;
inline std::string compare_outputs(const Graph& source, const SymbolBindings& symbols, const std::vector<Tensor>& got,
                                   const std::vector<Tensor>& want) {
  return compare_with_interpreter_outputs(source, symbols, got, want);
}

}  // namespace stitch::gpu_testing
