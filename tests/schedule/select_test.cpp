// Which row schedule the lowering takes (docs/schedule.md, Choosing the row
// schedule): pinned for the bench shapes and a few short rows on sm_90, sm_80
// and the CPU, for forced kinds, and through describe_group for a stitched
// softmax whose roots are not reductions.
#include <cstdint>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "fusion/planner.h"
#include "ir/canonicalize.h"
#include "schedule/plan_explain.h"
#include "schedule/select.h"
#include "stitch/text.h"

namespace stitch::schedule {
namespace {

GroupDescription rows_of(int64_t rows, int64_t cols, int64_t inputs = 1, double sfu = 0) {
  GroupDescription g;
  g.pattern = GroupPattern::RowReduction;
  g.rows = rows;
  g.cols = cols;
  g.inputs = inputs;
  g.sfu_per_element = sfu;
  return g;
}

std::string chosen(const GroupDescription& d, int64_t static_len, const RowScheduleTarget& t) {
  return choose_row_schedule(d, static_len, t).schedule.describe();
}

TEST(RowScheduleValue, NamesAndTemplates) {
  EXPECT_EQ((RowSchedule{RowScheduleKind::BlockPerRow, 256, 32}).template_text(), "[GRID,CTA];");
  EXPECT_EQ((RowSchedule{RowScheduleKind::WarpPerRow, 256, 32}).template_text(), "[GRID-WARP_8,CTA];");
  EXPECT_EQ((RowSchedule{RowScheduleKind::MultiRowPerWarp, 128, 8}).template_text(), "[GRID-WARP_4-CTA_4,CTA];");
  EXPECT_EQ((RowSchedule{RowScheduleKind::MultiRowPerWarp, 128, 8}).rows_per_block(), 16);
  EXPECT_EQ((RowSchedule{RowScheduleKind::WarpPerRow, 256, 32}).rows_per_block(), 8);
  for (const std::string& name : row_schedule_kind_names()) {
    ASSERT_TRUE(parse_row_schedule_kind(name)) << name;
    EXPECT_EQ(row_schedule_kind_name(*parse_row_schedule_kind(name)), name);
  }
  EXPECT_FALSE(parse_row_schedule_kind("thread-per-row"));
  EXPECT_EQ(multi_row_lanes(1), 2);
  EXPECT_EQ(multi_row_lanes(5), 8);
  EXPECT_EQ(multi_row_lanes(16), 16);
  EXPECT_EQ(multi_row_lanes(17), 16);
  EXPECT_EQ(multi_row_lanes(32), std::nullopt);
  EXPECT_EQ(multi_row_lanes(-1), std::nullopt);
}

// The bench shapes (bench/workloads): softmax and rmsnorm 4096 x 4096 (rmsnorm
// reads gamma too), layernorm 16384 x 1024; and short rows.
TEST(ChooseRowSchedule, Sm90) {
  const RowScheduleTarget sm90 = RowScheduleTarget::gpu("sm_90");
  EXPECT_EQ(chosen(rows_of(4096, 4096, 1, 1), 4096, sm90), "warp-per-row [GRID-WARP_8,CTA]; 256 threads");
  EXPECT_EQ(chosen(rows_of(4096, 4096, 2, 1), 4096, sm90), "warp-per-row [GRID-WARP_8,CTA]; 256 threads");
  EXPECT_EQ(chosen(rows_of(16384, 1024, 3, 1), 1024, sm90), "warp-per-row [GRID-WARP_8,CTA]; 256 threads");
  EXPECT_EQ(chosen(rows_of(65536, 8), 8, sm90),
            "multi-row-per-warp [GRID-WARP_8-CTA_4,CTA]; 256 threads, 8 lanes per row");
  // A symbolic row length rules multi-row-per-warp out: the next best the lowering implements.
  EXPECT_EQ(choose_row_schedule(rows_of(65536, 8), -1, sm90).schedule.kind, RowScheduleKind::WarpPerRow);
  const RowScheduleChoice c = choose_row_schedule(rows_of(4096, 4096), 4096, sm90);
  EXPECT_EQ(c.rank, 1);
  EXPECT_EQ(c.reason.substr(0, 7), "rank 1 ");
}

TEST(ChooseRowSchedule, Sm80) {
  // The A100's smaller machine fills with more, smaller blocks.
  EXPECT_EQ(chosen(rows_of(4096, 4096, 1, 1), 4096, RowScheduleTarget::gpu("sm_80")),
            "warp-per-row [GRID-WARP_2,CTA]; 64 threads");
}

TEST(ChooseRowSchedule, Cpu) {
  const RowScheduleTarget cpu = RowScheduleTarget::cpu();
  EXPECT_EQ(chosen(rows_of(4096, 4096, 1, 1), 4096, cpu), "warp-per-row [GRID-WARP_8,CTA]; 256 threads");
  EXPECT_EQ(chosen(rows_of(16384, 1024, 3, 1), 1024, cpu), "warp-per-row [GRID-WARP_8,CTA]; 256 threads");
  EXPECT_EQ(chosen(rows_of(37, 5), 5, cpu), "multi-row-per-warp [GRID-WARP_8-CTA_4,CTA]; 256 threads, 8 lanes per row");
  EXPECT_EQ(chosen(rows_of(37, 5), -1, cpu), "warp-per-row [GRID-WARP_8,CTA]; 256 threads");
  // Fewer rows than a block's 8 warps (a full reduction's last stage).
  EXPECT_EQ(chosen(rows_of(1, 64), 64, cpu), "block-per-row [GRID,CTA]; 256 threads");
  // A stitched group of short rows (two phases): a short block per row.
  EXPECT_EQ(choose_row_schedule(rows_of(37, 5), 5, cpu, 2).schedule.describe(), "block-per-row [GRID,CTA]; 256 threads");
}

TEST(ChooseRowSchedule, Forced) {
  RowScheduleTarget t = RowScheduleTarget::gpu();
  t.forced = RowScheduleKind::BlockPerRow;
  EXPECT_EQ(chosen(rows_of(4096, 4096), 4096, t), "block-per-row [GRID,CTA]; 256 threads");
  t.forced = RowScheduleKind::MultiRowPerWarp;
  EXPECT_EQ(chosen(rows_of(37, 17), 17, t), "multi-row-per-warp [GRID-WARP_8-CTA_2,CTA]; 256 threads, 16 lanes per row");
  // Rows of a warp or more cannot share one: warp-per-row.
  EXPECT_EQ(chosen(rows_of(37, 100), 100, t), "warp-per-row [GRID-WARP_8,CTA]; 256 threads");
  EXPECT_EQ(t.name(), "sm_90 (forced multi-row-per-warp)");
}

// softmax over the last axis of f32[rows, cols].
Graph softmax_rows(int64_t rows, int64_t cols) {
  const std::string type = "f32[" + std::to_string(rows) + ", " + std::to_string(cols) + "]";
  return canonicalize(
      parse_module("graph s(x: " + type + ") -> (" + type + ") {\n  y = softmax(x, axis=-1)\n  return y\n}\n")
          .graphs.front());
}

// A stitched softmax's roots are divisions: the group is described by its
// first reduction, and explain says which schedule the lowering takes.
TEST(ChooseRowSchedule, StitchedSoftmaxThroughThePlan) {
  const Graph g = softmax_rows(4096, 4096);
  const FusionPlan p = plan(g, PlannerKind::Stitch);
  ASSERT_EQ(p.groups.size(), 1u);
  const std::optional<RowScheduleChoice> c = choose_row_schedule(g, p.groups[0], RowScheduleTarget::gpu());
  ASSERT_TRUE(c);
  // Three passes over rows of 16 KiB: warp-per-row would re-read them from
  // DRAM (64 resident per SM overflow the L1); a block per row caches its row
  // in shared memory (H200: 0.91 of copy against 0.24).
  EXPECT_EQ(c->schedule.kind, RowScheduleKind::BlockPerRow);
  const std::string text = explain_plan(g, p, sm90_target(), {}, 3);
  EXPECT_NE(text.find("3 passes over each row"), std::string::npos) << text;
  EXPECT_NE(text.find("chosen: block-per-row [GRID,CTA]; 256 threads (rank 1 of "), std::string::npos) << text;
  EXPECT_NE(text.find("the lowering uses it"), std::string::npos) << text;
  // On the CPU two warps a block, the most whose exp row caches (16 KiB a
  // row) fit the 48 KiB budget.
  const std::string cpu = explain_row_schedules(g, p, RowScheduleTarget::cpu());
  EXPECT_NE(cpu.find("chosen: warp-per-row [GRID-WARP_2,CTA]; 64 threads"), std::string::npos) << cpu;
}

// Rows of 512 floats: the rows resident on an SM fit half its L1, so the
// later passes hit there and a warp per row wins (H200: 0.71 of copy against
// 0.42 block-per-row).
TEST(ChooseRowSchedule, ShortStitchedRowsStayWarpPerRowOnTheGpu) {
  const Graph g = softmax_rows(32768, 512);
  const FusionPlan p = plan(g, PlannerKind::Stitch);
  ASSERT_EQ(p.groups.size(), 1u);
  EXPECT_EQ(choose_row_schedule(g, p.groups[0], RowScheduleTarget::gpu()).value().schedule.kind,
            RowScheduleKind::WarpPerRow);
}

// Nothing to cache (LayerNorm recomputes x - mean), a symbolic row, or a
// forced kind: eight warps, as for a reduction group.
TEST(ChooseRowSchedule, CpuStitchedGroupsKeepEightWarpsWithoutARowCache) {
  auto cpu_choice = [](const std::string& text, const RowScheduleTarget& t) {
    const Graph g = canonicalize(parse_module(text).graphs.front());
    const FusionPlan p = plan(g, PlannerKind::Stitch);
    EXPECT_EQ(p.groups.size(), 1u);
    RowScheduleTarget without_l1 = t;  // the L1 rule aside (CpuShortRowsFillHalfTheL1)
    without_l1.cpu_l1_bytes = 0;
    return choose_row_schedule(g, p.groups[0], without_l1)->schedule.describe();
  };
  EXPECT_EQ(cpu_choice(R"(graph l(x: f32[64, 1024], g: f32[1024], b: f32[1024]) -> (f32[64, 1024]) {
  y = layer_norm(x, g, b, axes=[-1], eps=1e-5)
  return y
})", RowScheduleTarget::cpu()), "warp-per-row [GRID-WARP_8,CTA]; 256 threads");
  EXPECT_EQ(cpu_choice(R"(graph s(x: f32[64, N]) -> (f32[64, N]) {
  y = softmax(x, axis=-1)
  return y
})", RowScheduleTarget::cpu()), "warp-per-row [GRID-WARP_8,CTA]; 256 threads");
  // Rows of 1024: a block of eight rows caches them within 48 KiB.
  EXPECT_EQ(cpu_choice(R"(graph s(x: f32[64, 1024]) -> (f32[64, 1024]) {
  y = softmax(x, axis=-1)
  return y
})", RowScheduleTarget::cpu()), "warp-per-row [GRID-WARP_8,CTA]; 256 threads");
  RowScheduleTarget forced = RowScheduleTarget::cpu();
  forced.forced = RowScheduleKind::WarpPerRow;
  EXPECT_EQ(cpu_choice(R"(graph s(x: f32[64, 4096]) -> (f32[64, 4096]) {
  y = softmax(x, axis=-1)
  return y
})", forced), "warp-per-row [GRID-WARP_8,CTA]; 256 threads");
}

// The CPU's choice for the one group the stitch planner makes of `text`,
// under an L1 and an L2 of the given sizes.
RowScheduleChoice cpu_caches_choice(const std::string& text, int64_t l1_bytes, int64_t l2_bytes) {
  const Graph g = canonicalize(parse_module(text).graphs.front());
  const FusionPlan p = plan(g, PlannerKind::Stitch);
  EXPECT_EQ(p.groups.size(), 1u);
  RowScheduleTarget t = RowScheduleTarget::cpu();
  t.cpu_l1_bytes = l1_bytes;
  t.cpu_l2_bytes = l2_bytes;
  return choose_row_schedule(g, p.groups[0], t).value_or(RowScheduleChoice{});
}

// The rows a CPU block holds between phases fill at most a quarter of the L2:
// LayerNorm over 16384 floats holds 64 KiB a row, so 4 warps under a 1 MiB
// L2, 8 under 2 MiB, 1 under 256 KiB; 8192 floats keep 8 under 1 MiB. A
// symbolic row keeps 8 whatever the L2; a one-phase reduction takes 1.
TEST(ChooseRowSchedule, CpuStitchedRowsFillAQuarterOfTheL2) {
  auto choice = [](const std::string& text, int64_t l2_bytes) { return cpu_caches_choice(text, 32 << 10, l2_bytes); };
  auto with_l2 = [&](const std::string& text, int64_t l2_bytes) { return choice(text, l2_bytes).schedule.describe(); };
  const char* wide = R"(graph l(x: f32[64, 16384], g: f32[16384], b: f32[16384]) -> (f32[64, 16384]) {
  y = layer_norm(x, g, b, axes=[-1], eps=1e-5)
  return y
})";
  EXPECT_EQ(with_l2(wide, 1 << 20), "warp-per-row [GRID-WARP_4,CTA]; 128 threads");
  const std::string reason = choice(wide, 1 << 20).reason;
  EXPECT_NE(reason.find("4 warp(s) a block, so that the rows it holds (64 KiB each) fill at most a quarter of the "
                         "1024 KiB L2"),
            std::string::npos)
      << reason;
  EXPECT_EQ(with_l2(wide, 2 << 20), "warp-per-row [GRID-WARP_8,CTA]; 256 threads");
  EXPECT_EQ(with_l2(wide, 256 << 10), "warp-per-row [GRID-WARP_1,CTA]; 32 threads");
  EXPECT_EQ(with_l2(R"(graph l(x: f32[64, 8192], g: f32[8192], b: f32[8192]) -> (f32[64, 8192]) {
  y = layer_norm(x, g, b, axes=[-1], eps=1e-5)
  return y
})", 1 << 20), "warp-per-row [GRID-WARP_8,CTA]; 256 threads");
  EXPECT_EQ(with_l2(R"(graph l(x: f32[64, N]) -> (f32[64, N]) {
  y = layer_norm(x, axes=[-1], eps=1e-5)
  return y
})", 64 << 10), "warp-per-row [GRID-WARP_8,CTA]; 256 threads");
  EXPECT_EQ(with_l2(R"(graph r(x: f32[64, 65536]) -> (f32[64]) {
  y = reduce_sum(x, axes=[1])
  return y
})", 64 << 10), "warp-per-row [GRID-WARP_1,CTA]; 32 threads");
}

// Rows that fill at most a quarter of the L1 data cache: the warps whose rows
// fill at most half of it. LayerNorm over 1024 floats (4 KiB) takes 4 warps
// under a 32 KiB L1, 2 under 16 KiB, 8 under 64 KiB; over 4096 floats (16
// KiB, more than a quarter of 32 KiB) it keeps 8. A one-phase reduction takes
// one warp a block whatever the caches.
TEST(ChooseRowSchedule, CpuShortRowsFillHalfTheL1) {
  auto choice = [](const std::string& text, int64_t l1_bytes) { return cpu_caches_choice(text, l1_bytes, 1 << 20); };
  auto layer_norm = [](int n) {
    return fmt::format(R"(graph l(x: f32[64, {0}], g: f32[{0}], b: f32[{0}]) -> (f32[64, {0}]) {{
  y = layer_norm(x, g, b, axes=[-1], eps=1e-5)
  return y
}})", n);
  };
  EXPECT_EQ(choice(layer_norm(1024), 32 << 10).schedule.describe(), "warp-per-row [GRID-WARP_4,CTA]; 128 threads");
  const std::string reason = choice(layer_norm(1024), 32 << 10).reason;
  EXPECT_NE(reason.find("4 warp(s) a block, so that its rows (4 KiB each) fill at most half the 32 KiB L1"),
            std::string::npos)
      << reason;
  EXPECT_EQ(choice(layer_norm(1024), 16 << 10).schedule.describe(), "warp-per-row [GRID-WARP_2,CTA]; 64 threads");
  EXPECT_EQ(choice(layer_norm(1024), 64 << 10).schedule.describe(), "warp-per-row [GRID-WARP_8,CTA]; 256 threads");
  EXPECT_EQ(choice(layer_norm(4096), 32 << 10).schedule.describe(), "warp-per-row [GRID-WARP_8,CTA]; 256 threads");
  const RowScheduleChoice sum = choice(R"(graph r(x: f32[4096, 1024]) -> (f32[4096]) {
  y = reduce_sum(x, axes=[1])
  return y
})", 1 << 20);
  EXPECT_EQ(sum.schedule.describe(), "warp-per-row [GRID-WARP_1,CTA]; 32 threads");
  EXPECT_NE(sum.reason.find("1 warp a block"), std::string::npos) << sum.reason;
}

// A CPU block takes warps that divide the rows (halving from what the caches
// allow): a block past the last row would keep the rows' guard around its
// stores' steps, which stay scalar. ViT's attention rows at batch 1 (12 x 197
// = 2,364) take 4 warps, a prime count of rows 1, symbolic rows keep 8.
TEST(ChooseRowSchedule, CpuBlocksTakeWarpsThatDivideTheRows) {
  auto choice = [](const std::string& text) { return cpu_caches_choice(text, 64 << 10, 1 << 20); };
  const RowScheduleChoice vit = choice(R"(graph s(x: f32[1, 12, 197, 197]) -> (f32[1, 12, 197, 197]) {
  y = softmax(x, axis=-1)
  return y
})");
  EXPECT_EQ(vit.schedule.describe(), "warp-per-row [GRID-WARP_4,CTA]; 128 threads");
  EXPECT_NE(vit.reason.find("4 warp(s) a block, which divide the 2364 rows"), std::string::npos) << vit.reason;
  EXPECT_EQ(choice(R"(graph s(x: f32[3989, 1000]) -> (f32[3989, 1000]) {
  y = softmax(x, axis=-1)
  return y
})").schedule.describe(), "warp-per-row [GRID-WARP_1,CTA]; 32 threads");
  EXPECT_EQ(choice(R"(graph s(x: f32[8, 12, 197, 197]) -> (f32[8, 12, 197, 197]) {
  y = softmax(x, axis=-1)
  return y
})").schedule.describe(), "warp-per-row [GRID-WARP_8,CTA]; 256 threads");
  EXPECT_EQ(choice(R"(graph s(x: f32[B, 197]) -> (f32[B, 197]) {
  y = softmax(x, axis=-1)
  return y
})").schedule.describe(), "warp-per-row [GRID-WARP_8,CTA]; 256 threads");
}

}  // namespace
}  // namespace stitch::schedule
