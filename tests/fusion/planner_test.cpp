// The planner interface, the `none` planner, the DOT printer and legality.
#include <gtest/gtest.h>

#include "fusion/legality.h"
#include "fusion/planner.h"
#include "plan_invariants.h"

namespace stitch {
namespace {

using testing_fusion::canonical_graph;
using testing_fusion::check_plan_invariants;

using testing_fusion::kDiamond;

TEST(PlannerKind, NamesRoundTrip) {
  for (PlannerKind k : {PlannerKind::None, PlannerKind::Xla, PlannerKind::Stitch, PlannerKind::Ilp, PlannerKind::Greedy})
    EXPECT_EQ(parse_planner_kind(planner_name(k)), k);
  EXPECT_EQ(parse_planner_kind("tvm"), std::nullopt);
}

TEST(NonePlanner, OneKernelPerOpAndEveryEdgeExplained) {
  Graph g = canonical_graph(kDiamond);
  FusionPlan p = plan(g, PlannerKind::None);
  EXPECT_EQ(print_plan(g, p), R"(plan diamond (planner none): 5 groups
group 0 [reduction] root r1: r1 = reduce_max(x)
group 1 [loop] root b1: b1 = broadcast(r1)
group 2 [library] root d: d = dot(b1, w)
group 3 [loop] root y: y = add(x, d)
group 4 [reduction] root r2: r2 = reduce_sum(y)
not fused: r1 -> b1: planner none runs one op per kernel
not fused: b1 -> d: planner none runs one op per kernel
not fused: d -> y: planner none runs one op per kernel
not fused: y -> r2: planner none runs one op per kernel
)");
  check_plan_invariants(g, p);
}

TEST(PlanPrinter, DotFormDrawsDuplicatesPerClusterAndLabelsRefusals) {
  Graph g = canonical_graph(R"(graph shared_bias(x: f32[4, 8], b: f32[8]) {
  bb = broadcast(b, shape=[4, 8])
  s = reduce_sum(add(x, bb), axes=[1], keepdims=true)
  q = mul(sub(x, broadcast(s, shape=[4, 8])), bb)
  return q
})");
  FusionPlan p = plan_xla(g);
  std::string dot = print_plan_dot(g, p);
  EXPECT_EQ(dot.rfind("digraph \"shared_bias\" {", 0), 0u) << dot;
  EXPECT_NE(dot.find("subgraph cluster_0"), std::string::npos) << dot;
  EXPECT_NE(dot.find("subgraph cluster_1"), std::string::npos) << dot;
  EXPECT_NE(dot.find("g0_n0 [label=\"bb = broadcast(b)\""), std::string::npos) << dot;
  EXPECT_NE(dot.find("g1_n0 [label=\"bb = broadcast(b)\""), std::string::npos) << dot;
  EXPECT_NE(dot.find("label=\"xla does not fuse a consumer into a reduction's kernel\""),
            std::string::npos)
      << dot;
  EXPECT_EQ(dot.back(), '\n');
}

FusionGroup single(int n) { return {GroupKind::Loop, {n}, {n}}; }

TEST(Legality, PathThroughAThirdGroupForbidsTheMerge) {
  Graph g = canonical_graph(kDiamond);  // r1=0 b1=1 d=2 y=3 r2=4
  std::vector<FusionGroup> groups = {single(0), single(1), single(2), single(3), single(4)};
  auto reason = check_merge_legality(g, groups, 0, 4);
  ASSERT_TRUE(reason.has_value());
  EXPECT_EQ(*reason, "merging would create a cycle: r1 reaches r2 through another kernel");
  EXPECT_TRUE(check_merge_legality(g, groups, 4, 0).has_value());
}

TEST(Legality, DirectProducerConsumerMergeIsLegal) {
  Graph g = canonical_graph(kDiamond);
  std::vector<FusionGroup> groups = {single(0), single(1), single(2), single(3), single(4)};
  EXPECT_EQ(check_merge_legality(g, groups, 3, 4), std::nullopt);
  EXPECT_EQ(check_merge_legality(g, groups, 0, 1), std::nullopt);
}

TEST(Legality, LimitsAreEnforced) {
  Graph g = canonical_graph(kDiamond);
  std::vector<FusionGroup> groups = {single(0), single(1), single(2), single(3), single(4)};
  auto reason = check_merge_legality(g, groups, 3, 4, FusionLimits{.max_nodes_per_group = 1});
  ASSERT_TRUE(reason.has_value());
  EXPECT_EQ(*reason, "the kernel would have 2 ops, over the limit of 1");
  reason = check_merge_legality(g, groups, 3, 4, FusionLimits{.max_operands_and_outputs = 3});
  ASSERT_TRUE(reason.has_value());
  EXPECT_EQ(*reason, "the kernel would have 4 operands and outputs, over the limit of 3");
}

TEST(Legality, GroupGraphCycleIsDetected) {
  Graph g = canonical_graph(kDiamond);
  // r1 and r2 in one kernel with b1, d, y outside: r1 -> b1 -> d -> y -> {r1, r2}.
  std::vector<FusionGroup> groups = {
      {GroupKind::Reduction, {0, 4}, {0, 4}}, single(1), single(2), single(3)};
  EXPECT_FALSE(is_acyclic(build_group_graph(g, groups)));
  groups = {single(0), single(1), single(2), {GroupKind::Reduction, {3, 4}, {4}}};
  EXPECT_TRUE(is_acyclic(build_group_graph(g, groups)));
}

}  // namespace
}  // namespace stitch

namespace stitch {
namespace {

TEST(FinalizePlan, AnUnexplainedUnfusedEdgeIsAnInternalError) {
  Graph g = canonical_graph(kDiamond);
  FusionPlan p;
  p.planner = "broken";
  for (int n = 0; n < 5; ++n) p.groups.push_back(single(n));
  EXPECT_THROW(finalize_plan(g, p), InternalError);
}

TEST(FinalizePlan, GroupsAreOrderedSoInputsComeFirst) {
  Graph g = canonical_graph(kDiamond);
  FusionPlan p;
  p.planner = "manual";
  for (int n = 4; n >= 0; --n) p.groups.push_back(single(n));
  for (auto [from, to] : {std::pair{0, 1}, {1, 2}, {2, 3}, {3, 4}})
    p.refusals.push_back({from, to, "test"});
  finalize_plan(g, p);
  for (int gi = 0; gi < 5; ++gi) EXPECT_EQ(p.groups[gi].roots, std::vector<int>{gi});
  check_plan_invariants(g, p);
}

}  // namespace
}  // namespace stitch
