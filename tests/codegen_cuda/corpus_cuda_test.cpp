// Every kernel the test corpus lowers to (bench/workloads/*.stitch and
// tests/ir/corpus/*.stitch, every graph, planners none, xla and stitch) is emitted as
// CUDA C, one translation unit per file, compiled by NVRTC for sm_80 and sm_90
// (PTX and cubin) and assembled again by the toolkit's ptxas from that PTX.
// Structure is checked per kernel, in the source and in the PTX: shuffles
// exactly where the Kernel IR reduces, barriers exactly where it has barriers
// or block reductions, shared memory exactly where it declares shared buffers.
#include <gtest/gtest.h>

#include <filesystem>

#include "codegen/cuda/cuda_emitter.h"
#include "codegen/cuda/nvrtc_check.h"
#include "cuda_corpus.h"
#include "stitch/text.h"
#include "text_contains.h"

namespace stitch::testing {
namespace {

namespace fs = std::filesystem;
using codegen::cuda::compile_with_nvrtc;
using codegen::cuda::emit_cuda;
using codegen::cuda::emit_cuda_translation_unit;

class CorpusCuda : public ::testing::TestWithParam<std::string> {};

TEST_P(CorpusCuda, CompilesForSm80AndSm90) {
  const std::string file = GetParam();
  std::vector<kir::Kernel> kernels;
  for (const Graph& g : parse_file(file).graphs) {
    for (PlannerKind planner : {PlannerKind::None, PlannerKind::Xla, PlannerKind::Stitch}) {
      const std::string prefix = identifier("k_" + g.name() + "_" + std::string(planner_name(planner)));
      LoweredKernels lowered = lower_for_cuda(g, planner, prefix);
      // Groups the lowering refuses are the CPU corpus test's business; here
      // every kernel that exists must compile.
      for (const std::string& reason : lowered.not_lowered) {
        std::cout << "[ note ] " << g.name() << " (" << planner_name(planner) << "): not lowered: " << reason << "\n";
      }
      for (kir::Kernel& k : lowered.kernels) kernels.push_back(std::move(k));
    }
  }
  ASSERT_FALSE(kernels.empty()) << file;
  const std::string source = emit_cuda_translation_unit(kernels);
  for (const std::string arch : {"sm_80", "sm_90"}) {
    SCOPED_TRACE(arch);
    const codegen::cuda::NvrtcResult r = compile_with_nvrtc(source, arch, fs::path(file).stem().string() + ".cu");
    ASSERT_TRUE(r.ok) << r.log << "\n---- source ----\n" << source;
    EXPECT_FALSE(r.cubin.empty());
    const codegen::cuda::ToolResult ptxas = codegen::cuda::run_ptxas(r.ptx, arch);
    EXPECT_TRUE(ptxas.ok) << ptxas.command << "\n" << ptxas.output;
    if (arch != std::string("sm_90")) continue;
    for (const kir::Kernel& k : kernels) {
      SCOPED_TRACE(k.name);
      const KirFeatures f = kir_features(k);
      const std::string text = emit_cuda(k);
      const std::string ptx = ptx_entry(r.ptx, k.name);
      ASSERT_FALSE(ptx.empty()) << "no PTX entry for " << k.name;
      const bool reduces = f.warp_reduction || f.block_reduction;
      EXPECT_EQ(contains(text, "__shared__"), f.shared);
      EXPECT_EQ(contains(text, "__syncthreads()"), f.barrier);
      EXPECT_EQ(contains(text, "stitch_warp_"), f.warp_reduction);
      EXPECT_EQ(contains(text, "stitch_block_"), f.block_reduction);
      EXPECT_EQ(contains(ptx, "shfl.sync.bfly"), reduces);
      EXPECT_EQ(contains(ptx, "bar.sync") || contains(ptx, "barrier.sync"), f.barrier || f.block_reduction);
      EXPECT_EQ(contains(ptx, "st.shared") || contains(ptx, "ld.shared"), f.shared);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Files, CorpusCuda, ::testing::ValuesIn(corpus_files()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           const std::string dir = fs::path(info.param).parent_path().filename().string();
                           return identifier(dir + "_" + fs::path(info.param).stem().string());
                         });

}  // namespace
}  // namespace stitch::testing
