// A plan lowered as the pipeline lowers it: the schedule stage's default
// schedules first (pipeline::schedule_plan), then the lower stage, which decides
// no schedule of its own. For tests that lower a plan in one call.
#pragma once

#include <string>
#include <vector>

#include "fusion/fusion_plan.h"
#include "lower/lower_plan.h"
#include "pipeline/schedule_groups.h"
#include "schedule/select.h"

namespace stitch::testing {

inline std::vector<lower::LoweredGroup> lower_with_default_schedules(
    const Graph& g, const FusionPlan& plan, const std::string& prefix,
    const schedule::RowScheduleTarget& target = schedule::RowScheduleTarget::cpu()) {
  return lower::lower_plan(g, plan, pipeline::schedule_plan(g, plan, target), prefix, target);
}

}  // namespace stitch::testing
