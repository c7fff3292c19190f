// Groups of an XLA plan described for the latency evaluator, and the
// `stitch plan --explain` text (docs/schedule.md, Explaining a plan).
#include <gtest/gtest.h>

#include "fusion/planner.h"
#include "ir/canonicalize.h"
#include "schedule/plan_explain.h"
#include "stitch/text.h"

namespace stitch::schedule {
namespace {

Graph graph(const std::string& text) { return canonicalize(parse_module(text, "<test>").graphs.front()); }

GroupDescription describe(const Graph& g, const FusionGroup& group, const SymbolBindings& b = {}) {
  auto d = describe_group(g, group, b);
  EXPECT_TRUE(std::holds_alternative<GroupDescription>(d)) << std::get<std::string>(d);
  return std::get<GroupDescription>(d);
}

TEST(DescribeGroup, RowReductionWithItsProducers) {
  Graph g = graph(R"(graph rows(x: f32[64, 512]) {
  e = exp(x)
  s = reduce_sum(e, axes=[1])
  return s
})");
  FusionPlan p = plan_xla(g);
  ASSERT_EQ(p.groups.size(), 1u);
  GroupDescription d = describe(g, p.groups[0]);
  EXPECT_EQ(d.pattern, GroupPattern::RowReduction);
  EXPECT_EQ(d.rows, 64);
  EXPECT_EQ(d.cols, 512);
  EXPECT_EQ(d.inputs, 1);
  EXPECT_EQ(d.outputs, 1);
  EXPECT_EQ(d.sfu_per_element, 1);
  // The plan's cost model decides the bytes: x read once, s written once.
  EXPECT_EQ(d.bytes_moved(), 64 * 512 * 4 + 64 * 4);
  EXPECT_EQ(d.summary(), "row reduction 64 x 512, 4-byte elements, 1 input, 1 output");
}

TEST(DescribeGroup, ColumnReductionAndSymbolicRows) {
  Graph g = graph(R"(graph cols(x: f32[B, 256]) {
  s = reduce_sum(x, axes=[0])
  return s
})");
  FusionPlan p = plan_xla(g);
  ASSERT_EQ(p.groups.size(), 1u);
  GroupDescription d = describe(g, p.groups[0], {{"B", 4096}});
  EXPECT_EQ(d.pattern, GroupPattern::ColumnReduction);
  EXPECT_EQ(d.rows, 4096);
  EXPECT_EQ(d.cols, 256);
  // An unbound symbol takes the cost model's default extent.
  EXPECT_EQ(describe(g, p.groups[0]).rows, 1024);
}

TEST(DescribeGroup, LoopGroupAndUnrankedGroups) {
  Graph g = graph(R"(graph mixed(a: f32[8, 16], b: f32[16, 4], c: f32[8, 16]) {
  s = add(a, c)
  d = dot(s, b)
  return d
})");
  FusionPlan p = plan_xla(g);
  ASSERT_EQ(p.groups.size(), 2u);
  GroupDescription loop = describe(g, p.groups[0]);
  EXPECT_EQ(loop.pattern, GroupPattern::Elementwise);
  EXPECT_EQ(loop.rows, 128);
  EXPECT_EQ(loop.inputs, 2);
  EXPECT_EQ(loop.alu_per_element, 1);
  auto library = describe_group(g, p.groups[1]);
  ASSERT_TRUE(std::holds_alternative<std::string>(library));
  EXPECT_EQ(std::get<std::string>(library), "a library call: no schedule to rank");
}

TEST(DescribeGroup, MiddleAxesAreNotRanked) {
  Graph g = graph(R"(graph mid(x: f32[4, 8, 16]) {
  s = reduce_sum(x, axes=[1])
  return s
})");
  FusionPlan p = plan_xla(g);
  auto d = describe_group(g, p.groups.at(0));
  ASSERT_TRUE(std::holds_alternative<std::string>(d));
  EXPECT_EQ(std::get<std::string>(d), "a reduction over middle axes (1): no strategy ranks it yet");
}

TEST(ExplainPlan, RanksEveryGroup) {
  Graph g = graph(R"(graph softmaxish(x: f32[1024, 16384]) {
  m = reduce_max(x, axes=[1])
  return m
})");
  FusionPlan p = plan_xla(g);
  const std::string text = explain_plan(g, p, sm90_target(), {}, 3);
  EXPECT_EQ(text.substr(0, text.find('\n')),
            "schedule candidates on sm_90 (H100-SXM5-80GB), latency evaluator estimates:");
  EXPECT_NE(text.find("group 0 [reduction]: row reduction 1024 x 16384"), std::string::npos) << text;
  EXPECT_NE(text.find("     1 "), std::string::npos) << text;
  EXPECT_NE(text.find("block-per-row        [GRID,CTA];"), std::string::npos) << text;
}

}  // namespace
}  // namespace stitch::schedule

namespace stitch::schedule {
namespace {

TEST(PlanExplain, StitchedGroupsShowTheirSharedMemoryPlan) {
  Graph g = canonicalize(parse_module(R"(graph sm(x: f32[512, 2048]) -> (f32[512, 2048]) {
  y = softmax(x, axis=-1)
  return y
})",
                                      "<test>")
                             .graphs.front());
  FusionPlan p = plan_stitch(g);
  // Block per row: the row of exp (8 KiB) is cached and takes the max's scratch.
  const std::string block = explain_plan(g, p, sm90_target(), {}, 1, RowScheduleKind::BlockPerRow);
  EXPECT_NE(block.find("  shared memory: 3 buffers, 8256 bytes requested, arena 8224 bytes"), std::string::npos) << block;
  EXPECT_NE(block.find("    row cache %y_exp: [0, 8192) 8192 bytes, reuses scratch %y_max"), std::string::npos) << block;
  // Eight rows a block (64 KiB of exp) pass the 48 KiB budget: exp is recomputed instead.
  const std::string warp = explain_plan(g, p, sm90_target(), {}, 1, RowScheduleKind::WarpPerRow);
  EXPECT_NE(warp.find("  shared memory: 0 buffers"), std::string::npos) << warp;
}

}  // namespace
}  // namespace stitch::schedule
