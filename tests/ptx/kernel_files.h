// The nvcc-compiled kernels of tests/ptx/kernels (<build>/ptx_kernels, built
// when nvcc is found; STITCH_PTX_KERNEL_DIR), for the PTX tests that read them.
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace stitch::ptx::testing {

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Every .ptx file of the kernel directory, sorted (none without nvcc).
inline std::vector<std::filesystem::path> kernel_ptx_files() {
  std::vector<std::filesystem::path> files;
#ifdef STITCH_PTX_KERNEL_DIR
  for (const auto& entry : std::filesystem::directory_iterator(STITCH_PTX_KERNEL_DIR)) {
    if (entry.path().extension() == ".ptx") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
#endif
  return files;
}

}  // namespace stitch::ptx::testing
