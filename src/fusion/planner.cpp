#include "fusion/planner.h"

#include <fmt/format.h>

#include <cstdlib>
#include <string>

#include "fusion/dot_epilogues.h"
#include "options/options.h"

namespace stitch {

std::string_view planner_name(PlannerKind k) {
  switch (k) {
    case PlannerKind::None: return "none";
    case PlannerKind::Xla: return "xla";
    case PlannerKind::Stitch: return "stitch";
    case PlannerKind::Ilp: return "ilp";
    case PlannerKind::Greedy: return "greedy";
  }
  fail_internal("unknown PlannerKind", __FILE__, __LINE__);
}

std::optional<PlannerKind> parse_planner_kind(std::string_view name) {
  for (PlannerKind k : kEveryPlanner)
    if (planner_name(k) == name) return k;
  return std::nullopt;
}

int resolve_max_fusions(const PlanOptions& options) {
  if (options.max_fusions >= 0) return options.max_fusions;
  return environment_options().max_fusions;
}

bool resolve_dot_epilogues(const PlanOptions& options) {
  // Read even when off, so a bad value is reported wherever it is set.
  const bool env = environment_options().dot_epilogues;
  return options.dot_epilogues && env;
}

bool resolve_attention(const PlanOptions& options) {
  const bool env = environment_options().attention;
  return options.attention && env;
}

bool resolve_channels_last(const PlanOptions& options) {
  const bool env = environment_options().channels_last;
  return options.channels_last && env;
}

bool resolve_conv_calls(const PlanOptions& options) {
  const bool env = environment_options().conv_calls;
  return options.conv_calls && env;
}

FusionPlan plan(const Graph& g, PlannerKind kind, const PlanOptions& options, PlanSearchReport* report) {
  const int max_fusions = resolve_max_fusions(options);
  const bool epilogues = resolve_dot_epilogues(options) && max_fusions < 0;
  auto with_epilogues = [&](FusionPlan p) {
    if (epilogues) pair_dot_epilogues(g, p);
    return p;
  };
  switch (kind) {
    case PlannerKind::None: return plan_none(g);
    case PlannerKind::Xla: return plan_xla(g, max_fusions);
    case PlannerKind::Stitch:
      return with_epilogues(plan_stitch(g, max_fusions, options.row_hold_bytes, report, options.target));
    case PlannerKind::Ilp:
      return with_epilogues(
          plan_ilp(g, max_fusions, options.row_hold_bytes, report, options.target, options.ilp_time_limit_seconds));
    case PlannerKind::Greedy: return with_epilogues(plan_greedy(g, max_fusions, options.row_hold_bytes));
  }
  fail_internal("unknown PlannerKind", __FILE__, __LINE__);
}

}  // namespace stitch
