// Fusion planners (DESIGN.md, Fusion planners): each turns a canonical graph
// into a FusionPlan. Legality lives in legality.h, shared by all of them.
#pragma once

#include <optional>
#include <string_view>

#include "fusion/fusion_plan.h"

namespace stitch {

enum class PlannerKind : uint8_t { None, Xla, Stitch, Ilp };

std::string_view planner_name(PlannerKind k);
std::optional<PlannerKind> parse_planner_kind(std::string_view name);

// Throws UserError for a planner that is not implemented yet (stitch, ilp).
FusionPlan plan(const Graph& g, PlannerKind kind);

// Operator-at-a-time: one kernel per op.
FusionPlan plan_none(const Graph& g);
// The XLA rules (docs/fusion.md): thread composition only.
FusionPlan plan_xla(const Graph& g);

}  // namespace stitch
