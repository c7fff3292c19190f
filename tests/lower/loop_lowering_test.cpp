// End to end: canonicalize, plan with xla, lower every group to Kernel IR, emit
// all kernels of all test graphs into one translation unit (one compile: they
// are slow), run each graph group by group and compare with the interpreter.
//
// Tolerances (docs/lowering.md, docs/semantics.md "What back ends may differ in"):
// graphs without transcendental ops must match exactly; graphs with them use
// the composite bound 32 * eps * (1 + |want|), since the CPU helpers call std::
// math in the dtype's precision (a few ulp per op) and a chain such as
// 1 + tanh(..) turns ulps of one op into absolute error of the output.
// Graphs with float reductions add 4 * n * eps * (1 + |want|), n the longest
// reduction of the graph: the kernels accumulate in f32 in their own order,
// the interpreter in double sequentially (docs/lowering.md, Tests).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>

#include "codegen/cpu/cpp_emitter.h"
#include "fusion/planner.h"
#include "ir/canonicalize.h"
#include "kir/printer.h"
#include "lower/batch_loads.h"
#include "lower/lower_plan.h"
#include "lower/lower_reduction_group.h"
#include "runtime/cpu/cpu_compiler.h"
#include "stitch/interpreter.h"
#include "stitch/text.h"
#include "tensor_compare.h"
#include "lower_scheduled.h"

namespace stitch::lower {
namespace {

using runtime::cpu::CpuModule;
using stitch::testing::Tolerance;

struct Case {
  std::string id;
  Graph source;  // as written; the interpreter runs this one
  Graph graph;   // canonical; the kernels compute this one
  FusionPlan plan;
  std::vector<LoweredGroup> lowered;
  bool transcendental = false;
  int64_t reduction_length = 0;  // longest float reduction, 0 if none
  int batched_loops = 0;  // a "_batched" case: the loops batch_loads split
  SymbolBindings symbols;  // extents for the symbolic dims of the inputs
};

Graph workload(const std::string& file, const std::string& name) {
  Module m = parse_file(std::string(STITCH_SOURCE_DIR) + "/bench/workloads/" + file);
  const Graph* g = m.find(name);
  if (!g) throw std::runtime_error("no graph " + name + " in " + file);
  return *g;
}

Graph from_text(const std::string& text) { return parse_module(text).graphs.front(); }

// Hand-written graphs: each exercises index mappings the workloads do not.
const char* const kHandGraphs[] = {
    R"(graph bcast_mix(x: f32[5, 1, 7], y: f32[6, 1]) -> (f32[5, 6, 7]) {
  z = mul(add(x, y), 0.5)
  return z
})",
    R"(graph slice_steps(x: f32[40, 30]) -> (f32[13, 7]) {
  s = slice(x, start=[1, 2], stop=[38, 29], step=[3, 4])
  t = sub(neg(s), 1.0)
  return t
})",
    R"(graph iota_cast_select(x: i32[6, 9]) -> (f32[6, 9], i8[6, 9]) {
  it = iota(shape=[6, 9], axis=1, dtype=i32)
  c = lt(x, it)
  y = select(c, cast(x, to=f32), cast(it, to=f32))
  w = cast(mul(x, it), to=i8)
  return y, w
})",
    R"(graph symbolic_batch(x: f32[B, 16], b: f32[16]) -> (f32[B, 4, 4]) {
  y = relu(add(x, b))
  r = reshape(y, shape=[B, 4, 4])
  t = transpose(r, perm=[0, 2, 1])
  return t
})",
    R"(graph reshape_transpose(x: f32[6, 35]) -> (f32[7, 6, 5]) {
  r = reshape(x, shape=[6, 7, 5])
  t = transpose(r, perm=[1, 0, 2])
  u = clamp(t, -1.0, 1.0)
  return u
})",
    R"(graph rotate_axes(x: i64[3, 4, 5]) -> (i64[5, 3, 4]) {
  t = transpose(x, perm=[2, 0, 1])
  return t
})",
    R"(graph scalar_root(x: f32[], y: f32[4]) -> (f32[], f32[4]) {
  s = mul(x, 3.0)
  t = add(y, s)
  return s, t
})",
    R"(graph concat_pad(a: f32[4, 3], b: f32[4, 5]) -> (f32[7, 11]) {
  c = concat(a, b, axis=1)
  p = pad(abs(c), low=[1, 0], high=[2, 3], value=1.5)
  return p
})",
    // Piece versions (docs/lowering.md): blocks wholly inside one piece,
    // blocks across a boundary, and (axis 1) blocks across a row.
    R"(graph concat_rows(a: f32[1500, 3], b: f32[2600, 3], c: f32[700, 3]) -> (f32[4800, 3]) {
  y = mul(concat(a, b, c, axis=0), 2.0)
  return y
})",
    R"(graph concat_columns(a: f32[5, 3000], b: f32[5, 2100]) -> (f32[5, 5100]) {
  y = sub(concat(a, b, axis=1), 1.0)
  return y
})",
    R"(graph concat_transposed(a: f32[2000, 3], b: f32[1100, 3]) -> (f32[3, 3100]) {
  y = neg(transpose(concat(a, b, axis=0), perm=[1, 0]))
  return y
})",
    // Column strips (a transposed piece) with piece versions: each strip of
    // 256 columns lies inside one piece, as in a concat of attention heads.
    R"(graph concat_heads(a: f32[4, 2, 256, 8], b: f32[4, 8, 512]) -> (f32[4, 8, 1024]) {
  p = reshape(transpose(a, perm=[0, 3, 1, 2]), shape=[4, 8, 512])
  y = concat(p, sub(b, 1.0), axis=2)
  return y
})",
    R"(graph pad_interior(x: f32[3, 4000]) -> (f32[6, 4000], f32[15000]) {
  p = pad(x, low=[1, 0], high=[2, 0], value=-2.0)
  q = pad(reshape(x, shape=[12000]), low=[700], high=[2300], value=0.5)
  return p, q
})",
    R"(graph half_chain(x: f16[300], y: f16[300], z: bf16[300]) -> (f16[300], bf16[300]) {
  h = add(mul(x, y), x)
  k = div(mul(z, z), add(z, 3.0))
  return h, k
})",
    R"(graph int_ops(x: i32[7, 11], y: i32[7, 11]) -> (i32[7, 11], bool[7, 11]) {
  q = add(div(x, y), rem(x, y))
  m = and(ge(x, y), ne(q, 0))
  return q, m
})",
    R"(graph two_roots(x: f32[2500]) -> (f32[2500], f32[2500]) {
  a = mul(x, x)
  b = add(a, 1.0)
  return a, b
})",
    R"(graph row_siblings(x: f32[9, 70]) -> (f32[9], f32[9], f32[9]) {
  s = reduce_sum(mul(x, x), axes=[1])
  m = reduce_max(x, axes=[-1])
  n = reduce_min(abs(x), axes=[1])
  return s, m, n
})",
    R"(graph row_long(x: f32[3, 1000], b: f32[1000]) -> (f32[3, 1], f32[3, 1]) {
  s = reduce_mean(add(x, b), axes=[1], keepdims=true)
  p = reduce_prod(mul(x, 0.5), axes=[1], keepdims=true)
  return s, p
})",
    R"(graph column_keepdims(x: f32[33, 20, 5]) -> (f32[1, 20, 5], f32[33, 5]) {
  m = reduce_mean(x, axes=[0], keepdims=true)
  n = reduce_max(x, axes=[1])
  return m, n
})",
    R"(graph multi_axis(x: f32[4, 6, 5, 3]) -> (f32[4, 1, 5, 1], f32[4, 6]) {
  s = reduce_sum(x, axes=[1, 3], keepdims=true)
  t = reduce_sum(transpose(x, perm=[0, 1, 3, 2]), axes=[2, 3])
  return s, t
})",
    R"(graph full_half(x: f16[1000], y: bf16[20, 30]) -> (f16[], bf16[], f32[]) {
  s = reduce_sum(x)
  m = reduce_max(y)
  n = reduce_mean(cast(y, to=f32))
  return s, m, n
})",
    R"(graph f64_reduce(x: f64[7, 129]) -> (f64[7], f64[129]) {
  s = reduce_sum(x, axes=[1])
  p = reduce_prod(x, axes=[0])
  return s, p
})",
    R"(graph int_bool_reduce(x: i32[8, 50], y: f32[8, 50]) -> (i32[8], i32[50], i32[8], bool[8], bool[50]) {
  s = reduce_sum(x, axes=[1])
  p = reduce_prod(x, axes=[0])
  m = reduce_min(x, axes=[1])
  a = reduce_any(gt(y, 1.5), axes=[1])
  b = reduce_all(lt(y, 1.9), axes=[0])
  return s, p, m, a, b
})",
    R"(graph empty_reduce(x: f32[4, 0], y: f32[0, 3]) -> (f32[4], f32[4], f32[3], f32[3]) {
  s = reduce_sum(x, axes=[1])
  m = reduce_max(x, axes=[1])
  n = reduce_mean(y, axes=[0])
  p = reduce_prod(y, axes=[0])
  return s, m, n, p
})",
    R"(graph symbolic_reduce(x: f32[B, 50]) -> (f32[B], f32[50]) {
  s = reduce_sum(exp(x), axes=[1])
  m = reduce_max(x, axes=[0])
  return s, m
})",
};

std::vector<Case> build_cases() {
  std::vector<Case> cases;
  auto add = [&](Graph source, bool transcendental, SymbolBindings symbols = {}) {
    Case c;
    for (const Node& n : source.nodes()) {
      if (!is_reduction(n.op) || !is_float(source.type(n.inputs[0]).dtype)) continue;
      int64_t len = 1;
      for (int64_t d : concrete_shape(source.type(n.inputs[0]).shape, symbols)) len *= d;
      for (int64_t d : concrete_shape(source.type(n.output).shape, symbols)) len /= std::max<int64_t>(d, 1);
      c.reduction_length = std::max(c.reduction_length, len);
    }
    c.id = source.name();
    c.source = std::move(source);
    c.graph = canonicalize(c.source);
    c.plan = plan(c.graph, PlannerKind::Xla);
    c.lowered = stitch::testing::lower_with_default_schedules(c.graph, c.plan, "k_" + c.id);
    c.transcendental = transcendental;
    c.symbols = std::move(symbols);
    // The same kernels with batched loads, as the GPU lowers them
    // (lower/batch_loads.h), run through the CPU emitter like the rest.
    Case batched = c;
    batched.id = c.id + "_batched";
    batched.lowered = stitch::testing::lower_with_default_schedules(c.graph, c.plan, "kb_" + c.id);
    for (LoweredGroup& l : batched.lowered) {
      if (l.kernel) batched.batched_loops += batch_loads(*l.kernel);
    }
    cases.push_back(std::move(c));
    cases.push_back(std::move(batched));
  };
  add(workload("swish.stitch", "swish_small"), true);
  add(workload("add.stitch", "add_small"), false);
  add(workload("gelu_erf.stitch", "gelu_erf_small"), true);
  add(workload("gelu_tanh.stitch", "gelu_tanh_small"), true);
  add(workload("bias_gelu.stitch", "bias_gelu_small"), true);
  add(workload("transpose_add.stitch", "transpose_add_small"), false);
  for (const char* b : {"copy", "mul", "add", "triad"}) {
    std::string name = std::string("babelstream_") + b;
    add(workload(name + ".stitch", name + "_small"), false);
  }
  add(workload("softmax.stitch", "softmax_small"), true);
  add(workload("softmax_explicit.stitch", "softmax_explicit_small"), true);
  add(workload("log_softmax.stitch", "log_softmax_small"), true);
  add(workload("layernorm.stitch", "layernorm_small"), true);
  add(workload("rmsnorm.stitch", "rmsnorm_small"), true);
  add(workload("residual_layernorm.stitch", "residual_layernorm_small"), true);
  add(workload("column_reduce_sub.stitch", "column_reduce_sub_small"), false);
  add(workload("babelstream_dot.stitch", "babelstream_dot_small"), false);
  add(workload("jacobi1d.stitch", "jacobi1d_small"), false);
  add(workload("jacobi1d_tstep.stitch", "jacobi1d_tstep_small"), false);
  for (const char* text : kHandGraphs) {
    Graph g = from_text(text);
    bool symbolic = g.name() == "symbolic_batch" || g.name() == "symbolic_reduce";
    bool transcendental = g.name() == "symbolic_reduce";
    add(std::move(g), transcendental, symbolic ? SymbolBindings{{"B", 37}} : SymbolBindings{});
  }
  return cases;
}

class LoopLowering : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cases_ = std::make_unique<std::vector<Case>>(build_cases());
    std::vector<kir::Kernel> kernels;
    for (const Case& c : *cases_) {
      for (const LoweredGroup& l : c.lowered) {
        if (l.kernel) kernels.push_back(*l.kernel);
      }
    }
    module_ = std::make_unique<CpuModule>(runtime::cpu::compile_and_load(codegen::cpu::emit_cpp_translation_unit(kernels)));
  }
  static void TearDownTestSuite() {
    module_.reset();
    cases_.reset();
  }

  static const Case& find(const std::string& id) {
    for (const Case& c : *cases_) {
      if (c.id == id) return c;
    }
    throw std::runtime_error("no case " + id);
  }

  static std::unique_ptr<std::vector<Case>> cases_;
  static std::unique_ptr<CpuModule> module_;
};

std::unique_ptr<std::vector<Case>> LoopLowering::cases_;
std::unique_ptr<CpuModule> LoopLowering::module_;

std::vector<Tensor> random_inputs(const Graph& g, const SymbolBindings& symbols) {
  std::vector<Tensor> inputs;
  uint64_t seed = 17;
  for (ValueId p : g.params()) {
    Tensor t(g.type(p).dtype, concrete_shape(g.type(p).shape, symbols));
    fill_random(t, seed++);
    inputs.push_back(std::move(t));
  }
  return inputs;
}

// Runs the lowered kernels of `c` in plan order; intermediates live in a map.
std::vector<Tensor> run_lowered(const CpuModule& module, const Case& c, const std::vector<Tensor>& inputs) {
  const Graph& g = c.graph;
  SymbolBindings bindings = bind_inputs(g, inputs);
  std::unordered_map<int, Tensor> values;
  for (size_t i = 0; i < g.params().size(); ++i) values[g.params()[i].index] = inputs[i];
  for (const LoweredGroup& l : c.lowered) {
    if (!l.kernel) throw std::runtime_error(c.id + ": group " + std::to_string(l.group) + " " + l.not_lowered_reason);
    std::vector<Tensor*> buffers;
    for (ValueId v : l.signature.inputs) buffers.push_back(&values.at(v.index));
    for (ValueId v : l.signature.outputs) {
      values[v.index] = Tensor(g.type(v).dtype, concrete_shape(g.type(v).shape, bindings));
    }
    for (ValueId v : l.signature.outputs) buffers.push_back(&values.at(v.index));
    std::vector<int64_t> scalars;
    for (const std::string& s : l.signature.symbols) scalars.push_back(runtime::cpu::scalar_slot(bindings.at(s)));
    runtime::cpu::run_kernel(module, *l.kernel, buffers, scalars);
  }
  std::vector<Tensor> outputs;
  for (const GraphOutput& o : g.outputs()) outputs.push_back(values.at(o.value.index));
  return outputs;
}

TEST_F(LoopLowering, EveryGroupOfEveryTestGraphIsLowered) {
  for (const Case& c : *cases_) {
    for (const LoweredGroup& l : c.lowered) {
      EXPECT_TRUE(l.kernel.has_value()) << c.id << " group " << l.group << ": " << l.not_lowered_reason;
    }
  }
}

// Every elementwise workload's loop kernel, and the reductions' accumulating
// loops, are split by batch_loads (each "_batched" case matches the interpreter
// in MatchesInterpreter), and in the split the loads come first: the loading
// loop stores each input element in its array, the computing loop reads the arrays.
TEST_F(LoopLowering, BatchedLoadsSplitTheElementwiseLoops) {
  for (const char* id : {"swish_small_batched", "gelu_tanh_small_batched", "bias_gelu_small_batched",
                         "add_small_batched", "transpose_add_small_batched", "softmax_small_batched",
                         "layernorm_small_batched", "f64_reduce_batched"}) {
    SCOPED_TRACE(id);
    EXPECT_GE(find(id).batched_loops, 1);
  }
  const Case& swish = find("swish_small_batched");
  ASSERT_TRUE(swish.lowered.front().kernel.has_value());
  const std::string text = kir::print_kernel(*swish.lowered.front().kernel);
  const size_t stored = text.find("part_ld0[part_ahead] =");
  const size_t read = text.find("part_ld0[part]");
  EXPECT_NE(stored, std::string::npos) << text;
  EXPECT_NE(read, std::string::npos) << text;
  EXPECT_LT(stored, read) << text;
  // The CPU lowering's own cases are never split.
  EXPECT_EQ(find("swish_small").batched_loops, 0);
}

TEST_F(LoopLowering, MatchesInterpreter) {
  for (const Case& c : *cases_) {
    SCOPED_TRACE(c.id);
    std::vector<Tensor> inputs = random_inputs(c.source, c.symbols);
    std::vector<Tensor> want = interpret(c.source, inputs);
    std::vector<Tensor> got = run_lowered(*module_, c, inputs);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      SCOPED_TRACE("output " + std::to_string(i));
      EXPECT_TRUE(stitch::testing::matches_interpreter(got[i], want[i], c.transcendental, c.reduction_length));
    }
  }
}

// A second batch size through the same compiled kernel: symbolic dims are
// scalar parameters, not constants of the code.
// The versions these graphs should get: one per piece that can hold a block
// (concat_rows: all three; concat_columns: both; concat_heads: both, in column
// strips; pad_interior: the interior of each pad, as one version), each
// kernel still with its general body.
TEST_F(LoopLowering, PieceVersionsWherePiecesHoldBlocks) {
  const std::map<std::string, int> expected = {{"concat_rows", 3},       {"concat_columns", 2},
                                               {"concat_transposed", 2}, {"concat_heads", 2},
                                               {"pad_interior", 1},
                                               {"jacobi1d_small", 1},    {"jacobi1d_tstep_small", 1}};
  for (const auto& [id, versions] : expected) {
    const Case& c = find(id);
    int found = 0;
    for (const LoweredGroup& l : c.lowered) {
      ASSERT_TRUE(l.kernel.has_value()) << id;
      const std::string text = kir::print_kernel(*l.kernel);
      for (int v = 0; v < 4; ++v) {
        if (text.find("part_v" + std::to_string(v) + " ") != std::string::npos) found = std::max(found, v + 1);
      }
      EXPECT_NE(text.find("for part "), std::string::npos) << id << ": no general body\n" << text;
    }
    EXPECT_EQ(found, versions) << id;
  }
}

// Prefetch (docs/lowering.md): inputs of the roots' shape read in place, or
// shifted (a stencil), are prefetched a block ahead; a broadcast operand, a
// transposed read and an input read only at the boundary of a concat
// (jacobi's B, outside the general body) are not.
TEST_F(LoopLowering, PrefetchesTheInputsReadInPlace) {
  auto prefetched = [&](const std::string& id) {
    std::set<std::string> buffers;
    for (const LoweredGroup& l : find(id).lowered) {
      const std::string text = kir::print_kernel(*l.kernel);
      for (size_t at = text.find("prefetch "); at != std::string::npos; at = text.find("prefetch ", at + 1)) {
        buffers.insert(text.substr(at + 9, text.find('[', at) - at - 9));
      }
    }
    return buffers;
  };
  EXPECT_EQ(prefetched("add_small"), (std::set<std::string>{"in_x", "in_y"}));
  EXPECT_EQ(prefetched("bias_gelu_small"), (std::set<std::string>{"in_x"}));
  EXPECT_EQ(prefetched("bcast_mix"), (std::set<std::string>{}));
  EXPECT_EQ(prefetched("rotate_axes"), (std::set<std::string>{}));
  EXPECT_EQ(prefetched("jacobi1d_small"), (std::set<std::string>{"in_A", "in_B"}));
  const std::string jacobi = kir::print_kernel(*find("jacobi1d_small").lowered.front().kernel);
  const std::string version = jacobi.substr(0, jacobi.find("for part "));
  EXPECT_EQ(version.find("prefetch in_B"), std::string::npos) << version;
}

TEST_F(LoopLowering, SymbolicBatchReusesKernel) {
  const Case& c = find("symbolic_batch");
  for (int64_t batch : {1, 64, 300}) {
    std::vector<Tensor> inputs = random_inputs(c.source, {{"B", batch}});
    std::vector<Tensor> want = interpret(c.source, inputs);
    std::vector<Tensor> got = run_lowered(*module_, c, inputs);
    EXPECT_TRUE(stitch::testing::tensors_match(got[0], want[0], Tolerance::exact())) << "B = " << batch;
  }
}

TEST_F(LoopLowering, SymbolicReductionReusesKernel) {
  const Case& c = find("symbolic_reduce");
  for (int64_t batch : {1, 300}) {
    std::vector<Tensor> inputs = random_inputs(c.source, {{"B", batch}});
    std::vector<Tensor> want = interpret(c.source, inputs);
    std::vector<Tensor> got = run_lowered(*module_, c, inputs);
    int64_t n = std::max<int64_t>(50, batch);
    EXPECT_TRUE(stitch::testing::matches_interpreter(got[0], want[0], true, n))
        << "B = " << batch;
    EXPECT_TRUE(stitch::testing::tensors_match(got[1], want[1], Tolerance::exact())) << "B = " << batch;
  }
}

// Sibling reductions share one kernel: one accumulator and one block
// reduction per root (the block-per-row schedule, forced: the CPU's choice
// for these rows is warp-per-row), the shared producer x[o0, j1] loaded once
// per element.
TEST_F(LoopLowering, RowReductionGolden) {
  const Case& c = find("row_siblings");
  schedule::RowScheduleTarget rows = schedule::RowScheduleTarget::cpu();
  rows.forced = schedule::RowScheduleKind::BlockPerRow;
  const std::vector<LoweredGroup> lowered = stitch::testing::lower_with_default_schedules(c.graph, c.plan, "k_" + c.id, rows);
  ASSERT_EQ(lowered.size(), 1u);
  ASSERT_TRUE(lowered[0].kernel);
  EXPECT_EQ(lowered[0].signature.outputs.size(), 3u);
  EXPECT_EQ(kir::print_kernel(*lowered[0].kernel), R"(kernel k_row_siblings_g0(in_x: global f32[9, 70] read, out_s: global f32[9] write, out_m: global f32[9] write, out_n: global f32[9] write) launch(grid=9, block=96) {
  shared scratch0: f32[3]
  shared scratch1: f32[3]
  shared scratch2: f32[3]
  for blk in grid(9) {
    for thr in block(96) {
      let o0: i64 = blk
      let acc0: f32 = -0.0:f32
      let acc1: f32 = -inf:f32
      let acc2: f32 = inf:f32
      for step in serial(1) {
        let r0: i64 = add(mul(step, 96), thr)
        if lt(r0, 70) {
          let j1: i64 = r0
          let e2: f32 = mul(in_x[o0, j1], in_x[o0, j1])
          acc0 = add(acc0, e2)
          acc1 = max(acc1, in_x[o0, j1])
          let e3: f32 = abs(in_x[o0, j1])
          acc2 = min(acc2, e3)
        }
      }
      total0 = block.reduce_sum(acc0, scratch=scratch0)
      total1 = block.reduce_max(acc1, scratch=scratch1)
      total2 = block.reduce_min(acc2, scratch=scratch2)
      if eq(thr, 0) {
        out_s[o0] = total0
        out_m[o0] = total1
        out_n[o0] = total2
      }
    }
  }
}
)");
}

TEST_F(LoopLowering, SwishSmallGolden) {
  const Case& c = find("swish_small");
  ASSERT_EQ(c.lowered.size(), 1u);
  ASSERT_TRUE(c.lowered[0].kernel);
  EXPECT_EQ(kir::print_kernel(*c.lowered[0].kernel), R"(kernel k_swish_small_g0(in_x: global f32[3001] read, out_y: global f32[3001] write) launch(grid=3, block=256) {
  for blk in grid(3) {
    for thr in block(256) {
      for part in unroll(4) {
        let lin: i64 = add(mul(add(mul(blk, 4), part), 256), thr)
        if lt(lin, 3001) {
          let i0: i64 = lin
          let e0: f32 = sigmoid(in_x[i0])
          let e1: f32 = mul(in_x[i0], e0)
          out_y[i0] = e1
        }
        prefetch in_x[add(mul(add(mul(blk, 4), part), 256), 1024) +: 256]
      }
    }
  }
}
)");
}

}  // namespace
}  // namespace stitch::lower
