// The greedy `stitch` planner (docs/fusion.md, The `stitch` planner) and the
// stitched-group check it shares with the lowering (stitched_group.h).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "fusion/planner.h"
#include "pipeline/cpu_route.h"
#include "runtime/cpu/executable.h"
#include "stitch/interpreter.h"
#include "tensor_compare.h"
#include "fusion/stitched_group.h"
#include "ir/canonicalize.h"
#include "plan_invariants.h"
#include "scratch_directory.h"
#include "stitch/text.h"

namespace stitch {
namespace {

using testing_fusion::canonical_graph;
using testing_fusion::check_plan_invariants;

// Random f32 inputs of g's static parameter shapes, input i seeded seed + i.
std::vector<Tensor> random_inputs(const Graph& g, uint64_t seed) {
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < g.params().size(); ++i) {
    std::vector<int64_t> dims;
    for (const Dim& d : g.type(g.params()[i]).shape) dims.push_back(d.extent());
    inputs.emplace_back(DType::f32, dims);
    fill_random(inputs.back(), seed + i);
  }
  return inputs;
}

// g compiled for the CPU under the stitch planner (a kernel cache of its own) and run.
std::vector<Tensor> run_under_stitch(const Graph& g, const std::vector<Tensor>& inputs) {
  testing::ScratchDirectory dir("stitch-planner-test");
  runtime::cpu::KernelCache cache(dir.path());
  return pipeline::compile_cpu(g, PlannerKind::Stitch, cache).run(inputs);
}

Graph workload(const std::string& file, const std::string& name) {
  Module m = parse_file(std::string(STITCH_SOURCE_DIR) + "/bench/workloads/" + file);
  const Graph* g = m.find(name);
  if (!g) throw std::runtime_error("no graph " + name + " in " + file);
  return canonicalize(*g);
}

// Every workload xla splits at a reduction is one kernel under stitch, except
// the full column_reduce_sub: a block would re-read its 8192-long columns
// from DRAM between the phases (docs/fusion.md, What a block re-reads).
TEST(StitchPlanner, CorpusReductionWorkloadsBecomeOneKernel) {
  const std::map<std::string, size_t> xla_kernels = {
      {"softmax", 4}, {"softmax_explicit", 4}, {"log_softmax", 4},       {"layernorm", 4},
      {"rmsnorm", 3}, {"residual_layernorm", 4}, {"column_reduce_sub", 2},
  };
  for (const auto& [name, xla] : xla_kernels) {
    for (const std::string& graph : {name, name + "_small"}) {
      SCOPED_TRACE(graph);
      Graph g = workload(name + ".stitch", graph);
      EXPECT_EQ(plan(g, PlannerKind::Xla).groups.size(), xla);
      FusionPlan p = plan(g, PlannerKind::Stitch);
      check_plan_invariants(g, p);
      if (graph == "column_reduce_sub") {
        EXPECT_EQ(p.groups.size(), xla) << print_plan(g, p);
        continue;
      }
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
  // The block holds one row of h (4 KiB), not x, b and res apart.
  StitchedDomain d;
  ASSERT_EQ(stitched_group_problem(g, p.groups[0].nodes, p.groups[0].roots, &d), "");
  EXPECT_EQ(stitched_reread(g, p.groups[0].nodes, p.groups[0].roots, d).block_bytes(), 1024 * 4);
}

// Kernel packing: small loop kernels with nothing between them share one
// kernel, roots of different shapes included; a large one, or one that reads
// another's result, keeps its own.
TEST(StitchPlanner, PacksSmallIndependentLoopKernels) {
  Graph g = canonical_graph(R"(graph pack(a: f32[64, 100], b: f32[300], c: f32[512, 512], d: f32[B]) ->
      (f32[64, 100], f32[300], f32[512, 512], f32[B]) {
  x = exp(a)
  y = mul(b, b)
  z = add(c, c)
  w = neg(d)
  return x, y, z, w
})");
  FusionPlan x = plan(g, PlannerKind::Xla);
  FusionPlan s = plan(g, PlannerKind::Stitch);
  check_plan_invariants(g, s);
  EXPECT_EQ(x.groups.size(), 4u);
  ASSERT_EQ(s.groups.size(), 3u);
  int packed = 0;
  for (const FusionGroup& grp : s.groups) {
    EXPECT_EQ(grp.kind, GroupKind::Loop);
    if (grp.roots.size() == 2) ++packed;
  }
  EXPECT_EQ(packed, 1);  // x and y; z (256 Ki elements) and w (symbolic) alone
}

// Large independent loop kernels pack when their roots have one shape or one
// static element count (FusionStitching's kernel packing of one parallelism):
// a transposed root beside an untransposed one takes an equal part of the
// grid, as a model's transposed keys beside its queries and values. The
// packed kernel computes what the interpreter does, bit for bit (exact ops).
TEST(StitchPlanner, PacksLargeLoopKernelsOfOneElementCount) {
  Graph g = canonical_graph(R"(graph qk(a: f32[256, 520], b: f32[256, 520], c: f32[300, 301]) {
  x = neg(a)
  y = transpose(abs(b), perm=[1, 0])
  z = neg(c)
  return x, y, z
})");
  FusionPlan s = plan(g, PlannerKind::Stitch);
  check_plan_invariants(g, s);
  ASSERT_EQ(s.groups.size(), 2u) << print_plan(g, s);  // x with y (133,120 elements each); z (90,300) alone
  const std::vector<Tensor> inputs = random_inputs(g, 5);
  const std::vector<Tensor> got = run_under_stitch(g, inputs);
  const std::vector<Tensor> want = interpret(g, inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_TRUE(testing::tensors_bitwise_equal(got[i], want[i])) << i;
}

// A linear layer's transposed weight, read only as a dot's B, stays in a
// kernel of its own (the CPU executable drops it and reads the weight with the
// gemm's flag), even beside a loop of the same element count: an MLP-Mixer
// block's GELU over [6144, 384] had taken in the transposes of two [768, 3072]
// weights, copying 19 MB of weights on every call.
TEST(StitchPlanner, KeepsADotsTransposedWeightOutOfPackedKernels) {
  Graph g = canonical_graph(R"(graph mixer(a: f32[256, 520], x: f32[64, 256], w: f32[520, 256], v: f32[520, 256]) {
  g1 = gelu(a)
  wt = transpose(w, perm=[1, 0])
  y = dot(x, wt)
  vt = transpose(v, perm=[1, 0])
  z = dot(x, vt)
  return g1, y, z
})");
  FusionPlan s = plan(g, PlannerKind::Stitch);
  check_plan_invariants(g, s);
  for (const FusionGroup& grp : s.groups) {
    bool transposes = false, others = false;
    for (int r : grp.roots) (g.nodes()[r].op == OpKind::Transpose ? transposes : others) = true;
    EXPECT_FALSE(transposes && others) << print_plan(g, s);
  }
  // The two transposes may share a kernel: it writes nothing else, so it is dropped.
  EXPECT_LE(s.groups.size(), 5u) << print_plan(g, s);
}

// A loop kernel whose nodes another loop kernel already computes, roots of
// the same shape, is absorbed into it (docs/fusion.md, Absorbed roots); one
// of another shape is not.
TEST(StitchPlanner, AbsorbsALoopKernelAnotherRecomputes) {
  Graph g = workload("jacobi1d_tstep.stitch", "jacobi1d_tstep_small");
  FusionPlan x = plan(g, PlannerKind::Xla);
  FusionPlan s = plan(g, PlannerKind::Stitch);
  check_plan_invariants(g, s);
  EXPECT_EQ(x.groups.size(), 2u);
  ASSERT_EQ(s.groups.size(), 1u);
  EXPECT_EQ(s.groups[0].kind, GroupKind::Loop);
  EXPECT_EQ(s.groups[0].roots.size(), 2u);

  Graph other = canonical_graph(R"(graph shapes(a: f32[600, 200]) -> (f32[600, 200], f32[200, 600]) {
  y = add(a, 1.0)
  t = transpose(mul(y, 2.0), perm=[1, 0])
  return y, t
})");
  // y's kernel and t's (which recomputes y) are not one loop: their roots
  // differ in shape. They are packed instead (one element count, each root
  // its own part of the grid), so the plan still has one group, the xla
  // plan two.
  FusionPlan o = plan(other, PlannerKind::Stitch);
  check_plan_invariants(other, o);
  EXPECT_EQ(plan(other, PlannerKind::Xla).groups.size(), 2u);
  ASSERT_EQ(o.groups.size(), 1u);
  EXPECT_EQ(o.groups[0].roots.size(), 2u);
}

// An expensive producer that xla leaves alone (two consumers) joins the
// consumer that reads it in place, as a second root of one loop (the other
// consumer reads it through a slice); the kernel computes the sigmoid once
// and matches the interpreter (within the transcendental tolerance).
TEST(StitchPlanner, FusesALoopProducerIntoItsInPlaceConsumer) {
  Graph g = canonical_graph(R"(graph producers(a: f32[300, 256]) {
  s = sigmoid(a)
  y = mul(s, a)
  u = mul(slice(s, start=[0, 0], stop=[100, 256]), 3.0)
  return y, u
})");
  EXPECT_EQ(plan(g, PlannerKind::Xla).groups.size(), 3u);
  for (PlannerKind kind : {PlannerKind::Greedy, PlannerKind::Stitch, PlannerKind::Ilp}) {
    FusionPlan p = plan(g, kind);
    check_plan_invariants(g, p);
    ASSERT_EQ(p.groups.size(), 2u) << print_plan(g, p);
    EXPECT_EQ(p.groups[0].kind, GroupKind::Loop);
    EXPECT_EQ(p.groups[0].roots.size(), 2u) << print_plan(g, p);  // s (read by the slice) and y
  }
  const std::vector<Tensor> inputs = random_inputs(g, 7);
  EXPECT_TRUE(testing::outputs_match_interpreter(run_under_stitch(g, inputs), interpret(g, inputs),
                                                 /*transcendental=*/true, 0));
}

// A producer its consumer reads through a reshape (a linear layer's biased
// product, returned for the backward, and its GELU over [B, T, F]): a reshape
// keeps the linear index, so the two are one loop of two roots of different
// shapes, which reads the product once. A reshape the consumer transposes is
// not read in place, and the two stay apart.
// g's plans: `xla_groups` kernels under xla, `stitch_groups` under stitch, whose
// first is of `kind` with two roots (a producer's result written beside its
// consumer's); run under stitch, the interpreter's outputs.
void expect_first_group_merged(const Graph& g, size_t xla_groups, size_t stitch_groups, GroupKind kind,
                               uint64_t seed) {
  EXPECT_EQ(plan(g, PlannerKind::Xla).groups.size(), xla_groups);
  FusionPlan p = plan(g, PlannerKind::Stitch);
  check_plan_invariants(g, p);
  ASSERT_EQ(p.groups.size(), stitch_groups) << print_plan(g, p);
  EXPECT_EQ(p.groups[0].kind, kind);
  EXPECT_EQ(p.groups[0].roots.size(), 2u) << print_plan(g, p);
  const std::vector<Tensor> inputs = random_inputs(g, seed);
  EXPECT_TRUE(testing::outputs_match_interpreter(run_under_stitch(g, inputs), interpret(g, inputs),
                                                 /*transcendental=*/true, 0));
}

TEST(StitchPlanner, FusesALoopProducerReadThroughAReshape) {
  Graph g = canonical_graph(R"(graph saved(mm: f32[64, 96], b: f32[96]) {
  a = add(mm, b)
  y = gelu(reshape(a, shape=[4, 16, 96]))
  return a, y
})");
  expect_first_group_merged(g, 2, 1, GroupKind::Loop, 3);

  Graph moved = canonical_graph(R"(graph moved(mm: f32[64, 96], b: f32[96]) {
  a = add(mm, b)
  y = exp(transpose(reshape(a, shape=[4, 16, 96]), perm=[0, 2, 1]))
  return a, y
})");
  FusionPlan q = plan(moved, PlannerKind::Stitch);
  check_plan_invariants(moved, q);
  EXPECT_EQ(q.groups.size(), 2u) << print_plan(moved, q);
}

// A bias gradient: the column sum of a GELU backward's product, as
// split_reductions leaves it (rows of [parts, rows, columns] reshaped from the
// product). The product reads no total, so it is stored in the sum's first
// pass over the rows: one kernel, where xla writes the product and reads it
// back.
TEST(StitchPlanner, StoresAColumnSumsInputInItsFirstPass) {
  Graph g = canonical_graph(R"(graph bias_grad(dy: f32[4, 32, 96], x: f32[4, 32, 96]) {
  k = mul(dy, add(mul(erf(mul(x, 0.7071)), 0.5), 0.5))
  rows = reshape(k, shape=[2, 64, 96])
  part = reduce_sum(rows, axes=[1])
  s = reduce_sum(part, axes=[0])
  return k, s
})");
  expect_first_group_merged(g, 3, 2, GroupKind::Stitched, 5);
  // A root of another shape that reads the sum is not early: it would need the
  // total before the pass that makes it.
  Graph late = canonical_graph(R"(graph late(x: f32[4, 32, 96]) {
  rows = reshape(x, shape=[2, 64, 96])
  part = reduce_sum(rows, axes=[1], keepdims=true)
  y = reshape(sub(rows, part), shape=[4, 32, 96])
  return y
})");
  const std::vector<int> nodes = [&] {
    std::vector<int> all;
    for (int n = 0; n < static_cast<int>(late.nodes().size()); ++n) all.push_back(n);
    return all;
  }();
  const int y = late.value(late.outputs()[0].value).producer;
  EXPECT_NE(stitched_group_problem(late, nodes, {y}).find("neither of the rows' shape"), std::string::npos);
}

// Graphs without a reduction are planned as xla plans them, but for packing.
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
  // m's kernel stays apart; y (a graph output, written once) and s are one stitched kernel.
  EXPECT_EQ(p.groups.size(), 2u) << print_plan(g, p);
  EXPECT_EQ(plan(g, PlannerKind::Xla).groups.size(), 3u);
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

// The bytes a block holds between phases: one row of the normalised value for
// the norms and softmax (x, or h = x + bias + residual, whichever the later
// phases meet first), nothing for totals read only by per-row ops.
TEST(StitchedReread, OneRowOfTheValueTheLaterPhasesReadAgain) {
  const std::map<std::string, int64_t> row_bytes = {
      {"softmax", 4096 * 4}, {"layernorm", 1024 * 4}, {"rmsnorm", 4096 * 4}, {"residual_layernorm", 768 * 4},
  };
  for (const auto& [name, bytes] : row_bytes) {
    SCOPED_TRACE(name);
    Graph g = workload(name + ".stitch", name);
    FusionPlan p = plan(g, PlannerKind::Stitch);
    ASSERT_EQ(p.groups.size(), 1u);
    StitchedDomain d;
    ASSERT_EQ(stitched_group_problem(g, p.groups[0].nodes, p.groups[0].roots, &d), "");
    StitchedReread r = stitched_reread(g, p.groups[0].nodes, p.groups[0].roots, d);
    EXPECT_EQ(r.bytes_per_element, 4);
    EXPECT_EQ(r.block_width, 1);
    EXPECT_EQ(r.block_bytes(), bytes);
  }
  Graph g = workload("column_reduce_sub.stitch", "column_reduce_sub_small");
  FusionPlan p = plan(g, PlannerKind::Stitch);
  ASSERT_EQ(p.groups.size(), 1u);
  StitchedDomain d;
  ASSERT_EQ(stitched_group_problem(g, p.groups[0].nodes, p.groups[0].roots, &d), "");
  StitchedReread r = stitched_reread(g, p.groups[0].nodes, p.groups[0].roots, d);
  // 123 rows of the 45 columns a block owns (fewer than its 256 threads).
  EXPECT_EQ(r.block_width, 45);
  EXPECT_EQ(r.block_bytes(), 123 * 45 * 4);
}

// Past the 48 KiB a block holds, the planner splits as xla does and says why;
// symbolic rows are assumed to fit, symbolic columns are not; a column whose
// totals only per-column ops read is never re-read, so it stays stitched.
TEST(StitchPlanner, SplitsWhatABlockCannotHold) {
  Graph column = workload("column_reduce_sub.stitch", "column_reduce_sub");
  FusionPlan p = plan(column, PlannerKind::Stitch);
  check_plan_invariants(column, p);
  EXPECT_EQ(p.groups.size(), 2u);
  EXPECT_NE(print_plan(column, p).find("stitch: a block would re-read 8192 x 256 x 4 B = 8192 KiB between phases, "
                                       "over the 48 KiB it holds"),
            std::string::npos)
      << print_plan(column, p);

  // A softmax row of 16384 f32 is 64 KiB; 12288 is exactly 48 KiB, what a
  // GPU block holds. A CPU block (the default options) holds 512 KiB of a
  // row: 131072 f32; one more element and the row is split.
  auto softmax_kernels = [](const std::string& shape, const PlanOptions& options) {
    Graph g = canonical_graph("graph s(x: f32[" + shape + "]) -> (f32[" + shape + "]) {\n  y = softmax(x, axis=-1)\n"
                              "  return y\n}");
    return plan(g, PlannerKind::Stitch, options).groups.size();
  };
  EXPECT_EQ(softmax_kernels("8, 16384", PlanOptions::for_gpu()), 4u);
  EXPECT_EQ(softmax_kernels("8, 12288", PlanOptions::for_gpu()), 1u);
  EXPECT_EQ(softmax_kernels("8, N", PlanOptions::for_gpu()), 1u);
  EXPECT_EQ(softmax_kernels("8, 16384", PlanOptions{}), 1u);
  EXPECT_EQ(softmax_kernels("8, 131072", PlanOptions{}), 1u);
  EXPECT_EQ(softmax_kernels("8, 131073", PlanOptions{}), 4u);

  Graph symbolic_column = canonical_graph(R"(graph c(x: f32[B, 45]) -> (f32[B, 45]) {
  m = reduce_mean(x, axes=[0], keepdims=true)
  y = sub(x, m)
  return y
})");
  FusionPlan q = plan(symbolic_column, PlannerKind::Stitch);
  EXPECT_EQ(q.groups.size(), 2u);
  EXPECT_NE(print_plan(symbolic_column, q).find("stitch: a block would re-read a column of symbolic length"),
            std::string::npos)
      << print_plan(symbolic_column, q);

  Graph totals_only = canonical_graph(R"(graph t(x: f32[8192, 2048]) -> (f32[2048]) {
  m = reduce_mean(x, axes=[0])
  y = rsqrt(add(m, 1.0))
  return y
})");
  FusionPlan t = plan(totals_only, PlannerKind::Stitch);
  ASSERT_EQ(t.groups.size(), 1u) << print_plan(totals_only, t);
  EXPECT_EQ(t.groups[0].kind, GroupKind::Stitched);
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
