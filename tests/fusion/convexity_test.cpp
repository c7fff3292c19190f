// ConvexityIndex (convexity.h) against GroupDag's own walks, which it answers
// for the pattern space from position-sorted edges.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "fusion/convexity.h"
#include "fusion/group_dag.h"
#include "fusion/planner.h"
#include "random_graph.h"

namespace stitch {
namespace {

// Random sets and sets grown one group at a time, on DAGs of one node per
// group and on DAGs after merges (whose order is no longer the graph's).
TEST(ConvexityIndex, AgreesWithTheGroupDagsWalks) {
  int convex_sets = 0, cyclic_sets = 0, joins = 0, cycles = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    Graph g = testing::random_graph(testing::varied_options(seed));
    GroupDag dag(g, plan(g, PlannerKind::None).groups);
    std::mt19937 rng(static_cast<uint32_t>(seed));
    for (int round = 0; round < 3; ++round) {
      const ConvexityIndex index(dag);
      const std::vector<int> ids = dag.order();
      for (int trial = 0; trial < 40; ++trial) {
        std::vector<int> set;
        const size_t size = 2 + rng() % 4;
        while (set.size() < size && set.size() < ids.size()) {
          const int gi = ids[rng() % ids.size()];
          if (std::find(set.begin(), set.end(), gi) == set.end()) set.push_back(gi);
        }
        const std::vector<int> between = dag.between(set);
        ASSERT_EQ(index.convex(set), between.empty()) << "seed " << seed;
        const int one = index.one_between(set);
        if (between.empty()) {
          ++convex_sets;
          ASSERT_EQ(one, -1);
        } else {
          ++cyclic_sets;
          ASSERT_TRUE(std::binary_search(between.begin(), between.end(), one)) << "seed " << seed;
        }
      }
      std::vector<int> to_merge;
      for (int start = 0; start < 6; ++start) {
        std::vector<int> convex{ids[rng() % ids.size()]};
        for (int step = 0; step < 10; ++step) {
          const int added = ids[rng() % ids.size()];
          if (std::find(convex.begin(), convex.end(), added) != convex.end()) continue;
          const bool joins_dag = dag.joins_without_cycle(convex, added);
          ASSERT_EQ(index.joins_without_cycle(convex, added), joins_dag) << "seed " << seed;
          if (joins_dag) {
            convex.push_back(added);
            ++joins;
          } else {
            ++cycles;
          }
        }
        if (to_merge.size() < convex.size()) to_merge = convex;
      }
      // Merged, the largest set moves groups in the order for the next round.
      if (to_merge.size() > 1) dag.merge_all(to_merge, GroupKind::Stitched);
    }
  }
  EXPECT_GT(convex_sets, 500);
  EXPECT_GT(cyclic_sets, 500);
  EXPECT_GT(joins, 500);
  EXPECT_GT(cycles, 100);
}

}  // namespace
}  // namespace stitch
