#include "lower/lower_plan.h"

#include <fmt/format.h>

#include <algorithm>

#include "lower/batch_loads.h"
#include "lower/lower_reduction_group.h"
#include "lower/lower_stitched_group.h"
#include "lower/lower_tile_group.h"
#include "lower/transpose_tiles.h"
#include "stitch/error.h"

namespace stitch::lower {

using schedule::ScheduleKind;

std::vector<LoweredGroup> lower_plan(const Graph& g, const FusionPlan& plan,
                                     const std::vector<schedule::GroupSchedule>& schedules, const std::string& prefix,
                                     const schedule::RowScheduleTarget& target) {
  STITCH_ASSERT(schedules.size() == plan.groups.size(), "lower_plan: one schedule per group");
  const bool cpu = target.machine == schedule::RowScheduleTarget::Machine::Cpu;
  std::vector<LoweredGroup> out;
  for (size_t i = 0; i < plan.groups.size(); ++i) {
    const FusionGroup& group = plan.groups[i];
    const schedule::GroupSchedule& s = schedules[i];
    LoweredGroup lowered;
    lowered.group = static_cast<int>(i);
    lowered.schedule = s;
    const std::string name = prefix + "_g" + std::to_string(i);
    switch (s.kind) {
      case ScheduleKind::Unlowered: lowered.not_lowered_reason = s.reason; break;
      case ScheduleKind::Library: break;
      case ScheduleKind::Tile: lowered.kernel = lower_tile_group(g, group, name, cpu); break;
      case ScheduleKind::TransposeTiles: lowered.kernel = lower_transpose_tiles(g, group, name, !cpu); break;
      case ScheduleKind::Loop:
        lowered.kernel = lower_loop_group(g, group, name, s.prefetch);
        break;
      case ScheduleKind::Row:
        if (group.kind == GroupKind::Stitched) {
          lowered.kernel = lower_stitched_group(g, group, name, s.row, s.prefetch, s.shared_memory.get(), s.held,
                                                s.held_vector);
        } else {
          lowered.kernel = lower_reduction_group(g, group, name, s.row, schedule::ColumnSchedule{});
        }
        lowered.kernel->note = fmt::format("row schedule: {} ({})", s.row.describe(), s.reason);
        break;
      case ScheduleKind::Column:
        if (group.kind == GroupKind::Stitched) {
          // Over other axes than the innermost (schedule_group gives a stitched
          // group reducing its innermost axes a row schedule): a thread per column.
          lowered.kernel = lower_stitched_group(g, group, name, {}, false, nullptr, {}, 1, s.column.width);
          lowered.kernel->note = fmt::format("column schedule: {} columns a block ({})", s.column.width, s.reason);
        } else {
          lowered.kernel = lower_reduction_group(g, group, name, schedule::RowSchedule{}, s.column);
          lowered.kernel->note = fmt::format("column schedule: {} ({})", s.column.describe(), s.reason);
        }
        break;
    }
    if (group.epilogue_of >= 0 && lowered.kernel) {
      // A dot epilogue (fusion/dot_epilogues.h) runs by block ranges over the
      // dot's rows: a row block holds rows_per_block rows of the dot's result.
      STITCH_ASSERT(cpu && (s.kind == ScheduleKind::Loop || s.kind == ScheduleKind::Row),
                    fmt::format("a dot epilogue scheduled {} on {}", schedule::schedule_kind_name(s.kind), target.name()));
      if (s.kind == ScheduleKind::Row) {
        const Shape& dot = g.type(g.nodes()[group.epilogue_of].output).shape;
        lowered.kernel->panel_elements = s.row.rows_per_block() * dot.back().extent();
      }
      STITCH_ASSERT(lowered.kernel->panel_elements > 0, "a dot epilogue's kernel without block ranges");
    }
    // On the GPU a loop kernel's thread loads its elements before computing on
    // any; the row, column and stitched kernels' accumulating loops are left to
    // ptxas, which batches their loads already (docs/lowering.md, Batched loads).
    if (lowered.kernel && !cpu && (s.kind == ScheduleKind::Loop || s.kind == ScheduleKind::TransposeTiles)) {
      batch_loads(*lowered.kernel);
    }
    if (lowered.kernel || s.kind == ScheduleKind::Library) lowered.signature = loop_group_signature(g, group);
    if (lowered.kernel) {
      // Streaming stores for the outputs the schedule names (written once, by this kernel).
      const size_t first_output = lowered.signature.inputs.size();
      for (size_t k = 0; k < lowered.signature.outputs.size(); ++k) {
        kir::BufferParam& b = lowered.kernel->buffers.at(first_output + k);
        const int v = lowered.signature.outputs[k].index;
        if (b.access == kir::Access::Write && std::binary_search(s.streamed.begin(), s.streamed.end(), v)) {
          b.streaming = true;
        }
      }
    }
    out.push_back(std::move(lowered));
  }
  return out;
}

}  // namespace stitch::lower
