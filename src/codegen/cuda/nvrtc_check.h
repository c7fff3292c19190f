// Compile checks for generated CUDA C (docs/cuda-backend.md, Compile checks):
// NVRTC to PTX and, for a real architecture, a cubin; the toolkit's ptxas on
// that PTX. There is no GPU in this: the runtime that
// loads and launches the cubins is a later stage.
#pragma once

#include <string>
#include <vector>

namespace stitch::codegen::cuda {

struct NvrtcResult {
  bool ok = false;
  std::string log;      // NVRTC's diagnostics (warnings too, when ok)
  std::string ptx;      // always, when ok
  std::string cubin;    // for a real architecture (sm_XX)
};

// The options every generated unit compiles with: the architecture
// ("sm_90" -> a cubin, "compute_80" -> PTX), C++17, no FMA contraction (the
// helpers use _rn intrinsics anyway), IEEE division and square root, and the
// toolkit's include directory for cuda_fp16.h / cuda_bf16.h.
std::vector<std::string> nvrtc_options(const std::string& arch);

// Compiles `source` with NVRTC; `name` is the file name diagnostics cite.
NvrtcResult compile_with_nvrtc(const std::string& source, const std::string& arch,
                               const std::string& name = "stitch_kernels.cu");

struct ToolResult {
  bool ok = false;
  std::string command;
  std::string output;  // stdout and stderr together
};

// The toolkit's bin directory (ptxas, nvcc), fixed when Stitch was configured.
std::string cuda_bin_dir();

// Runs `ptxas -arch=ARCH` on `ptx` (written to a scratch file) and reports its output.
ToolResult run_ptxas(const std::string& ptx, const std::string& arch);

}  // namespace stitch::codegen::cuda
