// Whole random graphs as one packed loop kernel (docs/lowering.md, Kernel
// packing and Gather): random graphs of loop-lowerable ops only
// (tests/support/random_graph.h, excluded_ops = everything else), every node in
// one hand-built loop group whose roots are the graph's outputs, so the roots
// differ in shape and element count and every value, gathers included, is
// recomputed from the parameters inside the kernel: far deeper fusion than a
// planner builds today. One translation unit for all graphs; each output is
// compared with the interpreter (exact, or 32 eps relative to 1 + |want| when
// the graph has a transcendental op). STITCH_SOAK_GRAPHS / _FIRST_SEED apply.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>

#include "codegen/cpu/cpp_emitter.h"
#include "ir/canonicalize.h"
#include "kir/printer.h"
#include "lower/lower_loop_group.h"
#include "random_graph.h"
#include "runtime/cpu/cpu_compiler.h"
#include "stitch/interpreter.h"
#include "tensor_compare.h"

namespace stitch::lower {
namespace {

using runtime::cpu::CpuModule;

constexpr uint64_t kNormalGraphs = 120;

struct Case {
  uint64_t seed = 0;
  testing::RandomGraphOptions options;
  Graph source;
  Graph canonical;
  FusionGroup group;
  GroupSignature signature;
  std::string kernel_name;
  bool transcendental = false;
};

// div, sqrt and rem are correctly rounded; other heavy ops may be a few ulp off.
bool has_transcendental(const Graph& g) {
  for (const Node& n : g.nodes()) {
    if (op_info(n.op).category == OpCategory::HeavyElementwise && n.op != OpKind::Div && n.op != OpKind::Sqrt &&
        n.op != OpKind::Rem) {
      return true;
    }
  }
  return false;
}

// Every node in one loop group; the roots are the computed graph outputs.
// Nothing when every output is a parameter.
std::optional<FusionGroup> whole_graph_group(const Graph& g) {
  FusionGroup group;
  group.kind = GroupKind::Loop;
  for (size_t i = 0; i < g.nodes().size(); ++i) group.nodes.push_back(static_cast<int>(i));
  for (const GraphOutput& o : g.outputs()) {
    int producer = g.value(o.value).producer;
    if (producer >= 0) group.roots.push_back(producer);
  }
  std::sort(group.roots.begin(), group.roots.end());
  group.roots.erase(std::unique(group.roots.begin(), group.roots.end()), group.roots.end());
  if (group.roots.empty()) return std::nullopt;
  return group;
}

TEST(RandomPackedKernels, WholeGraphInOneKernelMatchesInterpreter) {
  std::vector<OpKind> excluded;
  for (int k = 0; k < op_kind_count(); ++k) {
    if (!is_loop_lowerable(static_cast<OpKind>(k))) excluded.push_back(static_cast<OpKind>(k));
  }
  testing::SeedRange seeds = testing::random_seed_range(kNormalGraphs);
  std::vector<std::unique_ptr<Case>> cases;
  std::vector<kir::Kernel> kernels;
  int packed = 0;  // kernels with block ranges: roots of several element counts
  for (uint64_t seed = seeds.first; seed < seeds.first + seeds.count; ++seed) {
    auto c = std::make_unique<Case>();
    c->seed = seed;
    c->options = testing::varied_options(seed);
    c->options.excluded_ops = excluded;
    c->source = testing::random_graph(c->options);
    c->canonical = canonicalize(c->source);
    std::optional<FusionGroup> group = whole_graph_group(c->canonical);
    if (!group) continue;
    c->group = *group;
    c->kernel_name = "packed_" + std::to_string(seed);
    c->transcendental = has_transcendental(c->source);
    try {
      kernels.push_back(lower_loop_group(c->canonical, c->group, c->kernel_name));
    } catch (const std::exception& e) {
      ADD_FAILURE() << "lowering: " << e.what() << "\n" << testing::reproducer(seed, c->source);
      continue;
    }
    c->signature = loop_group_signature(c->canonical, c->group);
    if (kir::print_kernel(kernels.back()).find("let b1: i64") != std::string::npos) ++packed;
    cases.push_back(std::move(c));
  }
  ASSERT_FALSE(kernels.empty());
  CpuModule module = runtime::cpu::compile_and_load(codegen::cpu::emit_cpp_translation_unit(kernels));

  int reports = 0;
  for (size_t i = 0; i < cases.size() && reports < 5; ++i) {
    const Case& c = *cases[i];
    const Graph& g = c.canonical;
    SymbolBindings symbols = testing::random_symbol_bindings(c.source, c.seed, c.options.max_symbol_extent);
    std::vector<Tensor> inputs = testing::random_inputs(c.source, c.seed, symbols, c.seed % 2 == 1);
    std::vector<Tensor> want = interpret(c.source, inputs);
    std::unordered_map<int, Tensor> values;
    for (size_t p = 0; p < g.params().size(); ++p) values[g.params()[p].index] = inputs[p];
    std::vector<Tensor*> buffers;
    for (ValueId v : c.signature.inputs) buffers.push_back(&values.at(v.index));
    for (ValueId v : c.signature.outputs) {
      values[v.index] = Tensor(g.type(v).dtype, concrete_shape(g.type(v).shape, symbols));
    }
    for (ValueId v : c.signature.outputs) buffers.push_back(&values.at(v.index));
    Tensor status(DType::i32, {1});
    if (c.signature.status) buffers.push_back(&status);
    std::vector<int64_t> scalars;
    for (const std::string& s : c.signature.symbols) scalars.push_back(runtime::cpu::scalar_slot(symbols.at(s)));
    runtime::cpu::run_kernel(module, kernels[i], buffers, scalars);
    EXPECT_EQ(status.get_f64(0), 0) << "a generated gather index was reported out of range\n"
                                    << testing::reproducer(c.seed, c.source);
    for (size_t o = 0; o < want.size(); ++o) {
      auto match = testing::matches_interpreter(values.at(g.outputs()[o].value.index), want[o], c.transcendental, 0);
      if (!match) {
        ADD_FAILURE() << "output " << g.outputs()[o].name << ": " << match.message() << "\n"
                      << testing::reproducer(c.seed, c.source);
        ++reports;
        break;
      }
    }
  }
  std::printf("random packed kernels: %zu graphs, %d with block ranges\n", cases.size(), packed);
  if (!seeds.soak) {
    EXPECT_GE(packed, 10) << "too few random graphs exercise block ranges";
  }
}

}  // namespace
}  // namespace stitch::lower
