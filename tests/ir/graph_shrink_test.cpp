// The soak runner's shrinker (tests/support/graph_shrink.h): a random graph
// shrinks to the few nodes a failure needs, each candidate is a valid graph,
// and a graph whose failure needs everything stays whole.
#include <gtest/gtest.h>

#include <algorithm>

#include "graph_shrink.h"
#include "random_graph.h"
#include "stitch/text.h"

namespace stitch::testing {
namespace {

bool has_op(const Graph& g, OpKind kind) {
  return std::any_of(g.nodes().begin(), g.nodes().end(), [&](const Node& n) { return n.op == kind; });
}

TEST(GraphShrink, ARandomGraphShrinksToTheNodeItsFailureNeeds) {
  int shrunk_graphs = 0;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    const Graph g = random_graph(varied_options(seed));
    // The "failure": the graph holds the op of a node that computes one of
    // its outputs from operands (random graphs also have dead nodes).
    const Node* last = nullptr;
    for (const GraphOutput& o : g.outputs()) {
      const Node* n = g.producer(o.value);
      if (n != nullptr && !n->inputs.empty()) last = n;
    }
    if (last == nullptr || g.nodes().size() < 6) continue;
    const OpKind kind = last->op;
    ShrinkStats stats;
    const Graph small = shrink_graph(g, [&](const Graph& c) { return has_op(c, kind); }, 400, &stats);
    SCOPED_TRACE(print_graph(g) + "shrank to\n" + print_graph(small) + "attempts " + std::to_string(stats.attempts) + ", accepted " + std::to_string(stats.accepted) + ", kind " + std::string(op_name(kind)));
    EXPECT_TRUE(has_op(small, kind));
    EXPECT_LE(small.outputs().size(), 1u);
    // The op itself, and at most a literal per operand that could not be cut.
    const size_t inputs = last->inputs.size();
    EXPECT_LE(small.nodes().size(), 1 + inputs);
    EXPECT_GT(stats.accepted, 0);
    ++shrunk_graphs;
  }
  EXPECT_GE(shrunk_graphs, 20);
}

TEST(GraphShrink, NothingIsAcceptedWhenEverySmallerGraphPasses) {
  const Graph g = random_graph(varied_options(7));
  const size_t nodes = g.nodes().size();
  ShrinkStats stats;
  const Graph same = shrink_graph(g, [&](const Graph& c) { return c.nodes().size() == nodes; }, 400, &stats);
  EXPECT_EQ(same.nodes().size(), nodes);
  EXPECT_EQ(stats.accepted, 0);
}

TEST(GraphShrink, AttemptsAreBounded) {
  const Graph g = random_graph(varied_options(3));
  ShrinkStats stats;
  shrink_graph(g, [](const Graph&) { return false; }, 5, &stats);
  EXPECT_LE(stats.attempts, 5);
}

}  // namespace
}  // namespace stitch::testing
