// The `greedy` planner, the first form of FusionStitching's block
// composition (docs/fusion.md, The `greedy` planner): xla's plan, then each
// kernel holding a reduction, in the DAG's order, absorbs every neighbour it
// may be stitched with (a reader of its results, a producer it would
// recompute in each phase, a sibling reduction as a tile group) whenever the
// merged kernel is legal and a block holds what its later phases re-read.
// No cost is weighed: the `stitch` planner (planner_dp.cpp) searches by the
// delta evaluator's scores, and this one stays as its yardstick.
#include "fusion/planner.h"

#include <cstdint>
#include "fusion/stitch_merges.h"

namespace stitch {

FusionPlan plan_greedy(const Graph& g, int max_fusions, int64_t row_hold_bytes) {
  StitchMerges merges = StitchMerges::from_xla(g, max_fusions, row_hold_bytes);
  merges.stitch_greedily();
  merges.absorb_loops();
  merges.fuse_loop_producers();
  merges.pack_small_loops();
  return merges.finish("greedy");
}

}  // namespace stitch
