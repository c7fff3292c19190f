// Dominators by Cooper-Harvey-Kennedy on textbook graphs, pinned idom vectors,
// and a brute-force check of the definition on random graphs.
#include <gtest/gtest.h>

#include <random>

#include "schedule/dominators.h"

namespace stitch {
namespace {

// Nodes reachable from `entry` when `removed` is deleted (-1: nothing removed).
std::vector<char> reachable_without(const Digraph& g, int entry, int removed) {
  std::vector<char> seen(g.size(), 0);
  if (entry == removed) return seen;
  std::vector<int> stack{entry};
  seen[entry] = 1;
  while (!stack.empty()) {
    int u = stack.back();
    stack.pop_back();
    for (int v : g[u]) {
      if (v != removed && !seen[v]) {
        seen[v] = 1;
        stack.push_back(v);
      }
    }
  }
  return seen;
}

// a dominates b iff b is reachable and deleting a cuts b off (or a == b).
bool dominates_by_definition(const Digraph& g, int entry, int a, int b) {
  if (!reachable_without(g, entry, -1)[b]) return false;
  return a == b || !reachable_without(g, entry, a)[b];
}

TEST(Dominators, Diamond) {
  Digraph g{{1, 2}, {3}, {3}, {}};
  DominatorTree tree = DominatorTree::build(g, 0);
  EXPECT_EQ(tree.idoms(), (std::vector<int>{-1, 0, 0, 0}));
  EXPECT_TRUE(tree.dominates(0, 3));
  EXPECT_FALSE(tree.dominates(1, 3));
  EXPECT_FALSE(tree.dominates(2, 3));
  EXPECT_TRUE(tree.dominates(3, 3));
  EXPECT_FALSE(tree.strictly_dominates(3, 3));
  EXPECT_EQ(tree.children(0), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(tree.depth(0), 0);
  EXPECT_EQ(tree.depth(3), 1);
  EXPECT_EQ(tree.to_string(), "0\n  1\n  2\n  3\n");
}

// A loop-free DAG with merges at 3, 6 and 7 (a layer-norm-like kernel: two
// reductions of one input, then a broadcast tail).
TEST(Dominators, DagWithSeveralMerges) {
  Digraph g(9);
  g[0] = {1, 2};
  g[1] = {3, 5};
  g[2] = {3};
  g[3] = {4};
  g[4] = {6};
  g[5] = {6, 7};
  g[6] = {7};
  g[7] = {8};
  DominatorTree tree = DominatorTree::build(g, 0);
  EXPECT_EQ(tree.idoms(), (std::vector<int>{-1, 0, 0, 0, 3, 1, 0, 0, 7}));
  EXPECT_EQ(tree.depth(8), 2);
  EXPECT_TRUE(tree.dominates(7, 8));
  EXPECT_FALSE(tree.dominates(1, 6));
  EXPECT_EQ(tree.to_string(), "0\n  1\n    5\n  2\n  3\n    4\n  6\n  7\n    8\n");
}

// Figure 4 of Cooper, Harvey and Kennedy: an irreducible graph whose nodes are
// named by postorder number (6 is the entry) and which needs a second pass.
// Here node k of the figure is id 6 - k, so the entry is 0.
TEST(Dominators, CooperHarveyKennedyIrreducibleExample) {
  auto id = [](int figure) { return 6 - figure; };
  Digraph g(6);
  auto edge = [&](int from, int to) { g[id(from)].push_back(id(to)); };
  edge(6, 5);
  edge(6, 4);
  edge(5, 1);
  edge(4, 2);
  edge(4, 3);
  edge(1, 2);
  edge(2, 1);
  edge(2, 3);
  edge(3, 2);
  DominatorTree tree = DominatorTree::build(g, id(6));
  EXPECT_EQ(tree.idoms(), (std::vector<int>{-1, 0, 0, 0, 0, 0}));
}

// A reducible loop: 0 -> 1 -> 2 -> {3, 4} -> 5 -> 1 (back edge), 5 -> 6.
TEST(Dominators, NaturalLoop) {
  Digraph g{{1}, {2}, {3, 4}, {5}, {5}, {1, 6}, {}};
  DominatorTree tree = DominatorTree::build(g, 0);
  EXPECT_EQ(tree.idoms(), (std::vector<int>{-1, 0, 1, 2, 2, 2, 5}));
}

TEST(Dominators, UnreachableNodesHaveNoDominator) {
  Digraph g{{1}, {}, {1}};
  DominatorTree tree = DominatorTree::build(g, 0);
  EXPECT_EQ(tree.idoms(), (std::vector<int>{-1, 0, -1}));
  EXPECT_FALSE(tree.reachable(2));
  EXPECT_EQ(tree.depth(2), -1);
  EXPECT_FALSE(tree.dominates(2, 1));
  EXPECT_FALSE(tree.dominates(0, 2));
  EXPECT_EQ(tree.to_string(), "0\n  1\nunreachable: 2\n");
}

TEST(Dominators, VirtualEntryJoinsSeveralSources) {
  // Two inputs 0 and 1 meet at 2; 3 hangs off 1.
  Digraph g{{2}, {2, 3}, {}, {}};
  DominatorTree tree = DominatorTree::with_virtual_entry(g);
  EXPECT_EQ(tree.size(), 5);
  EXPECT_EQ(tree.root(), 4);
  EXPECT_TRUE(tree.root_is_virtual());
  EXPECT_EQ(tree.idoms(), (std::vector<int>{4, 4, 4, 1, -1}));
  EXPECT_EQ(tree.to_string(), "entry\n  0\n  1\n    3\n  2\n");
}

TEST(Dominators, PostDominatorsOfADiamondWithTwoSinks) {
  // 0 -> {1, 2} -> 3 -> 4, and 1 -> 5 a second sink.
  Digraph g{{1, 2}, {3, 5}, {3}, {4}, {}, {}};
  DominatorTree tree = DominatorTree::post_dominators(g);
  EXPECT_EQ(tree.root(), 6);
  EXPECT_EQ(tree.idoms(), (std::vector<int>{6, 6, 3, 4, 6, 6, -1}));
  EXPECT_TRUE(tree.dominates(3, 2));
  EXPECT_FALSE(tree.dominates(3, 0));
  EXPECT_EQ(tree.to_string(), "exit\n  0\n  1\n  4\n    3\n      2\n  5\n");
}

TEST(Dominators, MatchTheDefinitionOnRandomGraphs) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    int n = 2 + static_cast<int>(rng() % 12);
    bool acyclic = trial % 2 == 0;
    Digraph g(n);
    for (int u = 0; u < n; ++u) {
      for (int v = 0; v < n; ++v) {
        if (u == v || (acyclic && v < u)) continue;
        if (rng() % 4 == 0) g[u].push_back(v);
      }
    }
    DominatorTree tree = DominatorTree::build(g, 0);
    for (int a = 0; a < n; ++a) {
      for (int b = 0; b < n; ++b) {
        ASSERT_EQ(tree.dominates(a, b), dominates_by_definition(g, 0, a, b))
            << "trial " << trial << " a=" << a << " b=" << b;
      }
    }
    for (int b = 0; b < n; ++b) {
      int d = tree.idom(b);
      if (d < 0) continue;
      // The immediate dominator is the strict dominator deepest in the tree.
      EXPECT_TRUE(tree.strictly_dominates(d, b));
      EXPECT_EQ(tree.depth(b), tree.depth(d) + 1);
    }
  }
}

TEST(Dominators, LongChainDoesNotRecurse) {
  int n = 200000;
  Digraph g(n);
  for (int v = 0; v + 1 < n; ++v) g[v].push_back(v + 1);
  DominatorTree tree = DominatorTree::build(g, 0);
  EXPECT_EQ(tree.idom(n - 1), n - 2);
  EXPECT_EQ(tree.depth(n - 1), n - 1);
  EXPECT_TRUE(tree.dominates(1, n - 1));
}

}  // namespace
}  // namespace stitch
