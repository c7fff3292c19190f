// `stitch emit --backend cuda` prints a self-contained .cu that the toolkit's
// own nvcc compiles to a cubin for sm_90 (no include path into the repository).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "codegen/cuda/nvrtc_check.h"

#include "run_command.h"

namespace stitch {
namespace {

namespace fs = std::filesystem;

using ToolRun = testing::CommandRun;

ToolRun run(const std::string& command) { return testing::run_command(command); }

class EmitCuda : public ::testing::TestWithParam<std::string> {};

TEST_P(EmitCuda, NvccCompilesTheOutput) {
  const fs::path dir = fs::temp_directory_path() / ("stitch-emit-cuda-" + GetParam());
  fs::create_directories(dir);
  const fs::path cu = dir / "kernels.cu";
  const std::string workload = std::string(STITCH_SOURCE_DIR) + "/bench/workloads/" + GetParam() + ".stitch";
  const ToolRun emit = run(std::string(STITCH_CLI) + " emit --backend cuda --planner xla " + workload + " > " + cu.string());
  ASSERT_EQ(emit.status, 0) << emit.output;
  std::ifstream in(cu);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("extern \"C\" __global__ void __launch_bounds__("), std::string::npos) << text;
  const std::string nvcc = codegen::cuda::cuda_bin_dir() + "/nvcc";
  const ToolRun compile = run(nvcc + " -cubin -arch=sm_90 -o " + (dir / "kernels.cubin").string() + " " + cu.string());
  EXPECT_EQ(compile.status, 0) << compile.output << "\n" << text;
  EXPECT_TRUE(fs::exists(dir / "kernels.cubin"));
  fs::remove_all(dir);
}

// layernorm: block reductions; log_softmax: several kernels; bias_gelu: erf.
INSTANTIATE_TEST_SUITE_P(Workloads, EmitCuda, ::testing::Values("layernorm", "log_softmax", "bias_gelu"));

TEST(EmitCudaCli, UnknownBackendIsAUserError) {
  const ToolRun r = run(std::string(STITCH_CLI) + " emit --backend metal " + STITCH_SOURCE_DIR +
                    "/bench/workloads/add.stitch");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("--backend metal"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace stitch
