// From a fusion plan's groups to the latency evaluator's group descriptions,
// and the per-group ranking `stitch plan --explain` prints (docs/schedule.md,
// Explaining a plan).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include "fusion/fusion_plan.h"
#include "schedule/candidates.h"
#include "schedule/select.h"
#include "stitch/shape.h"

namespace stitch::schedule {

// The group's pattern and costs, or why it has none to rank: a library call,
// a reduction over middle axes. Symbols absent from `bindings` take
// `default_extent`, as in FusionCostModel.
std::variant<GroupDescription, std::string> describe_group(const Graph& g, const FusionGroup& group,
                                                           const SymbolBindings& bindings = {},
                                                           int64_t default_extent = 1024);

// For every group of `plan`: its description and the best `top` candidates on
// `target` (0: all), or the reason it is not ranked; for a row-reduction or
// stitched group also the row schedule the lowering takes for `target`
// (select.h).
std::string explain_plan(const Graph& g, const FusionPlan& plan, const GpuTarget& target,
                         const SymbolBindings& bindings = {}, size_t top = 5,
                         std::optional<RowScheduleKind> forced = std::nullopt);
// The same with the row schedules chosen for `rows` (a GPU target, with the
// GPU model's analytical form when rows.model is set: gpu_model::with_row_model);
// each ranked candidate then shows the model's time beside the evaluator's.
std::string explain_plan(const Graph& g, const FusionPlan& plan, const GpuTarget& target,
                         const SymbolBindings& bindings, size_t top, const RowScheduleTarget& rows);

// For every group of `plan`: the row schedule the lowering takes for `rows`
// (the CPU, or a forced kind), without a GPU ranking.
std::string explain_row_schedules(const Graph& g, const FusionPlan& plan, const RowScheduleTarget& rows,
                                  const SymbolBindings& bindings = {});

}  // namespace stitch::schedule
