// GroupDag (group_dag.h) against the reference it replaces in the planners:
// build_group_graph + check_merge_legality on a plain vector of groups.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>

#include "fusion/group_dag.h"
#include "fusion/legality.h"
#include "fusion/node_index.h"
#include "fusion/planner.h"
#include "plan_invariants.h"
#include "random_graph.h"

namespace stitch {
namespace {

using testing_fusion::canonical_graph;
using testing_fusion::kDiamond;

int node_named(const Graph& g, const std::string& name) {
  for (int n = 0; n < static_cast<int>(g.nodes().size()); ++n)
    if (g.value_name(g.nodes()[n].output) == name) return n;
  throw std::runtime_error("no node " + name);
}

// The DAG's edges and order agree with a group graph built from scratch.
std::string disagreement(const GroupDag& dag) {
  std::vector<int> ids = dag.order();
  std::vector<FusionGroup> groups;
  for (int gi : ids) groups.push_back(dag.group(gi));
  const GroupGraph gg = build_group_graph(dag.graph(), groups);
  for (size_t i = 0; i < ids.size(); ++i) {
    std::vector<int> expected;
    for (int s : gg.successors[i]) expected.push_back(ids[s]);
    std::vector<int> got = dag.successors(ids[i]);
    std::sort(expected.begin(), expected.end());
    if (expected != got) return "successors of group " + std::to_string(ids[i]) + " differ";
    // The order is topological: every successor comes later.
    for (int s : gg.successors[i])
      if (static_cast<size_t>(s) <= i) return "the order puts a successor first";
    for (int p : dag.predecessors(ids[i]))
      if (std::find(dag.successors(p).begin(), dag.successors(p).end(), ids[i]) == dag.successors(p).end())
        return "predecessor and successor lists disagree";
  }
  return "";
}

TEST(GroupDag, MergesAgreeWithTheReferenceLegality) {
  int merges = 0, refusals = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    Graph g = testing::random_graph(testing::varied_options(seed));
    FusionPlan base = plan(g, PlannerKind::None);
    GroupDag dag(g, base.groups);
    ASSERT_EQ(disagreement(dag), "") << "seed " << seed;
    std::mt19937 rng(static_cast<uint32_t>(seed));
    for (int step = 0; step < 40 && dag.num_alive() > 1; ++step) {
      std::vector<int> ids = dag.order();
      std::vector<FusionGroup> groups;
      for (int gi : ids) groups.push_back(dag.group(gi));
      const int i = static_cast<int>(rng() % ids.size());
      int j = static_cast<int>(rng() % ids.size());
      if (i == j) j = (j + 1) % static_cast<int>(ids.size());
      const FusionLimits unlimited{.max_nodes_per_group = 1 << 20, .max_operands_and_outputs = 1 << 20};
      const std::optional<std::string> reference = check_merge_legality(g, groups, i, j, unlimited);
      const std::optional<Refusal> refusal = dag.merge_refusal(ids[i], ids[j], unlimited);
      const std::optional<std::string> got = refusal ? std::optional(refusal->reason) : std::nullopt;
      ASSERT_EQ(reference, got) << "seed " << seed << " step " << step;
      if (refusal) {
        EXPECT_EQ(refusal->cause, RefusalCause::Illegal);  // no limits: only cycles
      }
      if (got) {
        ++refusals;
        continue;
      }
      FusionGroup merged;
      merged.nodes = dag.merged_nodes(ids[i], ids[j]);
      merged.roots = dag.merged_roots(ids[i], ids[j]);
      if (merged.roots.empty()) merged.roots.push_back(merged.nodes.back());
      dag.merge(ids[i], ids[j], merged);
      ++merges;
      ASSERT_EQ(disagreement(dag), "") << "seed " << seed << " step " << step;
      ASSERT_EQ(dag.invariant_violations(), "") << "seed " << seed << " step " << step;
    }
  }
  // Both answers were exercised.
  EXPECT_GT(merges, 200);
  EXPECT_GT(refusals, 50);
}

// The incremental cycle check of the pattern space agrees with between():
// sets grown one group at a time, each step from a convex set.
TEST(GroupDag, JoiningAConvexSetAgreesWithTheFullCheck) {
  int joins = 0, cycles = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    Graph g = testing::random_graph(testing::varied_options(seed));
    const GroupDag dag(g, plan(g, PlannerKind::None).groups);
    const std::vector<int> ids = dag.order();
    std::mt19937 rng(static_cast<uint32_t>(seed));
    for (int start = 0; start < 10; ++start) {
      std::vector<int> convex{ids[rng() % ids.size()]};
      for (int step = 0; step < 12; ++step) {
        const int added = ids[rng() % ids.size()];
        if (std::find(convex.begin(), convex.end(), added) != convex.end()) continue;
        std::vector<int> grown = convex;
        grown.push_back(added);
        const bool full = dag.between(grown).empty();
        ASSERT_EQ(dag.joins_without_cycle(convex, added), full) << "seed " << seed;
        if (full) {
          convex = grown;
          ++joins;
        } else {
          ++cycles;
        }
      }
    }
  }
  EXPECT_GT(joins, 500);
  EXPECT_GT(cycles, 100);
}

// merge_all of a convex set gives what merging its first with each other in
// turn gives: the same groups, roots, edges and a topological order.
TEST(GroupDag, MergingAConvexSetAtOnceEqualsMergingItPairwise) {
  int sets = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    Graph g = testing::random_graph(testing::varied_options(seed));
    const std::vector<FusionGroup> base = plan(g, PlannerKind::None).groups;
    GroupDag at_once(g, base), pairwise(g, base);
    std::mt19937 rng(static_cast<uint32_t>(seed));
    for (int round = 0; round < 6 && at_once.num_alive() > 2; ++round) {
      // A convex set grown one group at a time from a random one.
      const std::vector<int> ids = at_once.order();
      std::vector<int> convex{ids[rng() % ids.size()]};
      for (int step = 0; step < 10; ++step) {
        const int added = ids[rng() % ids.size()];
        if (std::find(convex.begin(), convex.end(), added) != convex.end()) continue;
        if (at_once.joins_without_cycle(convex, added)) convex.push_back(added);
      }
      if (convex.size() < 2) continue;
      at_once.merge_all(convex, GroupKind::Stitched);
      for (size_t i = 1; i < convex.size(); ++i) {
        // An earlier merge may have taken in the last reader of this one.
        if (!pairwise.alive(convex[i])) continue;
        FusionGroup merged;
        merged.kind = GroupKind::Stitched;
        merged.nodes = pairwise.merged_nodes(convex[0], convex[i]);
        merged.roots = pairwise.merged_roots(convex[0], convex[i]);
        pairwise.merge(convex[0], convex[i], merged);
      }
      ++sets;
      ASSERT_EQ(disagreement(at_once), "") << "seed " << seed << " round " << round;
      ASSERT_EQ(at_once.invariant_violations(), "") << "seed " << seed << " round " << round;
      ASSERT_EQ(pairwise.invariant_violations(), "") << "seed " << seed << " round " << round;
      ASSERT_EQ(at_once.num_alive(), pairwise.num_alive());
      for (int gi = 0; gi < at_once.capacity(); ++gi) {
        ASSERT_EQ(at_once.alive(gi), pairwise.alive(gi)) << "seed " << seed;
        if (!at_once.alive(gi)) continue;
        EXPECT_EQ(at_once.group(gi).nodes, pairwise.group(gi).nodes) << "seed " << seed;
        EXPECT_EQ(at_once.group(gi).roots, pairwise.group(gi).roots) << "seed " << seed;
        EXPECT_EQ(at_once.successors(gi), pairwise.successors(gi)) << "seed " << seed;
      }
    }
  }
  EXPECT_GT(sets, 150);
}

TEST(NodeIndex, SortedUnionOfListsDenseAndSparse) {
  const std::vector<int> a{3, 5, 9}, b{5, 6, 200000}, empty;
  EXPECT_EQ(sorted_union({&a, &b, &empty}), (std::vector<int>{3, 5, 6, 9, 200000}));  // sparse: sorted
  const std::vector<int> c{0, 64, 65, 127}, d{1, 64, 128};
  EXPECT_EQ(sorted_union({&c, &d}), (std::vector<int>{0, 1, 64, 65, 127, 128}));  // dense: the bitmap
  EXPECT_EQ(sorted_union({&empty}), std::vector<int>{});
}

TEST(GroupDag, NamesTheCycleAMergeWouldMake) {
  Graph g = canonical_graph(kDiamond);
  FusionPlan base = plan(g, PlannerKind::None);  // r1 -> b1 -> d -> y -> r2, x read by r1 and y
  GroupDag dag(g, base.groups);
  EXPECT_EQ(dag.cycle_refusal(0, 3), "merging would create a cycle: r1 reaches y through another kernel");
  EXPECT_EQ(dag.cycle_refusal(3, 0), "merging would create a cycle: r1 reaches y through another kernel");
  EXPECT_EQ(dag.cycle_refusal(3, 4), std::nullopt);
}

TEST(GroupDag, RetiresAndReRootsGroups) {
  Graph g = canonical_graph(kDiamond);
  FusionPlan base = plan(g, PlannerKind::None);
  GroupDag dag(g, base.groups);
  // y's group takes r2 in: r2 is a graph output, so it stays a root.
  FusionGroup merged;
  merged.nodes = dag.merged_nodes(3, 4);
  merged.roots = dag.merged_roots(3, 4);
  EXPECT_EQ(merged.roots.size(), 1u);
  dag.merge(3, 4, merged);
  EXPECT_FALSE(dag.alive(4));
  EXPECT_EQ(dag.num_alive(), 4);
  EXPECT_EQ(disagreement(dag), "");
  std::vector<FusionGroup> groups = dag.take_groups();
  EXPECT_EQ(groups.size(), 4u);
}

// A merge that recomputes a value inside the merged kernel takes in its last
// reader: the kernel that wrote it has nothing left to write and is retired
// (GroupDag's invariants). Before, it stayed alive without roots, and packing
// small kernels read the first root of an empty list (issue: model-scale
// planning crashed).
TEST(GroupDag, AMergeThatTakesInTheLastReaderRetiresTheProducer) {
  Graph g = canonical_graph(R"(graph g(x: f32[8, 8], k: f32[8, 8]) -> (f32[8, 8]) {
  e = exp(x)
  c1 = add(e, k)
  c2 = mul(e, k)
  y = add(c1, c2)
  return y
})");
  // e alone; c1 reads e from memory; c2 recomputes e; y reads c1 and c2.
  auto node = [&](const char* name) { return node_named(g, name); };
  const int e = node("e"), c1 = node("c1"), c2 = node("c2"), y = node("y");
  auto group = [](std::vector<int> nodes, std::vector<int> roots) {
    std::sort(nodes.begin(), nodes.end());
    return FusionGroup{GroupKind::Loop, std::move(nodes), std::move(roots)};
  };
  GroupDag dag(g, {group({e}, {e}), group({c1}, {c1}), group({e, c2}, {c2}), group({y}, {y})});
  ASSERT_EQ(dag.invariant_violations(), "");
  ASSERT_EQ(dag.num_alive(), 4);
  dag.merge(1, 2, FusionGroup{GroupKind::Loop, dag.merged_nodes(1, 2), dag.merged_roots(1, 2)});
  EXPECT_FALSE(dag.alive(0)) << "e's kernel has no reader left";
  EXPECT_FALSE(dag.alive(2));
  EXPECT_EQ(dag.num_alive(), 2);
  EXPECT_EQ(dag.invariant_violations(), "");
  EXPECT_EQ(disagreement(dag), "");
  EXPECT_EQ(dag.predecessors(1), std::vector<int>{});
}

// A root every reader recomputes is dropped when the DAG is made, and a
// kernel left without roots is retired then; a value nothing reads at all
// (dead code in a graph not canonicalized) stays where it is.
TEST(GroupDag, DropsUnreadRootsWhenMade) {
  Graph g = canonical_graph(R"(graph g(x: f32[8, 8], k: f32[8, 8]) -> (f32[8, 8]) {
  e = exp(x)
  c1 = add(e, k)
  return c1
})");
  const int e = node_named(g, "e"), c1 = node_named(g, "c1");
  const FusionGroup e_alone{GroupKind::Loop, {e}, {e}}, both{GroupKind::Loop, {std::min(e, c1), std::max(e, c1)}, {c1}};
  GroupDag dag(g, {e_alone, both});
  EXPECT_FALSE(dag.alive(0));
  EXPECT_TRUE(dag.alive(1));
  EXPECT_EQ(dag.invariant_violations(), "");
}

}  // namespace
}  // namespace stitch
