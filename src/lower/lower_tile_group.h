// Lowering of a tile group (reductions over different axes of one tile,
// FusionStitching 2019 §4; docs/lowering.md, Tile groups): one block per
// outer index, each reduction's results for the whole tile computed into
// shared memory, phase by phase, before the ops that read them.
#pragma once

#include <cstdint>
#include <string>

#include "fusion/fusion_plan.h"
#include "kir/kernel.h"
#include "stitch/graph.h"

namespace stitch::lower {

// The most threads of a tile kernel's block; fewer when no phase has that
// many outputs per block.
inline constexpr int64_t kTileBlockThreads = 256;

// Why `group` cannot be lowered by lower_tile_group, or "" when it can
// (tile_group_problem of src/fusion/tile_group.h, and every other node
// loop-lowerable).
std::string tile_group_lowering_problem(const Graph& g, const FusionGroup& group);

// One kernel, grid = the outer elements, one block each. Per dependence
// level of the reductions, the block's threads stride over each reduction's
// results for the tile, each result a serial loop over its reduced elements
// in index order, stored finished into a shared buffer; a barrier; later
// phases and the roots read the results from there. A last phase stores the
// roots. The signature is loop_group_signature's. Raises InternalError when
// the group is not a tile group. Verified.
// `cpu`: the block has as many threads as the tile's innermost extent (in
// 16s), the CPU's vector loop, instead of the GPU's 32-multiple.
kir::Kernel lower_tile_group(const Graph& g, const FusionGroup& group, const std::string& kernel_name,
                             bool cpu = false);

}  // namespace stitch::lower
