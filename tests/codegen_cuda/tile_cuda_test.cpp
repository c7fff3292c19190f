// Tile-group kernels (docs/lowering.md, Tile groups) emitted as CUDA C and
// compiled by NVRTC for sm_80 and sm_90, then by ptxas: the per-phase shared
// results and the barriers between phases must survive into the PTX.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "codegen/cuda/cuda_emitter.h"
#include "codegen/cuda/nvrtc_check.h"
#include "ir/canonicalize.h"
#include "lower/lower_tile_group.h"
#include "stitch/text.h"
#include "text_contains.h"

namespace stitch::testing {
namespace {

// The whole graph as one tile kernel.
kir::Kernel tile_kernel(const std::string& text, const std::string& name) {
  const Graph g = canonicalize(parse_module(text).graphs.front());
  FusionGroup group;
  group.kind = GroupKind::Stitched;
  for (int n = 0; n < static_cast<int>(g.nodes().size()); ++n) group.nodes.push_back(n);
  for (const GraphOutput& out : g.outputs()) group.roots.push_back(g.value(out.value).producer);
  std::sort(group.roots.begin(), group.roots.end());
  EXPECT_EQ(lower::tile_group_lowering_problem(g, group), "") << name;
  return lower::lower_tile_group(g, group, name);
}

TEST(TileCuda, CompilesForSm80AndSm90) {
  const std::vector<kir::Kernel> kernels = {
      tile_kernel(R"(graph center(x: f32[B, 32, 48]) -> (f32[B, 32, 48]) {
  rm = reduce_mean(x, axes=[2], keepdims=true)
  cm = reduce_mean(x, axes=[1], keepdims=true)
  y = sub(sub(x, broadcast(rm, shape=[B, 32, 48])), broadcast(cm, shape=[B, 32, 48]))
  return y
})",
                  "tile_center"),
      tile_kernel(R"(graph chain(x: f16[B, 16, 24]) -> (f16[B, 16, 24], f16[B, 24]) {
  c = sub(x, reduce_mean(x, axes=[2], keepdims=true))
  cs = reduce_sum(mul(c, c), axes=[1])
  y = mul(c, reshape(cs, shape=[B, 1, 24]))
  return y, cs
})",
                  "tile_chain_f16"),
  };
  const std::string source = codegen::cuda::emit_cuda_translation_unit(kernels);
  for (const std::string arch : {"sm_80", "sm_90"}) {
    SCOPED_TRACE(arch);
    const codegen::cuda::NvrtcResult r = codegen::cuda::compile_with_nvrtc(source, arch, "tile_kernels.cu");
    ASSERT_TRUE(r.ok) << r.log << "\n---- source ----\n" << source;
    EXPECT_FALSE(r.cubin.empty());
    const codegen::cuda::ToolResult ptxas = codegen::cuda::run_ptxas(r.ptx, arch);
    EXPECT_TRUE(ptxas.ok) << ptxas.command << "\n" << ptxas.output;
    EXPECT_TRUE(contains(r.ptx, "bar.sync") || contains(r.ptx, "barrier.sync"));
    EXPECT_TRUE(contains(r.ptx, "st.shared"));
    EXPECT_TRUE(contains(r.ptx, "ld.shared"));
  }
  for (const kir::Kernel& k : kernels) {
    SCOPED_TRACE(k.name);
    const std::string text = codegen::cuda::emit_cuda(k);
    EXPECT_TRUE(contains(text, "__syncthreads()")) << text;
    EXPECT_TRUE(contains(text, "__shared__")) << text;
  }
}

}  // namespace
}  // namespace stitch::testing
