// Canonicalisation must not change what a graph computes: over random graphs
// (tests/support/random_graph.h) on random inputs, the interpreter gives
// bit-identical results for the graph as built and for its canonical form,
// signs of zeros included. Only NaNs may differ in sign and payload, which
// docs/semantics.md leaves unspecified: the x86 NaN an op returns depends on
// its operands' order in the instruction, which the compiler may swap for a
// commutative op, differently in the interpreter's broadcasting and dense loops.
// STITCH_SOAK_GRAPHS=N runs N graphs instead of the normal count (docs/testing.md).
#include <cstdint>

#include <gtest/gtest.h>

#include "ir/canonicalize.h"
#include "random_graph.h"
#include "stitch/interpreter.h"
#include "stitch/text.h"
#include "tensor_compare.h"

namespace stitch {
namespace {

using testing::random_graph;

constexpr uint64_t kNormalGraphs = 3000;

std::string bindings_text(const SymbolBindings& symbols) {
  std::string out;
  for (const auto& [name, extent] : symbols) out += (out.empty() ? "" : ", ") + name + "=" + std::to_string(extent);
  return out.empty() ? "none" : out;
}

// Interprets the graph and its canonical form; a description of the first difference, or "".
std::string canonical_difference(const Graph& g, const std::vector<Tensor>& inputs) {
  Graph c = canonicalize(g);
  std::vector<Tensor> want = interpret(g, inputs);
  std::vector<Tensor> got = interpret(c, inputs);
  if (want.size() != got.size()) return "the canonical graph returns a different number of outputs";
  for (size_t i = 0; i < want.size(); ++i) {
    if (auto same = testing::tensors_match(got[i], want[i], testing::Tolerance::signed_exact()); !same) {
      return "output " + g.outputs()[i].name + " of the canonical graph differs: " + same.message() +
             "\ncanonical graph:\n" + print_graph(c);
    }
  }
  return "";
}

TEST(RandomDifferential, CanonicalizationKeepsResultsBitIdentical) {
  testing::check_random_graphs(kNormalGraphs, [](const testing::RandomCase& c) -> std::string {
    SymbolBindings symbols = testing::random_symbol_bindings(c.graph, c.seed, c.options.max_symbol_extent);
    // Half the seeds see ±0, ±inf, NaN and integer extremes in their inputs.
    std::vector<Tensor> inputs = testing::random_inputs(c.graph, c.seed, symbols, c.seed % 2 == 1);
    // The generator promises graphs the interpreter accepts, so even a UserError is a bug.
    std::string failure = canonical_difference(c.graph, inputs);
    return failure.empty() ? "" : failure + "\nsymbols: " + bindings_text(symbols);
  });
}

TEST(RandomDifferential, InputsAreDeterministicAndBindEverySymbol) {
  for (uint64_t seed = 0; seed < 50; ++seed) {
    testing::RandomGraphOptions opts = testing::varied_options(seed);
    Graph g = random_graph(opts);
    SymbolBindings symbols = testing::random_symbol_bindings(g, seed, opts.max_symbol_extent);
    for (const auto& [name, extent] : symbols) {
      EXPECT_GE(extent, 1);
      EXPECT_LE(extent, opts.max_symbol_extent);
    }
    std::vector<Tensor> a = testing::random_inputs(g, seed, symbols, true);
    std::vector<Tensor> b = testing::random_inputs(g, seed, symbols, true);
    ASSERT_EQ(a.size(), g.params().size());
    EXPECT_EQ(bind_inputs(g, a), symbols);
    for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(testing::tensors_bitwise_equal(a[i], b[i]));
  }
}

}  // namespace
}  // namespace stitch
