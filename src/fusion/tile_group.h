// Tile groups (FusionStitching 2019 §4, block composition): reductions over
// *different* axes of one input shape in one kernel, when a block can hold
// the whole reduced tile. Double centering (a row mean and a column mean of
// each [32, 48] slice, both subtracted) is the example: a stitched group
// (stitched_group.h) needs one set of axes, a tile group gives each block one
// tile — the dims every reduction's axes fall in — and computes each
// reduction's results for the tile into shared memory before the ops that read
// them. The planner and the lowering share this one check (docs/fusion.md,
// Tile groups).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "stitch/graph.h"

namespace stitch {

// The most bytes a tile and its per-block results may take: the shared
// memory a CUDA block gets without opting in (48 KiB), so one block holds
// the tile.
inline constexpr int64_t kTileBytes = 48 * 1024;

// The iteration space of a tile group. `shape` is every reduction's input
// shape S; `tile` the innermost dims U of S that the reductions' axes cover
// (their union, a suffix of S, static); the other dims are the block's outer
// index, one block each. `phases` lists the reductions by dependence level:
// a reduction of phase k reads only results of phases before k.
struct TileDomain {
  Shape shape;
  std::vector<size_t> tile;              // positions of `shape`, ascending, a suffix
  std::vector<std::vector<int>> phases;  // node indices, ascending within a phase

  Shape outer_shape() const;  // shape[0 : rank - tile.size()]
  Shape tile_shape() const;   // shape[tile]
  bool in_tile(size_t d) const { return d + tile.size() >= shape.size(); }
};

// How a value of `shape` is indexed from the domain's index: per dim a
// position of domain.shape whose index it takes, or -1 (a static 1, index 0).
// For a reduction node, from its axes and keepdims; for any other value,
// the value's shape must be the domain's shape with some tile dims replaced
// by static 1s or dropped (and static 1s dropped); nullopt otherwise.
std::optional<std::vector<int>> tile_value_index(const Graph& g, const TileDomain& domain, ValueId v);

// Why `nodes` with `roots` cannot be one tile kernel, or "" when they can:
// every reduction is a reduce_* (not argmax/argmin) over one input shape S;
// the union of their axes is a suffix U of S with static extents, at least
// two different axis sets among them; the tile (prod S[U] elements of the
// widest reduction input) plus every reduction's results for one block fit
// in kTileBytes; every other node is elementwise, broadcast, layout, gather,
// iota or constant; every root is of shape S or indexed by tile_value_index;
// and every read of a reduction's result is at the block's own outer index
// (only elementwise ops, broadcasts, transposes and 1-inserting reshapes lie
// between a reduction and its readers). Fills `out` on success.
std::string tile_group_problem(const Graph& g, const std::vector<int>& nodes, const std::vector<int>& roots,
                               TileDomain* out = nullptr);

}  // namespace stitch
