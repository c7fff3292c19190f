// Lowering of a whole fusion plan to Kernel IR, group by group
// (docs/lowering.md). Groups the lowering does not handle yet are reported,
// not skipped silently: the caller sees which groups have a kernel.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "fusion/fusion_plan.h"
#include "kir/kernel.h"
#include "lower/lower_loop_group.h"
#include "pipeline/schedule_groups.h"
#include "schedule/group_schedule.h"
#include "schedule/select.h"

namespace stitch::lower {

struct LoweredGroup {
  int group = -1;                     // index into FusionPlan::groups
  std::optional<kir::Kernel> kernel;  // absent: not lowered yet
  GroupSignature signature;           // meaningful only with a kernel
  std::string not_lowered_reason;     // set exactly when kernel is absent (and not a library group)
  schedule::GroupSchedule schedule;   // what the kernel follows (schedule_groups.h)
  // Its kernel did not compile even alone: the reference interpreter runs the
  // group (pipeline/group_fallback.h); `kernel` is absent.
  bool interpreted = false;
};

// One entry per group of `plan`, in plan order, each group's kernel built as
// `schedules` (schedule_plan's, one per group) says: the lowering decides
// nothing of its own. Kernels are named "<prefix>_g<index>". A group whose
// schedule is Unlowered comes back without a kernel and with its reason; a
// library group without a kernel (a library call). `target` says which
// machine's kernels to build (the CPU's or the GPU's forms).
std::vector<LoweredGroup> lower_plan(const Graph& g, const FusionPlan& plan,
                                     const std::vector<schedule::GroupSchedule>& schedules, const std::string& prefix,
                                     const schedule::RowScheduleTarget& target = schedule::RowScheduleTarget::cpu());

}  // namespace stitch::lower
