// Rows held in registers (docs/schedule.md, Rows in registers): on the GPU a
// thread of a stitched row kernel keeps its share of the row's inputs, and of
// the expensive values a later phase reads again (softmax's exp), in
// registers across the kernel's passes, so the row is read from memory once
// and the later passes touch neither global nor shared memory. The schedule
// stage decides which values a kernel holds; the lowering follows it.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "fusion/fusion_plan.h"
#include "schedule/row_schedule.h"
#include "stitch/graph.h"

namespace stitch::schedule {

// Values a thread may hold at once (steps of its share of a row x values
// held per position): at most 64, and within what a block of `threads`
// leaves of the SM's 64K registers after 32 a thread for the kernel's own
// (1024 threads: 32 values), so that ptxas need not spill them.
inline constexpr int64_t kHeldValuesPerThread = 64;
int64_t held_values_limit(int64_t threads);
// A thread takes the row in vectors of this many bytes of its narrowest row
// buffer where the row divides into them (128-bit loads and stores).
inline constexpr int64_t kHeldVectorBytes = 16;

// The threads of `row` that share a row of `len` elements (static), and the
// steps each takes over it.
int64_t row_lanes(const RowSchedule& row, int64_t len);
int64_t row_steps(const RowSchedule& row, int64_t len);

// Whether `values` values per row position fit a thread's registers over
// rows of `len` elements under `row`.
bool held_rows_fit(const RowSchedule& row, int64_t len, int64_t values);

struct HeldRows {
  // Value indices, ascending: the group's inputs of the row's shape and the
  // computed values `cacheable` named (the shared-memory plan's row caches).
  std::vector<int> values;
  int64_t steps = 0;  // a thread's steps over its row
  // Consecutive elements a thread takes at a time: kHeldVectorBytes of the
  // narrowest buffer the group reads or writes along the row (a power of two
  // dividing steps, so the row splits into whole vectors), else 1.
  int64_t vector = 1;
  // The block's threads: the schedule's, or under a block per row fewer, so
  // that each thread holds whole vectors (1024 floats: 256 threads of 4).
  int64_t threads = 0;
};

// Values a thread of stitched group `group` holds per row position (its
// inputs of the row's shape and its cacheable values), whatever the
// schedule; 0 when the group has no static row reducing its innermost axes.
// What the GPU model's analytical form charges a held candidate for
// (GroupDescription::held_values).
int64_t held_values_per_position(const Graph& g, const FusionGroup& group);

// The nodes of stitched group `group` whose rows a later phase reads again
// (GroupSharedMemory::cached with every row cache allowed, whatever the
// shared memory): what plan_held_rows takes as `cacheable`.
std::vector<int> cacheable_rows(const Graph& g, const FusionGroup& group);

// The values stitched group `group` holds under `row`, or nullopt when it
// holds none: the group does not reduce its innermost axes over a static row,
// has no input of the row's shape, or its values do not fit
// (held_rows_fit) at any vector width. `cacheable` are the nodes whose rows a later phase reads
// again (cacheable_rows).
std::optional<HeldRows> plan_held_rows(const Graph& g, const FusionGroup& group, const RowSchedule& row,
                                       const std::vector<int>& cacheable);

}  // namespace stitch::schedule
