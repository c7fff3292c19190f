// Bytes moved and launches per plan: the memory half of the delta evaluator.
#include <gtest/gtest.h>

#include "fusion/cost_model.h"
#include "fusion/planner.h"
#include "plan_invariants.h"

namespace stitch {
namespace {

using testing_fusion::canonical_graph;

const char* kMoments = R"(graph moments(x: f32[16, 32]) {
  s = reduce_sum(x, axes=[1])
  xx = mul(x, x)
  q = reduce_sum(xx, axes=[1])
  return s, q
})";

TEST(FusionCostModel, SiblingFusionReadsTheInputOnce) {
  Graph g = canonical_graph(kMoments);
  FusionCostModel model;
  PlanCost xla = model.plan_cost(g, plan_xla(g));
  EXPECT_EQ(xla.launches, 1);
  EXPECT_EQ(xla.bytes_read, 16 * 32 * 4);
  EXPECT_EQ(xla.bytes_written, 2 * 16 * 4);
  PlanCost none = model.plan_cost(g, plan_none(g));
  EXPECT_EQ(none.launches, 3);
  // s and xx read x, q reads xx; s, xx and q are written.
  EXPECT_EQ(none.bytes_read, 3 * 16 * 32 * 4);
  EXPECT_EQ(none.bytes_written, 16 * 32 * 4 + 2 * 16 * 4);
  EXPECT_EQ(plan_summary(g, plan_xla(g)),
            "plan moments (planner xla): 1 kernel, 2048 bytes read, 128 bytes written\n");
}

TEST(FusionCostModel, SymbolsTakeTheirBindingOrTheDefault) {
  Graph g = canonical_graph(R"(graph dyn(x: f32[B, 8]) {
  y = neg(x)
  return y
})");
  FusionPlan p = plan_xla(g);
  EXPECT_EQ(FusionCostModel().plan_cost(g, p).bytes_moved(), 2 * 1024 * 8 * 4);
  EXPECT_EQ(FusionCostModel({{"B", 3}}).plan_cost(g, p).bytes_moved(), 2 * 3 * 8 * 4);
  EXPECT_EQ(FusionCostModel({}, 5).plan_cost(g, p).bytes_moved(), 2 * 5 * 8 * 4);
}

TEST(FusionCostModel, DuplicationTradesRecomputeForTraffic) {
  Graph g = canonical_graph(R"(graph shared_bias(x: f32[4, 8], b: f32[8]) {
  bb = broadcast(b, shape=[4, 8])
  s = reduce_sum(add(x, bb), axes=[1])
  q = mul(x, bb)
  return s, q
})");
  FusionCostModel model;
  // The duplicated broadcast is never written: each kernel reads b (32 B) and x (128 B).
  PlanCost c = model.plan_cost(g, plan_xla(g));
  EXPECT_EQ(c.bytes_read, 2 * (32 + 128));
  EXPECT_EQ(c.bytes_written, 4 * 4 + 4 * 8 * 4);
  EXPECT_LT(c.bytes_moved(), model.plan_cost(g, plan_none(g)).bytes_moved());
}

}  // namespace
}  // namespace stitch
