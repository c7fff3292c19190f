// The shared memory of one stitched kernel (docs/shared-memory.md, Stitched
// kernels): which of the group's values a block keeps in shared memory between
// phases, and where every shared buffer lives, planned by Algorithm 4
// (plan_shared_memory) on the group's own data-flow graph.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fusion/fusion_plan.h"
#include "fusion/stitched_group.h"
#include "stitch/graph.h"
#include "schedule/row_schedule.h"
#include "schedule/shared_memory_plan.h"

namespace stitch::schedule {

// How the kernel is laid out, as far as its shared memory depends on it.
struct StitchedLayout {
  int64_t row_len = 0;           // elements of one row (reduced extent); static
  int64_t rows_per_block = 1;    // rows one block owns at a time (warp-per-row: its warps)
  int64_t scratch_slots = 0;     // per row and reduction: a block reduction's per-warp partials (0: warp shuffles only)
  int64_t budget_bytes = 48 * 1024;  // the target's shared memory per block
  bool row_caches = true;        // false: scratch only (the rows are held in registers, held_rows.h)
};

struct GroupSharedMemory {
  // Nodes (Graph indices) whose rows the kernel caches, ascending. A value of
  // the row's shape that an expensive op computes in one phase and a later
  // phase reads again (softmax's exp) is cached instead of recomputed, as long
  // as the arena stays within the budget; the rest are recomputed.
  std::vector<int> cached;
  // The problem over the group's ops (index k is group.nodes[k]) and its plan.
  SharedMemoryProblem problem;
  SharedMemoryPlan plan;
  // Per request, the Graph node it is for: a reduction (its scratch) or a
  // cached value (its row cache).
  std::vector<int> request_nodes;
};

// Plans the shared memory of stitched group `group` over `domain`
// (stitched_group_problem's) laid out as `layout`. Requests: one per-warp
// scratch per reduction (no readers: only its own block reduction reads it)
// and one row cache per cacheable value (read by its in-group users). A cache
// that would push the arena over the budget is dropped, earliest first kept.
GroupSharedMemory plan_group_shared_memory(const Graph& g, const FusionGroup& group, const StitchedDomain& domain,
                                           const StitchedLayout& layout);

// The shared memory of stitched group `group` under row schedule `row`, laid
// out as the lowering lays the rows out (row_nest.h: a block-per-row block
// takes the warps a short row fills, and keeps its reductions' per-warp
// partials), within `budget_bytes`; nullopt when the group has no stitched
// domain reducing its innermost axes, or its rows are not static (no row
// caches then).
// With `row_caches` false, the scratch only.
std::optional<GroupSharedMemory> plan_stitched_shared_memory(const Graph& g, const FusionGroup& group,
                                                             const RowSchedule& row, int64_t budget_bytes,
                                                             bool row_caches = true);

// print_shared_memory_plan's text, each buffer named by what it holds and
// its op ("scratch %m", "row cache %e"), as `stitch plan --explain` prints it.
std::string print_group_shared_memory(const GroupSharedMemory& m);

}  // namespace stitch::schedule
