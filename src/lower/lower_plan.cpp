#include "lower/lower_plan.h"

#include <fmt/format.h>

#include "lower/lower_reduction_group.h"
#include "lower/lower_stitched_group.h"
#include "lower/lower_tile_group.h"
#include "lower/streaming_outputs.h"
#include "lower/transpose_tiles.h"

namespace stitch::lower {

std::vector<LoweredGroup> lower_plan(const Graph& g, const FusionPlan& plan, const std::string& prefix,
                                     const schedule::RowScheduleTarget& target) {
  std::vector<LoweredGroup> out;
  const bool prefetch = target.machine == schedule::RowScheduleTarget::Machine::Cpu && target.prefetch;
  for (size_t i = 0; i < plan.groups.size(); ++i) {
    const FusionGroup& group = plan.groups[i];
    LoweredGroup lowered;
    lowered.group = static_cast<int>(i);
    // Reductions over different axes of one tile (docs/lowering.md, Tile
    // groups) are neither a reduction nor a stitched kernel.
    bool tile = false;
    if (group.kind == GroupKind::Reduction || group.kind == GroupKind::Stitched) {
      std::string problem = group.kind == GroupKind::Reduction ? reduction_group_problem(g, group)
                                                               : stitched_group_lowering_problem(g, group);
      tile = !problem.empty() && tile_group_lowering_problem(g, group).empty();
      if (!problem.empty() && !tile) lowered.not_lowered_reason = "not lowered yet: " + problem;
    } else if (group.kind != GroupKind::Loop) {
      lowered.not_lowered_reason =
          "not lowered yet: " + std::string(group_kind_name(group.kind)) + " groups have no lowering";
    } else {
      for (int n : group.nodes) {
        OpKind op = g.nodes()[n].op;
        if (!is_loop_lowerable(op)) {
          lowered.not_lowered_reason = "not lowered yet: op " + std::string(op_name(op)) + " in a loop group";
          break;
        }
      }
    }
    if (lowered.not_lowered_reason.empty()) {
      std::string name = prefix + "_g" + std::to_string(i);
      if (!tile) lowered.row_schedule = schedule::choose_row_schedule(g, group, target);
      const schedule::RowSchedule row = lowered.row_schedule ? lowered.row_schedule->schedule : schedule::RowSchedule{};
      if (tile) {
        lowered.kernel = lower_tile_group(g, group, name, target.machine == schedule::RowScheduleTarget::Machine::Cpu);
      } else if (group.kind == GroupKind::Stitched) {
        lowered.kernel = lower_stitched_group(g, group, name, row, target.shared_budget_bytes(), prefetch);
      } else {
        const std::optional<schedule::ColumnScheduleChoice> column = schedule::choose_column_schedule(g, group, target);
        const bool cpu = target.machine == schedule::RowScheduleTarget::Machine::Cpu;
        if (group.kind == GroupKind::Reduction) {
          lowered.kernel =
              lower_reduction_group(g, group, name, row, column ? column->schedule : schedule::ColumnSchedule{});
        } else if (cpu && target.transpose_tiles && transpose_tiles_problem(g, group).empty()) {
          lowered.kernel = lower_transpose_tiles(g, group, name);
        } else {
          lowered.kernel = lower_loop_group(g, group, name, prefetch);
        }
        if (column) {
          lowered.kernel->note = fmt::format("column schedule: {} ({})", column->schedule.describe(), column->reason);
        }
      }
      if (lowered.row_schedule) {
        lowered.kernel->note = fmt::format("row schedule: {} ({})", row.describe(), lowered.row_schedule->reason);
      }
      lowered.signature = loop_group_signature(g, group);
    }
    out.push_back(std::move(lowered));
  }
  if (target.machine == schedule::RowScheduleTarget::Machine::Cpu && target.stream_min_bytes >= 0) {
    mark_streaming_outputs(g, plan, out, target.stream_min_bytes);
  }
  return out;
}

}  // namespace stitch::lower
