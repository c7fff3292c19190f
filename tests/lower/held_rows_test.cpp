// Rows held in registers (docs/schedule.md, Rows in registers): which values a
// GPU stitched row kernel keeps in registers across its passes, and in what
// vectors; none on the CPU, none when the row does not fit, none when turned off.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fusion/planner.h"
#include "ir/canonicalize.h"
#include "kir/printer.h"
#include "lower/lower_plan.h"
#include "pipeline/schedule_groups.h"
#include "schedule/held_rows.h"
#include "stitch/text.h"
#include "lower_scheduled.h"

namespace stitch::schedule {
namespace {

Graph graph(const std::string& text) { return canonicalize(parse_module(text, "<test>").graphs.front()); }

std::string softmax(const std::string& dtype, int64_t rows, int64_t cols) {
  const std::string shape = "[" + std::to_string(rows) + ", " + std::to_string(cols) + "]";
  return "graph softmax(x: " + dtype + shape + ") -> (" + dtype + shape + ") {\n  y = softmax(x, axis=-1)\n  return y\n}";
}

// The schedule of the plan's stitched group, and the names of the values it holds.
struct Held {
  GroupSchedule schedule;
  std::vector<std::string> names;
};

Held held(const Graph& g, const RowScheduleTarget& target) {
  const FusionPlan plan = plan_stitch(g);
  const std::vector<GroupSchedule> schedules = pipeline::schedule_plan(g, plan, target);
  for (size_t i = 0; i < plan.groups.size(); ++i) {
    if (plan.groups[i].kind != GroupKind::Stitched) continue;
    Held h{schedules[i], {}};
    for (int v : h.schedule.held) h.names.push_back(g.value(ValueId{v}).name);
    return h;
  }
  ADD_FAILURE() << "no stitched group";
  return {};
}

TEST(HeldRows, SoftmaxHoldsItsInputAndItsExpInVectorsOfSixteenBytes) {
  const Graph g = graph(softmax("f32", 64, 1024));
  const Held h = held(g, RowScheduleTarget::gpu());
  ASSERT_EQ(h.names.size(), 2u) << h.schedule.describe();
  EXPECT_EQ(h.names[0], "x");
  EXPECT_EQ(h.schedule.held_vector, 4) << h.schedule.describe();  // 4 f32 = 16 bytes
  // Held rows take no row cache: the shared memory keeps the scratch only.
  EXPECT_TRUE(h.schedule.cached.empty()) << h.schedule.describe();
  EXPECT_NE(h.schedule.key().find(" held ["), std::string::npos);
  EXPECT_NE(h.schedule.key().find(" vector 4"), std::string::npos);
}

TEST(HeldRows, Bf16RowsMoveEightElementsAtATime) {
  const Graph g = graph(softmax("bf16", 64, 1024));
  EXPECT_EQ(held(g, RowScheduleTarget::gpu()).schedule.held_vector, 8);
}

TEST(HeldRows, NotOnTheCpuNorWhenTurnedOff) {
  const Graph g = graph(softmax("f32", 64, 1024));
  EXPECT_TRUE(held(g, RowScheduleTarget::cpu()).schedule.held.empty());
  RowScheduleTarget off = RowScheduleTarget::gpu();
  off.held_rows = false;
  const Held h = held(g, off);
  EXPECT_TRUE(h.schedule.held.empty());
  EXPECT_FALSE(h.schedule.cached.empty()) << "the exp goes back to its shared-memory row cache";
}

TEST(HeldRows, ARowTooLongForTheRegistersIsNotHeld) {
  // 65536 floats over at most 1024 threads: 64 steps of two values each.
  const Graph g = graph(softmax("f32", 4, 65536));
  EXPECT_TRUE(held(g, RowScheduleTarget::gpu()).schedule.held.empty());
  EXPECT_FALSE(held_rows_fit(RowSchedule{RowScheduleKind::BlockPerRow, 1024, 32}, 65536, 1));
  // A 1024-thread block leaves 32 registers a thread for held values, a 256-thread one 64.
  EXPECT_EQ(held_values_limit(1024), 32);
  EXPECT_EQ(held_values_limit(256), 64);
  EXPECT_TRUE(held_rows_fit(RowSchedule{RowScheduleKind::BlockPerRow, 1024, 32}, 32768, 1));
  EXPECT_FALSE(held_rows_fit(RowSchedule{RowScheduleKind::BlockPerRow, 1024, 32}, 32768, 2));
}

TEST(HeldRows, ARowThatSplitsUnevenlyIsHeldOneElementAtATime) {
  // 1000 columns: no thread count divides the row into whole vectors.
  const Graph g = graph(softmax("f32", 64, 1000));
  const Held h = held(g, RowScheduleTarget::gpu());
  EXPECT_FALSE(h.schedule.held.empty()) << h.schedule.describe();
  EXPECT_EQ(h.schedule.held_vector, 1);
}

TEST(HeldRows, StepsFollowTheRowSchedule) {
  EXPECT_EQ(row_steps(RowSchedule{RowScheduleKind::BlockPerRow, 256, 32}, 1024), 4);
  EXPECT_EQ(row_steps(RowSchedule{RowScheduleKind::BlockPerRow, 256, 32}, 100), 1);  // a short row takes 128 threads
  EXPECT_EQ(row_steps(RowSchedule{RowScheduleKind::WarpPerRow, 256, 32}, 1024), 32);
  EXPECT_EQ(row_steps(RowSchedule{RowScheduleKind::MultiRowPerWarp, 256, 8}, 7), 1);
}

// The lowering follows the schedule: the first phase loads each thread's
// vectors of x into its registers, later phases read them there, the store
// phase stages a vector of y and stores it at once; no shared row cache, and
// the step loops unrolled so the registers are indexed by constants.
TEST(HeldRows, SoftmaxLowersToVectorsInRegisters) {
  const Graph g = graph(softmax("f32", 8, 512));
  RowScheduleTarget gpu = RowScheduleTarget::gpu();
  gpu.forced = RowScheduleKind::BlockPerRow;
  const std::vector<lower::LoweredGroup> lowered = stitch::testing::lower_with_default_schedules(g, plan_stitch(g), "k", gpu);
  ASSERT_EQ(lowered.size(), 1u);
  ASSERT_TRUE(lowered[0].kernel) << lowered[0].not_lowered_reason;
  const kir::Kernel& k = *lowered[0].kernel;
  EXPECT_EQ(k.aligned_bytes, kHeldVectorBytes);
  const std::string text = kir::print_kernel(k);
  EXPECT_EQ(text.find("row_cache"), std::string::npos) << text;
  EXPECT_NE(text.find("vector row_reg0[mul(step0, 4) +: 4] = in_x["), std::string::npos) << text;
  EXPECT_NE(text.find("vector out_y["), std::string::npos) << text;
  EXPECT_NE(text.find("in unroll("), std::string::npos) << text;
  EXPECT_EQ(text.find("serial("), std::string::npos) << text;
  // x is read from global memory once: by the vector load of the first phase.
  EXPECT_EQ(text.find("in_x[", text.find("in_x[") + 1), std::string::npos) << text;
}

}  // namespace
}  // namespace stitch::schedule
