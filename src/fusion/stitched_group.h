// Stitched groups (DESIGN.md, Schedules and compositions: block composition;
// FusionStitching 2019 §4): a kernel in which a reduction's result is read by
// other ops of the same kernel. Whether a set of nodes can be one such kernel
// is a property of the graph alone, so the planner (src/fusion) and the
// lowering (src/lower) share this one check (docs/fusion.md, Stitched groups).
#pragma once

#include <cstddef>
#include <cstdint>
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

// A root of a column domain (reduced axes not innermost) whose value reads no
// reduction of the group: the lowering stores it in the first phase's pass
// over the reduced elements, not in a pass of its own after the phases. Its
// shape is the domain's, or another of as many elements (static), read by the
// reductions through reshapes (a bias gradient's column sum reads the
// gradient it sums as [parts, rows, columns]): stored at the element of the
// same linear index.
bool stitched_early_root(const Graph& g, const std::vector<int>& nodes, const StitchedDomain& domain, int root);

// True when `group` reads a reduction's result inside itself, or writes a
// non-reduction root beside a reduction: what neither a loop nor a reduction
// kernel does.
bool is_stitched_group(const Graph& g, const std::vector<int>& nodes, const std::vector<int>& roots);

// Why `nodes` with `roots` cannot be one stitched kernel, or "" when they can:
// every reduction is a reduce_* (not argmax/argmin) over the same input shape
// and axes; every other node is an elementwise, broadcast, layout, gather,
// iota or constant op; every root is either of the reductions' input shape or
// of their result shape (static 1s aside) or an early root (above) of another
// shape; and every use of a reduction's
// result inside the group reads it at the row (or column) being computed:
// only elementwise ops, broadcasts, transposes and reshapes that insert or
// drop 1s lie between a reduction and its readers. Fills `domain` on success.
std::string stitched_group_problem(const Graph& g, const std::vector<int>& nodes, const std::vector<int>& roots,
                                   StitchedDomain* domain = nullptr);

// The threads of a column-schedule block, one column each (docs/lowering.md,
// Stitched groups: Column schedule).
inline constexpr int64_t kStitchedColumnBlockThreads = 256;

// What one block of a stitched kernel reads again from memory after the phase
// that first read it (docs/fusion.md, What a block re-reads): each phase
// recomputes its values from the group's inputs, so the values a later phase
// needs come back from DRAM unless the block holds them between phases (a
// row in shared memory or cache). Counted per reduced element, as the
// smaller of two sets that each suffice to hold: the group's inputs that an
// earlier phase loaded, or the earlier phases' reduction inputs (and loads)
// where the later phases' cones first meet them. Per-row values (a total, a
// gamma of a column domain) are not counted.
struct StitchedReread {
  int64_t bytes_per_element = 0;  // summed dtype sizes of the held values; 0: no phase re-reads
  int64_t reduced_extent = -1;    // elements of one row (column); -1 when symbolic
  int64_t block_width = 1;        // rows (columns) one block owns: 1, or the column block
  // The bytes a block holds between phases; -1 when the reduced extent is symbolic.
  int64_t block_bytes() const;
};

// `domain` as stitched_group_problem fills it for the same nodes and roots.
// With `fits_bytes` >= 0, a caller that only asks whether the re-read fits
// in that many bytes: where every row-data input of the group fits, the
// phases are not walked and bytes_per_element is that upper bound.
StitchedReread stitched_reread(const Graph& g, const std::vector<int>& nodes, const std::vector<int>& roots,
                               const StitchedDomain& domain, int64_t fits_bytes = -1);

}  // namespace stitch
