// CpuExecutable beyond the generated kernels: dots as BLAS library calls, the
// fallback when the compiler rejects a plan, STITCH_MAX_FUSIONS, and
// compile_batch. Every result is compared with the reference interpreter.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>

#include "ir/canonicalize.h"
#include "pipeline/cpu_route.h"
#include "runtime/cpu/executable.h"
#include "stitch/error.h"
#include "stitch/interpreter.h"
#include "stitch/text.h"
#include "dot_test_graphs.h"
#include "group_fallback_case.h"
#include "interpreter_differential.h"
#include "tensor_compare.h"

namespace stitch::runtime::cpu {
namespace {

namespace fs = std::filesystem;

Graph canonical_graph(const char* text) { return canonicalize(parse_module(text).graphs.front()); }

std::vector<Tensor> random_inputs(const Graph& g, uint64_t seed, const SymbolBindings& symbols = {}) {
  std::vector<Tensor> inputs;
  for (ValueId p : g.params()) {
    Tensor t(g.type(p).dtype, concrete_shape(g.type(p).shape, symbols));
    fill_random(t, seed++);
    inputs.push_back(std::move(t));
  }
  return inputs;
}

class ExecutableRuntime : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cache_dir_ = fs::temp_directory_path() / ("stitch_executable_runtime_test_" + std::to_string(::getpid()));
    fs::remove_all(cache_dir_);
    cache_ = std::make_unique<KernelCache>(cache_dir_);
  }
  static void TearDownTestSuite() {
    cache_.reset();
    fs::remove_all(cache_dir_);
  }

  static void expect_matches(CpuExecutable& exe, const Graph& g, int64_t reduction_length,
                             const SymbolBindings& symbols = {}) {
    std::vector<Tensor> inputs = random_inputs(g, 5, symbols);
    std::vector<Tensor> want = interpret(g, inputs);
    std::vector<Tensor> got = exe.run(inputs);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_TRUE(testing::matches_interpreter(got[i], want[i], false, reduction_length))
          << g.name() << " output " << i;
    }
  }

  static fs::path cache_dir_;
  static std::unique_ptr<KernelCache> cache_;
};

fs::path ExecutableRuntime::cache_dir_;
std::unique_ptr<KernelCache> ExecutableRuntime::cache_;

TEST_F(ExecutableRuntime, DotsAreLibraryCallsMatchingTheInterpreter) {
  Graph g = canonical_graph(testing::kDotShapeClassesGraph);
  for (PlannerKind planner : {PlannerKind::None, PlannerKind::Xla}) {
    SCOPED_TRACE(std::string(planner_name(planner)));
    CpuExecutable exe = pipeline::compile_cpu(g, planner, *cache_);
    int library = 0;
    for (const FusionGroup& group : exe.plan().groups) library += group.kind == GroupKind::Library;
    EXPECT_EQ(library, 11);
    expect_matches(exe, g, 9);
  }
}

TEST_F(ExecutableRuntime, BatchedDotWithSymbolicBatch) {
  Graph g = canonical_graph(R"(graph bdot(x: f32[B, 4, 8], w: f32[8, 16]) -> (f32[B, 4, 16]) {
  y = dot(x, w)
  z = tanh(y)
  return z
})");
  CpuExecutable exe = pipeline::compile_cpu(g, PlannerKind::Xla, *cache_);
  std::vector<Tensor> inputs = random_inputs(g, 3, {{"B", 3}});
  std::vector<Tensor> want = interpret(g, inputs);
  std::vector<Tensor> got = exe.run(inputs);
  EXPECT_TRUE(testing::matches_interpreter(got[0], want[0], true, 8));
}

const char* const kFusable = R"(graph fusable(x: f32[16, 32], y: f32[16, 32]) -> (f32[16, 32], f32[16]) {
  a = mul(x, y)
  b = exp(a)
  c = add(b, x)
  s = reduce_sum(c, axes=[1])
  m = reduce_max(c, axes=[1])
  t = add(s, m)
  return c, t
})";

TEST_F(ExecutableRuntime, RejectedFusedPlanFallsBackToTheUnfusedPlanLoudly) {
  Graph g = canonical_graph(kFusable);
  std::vector<std::string> warnings;
  pipeline::CpuCompileOptions options;
  options.warn = [&](const std::string& w) { warnings.push_back(w); };
  options.reject_plan = [](const FusionPlan& p) { return p.planner == "xla"; };
  CpuExecutable exe = pipeline::compile_cpu(g, PlannerKind::Xla, *cache_, options);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("falling back to the unfused plan"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("fusable"), std::string::npos) << warnings[0];
  EXPECT_EQ(exe.plan().planner, "none");
  EXPECT_EQ(exe.fallback(), warnings[0]);
  expect_matches(exe, g, 32);
}

// kTwoChains compiled under the stitch planner with `reject` as the seam
// (`max_fusions`: another in-memory key per case), then checked against the
// interpreter: the one warning, which holds `warned`, and the steps the
// interpreter runs.
void expect_per_group_fallback(KernelCache& cache, const std::function<bool(const FusionGroup&)>& reject,
                               int max_fusions, const std::string& warned, int interpreted_steps) {
  Graph g = canonical_graph(testing::kTwoChains);
  std::vector<std::string> warnings;
  pipeline::CpuCompileOptions options;
  options.warn = [&](const std::string& w) { warnings.push_back(w); };
  options.reject_group = reject;
  options.plan.max_fusions = max_fusions;
  CpuExecutable exe = pipeline::compile_cpu(g, PlannerKind::Stitch, cache, options);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find(warned), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("reject_group"), std::string::npos) << warnings[0];
  EXPECT_EQ(exe.fallback(), warnings[0]);
  EXPECT_EQ(testing::two_chains_plan_problems(g, exe.plan()), "") << print_plan(g, exe.plan());
  EXPECT_EQ(exe.kernel_count(), 5);
  exe.set_step_profiling(true);
  std::vector<Tensor> inputs = random_inputs(g, 5);
  std::vector<Tensor> want = interpret(g, inputs);
  std::vector<Tensor> got = exe.run(inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(testing::matches_interpreter(got[i], want[i], false, 32)) << "output " << i;
  }
  int interpreted = 0;
  for (const CpuExecutable::StepTime& t : exe.step_times()) interpreted += t.kind == "interpreter";
  EXPECT_EQ(interpreted, interpreted_steps);
}

// One group that does not compile (the fused a..s of the stitch planner)
// falls back alone: its ops run as one kernel each, the other group keeps its
// fused kernel, and the warning names the group.
TEST_F(ExecutableRuntime, ARejectedGroupFallsBackAloneLoudly) {
  const Graph g = canonical_graph(testing::kTwoChains);
  expect_per_group_fallback(*cache_, testing::rejects_the_fused_exp(g), -1,
                            "group 0 (4 ops; stitched: c = add(b, x)) did not compile alone (2 builds to find it)", 0);
}

// When the unfused group's exp does not compile even alone, the interpreter
// runs that one op; the other unfused ops and the fused group keep kernels.
TEST_F(ExecutableRuntime, AnOpThatDoesNotCompileAloneRunsOnTheInterpreter) {
  const Graph g = canonical_graph(testing::kTwoChains);
  expect_per_group_fallback(*cache_, testing::rejects_every_exp(g), 999,
                            "its ops run as one kernel each; fused kernels kept: 1; of its ops, b = exp(a) did "
                            "not compile even alone (4 builds to find it)",
                            1);
}

TEST_F(ExecutableRuntime, NothingCompilesRunsTheInterpreterLoudly) {
  Graph g = canonical_graph(kFusable);
  std::vector<std::string> warnings;
  pipeline::CpuCompileOptions options;
  options.warn = [&](const std::string& w) { warnings.push_back(w); };
  options.reject_plan = [](const FusionPlan&) { return true; };
  // A different planner cap gives a different in-memory key: this compile is
  // not answered by an earlier test's executable.
  options.plan.max_fusions = 1000;
  CpuExecutable exe = pipeline::compile_cpu(g, PlannerKind::Xla, *cache_, options);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("the unfused plan failed too"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("reference interpreter"), std::string::npos) << warnings[0];
  expect_matches(exe, g, 32);
}

TEST_F(ExecutableRuntime, ARealCompilerErrorFallsBack) {
  // An unknown flag makes the system compiler fail on every unit: a real
  // CompileError, not the test seam.
  Graph g = canonical_graph(kFusable);
  std::vector<std::string> warnings;
  pipeline::CpuCompileOptions options;
  options.warn = [&](const std::string& w) { warnings.push_back(w); };
  options.compiler.flags.push_back("--stitch-no-such-flag");
  CpuExecutable exe = pipeline::compile_cpu(g, PlannerKind::Xla, *cache_, options);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("stitch-no-such-flag"), std::string::npos) << warnings[0];
  expect_matches(exe, g, 32);
}

TEST_F(ExecutableRuntime, MaxFusionsCapsTheXlaPlan) {
  Graph g = canonical_graph(kFusable);
  auto groups = [&](int cap) {
    PlanOptions o;
    o.max_fusions = cap;
    return plan(g, PlannerKind::Xla, o).groups.size();
  };
  const size_t unfused = plan(g, PlannerKind::None).groups.size();
  EXPECT_EQ(groups(0), unfused);
  EXPECT_LT(groups(-1), unfused);
  EXPECT_LE(groups(1), unfused);
  EXPECT_GT(groups(1), groups(-1));
  PlanOptions capped;
  capped.max_fusions = 0;
  FusionPlan p = plan(g, PlannerKind::Xla, capped);
  bool named = false;
  for (const FusionRefusal& r : p.refusals) named |= r.reason.find("STITCH_MAX_FUSIONS=0") != std::string::npos;
  EXPECT_TRUE(named) << print_plan(g, p);

  pipeline::CpuCompileOptions options;
  options.plan.max_fusions = 2;
  CpuExecutable exe = pipeline::compile_cpu(g, PlannerKind::Xla, *cache_, options);
  expect_matches(exe, g, 32);
}

TEST_F(ExecutableRuntime, MaxFusionsFromTheEnvironment) {
  Graph g = canonical_graph(kFusable);
  ::setenv("STITCH_MAX_FUSIONS", "0", 1);
  const size_t capped = plan(g, PlannerKind::Xla).groups.size();
  ::setenv("STITCH_MAX_FUSIONS", "lots", 1);
  EXPECT_THROW(plan(g, PlannerKind::Xla), UserError);
  ::unsetenv("STITCH_MAX_FUSIONS");
  EXPECT_EQ(capped, plan(g, PlannerKind::None).groups.size());
  EXPECT_LT(plan(g, PlannerKind::Xla).groups.size(), capped);
}

TEST_F(ExecutableRuntime, RepeatedRunsReuseOutputsAndTheWorkspace) {
  Graph g = canonical_graph(R"(graph twice(x: f32[64, 32]) -> (f32[64, 32], f32[64], f32[64, 32], f32[]) {
  a = exp(x)
  s = reduce_sum(a, axes=[1])
  b = mul(a, 3.0)
  t = reduce_max(s)
  return b, s, b, t
})");
  CpuExecutable exe = pipeline::compile_cpu(g, PlannerKind::None, *cache_);
  std::vector<Tensor> outputs;
  std::vector<Tensor> first = random_inputs(g, 1), second = random_inputs(g, 2);
  exe.run(first, outputs);
  ASSERT_EQ(outputs.size(), 4u);
  const std::byte* b_data = outputs[0].raw();
  const int64_t peak = exe.peak_intermediate_bytes();
  EXPECT_GT(peak, 0);
  exe.run(second, outputs);
  // Written in place: same storage, new values; the repeated output is a copy.
  EXPECT_EQ(outputs[0].raw(), b_data);
  EXPECT_EQ(exe.peak_intermediate_bytes(), peak);
  std::vector<Tensor> want = interpret(g, second);
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_TRUE(testing::matches_interpreter(outputs[i], want[i], true, 64)) << "output " << i;
  }
  EXPECT_NE(outputs[2].raw(), outputs[0].raw());
  // A wrongly shaped tensor in the outputs is replaced, not written past.
  outputs[1] = Tensor(DType::f32, {3});
  outputs.pop_back();
  exe.run(first, outputs);
  ASSERT_EQ(outputs.size(), 4u);
  EXPECT_TRUE(testing::matches_interpreter(outputs[1], interpret(g, first)[1], true, 64));
}

TEST_F(ExecutableRuntime, OutOfRangeGatherIndexIsTheInterpretersUserError) {
  Graph g = canonical_graph(R"(graph take(x: f32[5, 3], i: i64[4]) -> (f32[4, 3]) {
  y = gather(x, i, axis=0)
  z = mul(y, 2.0)
  return z
})");
  for (PlannerKind planner : {PlannerKind::None, PlannerKind::Xla}) {
    CpuExecutable exe = pipeline::compile_cpu(g, planner, *cache_);
    Tensor x(DType::f32, {5, 3});
    fill_random(x, 1);
    std::vector<Tensor> good = {x, testing::int_tensor(DType::i64, {4}, {0, -5, 4, -1})};
    std::vector<Tensor> got = exe.run(good);
    EXPECT_TRUE(testing::matches_interpreter(got[0], interpret(g, good)[0], false, 0));
    for (int64_t bad_index : {int64_t{5}, int64_t{-6}, int64_t{1} << 40}) {
      std::vector<Tensor> bad = {x, testing::int_tensor(DType::i64, {4}, {0, bad_index, 1, 2})};
      EXPECT_THROW(interpret(g, bad), UserError);
      try {
        exe.run(bad);
        ADD_FAILURE() << "index " << bad_index << " was accepted";
      } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("out of range for axis 0 of extent 5"), std::string::npos) << e.what();
      }
    }
    // The executable is still usable after a rejected input.
    EXPECT_TRUE(testing::matches_interpreter(exe.run(good)[0], interpret(g, good)[0], false, 0));
  }
}

TEST_F(ExecutableRuntime, PowOfAHalfKeepsPowsValuesAtMinusZeroAndMinusInfinity) {
  // GCC's vectoriser turns pow(x, 0.5) into a square root without -fmath-errno
  // (found by the random packed suite, seed 1349); the runtime helper keeps pow's
  // +0 at -0 and +inf at -inf, in vectorised loops too (1024 elements).
  Graph g = canonical_graph(R"(graph half(x: f32[1024], d: f64[1024]) -> (f32[1024], f64[1024]) {
  y = pow(x, 0.5)
  e = pow(d, 0.5)
  return y, e
})");
  CpuExecutable exe = pipeline::compile_cpu(g, PlannerKind::Xla, *cache_);
  std::vector<Tensor> inputs = random_inputs(g, 9);
  const double specials[] = {-0.0, 0.0, -INFINITY, INFINITY, NAN, -1.0, 4.0, 1e-40};
  for (Tensor& t : inputs) {
    for (int64_t i = 0; i < t.numel(); i += 3) t.set_f64(i, specials[(i / 3) % 8]);
  }
  std::vector<Tensor> want = interpret(g, inputs);
  std::vector<Tensor> got = exe.run(inputs);
  for (size_t o = 0; o < 2; ++o) {
    for (int64_t i = 0; i < got[o].numel(); i += 3) {
      const double w = want[o].get_f64(i), v = got[o].get_f64(i);
      EXPECT_TRUE((std::isnan(w) && std::isnan(v)) || (w == v && std::signbit(w) == std::signbit(v)))
          << "output " << o << " element " << i << ": pow(" << inputs[o].get_f64(i) << ", 0.5) = " << v
          << ", interpreter " << w;
    }
    EXPECT_TRUE(testing::matches_interpreter(got[o], want[o], true, 0));
  }
}

TEST_F(ExecutableRuntime, ArgmaxOverAnAxisEmptyAtRunTimeIsTheInterpretersUserError) {
  Graph g = canonical_graph(R"(graph am(x: f32[3, N]) -> (i64[3], i64[3]) {
  i = argmax(x, axes=[1])
  j = argmin(x, axes=[1])
  return i, j
})");
  for (PlannerKind planner : {PlannerKind::None, PlannerKind::Xla}) {
    CpuExecutable exe = pipeline::compile_cpu(g, planner, *cache_);
    std::vector<Tensor> empty = random_inputs(g, 1, {{"N", 0}});
    EXPECT_EQ(testing::rejects_like_interpreter([&] { interpret(g, empty); }, [&] { exe.run(empty); }), "");
    std::vector<Tensor> full = random_inputs(g, 1, {{"N", 5}});
    std::vector<Tensor> got = exe.run(full);
    std::vector<Tensor> ref = interpret(g, full);
    for (size_t o = 0; o < 2; ++o) EXPECT_TRUE(testing::matches_interpreter(got[o], ref[o], false, 0));
  }
}

TEST_F(ExecutableRuntime, FullReductionsRunSplitIntoRowsAndPartials) {
  Graph g = canonical_graph(R"(graph full(x: f32[65536], y: f32[65536], i: i32[4, 32768], b: bool[131072],
                  d: f64[2, 65536]) -> (f32[], f32[1], f32[], i32[], bool[], f64[]) {
  s = reduce_sum(mul(x, y))
  m = reduce_mean(x, axes=[0], keepdims=true)
  n = reduce_min(x)
  k = reduce_sum(i, axes=[0, 1])
  a = reduce_all(b)
  p = reduce_max(d, axes=[0, 1])
  return s, m, n, k, a, p
})");
  for (PlannerKind planner : {PlannerKind::None, PlannerKind::Xla}) {
    SCOPED_TRACE(std::string(planner_name(planner)));
    CpuExecutable exe = pipeline::compile_cpu(g, planner, *cache_);
    EXPECT_NE(exe.graph(), g);  // the CPU runs the split graph
    int reshapes = 0;
    for (const Node& n : exe.graph().nodes()) reshapes += n.op == OpKind::Reshape;
    EXPECT_GE(reshapes, 6);
    expect_matches(exe, g, 131072);
    // A memory hit rebuilds the same split graph the cached launch list indexes.
    CpuExecutable again = pipeline::compile_cpu(g, planner, *cache_);
    EXPECT_EQ(again.cache_stats().memory_hits, 1);
    expect_matches(again, g, 131072);
  }
}

// y, z and v take transpose tiles (each transpose moves its operand's
// innermost axis: to the second-to-last axis, or z's to the first); without
// tiles all three take column strips.
TEST_F(ExecutableRuntime, TransposesOfTheInnermostAxisRunInTilesOrColumnStrips) {
  Graph g = canonical_graph(R"(graph strips(a: f32[768, 512], b: f32[512, 768], x: i32[3, 512, 256], w: f64[2, 256, 1024])
    -> (f32[512, 768], i32[256, 3, 512], f64[2, 1024, 256]) {
  y = add(transpose(a, perm=[1, 0]), b)
  z = mul(transpose(x, perm=[2, 0, 1]), 3)
  v = neg(transpose(w, perm=[0, 2, 1]))
  return y, z, v
})");
  for (const bool tiles : {true, false}) {
    for (PlannerKind planner : {PlannerKind::None, PlannerKind::Xla}) {
      SCOPED_TRACE(std::string(planner_name(planner)) + (tiles ? " tiles" : " strips"));
      pipeline::CpuCompileOptions options;
      options.rows.transpose_tiles = tiles;
      CpuExecutable exe = pipeline::compile_cpu(g, planner, *cache_, options);
      EXPECT_EQ(exe.source().find("row0") != std::string::npos, !tiles);
      EXPECT_EQ(exe.source().find("stitch_transpose_tile(tile0") != std::string::npos, tiles);
      std::vector<Tensor> inputs = random_inputs(g, 21);
      std::vector<Tensor> want = interpret(g, inputs);
      std::vector<Tensor> got = exe.run(inputs);
      for (size_t o = 0; o < want.size(); ++o) {
        EXPECT_TRUE(testing::tensors_bitwise_equal(got[o], want[o])) << "output " << o;
      }
    }
  }
}

// Row kernels whose warps a block the cache rules set, each run against the
// interpreter: a stitched LayerNorm over rows of 12345 floats (48 KiB), which
// the L2 rule gives 8, 4, 2 or 1 warps; one over rows of 1001 floats (4 KiB),
// which the L1 rule gives 8, 4 or 2 (it applies to rows of at most a quarter
// of the L1, so never leaves fewer than 2); and a one-phase reduction (1).
// 24 rows, which 8, 4, 2 and 1 warps divide (a block's warps divide the rows,
// ChooseRowSchedule.CpuBlocksTakeWarpsThatDivideTheRows).
TEST_F(ExecutableRuntime, RowKernelsTakeTheWarpsTheirCacheShare) {
  auto layer_norm = [](int n) {
    return canonical_graph(fmt::format(R"(graph l(x: f32[24, {0}], g: f32[{0}], b: f32[{0}]) -> (f32[24, {0}]) {{
  y = layer_norm(x, g, b, axes=[-1], eps=1e-5)
  return y
}})", n).c_str());
  };
  const Graph wide = layer_norm(12345);
  const Graph narrow = layer_norm(1001);
  const Graph sum = canonical_graph(R"(graph r(x: f32[43, 1001]) -> (f32[43]) {
  y = reduce_sum(x, axes=[1])
  return y
})");
  struct Case {
    const Graph* graph;
    int64_t l1, l2;
    const char* label;
  };
  const Case cases[] = {{&wide, 32 << 10, int64_t{8} << 20, "GRID-WARP_8"},
                        {&wide, 32 << 10, int64_t{1} << 20, "GRID-WARP_4"},
                        {&wide, 32 << 10, int64_t{512} << 10, "GRID-WARP_2"},
                        {&wide, 32 << 10, int64_t{128} << 10, "GRID-WARP_1"},
                        {&narrow, 64 << 10, int64_t{1} << 20, "GRID-WARP_8"},
                        {&narrow, 32 << 10, int64_t{1} << 20, "GRID-WARP_4"},
                        {&narrow, 16 << 10, int64_t{1} << 20, "GRID-WARP_2"},
                        {&sum, 32 << 10, int64_t{1} << 20, "GRID-WARP_1"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(fmt::format("{} L1 {} KiB L2 {} KiB: {}", c.graph->name(), c.l1 >> 10, c.l2 >> 10, c.label));
    pipeline::CpuCompileOptions options;
    options.rows.cpu_l1_bytes = c.l1;
    options.rows.cpu_l2_bytes = c.l2;
    CpuExecutable exe = pipeline::compile_cpu(*c.graph, PlannerKind::Stitch, *cache_, options);
    EXPECT_EQ(exe.kernel_count(), 1);
    EXPECT_NE(exe.source().find(std::string("warp-per-row [") + c.label + ",CTA]"), std::string::npos);
    expect_matches(exe, *c.graph, c.graph->type(c.graph->params()[0]).shape.back().extent());
  }
}

TEST_F(ExecutableRuntime, CompileBatchSharesOneTranslationUnit) {
  std::vector<Graph> graphs = {canonical_graph(kFusable), canonical_graph(R"(graph other(x: f32[N, 8]) -> (f32[N]) {
  y = sigmoid(x)
  s = reduce_sum(y, axes=[1])
  return s
})")};
  KernelCache cache(cache_dir_ / "batch");
  std::vector<CpuExecutable> exes = pipeline::compile_cpu_batch(graphs, PlannerKind::Xla, cache);
  ASSERT_EQ(exes.size(), 2u);
  EXPECT_EQ(cache.stats().misses, 1);
  EXPECT_EQ(exes[0].source(), exes[1].source());
  expect_matches(exes[0], graphs[0], 32);
  std::vector<Tensor> inputs = random_inputs(graphs[1], 1, {{"N", 5}});
  EXPECT_TRUE(testing::matches_interpreter(exes[1].run(inputs)[0], interpret(graphs[1], inputs)[0], true, 8));
  EXPECT_EQ(pipeline::cpu_unsupported_reason(graphs[1], PlannerKind::Xla), "");
}

}  // namespace
}  // namespace stitch::runtime::cpu
