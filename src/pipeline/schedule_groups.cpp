#include "pipeline/schedule_groups.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

#include "fusion/stitched_group.h"
#include "lower/lower_loop_group.h"
#include "lower/lower_reduction_group.h"
#include "lower/lower_stitched_group.h"
#include "lower/lower_tile_group.h"
#include "lower/streaming_outputs.h"
#include "lower/transpose_tiles.h"
#include "schedule/column_schedule.h"
#include "schedule/held_rows.h"

namespace stitch::pipeline {

using schedule::GroupSchedule;
using schedule::RowSchedule;
using schedule::RowScheduleKind;
using schedule::RowScheduleTarget;
using schedule::ScheduleKind;

namespace {

bool on_cpu(const RowScheduleTarget& t) { return t.machine == RowScheduleTarget::Machine::Cpu; }

GroupSchedule unlowered(std::string reason) {
  GroupSchedule s;
  s.kind = ScheduleKind::Unlowered;
  s.reason = std::move(reason);
  return s;
}

// Why the lowering has no kernel for `group` at all, or "".
std::string lowering_problem(const Graph& g, const FusionGroup& group) {
  switch (group.kind) {
    case GroupKind::Library: return "";
    case GroupKind::Tile: return lower::tile_group_lowering_problem(g, group);
    case GroupKind::Reduction: return lower::reduction_group_problem(g, group);
    case GroupKind::Stitched: return lower::stitched_group_lowering_problem(g, group);
    case GroupKind::Loop:
      for (int n : group.nodes) {
        const OpKind op = g.nodes()[static_cast<size_t>(n)].op;
        if (!lower::is_loop_lowerable(op)) return "op " + std::string(op_name(op)) + " in a loop group";
      }
      return "";
  }
  return "unknown group kind";
}

// Whether stitched group `group` reduces its innermost axes (lowered by rows).
bool stitched_rows(const Graph& g, const FusionGroup& group) {
  StitchedDomain domain;
  return stitched_group_problem(g, group.nodes, group.roots, &domain).empty() && domain.innermost();
}

// The columns a block of a stitched column kernel owns on the CPU: every
// element after the last reduced axis (a row of [parts, rows, C]) when there
// are 256 to kir::kCpuMaxBlockSize of them, so that a block walks its rows
// front to back as one stream; else 256. In blocks of 256 columns a GELU
// backward with its bias gradient's sum ([4, 256, 3072]) visited each row in
// four 1 KiB stretches and was slower than the two kernels it replaces
// (docs/lowering.md, Stitched groups: Column schedule).
int64_t cpu_stitched_column_width(const Graph& g, const FusionGroup& group) {
  StitchedDomain domain;
  if (!stitched_group_problem(g, group.nodes, group.roots, &domain).empty()) return schedule::kColumnWidth;
  int64_t row = 1;
  for (size_t d = domain.axes.back() + 1; d < domain.shape.size(); ++d) {
    if (!domain.shape[d].is_static()) return schedule::kColumnWidth;
    row *= domain.shape[d].extent();
  }
  return row >= schedule::kColumnWidth && row <= kir::kCpuMaxBlockSize ? row : schedule::kColumnWidth;
}

GroupSchedule row_schedule(const Graph& g, const FusionGroup& group, const RowScheduleTarget& target,
                           const RowSchedule& row, std::string reason) {
  GroupSchedule s;
  s.kind = ScheduleKind::Row;
  s.row = row;
  s.prefetch = group.kind == GroupKind::Stitched && on_cpu(target) && target.prefetch;
  s.reason = std::move(reason);
  complete_schedule(g, group, target, s);
  return s;
}

}  // namespace

void complete_schedule(const Graph& g, const FusionGroup& group, const RowScheduleTarget& target, GroupSchedule& s) {
  s.cached.clear();
  s.shared_bytes = 0;
  s.shared_memory.reset();
  s.held.clear();
  s.held_vector = 1;
  if (s.kind != ScheduleKind::Row) return;
  // A block per row takes no more threads than its row has (whole warps):
  // written here once, so the lowering and the plans below follow it.
  if (s.row.kind == RowScheduleKind::BlockPerRow) {
    s.row.threads = schedule::block_per_row_threads(schedule::row_group_length(g, group), s.row.threads);
  }
  std::optional<schedule::GroupSharedMemory> m =
      schedule::plan_stitched_shared_memory(g, group, s.row, target.shared_budget_bytes());
  if (!m) return;
  // On the GPU a row that fits the threads' registers is held there instead
  // (docs/schedule.md, Rows in registers): the shared memory keeps the scratch.
  if (std::optional<schedule::HeldRows> held = !on_cpu(target) && target.held_rows
                                                   ? schedule::plan_held_rows(g, group, s.row, schedule::cacheable_rows(g, group))
                                                   : std::nullopt) {
    s.held = held->values;
    s.held_vector = held->vector;
    if (held->threads != s.row.threads) {
      s.reason += fmt::format("; {} threads, so that each holds whole vectors of its row", held->threads);
      s.row.threads = held->threads;
    }
    m = schedule::plan_stitched_shared_memory(g, group, s.row, target.shared_budget_bytes(), false);
  }
  s.cached = m->cached;
  s.shared_bytes = m->plan.arena_bytes;
  s.shared_memory = std::make_shared<const schedule::GroupSharedMemory>(std::move(*m));
}

GroupSchedule schedule_group(const Graph& g, const FusionGroup& group, const RowScheduleTarget& target) {
  if (group.kind == GroupKind::Library) {
    GroupSchedule s;
    s.kind = ScheduleKind::Library;
    s.reason = "a library call";
    return s;
  }
  if (std::string problem = lowering_problem(g, group); !problem.empty()) return unlowered("not lowered yet: " + problem);
  GroupSchedule s;
  switch (group.kind) {
    case GroupKind::Tile:
      s.kind = ScheduleKind::Tile;
      s.reason = "reductions over different axes of one tile: a block per tile";
      return s;
    case GroupKind::Reduction:
    case GroupKind::Stitched: {
      if (std::optional<schedule::RowScheduleChoice> row = schedule::choose_row_schedule(g, group, target)) {
        return row_schedule(g, group, target, row->schedule, row->reason);
      }
      // A stitched group reducing its innermost axes is lowered by rows
      // whatever the ranking said (forced column groups, a group the ranking
      // does not describe): its row schedule and shared memory are decided
      // here, like any other row schedule's.
      if (group.kind == GroupKind::Stitched && stitched_rows(g, group)) {
        return row_schedule(g, group, target, RowSchedule{},
                            "a stitched group reducing its innermost axes that the row ranking does not take: the "
                            "default row schedule");
      }
      s.kind = ScheduleKind::Column;
      if (group.kind == GroupKind::Stitched) {
        s.column.width = on_cpu(target) ? cpu_stitched_column_width(g, group) : schedule::kColumnWidth;
        s.reason = "a stitched group over other axes than the innermost: a thread per column";
      } else if (std::optional<schedule::ColumnScheduleChoice> c = schedule::choose_column_schedule(g, group, target)) {
        s.column = c->schedule;
        s.reason = c->reason;
      } else {
        s.reason = "no column ranking: a thread per column";
      }
      return s;
    }
    case GroupKind::Loop:
      if (target.transpose_tiles && lower::transpose_tiles_problem(g, group, !on_cpu(target)).empty()) {
        s.kind = ScheduleKind::TransposeTiles;
        s.reason = on_cpu(target) ? "its transposes move the innermost axis: 16 x 16 tiles"
                                  : "its transposes move the innermost axis: 32 x 32 tiles in shared memory";
        return s;
      }
      s.kind = ScheduleKind::Loop;
      s.prefetch = on_cpu(target) && target.prefetch;
      s.reason = "a thread per output element";
      return s;
    case GroupKind::Library: break;
  }
  return unlowered("unknown group kind");
}

std::vector<GroupSchedule> schedule_candidates(const Graph& g, const FusionGroup& group,
                                               const RowScheduleTarget& target) {
  // A copy: adding candidates moves `out`'s elements.
  const GroupSchedule first = schedule_group(g, group, target);
  std::vector<GroupSchedule> out{first};
  auto add = [&](GroupSchedule s) {
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(std::move(s));
  };
  switch (first.kind) {
    case ScheduleKind::Row: {
      // Every row kind the lowering implements; warp-per-row at 1 to 8 warps.
      const int64_t len = schedule::static_row_length(g, group);
      add(row_schedule(g, group, target, {RowScheduleKind::BlockPerRow, 256, 32}, "a candidate"));
      for (int64_t warps : {1, 2, 4, 8}) {
        add(row_schedule(g, group, target, {RowScheduleKind::WarpPerRow, warps * 32, 32}, "a candidate"));
      }
      if (std::optional<int64_t> lanes = schedule::multi_row_lanes(len)) {
        add(row_schedule(g, group, target, {RowScheduleKind::MultiRowPerWarp, 256, *lanes}, "a candidate"));
      }
      break;
    }
    case ScheduleKind::Column: {
      if (group.kind != GroupKind::Reduction || first.reason.find("argmax") != std::string::npos) break;
      for (int64_t groups : {1, 8}) {
        GroupSchedule s = first;
        s.column = groups == 1 ? schedule::ColumnSchedule{} : schedule::ColumnSchedule{groups, 32};
        s.reason = "a candidate";
        add(s);
      }
      break;
    }
    case ScheduleKind::Loop:
    case ScheduleKind::TransposeTiles: {
      if (!on_cpu(target)) break;
      GroupSchedule loop;
      loop.kind = ScheduleKind::Loop;
      loop.reason = "a candidate";
      loop.prefetch = true;
      add(loop);
      loop.prefetch = false;
      add(loop);
      break;
    }
    default: break;
  }
  return out;
}

std::vector<GroupSchedule> schedule_plan(const Graph& g, const FusionPlan& plan, const RowScheduleTarget& target,
                                         const ScheduleOverride& override_group) {
  std::vector<GroupSchedule> out;
  out.reserve(plan.groups.size());
  const std::vector<std::vector<int>> streamed = on_cpu(target) && target.stream_min_bytes >= 0
                                                     ? lower::streaming_outputs(g, plan, target.stream_min_bytes)
                                                     : std::vector<std::vector<int>>(plan.groups.size());
  for (size_t i = 0; i < plan.groups.size(); ++i) {
    const FusionGroup& group = plan.groups[i];
    if (override_group) {
      const std::vector<GroupSchedule> candidates = schedule_candidates(g, group, target);
      if (std::optional<GroupSchedule> chosen = override_group(static_cast<int>(i), candidates)) {
        complete_schedule(g, group, target, *chosen);
        out.push_back(std::move(*chosen));
      } else {
        out.push_back(candidates.front());
      }
    } else {
      out.push_back(schedule_group(g, group, target));
    }
    if (out.back().kind != ScheduleKind::Library && out.back().kind != ScheduleKind::Unlowered) {
      out.back().streamed = streamed[i];
    }
  }
  return out;
}

std::string print_schedules(const Graph& g, const FusionPlan& plan, const std::vector<GroupSchedule>& s) {
  std::string out = fmt::format("schedules of {} (planner {}): {} groups\n", plan.graph_name, plan.planner, s.size());
  for (size_t i = 0; i < s.size() && i < plan.groups.size(); ++i) {
    const FusionGroup& group = plan.groups[i];
    std::string roots;
    for (int r : group.roots) roots += (roots.empty() ? "" : ", ") + g.value_name(g.nodes()[static_cast<size_t>(r)].output);
    out += fmt::format("group {} [{}] {}: {}\n", i, group_kind_name(group.kind), roots, s[i].describe());
  }
  return out;
}

}  // namespace stitch::pipeline
