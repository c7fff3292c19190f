// The column schedules of a reduction group (docs/lowering.md, Column
// schedules): a reduction that does not reduce the innermost axes gives each
// output column a thread that walks down the rows, or a tile of threads that
// split the rows and combine through shared memory (FusionStitching's block
// composition for columns; no global atomics, so no initialising kernel).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "fusion/cost_model.h"
#include "fusion/fusion_plan.h"
#include "schedule/select.h"
#include "stitch/graph.h"

namespace stitch::schedule {

inline constexpr int64_t kColumnWidth = 256;  // a thread per column's block, unless the CPU's is wider

struct ColumnSchedule {
  int64_t groups = 1;             // row groups splitting each column's rows; 1: a thread per column
  int64_t width = kColumnWidth;   // columns a block owns

  int64_t threads() const { return groups * width; }
  bool tiled() const { return groups > 1; }
  // "[THREAD,GRID-CTA_256];" or "[THREAD-CTA_8,GRID-CTA_32];", as candidates.cpp ranks them.
  std::string template_text() const;
  // "block-tile-column [THREAD-CTA_8,GRID-CTA_32]; 256 threads"
  std::string describe() const;

  friend bool operator==(const ColumnSchedule&, const ColumnSchedule&) = default;
};

struct ColumnScheduleChoice {
  ColumnSchedule schedule;
  std::string reason;  // "rank 1 of 20 on sm_90", "the CPU's choice", ...
};

// The column schedule of a reduction group of `plan` that reduces other than
// its innermost axes, or nullopt for any other group (row reductions,
// stitched and loop groups). Argmax/argmin keep a thread per column: their
// partials would need the index-ordered combine. GPU targets take the best
// ranked candidate of these two strategies; the CPU a thread per column
// (its thread loop is already vectorised across columns).
std::optional<ColumnScheduleChoice> choose_column_schedule(const Graph& g, const FusionGroup& group,
                                                           const RowScheduleTarget& target,
                                                           const SymbolBindings& bindings = {});

}  // namespace stitch::schedule
