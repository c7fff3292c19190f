// The schedule stage of the compile pipeline (docs/pipeline.md, The schedule
// stage): for every group of a plan, the schedule its kernel follows, chosen
// among the ones the lowering implements for the target. It lives beside the
// lowering because what a group can take is what the lowerers can build
// (reduction_group_problem, transpose_tiles_problem, ...); the choices among
// those come from schedule/ (the latency evaluator's ranking on a GPU, the CPU
// rule, a forced kind) or from a tuning cache (tune/).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "fusion/fusion_plan.h"
#include "schedule/group_schedule.h"
#include "schedule/select.h"

namespace stitch::pipeline {

// The schedules a group may take on `target`, the default first: for a row
// group the default row schedule and the other row kinds the lowering
// implements at the threads the ranking would give; for a column reduction
// the default and the block tiles; otherwise the default alone. Every entry
// is a schedule lower_plan can follow. The tuner measures these.
std::vector<schedule::GroupSchedule> schedule_candidates(const Graph& g, const FusionGroup& group,
                                                         const schedule::RowScheduleTarget& target);

// The default schedule of `group` on `target` (no measurement).
schedule::GroupSchedule schedule_group(const Graph& g, const FusionGroup& group,
                                       const schedule::RowScheduleTarget& target);

// Fills in what a schedule's decision implies (a stitched row kernel's
// shared-memory plan); used after a schedule is read back from a cache.
void complete_schedule(const Graph& g, const FusionGroup& group, const schedule::RowScheduleTarget& target,
                       schedule::GroupSchedule& s);

// One schedule per group of `plan`, in plan order. `override_group`, when
// set, may replace a group's default (the tuner's cached choice); it returns
// nullopt to keep the default.
using ScheduleOverride =
    std::function<std::optional<schedule::GroupSchedule>(int group, const std::vector<schedule::GroupSchedule>& candidates)>;
std::vector<schedule::GroupSchedule> schedule_plan(const Graph& g, const FusionPlan& plan,
                                                   const schedule::RowScheduleTarget& target,
                                                   const ScheduleOverride& override_group = {});

// The text STITCH_DUMP=schedule prints: one line per group,
//   group 2 [stitched] y: row warp-per-row [GRID-WARP_8,CTA]; 256 threads cached [5] shared 8192 (the CPU rule ...)
std::string print_schedules(const Graph& g, const FusionPlan& plan, const std::vector<schedule::GroupSchedule>& s);

}  // namespace stitch::pipeline
