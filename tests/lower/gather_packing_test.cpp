// Gather in thread composition and kernel packing (docs/lowering.md, Gather and
// Kernel packing): lowered kernels, compiled in one translation unit, compared
// with the interpreter exactly (gather and the packed ops are data movement or
// exact arithmetic). Gather indices are chosen by hand, negatives included,
// since random data would be out of range.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
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
#include "lower_scheduled.h"

namespace stitch::lower {
namespace {

using runtime::cpu::CpuModule;
using stitch::testing::Tolerance;

Graph from_text(const std::string& text) { return canonicalize(parse_module(text).graphs.front()); }

// One lowered group, either of a planned graph or built by hand.
struct Kernel {
  std::string id;
  const Graph* graph;
  FusionGroup group;
  kir::Kernel kernel;
  GroupSignature signature;
};

// Graphs whose every xla group is lowered and run in plan order.
const char* const kGraphs[] = {
    // Index read from a buffer, i32 and i64, negative indices, every dtype of x.
    R"(graph take_rows(x: f32[6, 5], i: i32[4]) -> (f32[4, 5]) {
  y = exp(gather(x, i, axis=0))
  return y
})",
    R"(graph take_middle(x: f16[3, 7, 2], i: i64[2, 3], y: bf16[3, 7, 2]) -> (f16[3, 2, 3, 2], bf16[3, 2, 3, 2]) {
  a = gather(neg(x), i, axis=1)
  b = gather(y, i, axis=1)
  return a, b
})",
    R"(graph take_ints(x: i8[9], w: i32[9], v: i64[9], z: f64[9], q: bool[9], i: i32[2, 2])
      -> (i8[2, 2], i32[2, 2], i64[2, 2], f64[2, 2], bool[2, 2]) {
  a = gather(x, i, axis=0)
  b = gather(w, i, axis=0)
  c = gather(v, i, axis=0)
  d = gather(z, i, axis=0)
  e = gather(q, i, axis=0)
  return a, b, c, d, e
})",
    // Index computed inside the group: negative constants, iota, rem of data.
    R"(graph take_computed(x: f32[8, 3], k: i64[5]) -> (f32[5, 3], f32[8, 3]) {
  j = sub(rem(abs(k), 8), 8)
  a = gather(x, j, axis=0)
  r = sub(7, iota(shape=[8], axis=0, dtype=i64))
  b = gather(x, r, axis=0)
  return a, b
})",
    // A symbolic gathered axis and a symbolic index count.
    R"(graph take_symbolic(x: f32[B, 4], i: i32[N]) -> (f32[N, 4]) {
  y = add(gather(x, i, axis=0), 1.0)
  return y
})",
    // Not a gather: B appears in no buffer of the reduction kernel, only in
    // the broadcast inside it (the kernel still needs sym_B).
    R"(graph symbol_inside(x: f32[3], y: f32[B]) -> (f32[3], f32[B]) {
  s = reduce_max(broadcast(x, shape=[B, 3]), axes=[0])
  z = neg(y)
  return s, z
})",
    // A gather absorbed into a reduction's producers.
    R"(graph take_reduce(x: f32[10, 6], i: i64[3]) -> (f32[3]) {
  s = reduce_max(gather(x, i, axis=0), axes=[1])
  return s
})",
};

// Hand-chosen inputs: floats from fill_random, indices from `indices` (in range,
// negatives included), cycled over each index tensor.
std::vector<Tensor> inputs_for(const Graph& g, const SymbolBindings& symbols, const std::vector<int64_t>& indices) {
  std::vector<Tensor> inputs;
  uint64_t seed = 5;
  for (ValueId p : g.params()) {
    Tensor t(g.type(p).dtype, concrete_shape(g.type(p).shape, symbols));
    fill_random(t, seed++);
    const std::string& name = g.value_name(p);
    if (name == "i" || name == "k") {
      for (int64_t e = 0; e < t.numel(); ++e) t.set_i64(e, indices[e % indices.size()]);
    }
    inputs.push_back(std::move(t));
  }
  return inputs;
}

class GatherPacking : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // Kernels point at these graphs: no reallocation once they are built.
    graphs_ = std::make_unique<std::vector<Graph>>();
    graphs_->reserve(std::size(kGraphs) + 1);
    for (const char* text : kGraphs) graphs_->push_back(from_text(text));
    kernels_ = std::make_unique<std::vector<Kernel>>();
    for (const Graph& g : *graphs_) {
      FusionPlan p = plan(g, PlannerKind::Xla);
      for (const LoweredGroup& l : stitch::testing::lower_with_default_schedules(g, p, "k_" + g.name())) {
        ASSERT_TRUE(l.kernel) << g.name() << ": " << l.not_lowered_reason;
        kernels_->push_back({g.name(), &g, p.groups[l.group], *l.kernel, l.signature});
      }
    }
    add_packed_kernels();
    std::vector<kir::Kernel> all;
    for (const Kernel& k : *kernels_) all.push_back(k.kernel);
    module_ = std::make_unique<CpuModule>(runtime::cpu::compile_and_load(codegen::cpu::emit_cpp_translation_unit(all)));
  }

  // A graph whose independent ops the xla planner keeps apart, packed into
  // hand-built loop groups: roots of equal element count but different
  // shapes (one loop), of different counts (block ranges, one range longer
  // than a block), of a symbolic count, and of zero elements.
  static void add_packed_kernels() {
    graphs_->push_back(from_text(R"(graph packed(x: f32[5, 7], y: i32[3], z: f32[2100], w: f32[B, 3], e: f32[0, 4])
      -> (f32[5, 7], f32[7, 5], i32[3], f32[2100], f32[B, 3], f32[0, 4]) {
  a = mul(x, 2.0)
  t = transpose(x, perm=[1, 0])
  n = neg(y)
  s = sqrt(z)
  v = add(w, 1.0)
  f = abs(e)
  return a, t, n, s, v, f
})"));
    const Graph& g = graphs_->back();
    auto node_of = [&](const std::string& name) {
      for (size_t i = 0; i < g.nodes().size(); ++i) {
        if (g.value_name(g.nodes()[i].output) == name) return static_cast<int>(i);
      }
      throw std::runtime_error("no node " + name);
    };
    // The roots and everything they compute from (canonical literals included).
    auto packed = [&](const std::string& id, const std::vector<std::string>& roots) {
      FusionGroup group;
      group.kind = GroupKind::Loop;
      for (const std::string& r : roots) group.roots.push_back(node_of(r));
      std::vector<int> work = group.roots;
      while (!work.empty()) {
        int n = work.back();
        work.pop_back();
        if (std::find(group.nodes.begin(), group.nodes.end(), n) != group.nodes.end()) continue;
        group.nodes.push_back(n);
        for (ValueId in : g.nodes()[n].inputs) {
          if (g.value(in).producer >= 0) work.push_back(g.value(in).producer);
        }
      }
      std::sort(group.roots.begin(), group.roots.end());
      std::sort(group.nodes.begin(), group.nodes.end());
      kernels_->push_back({id, &g, group, lower_loop_group(g, group, id), loop_group_signature(g, group)});
    };
    packed("pack_same_count", {"a", "t"});
    packed("pack_ranges", {"a", "n", "s", "t", "f"});
    packed("pack_symbolic", {"v", "n"});
  }

  static void TearDownTestSuite() {
    module_.reset();
    kernels_.reset();
    graphs_.reset();
  }

  static const Kernel& find(const std::string& id) {
    for (const Kernel& k : *kernels_) {
      if (k.id == id) return k;
    }
    throw std::runtime_error("no kernel " + id);
  }

  // Runs kernels in order; values not computed by them come from the interpreter.
  static std::unordered_map<int, Tensor> run(const std::vector<const Kernel*>& kernels,
                                             const std::vector<Tensor>& inputs) {
    const Graph& g = *kernels.front()->graph;
    SymbolBindings bindings = bind_inputs(g, inputs);
    std::unordered_map<int, Tensor> values;
    for (size_t i = 0; i < g.params().size(); ++i) values[g.params()[i].index] = inputs[i];
    for (const Kernel* k : kernels) {
      std::vector<Tensor*> buffers;
      for (ValueId v : k->signature.inputs) buffers.push_back(&values.at(v.index));
      for (ValueId v : k->signature.outputs) {
        values[v.index] = Tensor(g.type(v).dtype, concrete_shape(g.type(v).shape, bindings));
      }
      for (ValueId v : k->signature.outputs) buffers.push_back(&values.at(v.index));
      Tensor status(DType::i32, {1});
      if (k->signature.status) buffers.push_back(&status);
      std::vector<int64_t> scalars;
      for (const std::string& s : k->signature.symbols) scalars.push_back(runtime::cpu::scalar_slot(bindings.at(s)));
      runtime::cpu::run_kernel(*module_, k->kernel, buffers, scalars);
      last_status_ = static_cast<int>(status.get_f64(0));
      if (last_status_ != 0) break;
    }
    return values;
  }

  // Every kernel of graph `id`, run in plan order, against the interpreter.
  static void check_graph(const std::string& id, const SymbolBindings& symbols, const std::vector<int64_t>& indices) {
    std::vector<const Kernel*> ks;
    for (const Kernel& k : *kernels_) {
      if (k.id == id) ks.push_back(&k);
    }
    ASSERT_FALSE(ks.empty()) << id;
    const Graph& g = *ks.front()->graph;
    std::vector<Tensor> inputs = inputs_for(g, symbols, indices);
    std::vector<Tensor> want = interpret(g, inputs);
    std::unordered_map<int, Tensor> got = run(ks, inputs);
    for (size_t i = 0; i < g.outputs().size(); ++i) {
      const Tensor& out = got.at(g.outputs()[i].value.index);
      EXPECT_TRUE(stitch::testing::tensors_match(out, want[i], Tolerance::signed_exact()))
          << id << " output " << g.outputs()[i].name;
    }
  }

  static std::unique_ptr<std::vector<Graph>> graphs_;
  static std::unique_ptr<std::vector<Kernel>> kernels_;
  static std::unique_ptr<CpuModule> module_;
  static int last_status_;  // the status word of the last kernel run (0: no input rejected)
};

int GatherPacking::last_status_ = 0;

std::unique_ptr<std::vector<Graph>> GatherPacking::graphs_;
std::unique_ptr<std::vector<Kernel>> GatherPacking::kernels_;
std::unique_ptr<CpuModule> GatherPacking::module_;

TEST_F(GatherPacking, GatherFromBufferIndices) {
  check_graph("take_rows", {}, {5, -6, 0, -1});
  check_graph("take_middle", {}, {6, -7, 3, 0, -1, 2});
  check_graph("take_ints", {}, {-9, 8, 0, -3});
  check_graph("take_reduce", {}, {-10, 9, 4});
}

TEST_F(GatherPacking, SymbolUsedOnlyInsideTheGroup) {
  for (int64_t batch : {1, 4, 33}) check_graph("symbol_inside", {{"B", batch}}, {});
}

TEST_F(GatherPacking, GatherOfComputedIndices) { check_graph("take_computed", {}, {0, 13, -21, 7, 100}); }

TEST_F(GatherPacking, GatherWithSymbolicExtents) {
  check_graph("take_symbolic", {{"B", 3}, {"N", 5}}, {-3, 2, 0, 1, -1});
  check_graph("take_symbolic", {{"B", 40}, {"N", 1}}, {-40});
  check_graph("take_symbolic", {{"B", 1}, {"N", 2000}}, {0, -1});
}

// An index the interpreter rejects is reported through the status word (1 +
// the gather's node index), and the load stays inside the operand: the
// position is clamped into the axis (docs/lowering.md).
TEST_F(GatherPacking, OutOfRangeIndexIsReportedAndNeverReadsOutside) {
  const Kernel& k = find("take_rows");
  ValueId y = k.graph->outputs()[0].value;
  int gather = -1;
  for (size_t n = 0; n < k.graph->nodes().size(); ++n) {
    if (k.graph->nodes()[n].op == OpKind::Gather) gather = static_cast<int>(n);
  }
  ASSERT_GE(gather, 0);
  std::vector<Tensor> bad = inputs_for(*k.graph, {}, {6, -7, 1000000, -1000000});
  EXPECT_THROW(interpret(*k.graph, bad), UserError);
  Tensor from_bad = run({&k}, bad).at(y.index);
  EXPECT_EQ(last_status_, gather + 1);
  std::vector<Tensor> clamped = inputs_for(*k.graph, {}, {5, 0, 5, 0});
  EXPECT_TRUE(stitch::testing::tensors_bitwise_equal(from_bad, run({&k}, clamped).at(y.index)));
  EXPECT_EQ(last_status_, 0);
  // One bad index among good ones is enough.
  run({&k}, inputs_for(*k.graph, {}, {1, 2, -6, 6}));
  EXPECT_EQ(last_status_, gather + 1);
}

TEST_F(GatherPacking, PackedRootsMatchInterpreter) {
  const Kernel& any = find("pack_ranges");
  const Graph& g = *any.graph;
  for (int64_t batch : {1, 5, 700}) {
    SymbolBindings symbols{{"B", batch}};
    std::vector<Tensor> inputs = inputs_for(g, symbols, {});
    std::vector<Tensor> want = interpret(g, inputs);
    for (const char* id : {"pack_same_count", "pack_ranges", "pack_symbolic"}) {
      const Kernel& k = find(id);
      std::unordered_map<int, Tensor> got = run({&k}, inputs);
      for (size_t i = 0; i < g.outputs().size(); ++i) {
        int value = g.outputs()[i].value.index;
        if (!got.count(value) || !k.group.contains(g.value(g.outputs()[i].value).producer)) continue;
        EXPECT_TRUE(stitch::testing::tensors_match(got.at(value), want[i], Tolerance::signed_exact()))
            << id << " output " << g.outputs()[i].name << " B = " << batch;
      }
    }
  }
}

// Equal element counts share one loop; other counts get block ranges chosen
// by an if chain on the block index.
TEST_F(GatherPacking, PackedKernelShapes) {
  EXPECT_EQ(find("pack_same_count").kernel.launch.grid, kir::int_const(1));
  EXPECT_EQ(find("pack_ranges").kernel.launch.grid, kir::int_const(1 + 1 + 3 + 0));
  std::string text = kir::print_kernel(find("pack_ranges").kernel);
  EXPECT_NE(text.find("if lt(blk, 1)"), std::string::npos) << text;
  EXPECT_NE(text.find("for thr2 in block(256)"), std::string::npos) << text;
  EXPECT_NE(text.find("if lt(blk, 5)"), std::string::npos) << text;
  std::string same = kir::print_kernel(find("pack_same_count").kernel);
  EXPECT_EQ(same.find("if lt(blk"), std::string::npos) << same;
}

// The index is loaded once, checked (an out-of-range one sets the status
// word), wrapped, clamped, and the load of x guarded by the symbolic extent.
TEST_F(GatherPacking, SymbolicGatherGolden) {
  EXPECT_EQ(kir::print_kernel(find("take_symbolic").kernel), R"(kernel k_take_symbolic_g0(in_x: global f32[sym_B, 4] read, in_i: global i32[sym_N] read, out_y: global f32[sym_N, 4] write, status: global i32[1] write, sym_B: i64, sym_N: i64) launch(grid=div(add(mul(sym_N, 4), 1023), 1024), block=256) {
  for blk in grid(div(add(mul(sym_N, 4), 1023), 1024)) {
    for thr in block(256) {
      for part in unroll(4) {
        let lin: i64 = add(mul(add(mul(blk, 4), part), 256), thr)
        if lt(lin, mul(sym_N, 4)) {
          let i1: i64 = rem(lin, 4)
          let i0: i64 = div(lin, 4)
          let k0: i64 = cast(in_i[i0], to=i64)
          if or(lt(k0, neg(sym_B)), ge(k0, sym_B)) {
            status[0] = 1:i32
          }
          let g1: i64 = max(min(select(lt(k0, 0), add(k0, sym_B), k0), sub(sym_B, 1)), 0)
          let t2: f32 = 0.0:f32
          if gt(sym_B, 0) {
            t2 = in_x[g1, i1]
          }
          let e3: f32 = add(t2, 1.0:f32)
          out_y[i0, i1] = e3
        }
      }
    }
  }
}
)");
}

// Two block ranges: the static root's single block first, then the symbolic
// root's ceil(3B / 1024) blocks, chosen by an if chain on the block index.
TEST_F(GatherPacking, PackedSymbolicGolden) {
  EXPECT_EQ(kir::print_kernel(find("pack_symbolic").kernel), R"(kernel pack_symbolic(in_y: global i32[3] read, in_w: global f32[sym_B, 3] read, out_n: global i32[3] write, out_v: global f32[sym_B, 3] write, sym_B: i64) launch(grid=add(1, div(add(mul(sym_B, 3), 1023), 1024)), block=256) {
  for blk in grid(add(1, div(add(mul(sym_B, 3), 1023), 1024))) {
    if lt(blk, 1) {
      let b0: i64 = blk
      for thr0 in block(256) {
        for part0 in unroll(4) {
          let lin0: i64 = add(mul(add(mul(b0, 4), part0), 256), thr0)
          if lt(lin0, 3) {
            let i0_0_0: i64 = lin0
            let e0: i32 = neg(in_y[i0_0_0])
            out_n[i0_0_0] = e0
          }
        }
      }
    } else {
      let b1: i64 = sub(blk, 1)
      for thr1 in block(256) {
        for part1 in unroll(4) {
          let lin1: i64 = add(mul(add(mul(b1, 4), part1), 256), thr1)
          if lt(lin1, mul(sym_B, 3)) {
            let i1_0_1: i64 = rem(lin1, 3)
            let i1_0_0: i64 = div(lin1, 3)
            let e1: f32 = add(in_w[i1_0_0, i1_0_1], 1.0:f32)
            out_v[i1_0_0, i1_0_1] = e1
          }
        }
      }
    }
  }
}
)");
}

TEST(LowerPlanGather, LoopGroupWithGatherIsLowered) {
  Graph g = from_text(R"(graph take(x: f32[10, 4], i: i32[3]) -> (f32[3, 4]) {
  y = exp(gather(x, i, axis=0))
  return y
})");
  FusionPlan p = plan(g, PlannerKind::Xla);
  for (const LoweredGroup& l : stitch::testing::lower_with_default_schedules(g, p, "take")) EXPECT_TRUE(l.kernel) << l.not_lowered_reason;
}

// An index clamped by constants into the axis (the resize composite's) needs
// no check, wrap or clamp of its own: the kernel stores no status for it. A
// clamp that reaches past the axis keeps the check.
TEST(LowerPlanGather, IndexClampedIntoTheAxisIsNotChecked) {
  for (const auto& [hi, checked] : {std::pair{9, false}, std::pair{10, true}}) {
    Graph g = canonicalize(from_text(fmt::format(R"(graph take(x: f32[10, 4], i: i64[3]) {{
  y = exp(gather(x, clamp(i, 0, {}), axis=0))
  return y
}})",
                                                 hi)));
    FusionPlan p = plan(g, PlannerKind::Xla);
    for (const LoweredGroup& l : stitch::testing::lower_with_default_schedules(g, p, "take")) {
      ASSERT_TRUE(l.kernel) << l.not_lowered_reason;
      EXPECT_EQ(kir::print_kernel(*l.kernel).find("status[") != std::string::npos, checked)
          << kir::print_kernel(*l.kernel);
    }
  }
}

}  // namespace
}  // namespace stitch::lower
