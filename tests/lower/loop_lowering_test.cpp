// End to end: canonicalize, plan with xla, lower every group to Kernel IR, emit
// all kernels of all test graphs into one translation unit (one compile: they
// are slow), run each graph group by group and compare with the interpreter.
//
// Tolerances (docs/lowering.md, docs/semantics.md "What back ends may differ in"):
// graphs without transcendental ops must match exactly; graphs with them use
// the composite bound 32 * eps * (1 + |want|), since the CPU helpers call std::
// math in the dtype's precision (a few ulp per op) and a chain such as
// 1 + tanh(..) turns ulps of one op into absolute error of the output.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <unordered_map>

#include "codegen/cpu/cpp_emitter.h"
#include "fusion/planner.h"
#include "ir/canonicalize.h"
#include "kir/printer.h"
#include "lower/lower_plan.h"
#include "runtime/cpu/cpu_compiler.h"
#include "stitch/interpreter.h"
#include "stitch/text.h"
#include "tensor_compare.h"

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
};

std::vector<Case> build_cases() {
  std::vector<Case> cases;
  auto add = [&](Graph source, bool transcendental, SymbolBindings symbols = {}) {
    Case c;
    c.id = source.name();
    c.source = std::move(source);
    c.graph = canonicalize(c.source);
    c.plan = plan(c.graph, PlannerKind::Xla);
    c.lowered = lower_plan(c.graph, c.plan, "k_" + c.id);
    c.transcendental = transcendental;
    c.symbols = std::move(symbols);
    cases.push_back(std::move(c));
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
  for (const char* text : kHandGraphs) {
    Graph g = from_text(text);
    bool symbolic = g.name() == "symbolic_batch";
    add(std::move(g), false, symbolic ? SymbolBindings{{"B", 37}} : SymbolBindings{});
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

double machine_epsilon(DType t) {
  switch (t) {
    case DType::f16: return std::ldexp(1.0, -10);
    case DType::bf16: return std::ldexp(1.0, -7);
    case DType::f64: return std::ldexp(1.0, -52);
    default: return std::ldexp(1.0, -23);
  }
}

Tensor composite_bound(const Tensor& want) {
  Tensor bound(DType::f64, want.shape());
  double eps = machine_epsilon(want.dtype());
  for (int64_t i = 0; i < want.numel(); ++i) bound.set_f64(i, 32 * eps * (1 + std::fabs(want.get_f64(i))));
  return bound;
}

TEST_F(LoopLowering, EveryGroupOfEveryTestGraphIsLowered) {
  for (const Case& c : *cases_) {
    for (const LoweredGroup& l : c.lowered) {
      EXPECT_TRUE(l.kernel.has_value()) << c.id << " group " << l.group << ": " << l.not_lowered_reason;
    }
  }
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
      if (c.transcendental) {
        Tensor bound = composite_bound(want[i]);
        EXPECT_TRUE(stitch::testing::tensors_match(got[i], want[i], Tolerance::per_element(bound)));
      } else {
        EXPECT_TRUE(stitch::testing::tensors_match(got[i], want[i], Tolerance::exact()));
      }
    }
  }
}

// A second batch size through the same compiled kernel: symbolic dims are
// scalar parameters, not constants of the code.
TEST_F(LoopLowering, SymbolicBatchReusesKernel) {
  const Case& c = find("symbolic_batch");
  for (int64_t batch : {1, 64, 300}) {
    std::vector<Tensor> inputs = random_inputs(c.source, {{"B", batch}});
    std::vector<Tensor> want = interpret(c.source, inputs);
    std::vector<Tensor> got = run_lowered(*module_, c, inputs);
    EXPECT_TRUE(stitch::testing::tensors_match(got[0], want[0], Tolerance::exact())) << "B = " << batch;
  }
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
      }
    }
  }
}
)");
}

TEST(LowerPlan, ReductionGroupsAreMarkedNotLowered) {
  Graph g = canonicalize(workload("softmax.stitch", "softmax_small"));
  FusionPlan p = plan(g, PlannerKind::Xla);
  std::vector<LoweredGroup> lowered = lower_plan(g, p, "softmax");
  ASSERT_EQ(lowered.size(), p.groups.size());
  int reductions = 0;
  for (size_t i = 0; i < lowered.size(); ++i) {
    EXPECT_EQ(lowered[i].group, static_cast<int>(i));
    if (p.groups[i].kind == GroupKind::Reduction) {
      ++reductions;
      EXPECT_FALSE(lowered[i].kernel);
      EXPECT_EQ(lowered[i].not_lowered_reason, "not lowered yet: reduction groups have no lowering");
    } else {
      EXPECT_TRUE(lowered[i].kernel) << lowered[i].not_lowered_reason;
    }
  }
  EXPECT_GT(reductions, 0);
}

TEST(LowerPlan, LoopGroupWithGatherIsMarkedNotLowered) {
  Graph g = canonicalize(from_text(R"(graph take(x: f32[10, 4], i: i32[3]) -> (f32[3, 4]) {
  y = exp(gather(x, i, axis=0))
  return y
})"));
  FusionPlan p = plan(g, PlannerKind::Xla);
  std::vector<LoweredGroup> lowered = lower_plan(g, p, "take");
  bool gather_seen = false;
  for (const LoweredGroup& l : lowered) {
    if (l.not_lowered_reason == "not lowered yet: op gather in a loop group") {
      gather_seen = true;
      EXPECT_FALSE(l.kernel);
    }
  }
  EXPECT_TRUE(gather_seen);
  EXPECT_THROW(lower_loop_group(g, p.groups.front(), "take"), InternalError);
}

}  // namespace
}  // namespace stitch::lower
