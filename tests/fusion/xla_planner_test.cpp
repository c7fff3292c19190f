// Golden plans of the XLA rules (docs/fusion.md): each test pins one rule.
#include <gtest/gtest.h>

#include "fusion/legality.h"
#include "fusion/planner.h"
#include "plan_invariants.h"

namespace stitch {
namespace {

using testing_fusion::canonical_graph;
using testing_fusion::check_plan_invariants;

Graph workload(const std::string& file, const std::string& graph) {
  Module m = parse_file(std::string(STITCH_SOURCE_DIR) + "/bench/workloads/" + file);
  const Graph* g = m.find(graph);
  EXPECT_NE(g, nullptr) << graph;
  return canonicalize(*g);
}

void expect_xla_plan(const Graph& g, const std::string& golden) {
  FusionPlan p = plan_xla(g);
  EXPECT_EQ(print_plan(g, p), golden);
  check_plan_invariants(g, p);
}

TEST(XlaPlanner, SoftmaxKeepsReductionsAsRootsAndDoesNotDuplicateExp) {
  expect_xla_plan(workload("softmax.stitch", "softmax_small"),
                  R"(plan softmax_small (planner xla): 4 groups
group 0 [reduction] root y_max: y_max = reduce_max(x)
group 1 [loop] root y_exp: y_max_bcast = broadcast(y_max); y_shifted = sub(x, y_max_bcast); y_exp = exp(y_shifted)
group 2 [reduction] root y_sum: y_sum = reduce_sum(y_exp)
group 3 [loop] root y: y_sum_bcast = broadcast(y_sum); y = div(y_exp, y_sum_bcast)
not fused: y_max -> y_max_bcast: xla does not fuse a consumer into a reduction's kernel
not fused: y_exp -> y_sum: exp has 2 consumers; xla does not duplicate an expensive op
not fused: y_exp -> y: exp has 2 consumers; xla does not duplicate an expensive op
not fused: y_sum -> y_sum_bcast: xla does not fuse a consumer into a reduction's kernel
)");
}

TEST(XlaPlanner, WritesOnceACheapOpThatReadsMoreThanItWritesAndFeedsADot) {
  // y reads two tensors and feeds a dot: it is written once and its other
  // consumer reads it; z reads no more than it writes, so it is recomputed
  // in its other consumer as usual.
  Graph g = canonical_graph(R"(graph residual(a: f32[4, 4], b: f32[4, 4], w: f32[4, 4]) {
  y = add(a, b)
  d = dot(y, w)
  e = exp(y)
  z = mul(a, a)
  f = dot(z, w)
  t = tanh(z)
  return d, e, f, t
})");
  FusionPlan p = plan_xla(g);
  check_plan_invariants(g, p);
  const std::string text = print_plan(g, p);
  EXPECT_NE(text.find("group 0 [loop] root y: y = add(a, b)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("not fused: y -> e: add reads more than it writes and d cannot take it; xla writes it once"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("duplicated: z in groups"), std::string::npos) << text;
}

TEST(XlaPlanner, WritesOnceAGraphOutputThatReadsMoreThanItWrites) {
  // r (a residual add of a transposed product, as in an MLP-Mixer block) is a
  // graph output, written anyway: the LayerNorm's kernels read it rather than
  // recompute it from its two inputs. z reads what it writes and is recomputed.
  Graph g = canonical_graph(R"(graph mixer(x: f32[4, 6, 8], p: f32[4, 8, 6], gamma: f32[8], beta: f32[8]) {
  r = add(x, transpose(p, perm=[0, 2, 1]))
  n = layer_norm(r, gamma, beta, axes=[2], eps=1e-06)
  z = neg(x)
  m = reduce_max(z, axes=[2])
  return r, n, z, m
})");
  FusionPlan p = plan_xla(g);
  check_plan_invariants(g, p);
  const std::string text = print_plan(g, p);
  EXPECT_NE(text.find("add reads more than it writes and is a graph output; xla writes it once"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("duplicated: r in groups"), std::string::npos) << text;
  EXPECT_NE(text.find("duplicated: z in groups"), std::string::npos) << text;
}

// A residual stream of pre-norm blocks (GPT-2's): each sum r_k = r_{k-1} + m_k
// feeds the next block's LayerNorm and the next sum. Recomputed all the way,
// the kernels of block k would read all k products; every other sum is written
// once instead, so the kernels' reads grow with the depth, not its square,
// under xla and the planners built on it.
TEST(XlaPlanner, AResidualStreamIsNotRecomputedAllTheWayDown) {
  std::string text = "graph stream(x: f32[16, 24], g: f32[24], b: f32[24]";
  for (int k = 1; k <= 12; ++k) text += ", m" + std::to_string(k) + ": f32[16, 24]";
  text += ") {\n  r0 = neg(x)\n";
  std::string outputs;
  for (int k = 1; k <= 12; ++k) {
    const std::string r = "r" + std::to_string(k), prev = "r" + std::to_string(k - 1);
    text += "  n" + std::to_string(k) + " = layer_norm(" + prev + ", g, b, axes=[1], eps=1e-05)\n";
    text += "  " + r + " = add(" + prev + ", mul(n" + std::to_string(k) + ", m" + std::to_string(k) + "))\n";
  }
  text += "  return r12\n}\n";
  const Graph g = canonical_graph(text);
  for (PlannerKind planner : {PlannerKind::Xla, PlannerKind::Stitch, PlannerKind::Greedy}) {
    const FusionPlan p = plan(g, planner);
    check_plan_invariants(g, p);
    // Reads grow with the blocks, not with their square (recomputed all the
    // way, xla's kernels read 39 tensors at most and several hundred in all).
    int reads = 0;
    for (const FusionGroup& group : p.groups) reads += count_external_operands(g, group.nodes);
    EXPECT_LE(reads, 16 * 12) << planner_name(planner) << "\n" << print_plan(g, p);
    if (planner == PlannerKind::Xla) {
      for (const FusionGroup& group : p.groups) EXPECT_LE(count_external_operands(g, group.nodes), 10) << print_plan(g, p);
      EXPECT_NE(print_plan(g, p).find("would be recomputed in every kernel that recomputes"), std::string::npos);
    }
  }
}

TEST(XlaPlanner, LayerNormDuplicatesTheCentringIntoBothConsumers) {
  expect_xla_plan(workload("layernorm.stitch", "layernorm_small"),
                  R"(plan layernorm_small (planner xla): 4 groups
group 0 [reduction] root y_mean: y_mean = reduce_mean(x)
group 1 [reduction] root y_var: y_mean_bcast = broadcast(y_mean); y_centred = sub(x, y_mean_bcast); y_sq = mul(y_centred, y_centred); y_var = reduce_mean(y_sq)
group 2 [loop] root y_rstd: constant_bcast = constant(); y_var_eps = add(y_var, constant_bcast); y_rstd = rsqrt(y_var_eps)
group 3 [loop] root y: y_mean_bcast = broadcast(y_mean); y_centred = sub(x, y_mean_bcast); y_rstd_bcast = broadcast(y_rstd); y_norm = mul(y_centred, y_rstd_bcast); gamma_bcast = broadcast(gamma); y_scaled = mul(y_norm, gamma_bcast); beta_bcast = broadcast(beta); y = add(y_scaled, beta_bcast)
duplicated: y_mean_bcast in groups 1, 3
duplicated: y_centred in groups 1, 3
not fused: y_mean -> y_mean_bcast: xla does not fuse a consumer into a reduction's kernel
not fused: y_var -> y_var_eps: xla does not fuse a consumer into a reduction's kernel
not fused: y_rstd -> y_rstd_bcast: xla does not fuse an expensive op into a consumer that reuses its elements
not merged: y_mean + y_var: one reads the other's result; xla does not consume a reduction inside its kernel
)");
}

TEST(XlaPlanner, SwishIsOneLoopKernel) {
  expect_xla_plan(workload("swish.stitch", "swish_small"),
                  R"(plan swish_small (planner xla): 1 group
group 0 [loop] root y: sigmoid = sigmoid(x); y = mul(x, sigmoid)
)");
}

TEST(XlaPlanner, BiasGeluIsOneLoopKernel) {
  expect_xla_plan(workload("bias_gelu.stitch", "bias_gelu_small"),
                  R"(plan bias_gelu_small (planner xla): 1 group
group 0 [loop] root y: bias_bcast = broadcast(bias); add = add(x, bias_bcast); y_sq = mul(add, add); y_cube = mul(y_sq, add); constant_bcast = constant(); y_cube_scaled = mul(y_cube, constant_bcast); y_poly = add(add, y_cube_scaled); constant_1_bcast = constant(); y_arg = mul(y_poly, constant_1_bcast); y_sigmoid = sigmoid(y_arg); y = mul(add, y_sigmoid)
)");
}

TEST(XlaPlanner, ColumnReduceThenSubtractNeedsTwoKernels) {
  expect_xla_plan(workload("column_reduce_sub.stitch", "column_reduce_sub_small"),
                  R"(plan column_reduce_sub_small (planner xla): 2 groups
group 0 [reduction] root m: m = reduce_mean(x)
group 1 [loop] root y: mb = broadcast(m); y = sub(x, mb)
not fused: m -> mb: xla does not fuse a consumer into a reduction's kernel
)");
}

TEST(XlaPlanner, SiblingMergeThatWouldCloseACycleIsRefused) {
  // r1 and r2 both reduce x over the same axes, but r2 depends on r1 through
  // the dot's kernel: one kernel for both would feed and consume the dot.
  expect_xla_plan(canonical_graph(testing_fusion::kDiamond),
                  R"(plan diamond (planner xla): 4 groups
group 0 [reduction] root r1: r1 = reduce_max(x)
group 1 [loop] root b1: b1 = broadcast(r1)
group 2 [library] root d: d = dot(b1, w)
group 3 [reduction] root r2: y = add(x, d); r2 = reduce_sum(y)
not fused: r1 -> b1: xla does not fuse a consumer into a reduction's kernel
not fused: b1 -> d: dot is a library call; xla does not fuse its operands into it
not fused: d -> y: dot is a library call; xla does not fuse its result into a consumer
not merged: r1 + r2: merging would create a cycle: r1 reaches r2 through another kernel
)");
}

TEST(XlaPlanner, SiblingReductionsOverTheSameInputShareAKernel) {
  expect_xla_plan(canonical_graph(R"(graph moments(x: f32[16, 32]) {
  s = reduce_sum(x, axes=[1])
  xx = mul(x, x)
  q = reduce_sum(xx, axes=[1])
  return s, q
})"),
                  R"(plan moments (planner xla): 1 group
group 0 [reduction] roots s, q: s = reduce_sum(x); xx = mul(x, x); q = reduce_sum(xx)
)");
}

TEST(XlaPlanner, SiblingReductionsOverDifferentAxesStayApart) {
  Graph g = canonical_graph(R"(graph rowcol(x: f32[16, 32]) {
  rows = reduce_sum(x, axes=[1])
  cols = reduce_sum(x, axes=[0])
  return rows, cols
})");
  FusionPlan p = plan_xla(g);
  EXPECT_EQ(p.groups.size(), 2u);
  check_plan_invariants(g, p);
}

TEST(XlaPlanner, CheapBroadcastIsDuplicatedIntoBothConsumers) {
  expect_xla_plan(canonical_graph(R"(graph shared_bias(x: f32[4, 8], b: f32[8]) {
  bb = broadcast(b, shape=[4, 8])
  p = add(x, bb)
  s = reduce_sum(p, axes=[1])
  q = mul(x, bb)
  return s, q
})"),
                  R"(plan shared_bias (planner xla): 2 groups
group 0 [reduction] root s: bb = broadcast(b); p = add(x, bb); s = reduce_sum(p)
group 1 [loop] root q: bb = broadcast(b); q = mul(x, bb)
duplicated: bb in groups 0, 1
)");
}

TEST(XlaPlanner, ExpWithTwoConsumersIsNotDuplicated) {
  expect_xla_plan(canonical_graph(R"(graph shared_exp(x: f32[4, 8]) {
  e = exp(x)
  a = neg(e)
  b = abs(e)
  return a, b
})"),
                  R"(plan shared_exp (planner xla): 3 groups
group 0 [loop] root e: e = exp(x)
group 1 [loop] root a: a = neg(e)
group 2 [loop] root b: b = abs(e)
not fused: e -> a: exp has 2 consumers; xla does not duplicate an expensive op
not fused: e -> b: exp has 2 consumers; xla does not duplicate an expensive op
)");
}

TEST(XlaPlanner, ExpThatIsAlsoAnOutputStaysItsOwnKernel) {
  Graph g = canonical_graph(R"(graph exp_out(x: f32[4, 8]) {
  e = exp(x)
  a = neg(e)
  return e, a
})");
  FusionPlan p = plan_xla(g);
  ASSERT_EQ(p.refusals.size(), 1u);
  EXPECT_EQ(p.refusals[0].reason, "exp is also a graph output; xla does not duplicate an expensive op");
  check_plan_invariants(g, p);
}

TEST(XlaPlanner, DotIsALibraryCall) {
  expect_xla_plan(canonical_graph(R"(graph matmul_bias(a: f32[4, 8], w: f32[8, 16], c: f32[4, 16]) {
  an = neg(a)
  d = dot(an, w)
  y = add(d, c)
  return y
})"),
                  R"(plan matmul_bias (planner xla): 3 groups
group 0 [loop] root an: an = neg(a)
group 1 [library] root d: d = dot(an, w)
group 2 [loop] root y: y = add(d, c)
not fused: an -> d: dot is a library call; xla does not fuse its operands into it
not fused: d -> y: dot is a library call; xla does not fuse its result into a consumer
)");
}

TEST(XlaPlanner, GatherAbsorbsCheapProducersButNotExpensiveOnes) {
  expect_xla_plan(canonical_graph(R"(graph embed(table: f32[10, 4], idx: i64[6]) {
  t = neg(table)
  rows = gather(t, idx, axis=0)
  y = abs(rows)
  e = exp(table)
  rows2 = gather(e, idx, axis=0)
  return y, rows2
})"),
                  R"(plan embed (planner xla): 3 groups
group 0 [loop] root y: t = neg(table); rows = gather(t, idx); y = abs(rows)
group 1 [loop] root e: e = exp(table)
group 2 [loop] root rows2: rows2 = gather(e, idx)
not fused: e -> rows2: xla does not fuse an expensive op into a consumer that reuses its elements
)");
}

TEST(XlaPlanner, CheapProducerRefusedByOneConsumerIsDuplicatedIntoTheOther) {
  expect_xla_plan(canonical_graph(R"(graph residual_mm(a: f32[4, 8], w: f32[8, 8]) {
  n = neg(a)
  d = dot(n, w)
  y = add(n, d)
  return y
})"),
                  R"(plan residual_mm (planner xla): 3 groups
group 0 [loop] root n: n = neg(a)
group 1 [library] root d: d = dot(n, w)
group 2 [loop] root y: n = neg(a); y = add(n, d)
duplicated: n in groups 0, 2
not fused: n -> d: dot is a library call; xla does not fuse its operands into it
not fused: d -> y: dot is a library call; xla does not fuse its result into a consumer
)");
}

}  // namespace
}  // namespace stitch
