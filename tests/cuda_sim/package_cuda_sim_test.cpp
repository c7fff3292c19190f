// CUDA packages (docs/packages.md, GPU targets) on the simulated driver: built
// by NVRTC without a device, loaded from their PTX (what cuda-sim loads; a
// newer GPU's driver compiles the same PTX), run against the interpreter; a
// package whose every target is newer than the device is refused.
#include <gtest/gtest.h>

#include <filesystem>

#include "package/cuda/cuda_package.h"
#include "package/package_file.h"
#include "random_graph.h"
#include "sim_context.h"
#include "stitch/error.h"
#include "stitch/interpreter.h"
#include "stitch/text.h"
#include "tensor_compare.h"
#include "scratch_directory.h"

namespace stitch::gpu_testing {
namespace {

namespace fs = std::filesystem;

constexpr const char* kGraph = R"(
graph block(x: f32[37, 100], gamma: f32[100], beta: f32[100]) -> (f32[37, 100]) {
  n = layer_norm(x, gamma, beta, axes=[-1], eps=1e-5)
  y = tanh(n)
  return y
}
)";

class CudaPackage : public ::testing::Test {
 protected:
  void SetUp() override {
  }
  package::Package build(const std::vector<std::string>& arches) {
    runtime::cuda::CubinCache cache(root_ / "cache", std::nullopt, nullptr);
    package::PackageRequest request;
    request.backend = "cuda";
    request.arches = arches;
    return package::build_cuda_package(parse_module(kGraph).graphs.front(), request, cache);
  }
  stitch::testing::ScratchDirectory scratch_{"stitch-cuda-package"};
  const fs::path root_ = scratch_.path();
};

TEST_F(CudaPackage, BuiltWithoutADeviceAndRunOnItsPtx) {
  for (const std::vector<std::string>& arches : {std::vector<std::string>{"sm_80", "sm_90"}, {"sm_80"}}) {
    const package::Package built = build(arches);
    ASSERT_EQ(built.targets.size(), arches.size());
    for (const package::PackageTarget& t : built.targets) {
      ASSERT_EQ(t.objects.size(), 1u);
      EXPECT_EQ(t.objects[0].bytes.rfind("\x7f" "ELF", 0), 0u) << t.arch;  // a cubin
      EXPECT_NE(t.ptx.at(t.objects[0].source_sha256).find(".target " + t.arch), std::string::npos) << t.arch;
    }
    const std::string path = (root_ / "block.stitchpkg").string();
    package::write_package(path, built);
    // sm_90 on the simulated H100 itself; sm_80 alone: the older target's PTX.
    runtime::cuda::CudaExecutable exe = package::load_cuda_package(package::read_package(path), path, sim_context());
    EXPECT_EQ(exe.fallback(), "");
    const std::vector<Tensor> in = testing::random_inputs(exe.graph(), 3, {});
    EXPECT_TRUE(testing::outputs_match_interpreter(exe.run(in), interpret(exe.graph(), in), true, 100));
  }
}

TEST_F(CudaPackage, APackageForNewerGpusOnlyIsRefused) {
  const std::string path = (root_ / "new.stitchpkg").string();
  package::write_package(path, build({"sm_100"}));
  try {
    package::load_cuda_package(package::read_package(path), path, sim_context());
    ADD_FAILURE() << "an sm_100 package loaded on sm_90";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("built for sm_100; this GPU is sm_90"), std::string::npos) << e.what();
  }
  try {
    build({"gfx90a"});
    ADD_FAILURE() << "gfx90a accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("--arch gfx90a: not a GPU architecture"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace stitch::gpu_testing
