// The fusion report as one self-contained HTML page (docs/report.md): no
// script, style or font from the network, so it opens offline and can be
// mailed or attached to a bug. The drawing is Graphviz's SVG inline; the
// timeline is an SVG drawn here; each kernel's source sits in a <details>.
#pragma once

#include <string>
#include <string_view>

#include "report/graph_drawing.h"
#include "report/report.h"

namespace stitch::report {

// `s` with &, <, >, " and ' escaped for HTML text and attribute values.
std::string html_escape(std::string_view s);

// The sections of one graph's report, for a page that holds several (the
// torch backend's: one per partition); ids are prefixed with r.anchor so
// they stay unique on that page.
std::string render_body(const Report& r, const Drawing& drawing);
// A page around `body`: the title, the report's style sheet.
std::string render_page(const std::string& title, const std::string& body);

// The whole page for `r`, its plan drawn by Graphviz. When `dot` fails, the
// page says why in place of the drawing and `warning` (if given) gets the
// same text.
std::string html_report(const Report& r, std::string* warning = nullptr);

}  // namespace stitch::report
