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
#include "schedule/select.h"

namespace stitch::lower {

struct LoweredGroup {
  int group = -1;                     // index into FusionPlan::groups
  std::optional<kir::Kernel> kernel;  // absent: not lowered yet
  GroupSignature signature;           // meaningful only with a kernel
  std::string not_lowered_reason;     // set exactly when kernel is absent
  // The row schedule the kernel follows: set for a reduction or stitched
  // group reducing its innermost axes (schedule/select.h).
  std::optional<schedule::RowScheduleChoice> row_schedule;
};

// One entry per group of `plan`, in plan order. Kernels are named
// "<prefix>_g<index>". A loop group with an op outside is_loop_lowerable, a
// reduction group with a reduction_group_problem and a library group come
// back without a kernel and a reason. Row-reduction and stitched groups take
// the row schedule choose_row_schedule picks for `target` (the back end the
// kernels are for; the CPU by default).
std::vector<LoweredGroup> lower_plan(const Graph& g, const FusionPlan& plan, const std::string& prefix,
                                     const schedule::RowScheduleTarget& target = schedule::RowScheduleTarget::cpu());

}  // namespace stitch::lower
