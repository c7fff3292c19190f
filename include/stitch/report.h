// The fusion report (docs/report.md): why each op was or was not fused and
// where the time is predicted to go, as self-contained HTML. `stitch report`
// writes one for a file; these functions make one for a graph a program
// built, and the torch backend's STITCH_TORCH_REPORT pages are made of them.
#pragma once

#include <string>

#include "stitch/graph.h"

namespace stitch {

// The sections of `g`'s report as `planner` ("xla", "stitch", ...) plans it
// for `backend` ("cpu" or "cuda"): kernels, predicted timeline, the plan
// drawn (by Graphviz's `dot`; without it, a note in its place), each group's
// schedule, shared memory, unfused neighbours and generated source. Nothing
// is compiled or run. Ids on the page start with `anchor`, so several graphs'
// sections can share one page. UserError for an unknown planner or back end.
std::string fusion_report_sections(const Graph& g, const std::string& planner = "xla",
                                   const std::string& backend = "cpu", const std::string& anchor = "");

// A complete page: `title`, the report's style sheet, and `body` (sections
// from fusion_report_sections and the caller's own HTML).
std::string fusion_report_page(const std::string& title, const std::string& body);

}  // namespace stitch
