// Lowering of a reduction fusion group (XLA's input fusion: reduction roots
// with their producers absorbed) to Kernel IR (docs/lowering.md, Reduction
// groups).
#pragma once

#include <cstdint>
#include <string>

#include "fusion/fusion_plan.h"
#include "kir/kernel.h"
#include "lower/lower_loop_group.h"
#include "schedule/column_schedule.h"
#include "schedule/row_schedule.h"
#include "stitch/graph.h"

namespace stitch::lower {

// Why `group` cannot be lowered by lower_reduction_group, or "" when it can:
// every root a reduce_sum/prod/max/min/mean/any/all or argmax/argmin (not over
// an axis of static extent 0, a user error at run time) over one input shape with
// the same axes and result shape, every other node is_loop_lowerable.
std::string reduction_group_problem(const Graph& g, const FusionGroup& group);

// The signature is loop_group_signature's (inputs read, roots written, symbols).
// A reduction over the innermost axes follows `schedule` (docs/lowering.md,
// Row schedules), any other `column` (Column schedules). Raises InternalError
// when reduction_group_problem is not empty. Verified.
kir::Kernel lower_reduction_group(const Graph& g, const FusionGroup& group, const std::string& kernel_name,
                                  const schedule::RowSchedule& schedule = {},
                                  const schedule::ColumnSchedule& column = {});

}  // namespace stitch::lower
