// Stitched groups (DESIGN.md, Schedules and compositions: block composition;
// FusionStitching 2019 §4): a kernel in which a reduction's result is read by
// other ops of the same kernel. Whether a set of nodes can be one such kernel
// is a property of the graph alone, so the planner (src/fusion) and the
// lowering (src/lower) share this one check (docs/fusion.md, Stitched groups).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "fusion/fusion_plan.h"
#include "stitch/graph.h"

namespace stitch {

// The iteration space every reduction of a stitched group shares: their input
// shape and reduced axes. `phases` lists the reductions by dependence level:
// a reduction of phase k reads only totals of phases before k.
struct StitchedDomain {
  Shape shape;                           // the reductions' input shape
  std::vector<size_t> axes;              // reduced positions of `shape`, ascending
  std::vector<std::vector<int>> phases;  // node indices, ascending within a phase
  // True when the reduced axes are the innermost ones (the row schedule).
  bool innermost() const;
  // The dims of `shape` that are not reduced (one entry per row or column).
  Shape outer_shape() const;
};

// How a root of `shape` is stored from the domain's index: per dim of `shape`
// a position of domain.shape (whose index it takes) or -1 (a static 1, index
// 0). The identity when `shape` is the domain's shape; otherwise `shape` must
// be the outer shape with static 1s inserted or dropped (a per-row root, such
// as LayerNorm's mean); nullopt when it is neither.
std::optional<std::vector<int>> stitched_root_index(const StitchedDomain& domain, const Shape& shape);

// True when `group` reads a reduction's result inside itself, or writes a
// non-reduction root beside a reduction: what neither a loop nor a reduction
// kernel does.
bool is_stitched_group(const Graph& g, const std::vector<int>& nodes, const std::vector<int>& roots);

// Why `nodes` with `roots` cannot be one stitched kernel, or "" when they can:
// every reduction is a reduce_* (not argmax/argmin) over the same input shape
// and axes; every other node is an elementwise, broadcast, layout, gather,
// iota or constant op; every root is either of the reductions' input shape or
// of their result shape (static 1s aside); and every use of a reduction's
// result inside the group reads it at the row (or column) being computed:
// only elementwise ops, broadcasts, transposes and reshapes that insert or
// drop 1s lie between a reduction and its readers. Fills `domain` on success.
std::string stitched_group_problem(const Graph& g, const std::vector<int>& nodes, const std::vector<int>& roots,
                                   StitchedDomain* domain = nullptr);

}  // namespace stitch
