// What the GPU suites share: an output-by-output comparison of a CUDA
// executable's results with the interpreter's under the documented allowance
// (stitch::output_allowance, src/tensor/compare.h; docs/testing.md,
// "Tolerances of the compiled back ends"), and a scratch directory for the
// cubin cache of one test, so a run never loads cubins an earlier build made.
#pragma once

#include <cstdint>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "runtime/cuda/cuda_executable.h"
#include "stitch/graph.h"
#include "stitch/tensor.h"

namespace stitch::gpu_testing {

// "" when every output of `got` matches `want` under the allowance of its
// cone in `source` (the graph the interpreter ran), else what differs.
std::string compare_outputs(const Graph& source, const SymbolBindings& symbols, const std::vector<Tensor>& got,
                            const std::vector<Tensor>& want);

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

// A fresh directory under the system temporary directory, removed with its
// contents when the object goes.
class ScratchDirectory {
 public:
  explicit ScratchDirectory(const std::string& prefix);
  ~ScratchDirectory();
  ScratchDirectory(const ScratchDirectory&) = delete;
  ScratchDirectory& operator=(const ScratchDirectory&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace stitch::gpu_testing
