#include "fusion/planner.h"

namespace stitch {

std::string_view planner_name(PlannerKind k) {
  switch (k) {
    case PlannerKind::None: return "none";
    case PlannerKind::Xla: return "xla";
    case PlannerKind::Stitch: return "stitch";
    case PlannerKind::Ilp: return "ilp";
  }
  fail_internal("unknown PlannerKind", __FILE__, __LINE__);
}

std::optional<PlannerKind> parse_planner_kind(std::string_view name) {
  for (PlannerKind k : {PlannerKind::None, PlannerKind::Xla, PlannerKind::Stitch, PlannerKind::Ilp})
    if (planner_name(k) == name) return k;
  return std::nullopt;
}

FusionPlan plan(const Graph& g, PlannerKind kind) {
  switch (kind) {
    case PlannerKind::None: return plan_none(g);
    case PlannerKind::Xla: return plan_xla(g);
    case PlannerKind::Stitch:
    case PlannerKind::Ilp:
      throw UserError("planner '" + std::string(planner_name(kind)) + "' is not implemented yet");
  }
  fail_internal("unknown PlannerKind", __FILE__, __LINE__);
}

}  // namespace stitch
