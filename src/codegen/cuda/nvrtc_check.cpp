#include "codegen/cuda/nvrtc_check.h"

#include <nvrtc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "stitch/error.h"

namespace stitch::codegen::cuda {
namespace {

// Owns an nvrtcProgram so every early return destroys it.
class Program {
 public:
  Program(const std::string& source, const std::string& name) {
    const nvrtcResult r = nvrtcCreateProgram(&program_, source.c_str(), name.c_str(), 0, nullptr, nullptr);
    STITCH_ASSERT(r == NVRTC_SUCCESS, fmt::format("nvrtcCreateProgram: {}", nvrtcGetErrorString(r)));
  }
  ~Program() { nvrtcDestroyProgram(&program_); }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  nvrtcProgram get() const { return program_; }

 private:
  nvrtcProgram program_ = nullptr;
};

std::string program_log(nvrtcProgram p) {
  size_t size = 0;
  if (nvrtcGetProgramLogSize(p, &size) != NVRTC_SUCCESS || size <= 1) return "";
  std::string log(size, '\0');
  nvrtcGetProgramLog(p, log.data());
  log.resize(size - 1);
  return log;
}

}  // namespace

std::vector<std::string> nvrtc_options(const std::string& arch) {
  return {"--gpu-architecture=" + arch, "--std=c++17", "--fmad=false", "--prec-div=true", "--prec-sqrt=true",
          "--ftz=false", std::string("--include-path=") + STITCH_CUDA_INCLUDE_DIR};
}

NvrtcResult compile_with_nvrtc(const std::string& source, const std::string& arch, const std::string& name) {
  Program program(source, name);
  const std::vector<std::string> options = nvrtc_options(arch);
  std::vector<const char*> argv;
  for (const std::string& o : options) argv.push_back(o.c_str());
  NvrtcResult out;
  const nvrtcResult r = nvrtcCompileProgram(program.get(), static_cast<int>(argv.size()), argv.data());
  out.log = program_log(program.get());
  if (r != NVRTC_SUCCESS) {
    if (out.log.empty()) out.log = nvrtcGetErrorString(r);
    return out;
  }
  // A real architecture gives both the PTX and the cubin; a virtual one PTX only.
  size_t size = 0;
  if (nvrtcGetPTXSize(program.get(), &size) == NVRTC_SUCCESS && size > 0) {
    out.ptx.resize(size);
    nvrtcGetPTX(program.get(), out.ptx.data());
    if (out.ptx.back() == '\0') out.ptx.pop_back();
  }
  if (arch.rfind("sm_", 0) == 0) {
    if (nvrtcGetCUBINSize(program.get(), &size) != NVRTC_SUCCESS || size == 0) {
      out.log += "nvrtc: no cubin for " + arch + "\n";
      return out;
    }
    out.cubin.resize(size);
    nvrtcGetCUBIN(program.get(), out.cubin.data());
  }
  out.ok = true;
  return out;
}

std::string cuda_bin_dir() { return STITCH_CUDA_BIN_DIR; }

ToolResult run_ptxas(const std::string& ptx, const std::string& arch) {
  namespace fs = std::filesystem;
  std::string dir_template = (fs::temp_directory_path() / "stitch-ptxas-XXXXXX").string();
  STITCH_ASSERT(mkdtemp(dir_template.data()) != nullptr, "mkdtemp failed for the ptxas scratch directory");
  const fs::path dir(dir_template);
  const fs::path input = dir / "kernels.ptx";
  {
    std::ofstream f(input);
    f << ptx;
  }
  ToolResult out;
  out.command = fmt::format("{}/ptxas -arch={} {} -o {} 2>&1", cuda_bin_dir(), arch, input.string(),
                            (dir / "kernels.cubin").string());
  FILE* pipe = popen(out.command.c_str(), "r");
  STITCH_ASSERT(pipe != nullptr, "popen failed for ptxas");
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) out.output.append(buf, n);
  const int status = pclose(pipe);
  out.ok = status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  std::error_code ignored;
  fs::remove_all(dir, ignored);
  return out;
}

}  // namespace stitch::codegen::cuda
