// The public fusion report (include/stitch/report.h) over src/report.
#include "stitch/report.h"

#include <fmt/format.h>

#include "fusion/planner.h"
#include "ir/canonicalize.h"
#include "report/html_report.h"
#include "report/report.h"
#include "stitch/error.h"

namespace stitch {

std::string fusion_report_sections(const Graph& g, const std::string& planner, const std::string& backend,
                                   const std::string& anchor) {
  const std::optional<PlannerKind> kind = parse_planner_kind(planner);
  if (!kind) {
    throw UserError(fmt::format("fusion report: unknown planner '{}' (planners: none, xla, stitch, ilp, greedy)", planner));
  }
  const report::Report r = report::collect_report(canonicalize(g), *kind, backend, {}, std::nullopt, anchor);
  return report::render_body(r, r.drawing.valid() ? r.drawing.get() : report::draw_svg(r.dot));
}

std::string fusion_report_page(const std::string& title, const std::string& body) {
  return report::render_page(title, body);
}

}  // namespace stitch
