// The schedule stage's output (docs/pipeline.md, The schedule stage): one
// value per group of a plan saying how its kernel is laid out over threads,
// which of its values a block keeps in shared memory, and why. The lowering
// follows it and decides nothing of its own, so a schedule can be printed
// (STITCH_DUMP=schedule), compared, hashed, cached by the tuner and forced by
// a test.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "schedule/column_schedule.h"
#include "schedule/group_shared_memory.h"
#include "schedule/row_schedule.h"

namespace stitch::schedule {

enum class ScheduleKind : uint8_t {
  Loop,            // a thread per output element (loop groups)
  TransposeTiles,  // a loop group through 16 x 16 tiles of its transposes (CPU)
  Row,             // a reduction or stitched group reducing its innermost axes: `row`
  Column,          // a reduction over other axes: `column` (a stitched one: a thread per column)
  Tile,            // a tile group: a block per tile of the reductions' axes
  Library,         // a library call (a dot): no kernel
  Unlowered,       // the lowering has no kernel for this group: `reason` says why
};

std::string_view schedule_kind_name(ScheduleKind k);

struct GroupSchedule {
  ScheduleKind kind = ScheduleKind::Loop;
  RowSchedule row;        // Row
  ColumnSchedule column;  // Column
  // CPU: the kernel asks for the next block of the inputs it reads in order
  // (docs/lowering.md, Prefetch).
  bool prefetch = false;
  // Row schedules of stitched groups (docs/shared-memory.md, Stitched
  // kernels): the nodes whose rows a block caches in shared memory, ascending,
  // and the block's shared-memory arena in bytes as Algorithm 4 placed it.
  std::vector<int> cached;
  int64_t shared_bytes = 0;
  // GPU row schedules of stitched groups (docs/schedule.md, Rows in
  // registers): the values (value indices, ascending) a thread keeps in
  // registers across the kernel's passes; they take no row cache.
  std::vector<int> held;
  int64_t held_vector = 1;  // consecutive elements a thread takes at a time (HeldRows::vector)
  // CPU: the graph outputs (value indices, ascending) the kernel stores
  // non-temporally (docs/cpu-backend.md, Streaming stores).
  std::vector<int> streamed;
  // The plan itself, which the lowering places its buffers by; derived from
  // the decision above (plan_stitched_shared_memory), so == ignores it.
  std::shared_ptr<const GroupSharedMemory> shared_memory;
  // Commentary, not part of the decision (== and hash ignore them): why this
  // schedule ("rank 1 of 15 on sm_90", "tuned: the fastest candidate ...",
  // "the CPU rule ...").
  std::string reason;

  // The decision as one canonical line: "row warp-per-row [GRID-WARP_8,CTA]; 256 threads prefetch cached [3 5] shared 2048 held [0 4] vector 4".
  std::string key() const;
  // key() followed by " (reason)".
  std::string describe() const;
  size_t hash() const;

  friend bool operator==(const GroupSchedule& a, const GroupSchedule& b) { return a.key() == b.key(); }
};

}  // namespace stitch::schedule

template <>
struct std::hash<stitch::schedule::GroupSchedule> {
  size_t operator()(const stitch::schedule::GroupSchedule& s) const { return s.hash(); }
};
