// The report's drawing of a fusion plan (docs/report.md): the graph as
// Graphviz source, each fused group a box around its ops that links to the
// group's section of the page, edges left between kernels dashed with the
// reason they were not fused as their tooltip; and the SVG that Graphviz's
// `dot` (Debian's graphviz package) lays out from it.
#pragma once

#include <cstddef>
#include <string>

#include "fusion/fusion_plan.h"
#include "stitch/graph.h"

namespace stitch::report {

// Graphviz source: one cluster per group (a duplicated node drawn in every
// group that computes it), parameters as ellipses, the roots a group writes
// with a heavier border; a plan drawing more than kOpDrawingLimit ops (over
// all groups) draws one box per group instead, an edge per pair of groups.
// Groups link to "#<anchor>group-<index>".
inline constexpr size_t kOpDrawingLimit = 300;
std::string plan_drawing(const Graph& g, const FusionPlan& plan, const std::string& anchor = "");

struct Drawing {
  std::string svg;    // the <svg> element, without the XML prolog; "" on failure
  std::string error;  // why there is no drawing
};
// Lays out `dot_source` with `dot -Tsvg`, found on PATH, stopped after
// kDrawingTimeoutSeconds.
inline constexpr int kDrawingTimeoutSeconds = 30;
Drawing draw_svg(const std::string& dot_source);

}  // namespace stitch::report
