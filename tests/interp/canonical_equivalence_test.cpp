// Canonicalisation must not change what a graph computes: for every graph of
// the parser corpus and the workloads, the canonical graph gives bit-identical
// results to the graph as parsed, and its printed form parses back to it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>

#include "ir/canonicalize.h"
#include "tensor_compare.h"
#include "stitch/interpreter.h"
#include "stitch/text.h"

namespace stitch {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> corpus_files() {
  std::vector<fs::path> files;
  for (const char* dir : {"tests/ir/corpus", "bench/workloads"}) {
    for (const auto& e : fs::directory_iterator(fs::path(STITCH_SOURCE_DIR) / dir)) {
      if (e.path().extension() == ".stitch") files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Small random inputs; every symbol is bound to 3 and big static graphs skipped.
bool make_inputs(const Graph& g, uint64_t seed, std::vector<Tensor>& inputs) {
  SymbolBindings symbols;
  int64_t total = 0;
  for (ValueId p : g.params()) {
    for (const Dim& d : g.type(p).shape) {
      if (d.is_symbolic()) symbols[d.name()] = 3;
    }
    std::vector<int64_t> shape = concrete_shape(g.type(p).shape, symbols);
    total += element_count(shape);
    Tensor t(g.type(p).dtype, shape);
    fill_random(t, seed + inputs.size());
    inputs.push_back(std::move(t));
  }
  return total <= (1 << 20);
}

TEST(CanonicalEquivalence, CorpusAndWorkloads) {
  int checked = 0;
  for (const fs::path& file : corpus_files()) {
    Module m = parse_file(file.string());
    for (const Graph& g : m.graphs) {
      SCOPED_TRACE(file.filename().string() + ":" + g.name());
      Graph c = canonicalize(g);
      Module reparsed = parse_module(print_graph(c), "canonical");
      ASSERT_EQ(reparsed.graphs.size(), 1u);
      EXPECT_EQ(print_graph(reparsed.graphs[0]), print_graph(c));
      std::vector<Tensor> inputs;
      if (!make_inputs(g, 11, inputs)) continue;
      std::vector<Tensor> want, got;
      try {
        want = interpret(g, inputs);
      } catch (const UserError&) {
        continue;  // data-dependent rejection (e.g. a random gather index); not this test's concern
      }
      got = interpret(c, inputs);
      ASSERT_EQ(want.size(), got.size());
      for (size_t i = 0; i < want.size(); ++i) {
        // NaN sign and payload are unspecified (docs/semantics.md); all else must be identical.
        EXPECT_TRUE(testing::tensors_match(got[i], want[i], testing::Tolerance::signed_exact()))
            << "output " << g.outputs()[i].name;
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 30);
}

}  // namespace
}  // namespace stitch
