// Stitched kernels lay their shared buffers out in one arena as the
// shared-memory plan says (docs/shared-memory.md, Stitched kernels): KIR
// offsets, the CUDA arena and typed pointers, NVRTC and ptxas for sm_80/sm_90.
#include <gtest/gtest.h>

#include "codegen/cuda/cuda_emitter.h"
#include "codegen/cuda/nvrtc_check.h"
#include "cuda_corpus.h"
#include "kir/printer.h"
#include "stitch/text.h"
#include "text_contains.h"

namespace stitch::testing {
namespace {

using schedule::RowScheduleKind;
using schedule::RowScheduleTarget;

// Rows held in registers take no row cache (docs/schedule.md, Rows in
// registers), so these kernels keep their rows in shared memory.
kir::Kernel stitched(const std::string& text, RowScheduleKind kind) {
  RowScheduleTarget rows = RowScheduleTarget::gpu();
  rows.forced = kind;
  rows.held_rows = false;
  const Graph g = parse_module(text).graphs.front();
  LoweredKernels lowered = lower_for_cuda(g, PlannerKind::Stitch, "k_" + g.name(), rows);
  EXPECT_TRUE(lowered.not_lowered.empty());
  EXPECT_EQ(lowered.kernels.size(), 1u);
  return lowered.kernels.at(0);
}

constexpr const char* kSoftmax = "graph sm(x: f32[64, 1024]) -> (f32[64, 1024]) {\n"
                                 "  y = softmax(x, axis=-1)\n  return y\n}\n";

// Block per row: the row cache of exp takes the max's scratch (the block
// reduction's barrier ends that scratch's life); the sum's scratch follows.
TEST(SharedArena, SoftmaxRowCacheReusesTheMaxScratch) {
  const kir::Kernel k = stitched(kSoftmax, RowScheduleKind::BlockPerRow);
  EXPECT_EQ(k.shared_arena_bytes, 4128);
  const std::string text = kir::print_kernel(k);
  EXPECT_TRUE(contains(text, "shared arena: 4128 bytes")) << text;
  EXPECT_TRUE(contains(text, "shared row_cache0: f32[1024] at 0")) << text;
  EXPECT_TRUE(contains(text, "at 4096")) << text;
  const std::string cuda = codegen::cuda::emit_cuda(k);
  EXPECT_TRUE(contains(cuda, "__shared__ __align__(16) unsigned char stitch_shared_arena[4128];")) << cuda;
  EXPECT_TRUE(contains(cuda, "float* const row_cache0 = reinterpret_cast<float*>(stitch_shared_arena + 0);")) << cuda;
  const std::string source = codegen::cuda::emit_cuda_translation_unit({k});
  for (const std::string arch : {"sm_80", "sm_90"}) {
    const codegen::cuda::NvrtcResult r = codegen::cuda::compile_with_nvrtc(source, arch, "arena.cu");
    ASSERT_TRUE(r.ok) << r.log << "\n" << source;
    const codegen::cuda::ToolResult ptxas = codegen::cuda::run_ptxas(r.ptx, arch);
    EXPECT_TRUE(ptxas.ok) << ptxas.output;
  }
}

// Warp per row has no scratch, so nothing to share: separate buffers, no arena.
TEST(SharedArena, WarpPerRowHasNoArena) {
  const kir::Kernel k = stitched("graph sm(x: f32[64, 100]) -> (f32[64, 100]) {\n"
                                 "  y = softmax(x, axis=-1)\n  return y\n}\n",
                                 RowScheduleKind::WarpPerRow);
  EXPECT_EQ(k.shared_arena_bytes, 0);
  for (const kir::SharedBuffer& s : k.shared) EXPECT_EQ(s.offset, -1) << s.name;
  EXPECT_FALSE(contains(codegen::cuda::emit_cuda(k), "stitch_shared_arena"));
}

// On a queried device the row caches may use half its opt-in shared memory
// (RowScheduleTarget::shared_budget_bytes): a 12288-wide softmax row (48 KiB of
// exp) stays cached, so the block needs more than the static 48 KiB and the
// whole arena becomes dynamic shared memory the launcher sizes.
TEST(SharedArena, OverTheStaticLimitTheArenaIsDynamic) {
  const Graph g = parse_module("graph sm(x: f32[64, 12288]) -> (f32[64, 12288]) {\n"
                               "  y = softmax(x, axis=-1)\n  return y\n}\n")
                      .graphs.front();
  schedule::GpuTarget device = schedule::sm90_target();
  device.shared_bytes_per_block_optin = 232448;  // an H100's opt-in maximum
  RowScheduleTarget rows = RowScheduleTarget::for_device(device);
  rows.forced = RowScheduleKind::BlockPerRow;
  rows.held_rows = false;
  EXPECT_EQ(rows.shared_budget_bytes(), 113 * 1024);
  LoweredKernels lowered = lower_for_cuda(g, PlannerKind::Stitch, "k_big", rows);
  ASSERT_TRUE(lowered.not_lowered.empty());
  ASSERT_EQ(lowered.kernels.size(), 1u);
  const kir::Kernel& k = lowered.kernels[0];
  EXPECT_GT(k.shared_arena_bytes, kir::kStaticSharedBytes);
  bool cached = false;
  for (const kir::SharedBuffer& s : k.shared) {
    EXPECT_GE(s.offset, 0) << s.name << " lives outside the arena";
    cached = cached || s.name.rfind("row_cache", 0) == 0;
  }
  EXPECT_TRUE(cached) << kir::print_kernel(k);
  const std::string cuda = codegen::cuda::emit_cuda(k);
  EXPECT_TRUE(contains(cuda, "extern __shared__ __align__(16) unsigned char stitch_shared_arena[];")) << cuda;
  const codegen::cuda::NvrtcResult r =
      codegen::cuda::compile_with_nvrtc(codegen::cuda::emit_cuda_translation_unit({k}), "sm_90", "dynamic.cu");
  ASSERT_TRUE(r.ok) << r.log;
  const codegen::cuda::ToolResult ptxas = codegen::cuda::run_ptxas(r.ptx, "sm_90");
  EXPECT_TRUE(ptxas.ok) << ptxas.output;

  // The same graph on the table target keeps the static budget: exp is
  // recomputed, and everything fits 48 KiB.
  RowScheduleTarget table = RowScheduleTarget::gpu();
  table.forced = RowScheduleKind::BlockPerRow;
  table.held_rows = false;
  const kir::Kernel small = lower_for_cuda(g, PlannerKind::Stitch, "k_small", table).kernels.at(0);
  EXPECT_LE(small.shared_arena_bytes, kir::kStaticSharedBytes);
  EXPECT_FALSE(contains(codegen::cuda::emit_cuda(small), "extern __shared__"));
}

}  // namespace
}  // namespace stitch::testing
