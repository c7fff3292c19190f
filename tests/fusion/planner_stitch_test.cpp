// The greedy `stitch` planner (docs/fusion.md, The `stitch` planner) and the
// stitched-group check it shares with the lowering (stitched_group.h).
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>

#include "fusion/planner.h"
#include "fusion/stitched_group.h"
#include "ir/canonicalize.h"
#include "plan_invariants.h"
#include "stitch/text.h"

namespace stitch {
namespace {

using testing_fusion::canonical_graph;
using testing_fusion::check_plan_invariants;

Graph workload(const std::string& file, const std::string& name) {
  Module m = parse_file(std::string(STITCH_SOURCE_DIR) + "/bench/workloads/" + file);
  const Graph* g = m.find(name);
  if (!g) throw std::runtime_error("no graph " + name + " in " + file);
  return canonicalize(*g);
}

// Every workload xla splits at a reduction is one kernel under stitch.
TEST(StitchPlanner, CorpusReductionWorkloadsBecomeOneKernel) {
  const std::map<std::string, size_t> xla_kernels = {
      {"softmax", 4}, {"softmax_explicit", 4}, {"log_softmax", 4},       {"layernorm", 4},
      {"rmsnorm", 3}, {"residual_layernorm", 4}, {"column_reduce_sub", 2},
  };
  for (const auto& [name, xla] : xla_kernels) {
    SCOPED_TRACE(name);
    for (const std::string& graph : {name, name + "_small"}) {
      Graph g = workload(name + ".stitch", graph);
      EXPECT_EQ(plan(g, PlannerKind::Xla).groups.size(), xla);
      FusionPlan p = plan(g, PlannerKind::Stitch);
      check_plan_invariants(g, p);
      ASSERT_EQ(p.groups.size(), 1u) << print_plan(g, p);
      EXPECT_EQ(p.groups[0].kind, GroupKind::Stitched);
      EXPECT_TRUE(p.refusals.empty()) << print_plan(g, p);
    }
  }
}

TEST(StitchPlanner, LayerNormPlanText) {
  Graph g = workload("layernorm.stitch", "layernorm_small");
  EXPECT_EQ(print_plan(g, plan(g, PlannerKind::Stitch)), R"(plan layernorm_small (planner stitch): 1 group
group 0 [stitched] root y: y_mean = reduce_mean(x); y_mean_bcast = broadcast(y_mean); y_centred = sub(x, y_mean_bcast); y_sq = mul(y_centred, y_centred); y_var = reduce_mean(y_sq); constant_bcast = constant(); y_var_eps = add(y_var, constant_bcast); y_rstd = rsqrt(y_var_eps); y_rstd_bcast = broadcast(y_rstd); y_norm = mul(y_centred, y_rstd_bcast); gamma_bcast = broadcast(gamma); y_scaled = mul(y_norm, gamma_bcast); beta_bcast = broadcast(beta); y = add(y_scaled, beta_bcast)
)");
}

// xla writes gelu's erf (read by three kernels); stitch absorbs that producer
// kernel too, so bias + gelu + residual + layernorm is one kernel.
TEST(StitchPlanner, AbsorbsProducerKernels) {
  Graph g = canonical_graph(R"(graph bglr(x: f32[64, 1024], b: f32[1024], res: f32[64, 1024], gamma: f32[1024], beta: f32[1024]) -> (f32[64, 1024]) {
  h = add(gelu(add(x, b)), res)
  y = layer_norm(h, gamma, beta, axes=[-1], eps=1e-5)
  return y
})");
  EXPECT_EQ(plan(g, PlannerKind::Xla).groups.size(), 5u);
  FusionPlan p = plan(g, PlannerKind::Stitch);
  check_plan_invariants(g, p);
  ASSERT_EQ(p.groups.size(), 1u) << print_plan(g, p);
  EXPECT_EQ(p.groups[0].kind, GroupKind::Stitched);
}

// Graphs without a reduction are planned exactly as xla plans them.
TEST(StitchPlanner, WithoutReductionsTheXlaPlan) {
  for (const char* name : {"gelu_tanh", "transpose_add", "bias_gelu"}) {
    Graph g = workload(std::string(name) + ".stitch", std::string(name) + "_small");
    FusionPlan x = plan(g, PlannerKind::Xla);
    FusionPlan s = plan(g, PlannerKind::Stitch);
    EXPECT_EQ(s.groups.size(), x.groups.size()) << name;
  }
}

// A reduction read at another row (through a transpose), or a consumer over
// another reduction domain, stays in its own kernel, with the reason.
TEST(StitchPlanner, RefusesWhatCannotBeStitched) {
  Graph g = canonical_graph(R"(graph moved(x: f32[8, 8]) -> (f32[8, 8], f32[]) {
  m = reduce_sum(x, axes=[1], keepdims=true)
  t = transpose(m, perm=[1, 0])
  y = add(x, t)
  s = reduce_sum(y)
  return y, s
})");
  Graph h = canonical_graph(R"(graph moved(x: f32[8, 8]) -> (f32[8, 8]) {
  m = reduce_sum(x, axes=[1], keepdims=true)
  y = add(x, transpose(m, perm=[1, 0]))
  return y
})");
  FusionPlan q = plan(h, PlannerKind::Stitch);
  check_plan_invariants(h, q);
  EXPECT_EQ(q.groups.size(), 2u);
  EXPECT_NE(print_plan(h, q).find("stitch: m is read at another row than the one it reduces"), std::string::npos)
      << print_plan(h, q);
  FusionPlan p = plan(g, PlannerKind::Stitch);
  check_plan_invariants(g, p);
  EXPECT_EQ(p.groups.size(), plan(g, PlannerKind::Xla).groups.size());
  const std::string text = print_plan(g, p);
  EXPECT_NE(text.find("stitch: "), std::string::npos) << text;
  EXPECT_NE(text.find("stitch: reductions of different shapes or axes"), std::string::npos) << text;
}

TEST(StitchedGroup, ProblemsNameTheReason) {
  Graph g = canonical_graph(R"(graph two(x: f32[4, 6]) -> (f32[4], f32[6], f32[4, 6]) {
  a = reduce_sum(x, axes=[1])
  b = reduce_sum(x, axes=[0])
  y = exp(x)
  return a, b, y
})");
  std::vector<int> all;
  for (int n = 0; n < static_cast<int>(g.nodes().size()); ++n) all.push_back(n);
  EXPECT_EQ(stitched_group_problem(g, all, all), "reductions of different shapes or axes");
  // Row sum and the elementwise root: a stitched kernel of one phase.
  std::vector<int> row = {0, 2};
  StitchedDomain d;
  ASSERT_EQ(stitched_group_problem(g, row, row, &d), "") << print_plan(g, plan(g, PlannerKind::None));
  EXPECT_TRUE(d.innermost());
  EXPECT_EQ(d.phases.size(), 1u);
  EXPECT_TRUE(is_stitched_group(g, row, row));
  EXPECT_FALSE(is_stitched_group(g, {0}, {0}));
}

// STITCH_MAX_FUSIONS counts stitching merges after xla's fusions.
TEST(StitchPlanner, FusionCapAppliesToMerges) {
  Graph g = workload("softmax.stitch", "softmax_small");
  PlanOptions none;
  none.max_fusions = 0;
  EXPECT_EQ(plan(g, PlannerKind::Stitch, none).groups.size(), plan(g, PlannerKind::None).groups.size());
  size_t last = 100;
  for (int cap = 0; cap < 12; ++cap) {
    PlanOptions o;
    o.max_fusions = cap;
    FusionPlan p = plan(g, PlannerKind::Stitch, o);
    check_plan_invariants(g, p);
    EXPECT_LE(p.groups.size(), last) << cap;
    last = p.groups.size();
  }
  EXPECT_EQ(last, 1u);
}

}  // namespace
}  // namespace stitch
