// Every row schedule (docs/lowering.md, Row schedules) forced on softmax,
// LayerNorm, RMSNorm, log-softmax, reduce_sum and argmax at short, odd, long
// and symbolic shapes: one CUDA translation unit per schedule, compiled by
// NVRTC for sm_80 and sm_90 and assembled by ptxas. Structure: the warp
// schedules reduce by shuffles alone (no barrier, no shared scratch; only a
// row cache may be shared), block-per-row through a barrier.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "codegen/cuda/cuda_emitter.h"
#include "codegen/cuda/nvrtc_check.h"
#include "cuda_corpus.h"
#include "stitch/text.h"
#include "text_contains.h"

namespace stitch::testing {
namespace {

using schedule::RowScheduleKind;
using schedule::RowScheduleTarget;

std::vector<Graph> graphs() {
  const std::vector<std::pair<const char*, const char*>> ops = {
      {"softmax", "y = softmax(x, axis=-1)"},
      {"layernorm", "y = layer_norm(x, g, b, axes=[-1], eps=1e-5)"},
      {"rmsnorm", "y = rms_norm(x, g, axes=[-1], eps=1e-6)"},
      {"log_softmax", "y = log_softmax(x, axis=-1)"},
      {"reduce_sum", "y = reduce_sum(x, axes=[1])"},
      {"argmax", "y = argmax(x, axes=[1])"},
  };
  std::vector<Graph> out;
  for (const auto& [name, body] : ops) {
    const bool per_row = std::string(name) == "reduce_sum" || std::string(name) == "argmax";
    for (const auto& [rows, cols] : std::vector<std::pair<std::string, std::string>>{
             {"37", "5"}, {"37", "17"}, {"100", "100"}, {"4", "4096"}, {"B", "70"}}) {
      const std::string result = per_row ? fmt::format("{}[{}]", std::string(name) == "argmax" ? "i64" : "f32", rows)
                                         : fmt::format("f32[{}, {}]", rows, cols);
      const std::string text = fmt::format("graph {0}_{1}x{2}(x: f32[{1}, {2}], g: f32[{2}], b: f32[{2}]) -> ({3}) {{\n"
                                           "  {4}\n  return y\n}}\n",
                                           name, rows, cols, result, body);
      out.push_back(parse_module(text).graphs.front());
    }
  }
  return out;
}

void check_kind(RowScheduleKind kind) {
  RowScheduleTarget rows = RowScheduleTarget::gpu();
  rows.forced = kind;
  std::vector<kir::Kernel> kernels;
  for (const Graph& g : graphs()) {
    LoweredKernels lowered = lower_for_cuda(g, PlannerKind::Stitch, identifier("k_" + g.name()), rows);
    EXPECT_TRUE(lowered.not_lowered.empty()) << g.name();
    for (kir::Kernel& k : lowered.kernels) kernels.push_back(std::move(k));
  }
  const std::string source = codegen::cuda::emit_cuda_translation_unit(kernels);
  for (const std::string arch : {"sm_80", "sm_90"}) {
    SCOPED_TRACE(arch);
    const codegen::cuda::NvrtcResult r = codegen::cuda::compile_with_nvrtc(source, arch, "row_schedules.cu");
    ASSERT_TRUE(r.ok) << r.log << "\n---- source ----\n" << source;
    const codegen::cuda::ToolResult ptxas = codegen::cuda::run_ptxas(r.ptx, arch);
    EXPECT_TRUE(ptxas.ok) << ptxas.command << "\n" << ptxas.output;
    if (arch != std::string("sm_90")) continue;
    for (const kir::Kernel& k : kernels) {
      const std::string text = codegen::cuda::emit_cuda(k);
      SCOPED_TRACE(k.name + "\n" + text);
      const std::string ptx = ptx_entry(r.ptx, k.name);
      ASSERT_FALSE(ptx.empty());
      EXPECT_TRUE(contains(text, "// row schedule: " + std::string(schedule::row_schedule_kind_name(kind))) ||
                  (kind == RowScheduleKind::MultiRowPerWarp && contains(text, "// row schedule: warp-per-row")));
      EXPECT_TRUE(contains(ptx, "shfl.sync.bfly"));
      if (kind == RowScheduleKind::BlockPerRow) {
        EXPECT_TRUE(contains(text, "stitch_block_"));
        EXPECT_TRUE(contains(ptx, "bar.sync") || contains(ptx, "barrier.sync"));
        continue;
      }
      EXPECT_TRUE(contains(text, "stitch_warp_"));
      EXPECT_FALSE(contains(text, "__syncthreads"));
      EXPECT_FALSE(contains(ptx, "bar.sync") || contains(ptx, "barrier.sync"));
      // Shared memory only for row caches, never a reduction scratch.
      for (const kir::SharedBuffer& s : k.shared) EXPECT_TRUE(contains(s.name, "row_cache")) << s.name;
      EXPECT_FALSE(contains(text, "scratch"));
    }
  }
  // The device helpers the warp schedules call shuffle with __shfl_xor_sync.
  EXPECT_TRUE(contains(source, "__shfl_xor_sync"));
  if (kind == RowScheduleKind::MultiRowPerWarp) {
    EXPECT_TRUE(contains(source, "stitch_warp_reduce<stitch_op_sum, 8>"));
    EXPECT_TRUE(contains(source, "stitch_warp_arg_reduce<true, 16>"));
  }
}

TEST(RowScheduleCuda, BlockPerRowCompiles) { check_kind(RowScheduleKind::BlockPerRow); }
TEST(RowScheduleCuda, WarpPerRowCompiles) { check_kind(RowScheduleKind::WarpPerRow); }
TEST(RowScheduleCuda, MultiRowPerWarpCompiles) { check_kind(RowScheduleKind::MultiRowPerWarp); }

// Rows held in registers in vectors (docs/schedule.md, Rows in registers): the
// aligned copy of the body moves 16 bytes a load and a store, the other copy
// (buffers a view left unaligned) one element at a time.
TEST(RowScheduleCuda, HeldRowsMoveSixteenBytesAtATime) {
  for (const char* dtype : {"f32", "bf16"}) {
    SCOPED_TRACE(dtype);
    const Graph g = parse_module(fmt::format("graph held_{0}(x: {0}[64, 1024], g: {0}[1024]) -> ({0}[64, 1024]) {{\n"
                                             "  y = rms_norm(x, g, axes=[-1], eps=1e-6)\n  return y\n}}\n",
                                             dtype))
                        .graphs.front();
    LoweredKernels lowered = lower_for_cuda(g, PlannerKind::Stitch, identifier("k_" + g.name()), RowScheduleTarget::gpu());
    ASSERT_EQ(lowered.kernels.size(), 1u);
    const std::string text = codegen::cuda::emit_cuda(lowered.kernels[0]);
    EXPECT_TRUE(contains(text, "__builtin_assume_aligned(in_x_arg, 16)")) << text;
    EXPECT_TRUE(contains(text, "__ldg(reinterpret_cast<const uint4*>(&in_x[")) << text;
    EXPECT_TRUE(contains(text, "__ldg(reinterpret_cast<const uint4*>(&in_g[")) << text;
    const codegen::cuda::NvrtcResult r =
        codegen::cuda::compile_with_nvrtc(codegen::cuda::emit_cuda_translation_unit(lowered.kernels), "sm_90", "held.cu");
    ASSERT_TRUE(r.ok) << r.log;
    const std::string ptx = ptx_entry(r.ptx, lowered.kernels[0].name);
    EXPECT_TRUE(contains(ptx, "ld.global.nc.v4")) << ptx;
    EXPECT_TRUE(contains(ptx, "st.global.v4")) << ptx;
    // No shared row cache: the row stays in registers.
    for (const kir::SharedBuffer& b : lowered.kernels[0].shared) EXPECT_FALSE(contains(b.name, "row_cache")) << b.name;
  }
}

}  // namespace
}  // namespace stitch::testing
