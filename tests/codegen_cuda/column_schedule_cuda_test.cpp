// The block-tile column schedule (docs/lowering.md, Column schedules) in CUDA:
// column reductions of several kinds, forced into tiles, compiled by NVRTC for
// sm_80 and sm_90 and assembled by ptxas; each tile kernel keeps its partials
// in shared memory and combines them after one barrier, with no atomics.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "codegen/cuda/cuda_emitter.h"
#include "codegen/cuda/nvrtc_check.h"
#include "cuda_corpus.h"
#include "stitch/text.h"
#include "text_contains.h"

namespace stitch::testing {
namespace {

using schedule::RowScheduleTarget;

TEST(ColumnScheduleCuda, BlockTilesCompile) {
  const std::vector<std::string> texts = {
      "graph cols(x: f32[100, 45]) -> (f32[45], f32[45]) {\n  s = reduce_sum(x, axes=[0])\n"
      "  m = reduce_max(x, axes=[0])\n  return s, m\n}\n",
      "graph half(x: f16[B, 40]) -> (f16[40]) {\n  s = reduce_mean(x, axes=[0])\n  return s\n}\n",
      "graph middle(x: f32[4, 30, 5]) -> (f32[4, 5]) {\n  s = reduce_sum(x, axes=[1])\n  return s\n}\n",
  };
  RowScheduleTarget target = RowScheduleTarget::gpu();
  target.forced_column_groups = 8;
  std::vector<kir::Kernel> kernels;
  for (const std::string& text : texts) {
    const Graph g = parse_module(text).graphs.front();
    LoweredKernels lowered = lower_for_cuda(g, PlannerKind::Xla, identifier("k_" + g.name()), target);
    EXPECT_TRUE(lowered.not_lowered.empty()) << g.name();
    for (kir::Kernel& k : lowered.kernels) kernels.push_back(std::move(k));
  }
  ASSERT_EQ(kernels.size(), texts.size());
  const std::string source = codegen::cuda::emit_cuda_translation_unit(kernels);
  for (const std::string arch : {"sm_80", "sm_90"}) {
    SCOPED_TRACE(arch);
    const codegen::cuda::NvrtcResult r = codegen::cuda::compile_with_nvrtc(source, arch, "column_schedules.cu");
    ASSERT_TRUE(r.ok) << r.log << "\n---- source ----\n" << source;
    const codegen::cuda::ToolResult ptxas = codegen::cuda::run_ptxas(r.ptx, arch);
    EXPECT_TRUE(ptxas.ok) << ptxas.command << "\n" << ptxas.output;
    for (const kir::Kernel& k : kernels) {
      const std::string text = codegen::cuda::emit_cuda(k);
      SCOPED_TRACE(k.name + "\n" + text);
      const std::string ptx = ptx_entry(r.ptx, k.name);
      ASSERT_FALSE(ptx.empty());
      EXPECT_TRUE(contains(text, "// column schedule: block-tile-column [THREAD-CTA_8,GRID-CTA_32];"));
      EXPECT_TRUE(contains(text, "__shared__ float partial0[256];"));
      EXPECT_TRUE(contains(text, "__syncthreads();"));
      EXPECT_TRUE(contains(ptx, "bar.sync") || contains(ptx, "barrier.sync"));
      EXPECT_FALSE(contains(ptx, "atom."));
    }
  }
}

}  // namespace
}  // namespace stitch::testing
