// Dot epilogues (docs/fusion.md, Dot epilogues): which kernels the searching
// planners run inside a dot's call, which they refuse and why, the order of
// the pair, and the results of the CPU back end, panel by panel, against the
// interpreter.
#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <unistd.h>

#include "fusion/dot_epilogues.h"
#include "fusion/planner.h"
#include "plan_invariants.h"
#include "pipeline/cpu_route.h"
#include "runtime/cpu/executable.h"
#include "stitch/interpreter.h"
#include "tensor/compare.h"

namespace stitch {
namespace {

using testing_fusion::canonical_graph;

// The epilogue groups of `p`, by the name of the dot each runs in.
std::vector<std::string> epilogue_dots(const Graph& g, const FusionPlan& p) {
  std::vector<std::string> out;
  for (const FusionGroup& grp : p.groups) {
    if (grp.epilogue_of >= 0) out.push_back(g.value_name(g.nodes()[grp.epilogue_of].output));
  }
  return out;
}

int node_named(const Graph& g, const std::string& name) {
  for (int i = 0; i < static_cast<int>(g.nodes().size()); ++i) {
    if (g.value_name(g.nodes()[i].output) == name) return i;
  }
  ADD_FAILURE() << "no node " << name;
  return -1;
}

// Each epilogue comes right after its dot's group.
void expect_epilogues_follow_their_dots(const Graph& g, const FusionPlan& p) {
  for (size_t i = 0; i < p.groups.size(); ++i) {
    if (p.groups[i].epilogue_of < 0) continue;
    ASSERT_GT(i, 0u);
    EXPECT_EQ(p.groups[i - 1].kind, GroupKind::Library) << print_plan(g, p);
    EXPECT_EQ(p.groups[i - 1].roots.front(), p.groups[i].epilogue_of) << print_plan(g, p);
  }
}

constexpr const char* kTransformerPieces = R"(graph pieces(x: f32[67, 48], w1: f32[48, 80], b1: f32[80], w2: f32[80, 48],
    b2: f32[48], q: f32[2, 3, 19, 16], k: f32[2, 3, 16, 23], mask: f32[2, 1, 1, 23]) {
  f = gelu(add(dot(x, w1), b1))
  o = add(add(dot(f, w2), b2), x)
  h = layer_norm(o, axes=[-1], eps=1e-5)
  s = softmax(add(mul(dot(q, k), 0.25), mask), axis=-1)
  return h, s
})";

TEST(DotEpilogue, LoopAndRowKernelsRunInsideTheirDots) {
  const Graph g = canonical_graph(kTransformerPieces);
  for (PlannerKind kind : {PlannerKind::Stitch, PlannerKind::Ilp, PlannerKind::Greedy}) {
    SCOPED_TRACE(std::string(planner_name(kind)));
    const FusionPlan p = plan(g, kind);
    testing_fusion::check_plan_invariants(g, p);
    // Bias + GELU (loop), bias + residual + LayerNorm (stitched row kernel),
    // scale + mask + softmax over a batched dot (row kernel).
    EXPECT_EQ(epilogue_dots(g, p).size(), 3u) << print_plan(g, p);
    EXPECT_EQ(p.kernel_count(), 3) << print_plan(g, p);
    expect_epilogues_follow_their_dots(g, p);
    EXPECT_NE(print_plan(g, p).find("3 of them dot epilogues"), std::string::npos);
  }
  // xla keeps dots apart, and so does a GPU plan (no epilogues on CUDA yet).
  EXPECT_TRUE(epilogue_dots(g, plan(g, PlannerKind::Xla)).empty());
  EXPECT_TRUE(epilogue_dots(g, plan(g, PlannerKind::Stitch, PlanOptions::for_gpu())).empty());
  PlanOptions off;
  off.dot_epilogues = false;
  EXPECT_TRUE(epilogue_dots(g, plan(g, PlannerKind::Stitch, off)).empty());
  // A fusion cap (for bisecting) turns them off too.
  PlanOptions capped;
  capped.max_fusions = 1000;
  EXPECT_TRUE(epilogue_dots(g, plan(g, PlannerKind::Stitch, capped)).empty());
}

TEST(DotEpilogue, AnEpilogueIsNotALaunchAndDoesNotReadTheDotBack) {
  const Graph g = canonical_graph(R"(graph b(x: f32[64, 128], w: f32[128, 48], bias: f32[48]) {
  r = tanh(add(dot(x, w), bias))
  return r
})");
  const FusionPlan p = plan(g, PlannerKind::Stitch);
  ASSERT_EQ(p.groups.size(), 2u);
  EXPECT_EQ(p.kernel_count(), 1);
  const FusionCostModel bytes;
  const PlanCost c = bytes.group_cost(g, p.groups[1]);
  EXPECT_EQ(c.launches, 0);
  EXPECT_EQ(c.bytes_read, 48 * 4);  // the bias only
  EXPECT_EQ(bytes.plan_cost(g, p).launches, 1);
}

TEST(DotEpilogue, RefusesWhatDoesNotRunByTheDotsRows) {
  const Graph g = canonical_graph(R"(graph r(x: f32[40, 64], w: f32[64, 40], xi: i32[40, 64], wi: i32[64, 24],
      v: f32[64], xs: f32[N, 64]) {
    d = dot(x, w)
    t = relu(transpose(d, perm=[1, 0]))
    c = reduce_sum(exp(d), axes=[0])
    di = dot(xi, wi)
    i = abs(di)
    dv = dot(x, v)
    mv = exp(dv)
    ds = dot(xs, w)
    sym = exp(ds)
    return t, c, i, mv, sym
  })");
  const FusionPlan p = plan(g, PlannerKind::Stitch);
  EXPECT_TRUE(epilogue_dots(g, p).empty()) << print_plan(g, p);
  // Why each reader of each dot is refused, one kernel per reader (xla's
  // groups: the stitch plan packs the small ones together).
  const FusionPlan xla = plan(g, PlannerKind::Xla);
  auto refusals_of = [&](const char* name) {
    const int d = node_named(g, name);
    std::vector<std::string> out;
    for (const FusionGroup& grp : xla.groups) {
      if (grp.kind == GroupKind::Library) continue;
      const bool reads = std::any_of(grp.nodes.begin(), grp.nodes.end(), [&](int n) {
        const auto& in = g.nodes()[n].inputs;
        return std::any_of(in.begin(), in.end(), [&](ValueId v) { return g.value(v).producer == d; });
      });
      if (reads) out.push_back(dot_epilogue_refusal(g, d, grp));
    }
    return out;
  };
  const std::vector<std::string> d = refusals_of("d");
  ASSERT_EQ(d.size(), 2u);
  EXPECT_NE(d[0].find("transpose"), std::string::npos) << d[0];
  EXPECT_NE(d[1].find("does not reduce rows"), std::string::npos) << d[1];
  const std::vector<std::string> di = refusals_of("di");
  ASSERT_EQ(di.size(), 1u);
  EXPECT_NE(di[0].find("i32"), std::string::npos) << di[0];
  const std::vector<std::string> dv = refusals_of("dv");
  ASSERT_EQ(dv.size(), 1u);
  EXPECT_NE(dv[0].find("matrix-vector"), std::string::npos) << dv[0];
  const std::vector<std::string> ds = refusals_of("ds");
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_NE(ds[0].find("symbolic"), std::string::npos) << ds[0];
}

TEST(DotEpilogue, AKernelReadingTwoDotsRunsInsideTheLaterOne) {
  // T5's gated GELU: gelu(x W0) * (x W1) reads both dots in place.
  const Graph g = canonical_graph(R"(graph gated(x: f32[33, 40], w0: f32[40, 56], w1: f32[40, 56]) {
    y = mul(gelu(dot(x, w0), approximate="tanh"), dot(x, w1))
    return y
  })");
  const FusionPlan p = plan(g, PlannerKind::Stitch);
  ASSERT_EQ(epilogue_dots(g, p).size(), 1u) << print_plan(g, p);
  EXPECT_EQ(p.kernel_count(), 2);
  expect_epilogues_follow_their_dots(g, p);
  // The other dot runs first.
  EXPECT_EQ(p.groups[0].kind, GroupKind::Library);
  EXPECT_NE(p.groups[0].roots.front(), p.groups[2].epilogue_of);
}

TEST(DotEpilogue, AKernelThatAlsoReadsALaterResultOfTheDotIsNotItsEpilogue) {
  // m's kernel reads the dot and a value computed from the dot by another
  // kernel (the column sum): it cannot run while the dot's rows come in.
  const Graph g = canonical_graph(R"(graph later(x: f32[30, 64], w: f32[64, 20]) {
    d = dot(x, w)
    c = reduce_sum(d, axes=[0], keepdims=true)
    m = mul(exp(d), c)
    return m
  })");
  const FusionPlan p = plan(g, PlannerKind::Stitch);
  for (const FusionGroup& grp : p.groups) {
    if (grp.epilogue_of < 0) continue;
    EXPECT_FALSE(grp.contains(node_named(g, "m"))) << print_plan(g, p);
  }
  testing_fusion::check_plan_invariants(g, p);
}

// The CPU back end's results against the interpreter's, with panels of
// `panel_bytes` (the CPU's L2 setting) so that a result spans many.
void expect_matches_interpreter(const Graph& g, int64_t panel_bytes, int want_kernels) {
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < g.params().size(); ++i) {
    const TensorType& t = g.type(g.params()[i]);
    inputs.emplace_back(t.dtype, concrete_shape(t.shape, {}));
    fill_random(inputs.back(), 23 + i);
  }
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("stitch-dot-epilogue-" + std::to_string(::getpid()));
  runtime::cpu::KernelCache cache(dir);
  pipeline::CpuCompileOptions options;
  options.rows.cpu_l2_bytes = panel_bytes;
  runtime::cpu::CpuExecutable exe = pipeline::compile_cpu(g, PlannerKind::Stitch, cache, options);
  ASSERT_TRUE(exe.fallback().empty()) << exe.fallback();
  EXPECT_EQ(exe.kernel_count(), want_kernels) << print_plan(g, exe.plan());
  const std::vector<Tensor> got = exe.run(inputs);
  const std::vector<Tensor> want = interpret(g, inputs);
  std::filesystem::remove_all(dir);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const TensorComparison c = compare_with_interpreter(got[i], want[i], output_allowance(g, g.outputs()[i].value, {}));
    EXPECT_TRUE(c.ok) << g.name() << " output " << i << " (panels of " << panel_bytes << " bytes): " << c.describe();
  }
}

TEST(DotEpilogue, MatchesTheInterpreterPanelByPanel) {
  // Odd sizes: rows that do not fill a block, blocks that straddle rows,
  // batches that straddle panels; the dot's result also a graph output.
  // x's rows make f too large to be packed with a neighbour (kernel packing
  // takes kernels below 64 Ki elements, and a packed kernel is no epilogue).
  const Graph g = canonical_graph(R"(graph panels(x: f32[1301, 48], w1: f32[48, 83], b1: f32[83], w2: f32[83, 48],
      b2: f32[48], q: f32[2, 3, 37, 16], k: f32[2, 3, 16, 29], mask: f32[2, 1, 1, 29], xd: f64[45, 40],
      wd: f64[40, 70]) {
    d1 = dot(x, w1)
    f = gelu(add(d1, b1))
    o = add(add(dot(f, w2), b2), x)
    h = layer_norm(o, axes=[-1], eps=1e-5)
    s = softmax(add(mul(dot(q, k), 0.25), mask), axis=-1)
    e = exp(dot(xd, wd))
    am = argmax(dot(xd, wd), axes=[1])
    return h, s, e, d1, am
  })");
  const FusionPlan p = plan(g, PlannerKind::Stitch);
  EXPECT_EQ(epilogue_dots(g, p).size(), 4u) << print_plan(g, p);
  for (int64_t panel_bytes : {int64_t{1}, int64_t{4096}, int64_t{20000}, int64_t{1} << 20}) {
    SCOPED_TRACE(panel_bytes);
    expect_matches_interpreter(g, panel_bytes, p.kernel_count());
  }
}

TEST(DotEpilogue, RowLocalKernelsAfterAnEpilogueJoinIt) {
  // One GRU step (TensorFlow's GRUCell): the candidate's input slices the
  // gates, the new state slices them again; each is computed row by row
  // from the rows of one dot, so it runs in that dot's call. Contractions of
  // 50 terms: not small dots.
  const Graph g = canonical_graph(R"(graph gru(x: f32[301, 30], h: f32[301, 20], wg: f32[50, 40], bg: f32[40],
      wc: f32[50, 20], bc: f32[20]) {
    gates = sigmoid(add(dot(concat(x, h, axis=1), wg), bg))
    r = slice(gates, start=[0, 0], stop=[301, 20])
    u = slice(gates, start=[0, 20], stop=[301, 40])
    xr = concat(x, mul(r, h), axis=1)
    c = tanh(add(dot(xr, wc), bc))
    hn = add(mul(u, h), mul(sub(1.0, u), c))
    return hn, xr
  })");
  for (PlannerKind kind : {PlannerKind::Stitch, PlannerKind::Ilp, PlannerKind::Greedy}) {
    SCOPED_TRACE(std::string(planner_name(kind)));
    const FusionPlan p = plan(g, kind);
    testing_fusion::check_plan_invariants(g, p);
    expect_epilogues_follow_their_dots(g, p);
    // concat(x, h), then each dot with its epilogue.
    EXPECT_EQ(p.kernel_count(), 3) << print_plan(g, p);
    ASSERT_EQ(epilogue_dots(g, p).size(), 2u) << print_plan(g, p);
    int with_xr = -1, with_hn = -1;
    for (int i = 0; i < static_cast<int>(p.groups.size()); ++i) {
      if (p.groups[i].contains(node_named(g, "xr"))) with_xr = i;
      if (p.groups[i].contains(node_named(g, "hn"))) with_hn = i;
    }
    ASSERT_GE(with_xr, 0);
    ASSERT_GE(with_hn, 0);
    EXPECT_GE(p.groups[with_xr].epilogue_of, 0) << print_plan(g, p);
    EXPECT_GE(p.groups[with_hn].epilogue_of, 0) << print_plan(g, p);
    // The gates are read by both epilogues, so the first still writes them;
    // c only by its own epilogue's new state, so it is not written.
    for (const FusionGroup& grp : p.groups) {
      EXPECT_EQ(std::count(grp.roots.begin(), grp.roots.end(), node_named(g, "c")), 0) << print_plan(g, p);
    }
  }
  for (int64_t panel_bytes : {int64_t{1}, int64_t{4096}, int64_t{20000}, int64_t{1} << 20}) {
    SCOPED_TRACE(panel_bytes);
    expect_matches_interpreter(g, panel_bytes, 3);
  }
}

TEST(DotEpilogue, AKernelReadingAnEpilogueAndALaterKernelStaysApart) {
  // m reads the epilogue's rows and a column sum of them, which the dot's
  // call cannot have computed yet.
  const Graph g = canonical_graph(R"(graph later(x: f32[300, 64], w: f32[64, 40]) {
    e = tanh(dot(x, w))
    s = reduce_sum(e, axes=[0], keepdims=true)
    m = mul(slice(e, start=[0, 0], stop=[300, 20]), slice(s, start=[0, 0], stop=[1, 20]))
    return e, m
  })");
  const FusionPlan p = plan(g, PlannerKind::Stitch);
  testing_fusion::check_plan_invariants(g, p);
  for (const FusionGroup& grp : p.groups) {
    if (grp.epilogue_of < 0) continue;
    EXPECT_FALSE(grp.contains(node_named(g, "m"))) << print_plan(g, p);
  }
  for (int64_t panel_bytes : {int64_t{1}, int64_t{1} << 20}) expect_matches_interpreter(g, panel_bytes, p.kernel_count());
}

// dot_epilogue_refusal on a loop kernel of everything but the dot `d`: what
// reads rows of d at other widths may run inside d's call, what mixes rows
// may not. d is f32[12, 40] (12 rows).
std::string loop_refusal(const std::string& body, const std::string& params = "") {
  const Graph g = canonical_graph("graph w(x: f32[12, 48], w: f32[48, 40]" + params + ") {\n  d = dot(x, w)\n" + body +
                                  "\n}");
  FusionGroup consumer;
  consumer.kind = GroupKind::Loop;
  int dot = -1;
  for (int i = 0; i < static_cast<int>(g.nodes().size()); ++i) {
    if (g.nodes()[i].op == OpKind::Dot) {
      dot = i;
      continue;
    }
    consumer.nodes.push_back(i);
  }
  for (const GraphOutput& o : g.outputs()) consumer.roots.push_back(g.value(o.value).producer);
  std::sort(consumer.roots.begin(), consumer.roots.end());
  return dot_epilogue_refusal(g, dot, consumer);
}

TEST(DotEpilogue, LoopKernelsOfOtherWidthsRunInsideOnlyRowByRow) {
  // Row by row: slices and concats of the last axis, a per-row value
  // broadcast along it, reshapes, elementwise ops; any root width.
  EXPECT_EQ(loop_refusal("  y = concat(slice(d, start=[0, 0], stop=[12, 16]), tanh(d), axis=1)\n  return y"), "");
  EXPECT_EQ(loop_refusal("  s = slice(d, start=[0, 39], stop=[12, 40])\n  y = mul(d, broadcast(s, shape=[12, 40]))\n"
                         "  return y"),
            "");
  EXPECT_EQ(loop_refusal("  y = reshape(exp(d), shape=[12, 4, 10])\n  return y"), "");
  EXPECT_EQ(loop_refusal("  y = concat(d, v, axis=1)\n  return y", ", v: f32[12, 3]"), "");
  // Rows mixed or moved: a slice of the leading axis, a concat along it, a
  // broadcast of one row over all of them, a gather of rows, a transpose.
  auto refused = [](const std::string& why) {
    return why.find("other than element by element or row by row") != std::string::npos;
  };
  // Rows 0..5 of d: 240 elements, a multiple of the 12 rows, but not row by row.
  EXPECT_TRUE(refused(loop_refusal("  y = slice(d, start=[0, 0], stop=[6, 40])\n  return y"))) << "leading slice";
  EXPECT_TRUE(refused(loop_refusal("  y = concat(d, d, axis=0)\n  return y"))) << "leading concat";
  EXPECT_TRUE(refused(loop_refusal("  r = slice(d, start=[0, 0], stop=[1, 40])\n  y = add(d, broadcast(r, shape=[12, 40]))\n"
                                   "  return y")))
      << "one row broadcast";
  EXPECT_TRUE(refused(loop_refusal("  y = gather(d, i, axis=0)\n  return y", ", i: i32[12]"))) << "gather";
  EXPECT_NE(loop_refusal("  y = transpose(d, perm=[1, 0])\n  return y").find("transpose"), std::string::npos);
  // A root that is not rows of d (11 rows of d: 440 elements).
  EXPECT_NE(loop_refusal("  y = slice(d, start=[1, 0], stop=[12, 40])\n  return y").find("not made of rows"),
            std::string::npos);
  EXPECT_NE(loop_refusal("  y = add(d, 1.0)\n  z = mul(v, 2.0)\n  return y, z", ", v: f32[5]").find("not made of rows"),
            std::string::npos);
}

TEST(DotEpilogue, TheEnvironmentTurnsThemOff) {
  const Graph g = canonical_graph(kTransformerPieces);
  ASSERT_EQ(::setenv("STITCH_DOT_EPILOGUES", "0", 1), 0);
  EXPECT_TRUE(epilogue_dots(g, plan(g, PlannerKind::Stitch)).empty());
  ASSERT_EQ(::setenv("STITCH_DOT_EPILOGUES", "maybe", 1), 0);
  EXPECT_THROW(plan(g, PlannerKind::Stitch), UserError);
  ASSERT_EQ(::unsetenv("STITCH_DOT_EPILOGUES"), 0);
  EXPECT_FALSE(epilogue_dots(g, plan(g, PlannerKind::Stitch)).empty());
}

}  // namespace
}  // namespace stitch
