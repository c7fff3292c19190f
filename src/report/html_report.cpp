#include "report/html_report.h"

#include <fmt/format.h>

#include <algorithm>

namespace stitch::report {

namespace {

constexpr const char* kStyle = R"(
body { font: 14px/1.45 "DejaVu Sans", Helvetica, Arial, sans-serif; margin: 0 24px 48px; color: #1d1d1f; }
h1 { font-size: 22px; margin: 18px 0 4px; } h2 { font-size: 18px; margin: 28px 0 8px; border-bottom: 1px solid #ddd; }
h3 { font-size: 15px; margin: 20px 0 6px; }
table { border-collapse: collapse; margin: 6px 0; } th, td { padding: 3px 10px; border-bottom: 1px solid #e5e5e5; text-align: left; vertical-align: top; }
th { background: #f6f6f6; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
code, pre { font: 12px/1.4 "DejaVu Sans Mono", Menlo, monospace; } pre { background: #f7f7f9; padding: 8px; overflow-x: auto; border-radius: 4px; }
.meta { color: #555; } .note { background: #fff6e0; border-left: 4px solid #e0a020; padding: 6px 10px; margin: 8px 0; }
.kind { display: inline-block; padding: 0 6px; border-radius: 3px; border: 1px solid; font-size: 12px; }
.loop { background: #e8f0fe; border-color: #3b6fd4; } .reduction { background: #fff1e0; border-color: #d9822b; }
.stitched { background: #e6f6ea; border-color: #2e8b57; } .tile { background: #f3e8fb; border-color: #8e44ad; }
.library { background: #eeeeee; border-color: #666666; }
.drawing { overflow: auto; max-height: 80vh; border: 1px solid #ddd; padding: 4px; }
section.group { border: 1px solid #e2e2e2; border-radius: 6px; padding: 4px 14px 10px; margin: 12px 0; }
section.group, table.refusals, details { content-visibility: auto; contain-intrinsic-size: auto 400px; }
section.group:target { border-color: #3b6fd4; box-shadow: 0 0 0 2px #c9dafc; }
)";

// A time with its unit: "812 µs", "10.4 ms", "1.21 s".
std::string duration(double s) {
  if (s >= 1) return fmt::format("{:.3g} s", s);
  if (s >= 1e-3) return fmt::format("{:.3g} ms", s * 1e3);
  return fmt::format("{:.3g} µs", s * 1e6);
}

// Bytes in binary units: "64 MiB", "3.5 KiB", "512 B".
std::string bytes_text(int64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", b) : fmt::format("{:.3g} {}", v, units[u]);
}

// "1 launch", "3 launches".
std::string count(size_t n, const char* one, const char* many) { return fmt::format("{} {}", n, n == 1 ? one : many); }

std::string kind_badge(const std::string& kind) {
  return fmt::format("<span class=\"kind {0}\">{0}</span>", html_escape(kind));
}

std::string group_link(const Report& r, int group) {
  if (group < 0) return "(not written)";
  return fmt::format("<a href=\"#{}group-{}\">group {}</a>", r.anchor, group, group);
}

const char* fill_of(const std::string& kind) {
  if (kind == "reduction") return "#d9822b";
  if (kind == "stitched") return "#2e8b57";
  if (kind == "tile") return "#8e44ad";
  if (kind == "library") return "#888888";
  return "#3b6fd4";
}

std::string header(const Report& r) {
  double predicted = 0;
  int launches = 0;
  for (const KernelEntry& k : r.kernels) {
    predicted += k.predicted_s;
    if (k.epilogue_of.empty()) ++launches;
  }
  std::string out = fmt::format("<h1>Fusion report: {}</h1>\n<p class=\"meta\">", html_escape(r.graph_name));
  if (!r.file.empty()) out += fmt::format("file <code>{}</code> · ", html_escape(r.file));
  out += fmt::format("planner <b>{}</b> · back end <b>{}</b> · {}, {} · predicted {}", html_escape(r.planner),
                     html_escape(r.backend), count(r.kernels.size(), "group", "groups"),
                     count(static_cast<size_t>(launches), "launch", "launches"), duration(predicted));
  if (r.measured_total_s) {
    out += fmt::format(" · {} {}", r.run_predicted ? "GPU model" : "run", duration(*r.measured_total_s));
  }
  out += "</p>\n";
  for (const std::string& n : r.notes) out += fmt::format("<div class=\"note\">{}</div>\n", html_escape(n));
  out += fmt::format("<p class=\"meta\">Predicted times: {}.", html_escape(r.predicted_by));
  if (!r.timeline_source.empty()) out += fmt::format(" Run times: {}.", html_escape(r.timeline_source));
  if (r.copy_gbps) out += fmt::format(" A copy of the run's footprint moves {:.3g} GB/s.", *r.copy_gbps);
  if (!r.search.empty()) out += fmt::format(" Search: {}.", html_escape(r.search));
  return out + "</p>\n";
}

std::string kernel_table(const Report& r) {
  const bool ran = r.measured_total_s.has_value();
  std::string out = "<h2>Kernels</h2>\n<table class=\"kernels\">\n<tr><th>group</th><th>kernel</th><th>kind</th>"
                    "<th>ops</th><th>schedule</th><th>bytes</th><th>predicted</th>";
  if (ran) out += r.run_predicted ? "<th>GPU model</th><th>of copy</th>" : "<th>run</th><th>of copy</th>";
  out += "</tr>\n";
  for (const KernelEntry& k : r.kernels) {
    out += fmt::format("<tr><td>{}</td><td><code>{}</code></td><td>{}</td><td class=\"num\">{}</td><td><code>{}</code></td>"
                       "<td class=\"num\">{}</td><td class=\"num\">{}</td>",
                       group_link(r, k.group), html_escape(k.name.empty() ? "(none)" : k.name), kind_badge(k.kind),
                       k.ops.size(), html_escape(k.schedule), bytes_text(k.bytes_read + k.bytes_written),
                       duration(k.predicted_s) + (k.predicted_by_model ? "ᵐ" : ""));
    if (ran) {
      out += fmt::format("<td class=\"num\">{}</td><td class=\"num\">{}</td>",
                         k.measured_s ? duration(*k.measured_s) : "–", k.of_copy ? fmt::format("{:.2f}", *k.of_copy) : "–");
    }
    out += "</tr>\n";
  }
  return out + "</table>\n";
}

// One lane: each launch a bar as long as its time, in launch order.
std::string timeline(const Report& r) {
  std::vector<TimelineStep> steps = r.timeline;
  const bool measured = !steps.empty();
  if (!measured) {
    for (size_t i = 0; i < r.kernels.size(); ++i) {
      if (r.kernels[i].epilogue_of.empty()) steps.push_back({r.kernels[i].name, static_cast<int>(i), r.kernels[i].predicted_s});
    }
  }
  double total = 0;
  for (const TimelineStep& s : steps) total += s.seconds;
  std::string out = fmt::format("<h2>Timeline</h2>\n<p class=\"meta\">{} in order, {}{}.</p>\n",
                                count(steps.size(), "launch", "launches"), duration(total), !measured ? " as predicted (not run)" : r.run_predicted ? " as the GPU model predicts the run" : " as run");
  if (total <= 0) return out;
  constexpr double kWidth = 960;
  out += fmt::format("<svg class=\"timeline\" width=\"{}\" height=\"44\" viewBox=\"0 0 {} 44\" "
                     "xmlns=\"http://www.w3.org/2000/svg\">\n", kWidth + 2, kWidth + 2);
  double at = 0;
  for (const TimelineStep& s : steps) {
    const double x = 1 + kWidth * at / total, w = std::max(1.0, kWidth * s.seconds / total);
    const std::string kind = s.entry >= 0 ? r.kernels[static_cast<size_t>(s.entry)].kind : "loop";
    const std::string bar = fmt::format("<rect x=\"{:.1f}\" y=\"2\" width=\"{:.1f}\" height=\"22\" fill=\"{}\" "
                                        "stroke=\"#ffffff\" stroke-width=\"0.5\"><title>{}: {}</title></rect>",
                                        x, w, fill_of(kind), html_escape(s.label), duration(s.seconds));
    out += s.entry >= 0 ? fmt::format("<a href=\"#{}group-{}\">{}</a>\n", r.anchor,
                                      r.kernels[static_cast<size_t>(s.entry)].group, bar)
                        : bar + "\n";
    at += s.seconds;
  }
  out += fmt::format("<text x=\"1\" y=\"40\" font-size=\"11\">0</text><text x=\"{}\" y=\"40\" font-size=\"11\" "
                     "text-anchor=\"end\">{}</text>\n</svg>\n", kWidth, duration(total));
  return out;
}

std::string group_section(const Report& r, const KernelEntry& k) {
  std::string out = fmt::format("<section class=\"group\" id=\"{}group-{}\">\n<h3>Group {} {} <code>{}</code></h3>\n",
                                r.anchor, k.group, k.group, kind_badge(k.kind), html_escape(k.name));
  if (!k.epilogue_of.empty()) {
    out += fmt::format("<p>Runs inside the library call of <code>{}</code>, a panel of its rows at a time.</p>\n",
                       html_escape(k.epilogue_of));
  }
  std::string roots;
  for (const std::string& root : k.roots) roots += (roots.empty() ? "" : ", ") + fmt::format("<code>{}</code>", html_escape(root));
  out += fmt::format("<p>Writes {}. Moves {} read, {} written. Predicted {}", roots, bytes_text(k.bytes_read),
                     bytes_text(k.bytes_written), duration(k.predicted_s));
  if (k.measured_s) out += fmt::format("; {} {}", r.run_predicted ? "the GPU model predicts" : "ran", duration(*k.measured_s));
  if (k.of_copy) out += fmt::format(", {:.2f} of a copy's rate", *k.of_copy);
  out += ".</p>\n";
  if (!k.schedule.empty()) {
    out += fmt::format("<p>Schedule <code>{}</code>{}</p>\n", html_escape(k.schedule),
                       k.schedule_reason.empty() ? "" : " — " + html_escape(k.schedule_reason));
  }
  if (!k.shared_memory.empty()) {
    out += fmt::format("<p>Shared memory:</p>\n<pre class=\"shared\">{}</pre>\n", html_escape(k.shared_memory));
  }
  if (!k.not_lowered.empty()) {
    out += fmt::format("<div class=\"note\">Not lowered: {}</div>\n", html_escape(k.not_lowered));
  }
  out += "<p>Ops:</p>\n<pre class=\"ops\">";
  for (const std::string& op : k.ops) out += html_escape(op) + "\n";
  out += "</pre>\n";
  std::string apart;
  for (const RefusalEntry& f : r.refusals) {
    if (f.producer_group != k.group && f.consumer_group != k.group) continue;
    const bool outgoing = f.producer_group == k.group;
    apart += fmt::format("<tr><td><code>{}</code> → <code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                         html_escape(f.producer), html_escape(f.consumer),
                         group_link(r, outgoing ? f.consumer_group : f.producer_group), html_escape(f.cause),
                         html_escape(f.reason));
  }
  if (!apart.empty()) {
    out += "<p>Not fused with its neighbours:</p>\n<table class=\"apart\"><tr><th>edge</th><th>other group</th>"
           "<th>cause</th><th>reason</th></tr>\n" + apart + "</table>\n";
  }
  if (!k.source.empty()) {
    out += fmt::format("<details class=\"source\"><summary>Generated source of <code>{}</code></summary>\n"
                       "<pre><code>{}</code></pre></details>\n", html_escape(k.name), html_escape(k.source));
  }
  return out + "</section>\n";
}

}  // namespace

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string render_body(const Report& r, const Drawing& drawing) {
  std::string out = header(r) + kernel_table(r) + timeline(r);
  out += "<h2>Plan</h2>\n<p class=\"meta\">Each box is one kernel; "
         "<span class=\"kind loop\">loop</span> <span class=\"kind reduction\">reduction</span> "
         "<span class=\"kind stitched\">stitched</span> <span class=\"kind tile\">tile</span> "
         "<span class=\"kind library\">library</span>. Dashed red edges run between kernels (hover for why); "
         "click a box for its group.</p>\n";
  if (drawing.svg.empty()) {
    out += fmt::format("<div class=\"note\">No drawing: {}</div>\n", html_escape(drawing.error));
  } else {
    out += "<div class=\"drawing\">\n" + drawing.svg + "</div>\n";
  }
  out += "<h2>Groups</h2>\n";
  for (const KernelEntry& k : r.kernels) out += group_section(r, k);
  out += fmt::format("<h2>Not fused</h2>\n<p class=\"meta\">{} edges and sibling pairs left apart.</p>\n", r.refusals.size());
  if (!r.refusals.empty()) {
    out += "<table class=\"refusals\"><tr><th>relation</th><th>producer</th><th>consumer</th><th>cause</th>"
           "<th>reason</th></tr>\n";
    for (const RefusalEntry& f : r.refusals) {
      out += fmt::format("<tr><td>{}</td><td><code>{}</code> ({})</td><td><code>{}</code> ({})</td><td>{}</td>"
                         "<td>{}</td></tr>\n",
                         html_escape(f.relation), html_escape(f.producer), group_link(r, f.producer_group),
                         html_escape(f.consumer), group_link(r, f.consumer_group), html_escape(f.cause),
                         html_escape(f.reason));
    }
    out += "</table>\n";
  }
  out += fmt::format("<details><summary>The graph that runs (text format)</summary>\n<pre>{}</pre></details>\n",
                     html_escape(r.graph_text));
  return out;
}

std::string render_page(const std::string& title, const std::string& body) {
  return fmt::format("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n"
                     "<style>{}</style>\n</head>\n<body>\n{}<p class=\"meta\">Written by stitch.</p>\n</body>\n</html>\n",
                     html_escape(title), kStyle, body);
}

std::string html_report(const Report& r, std::string* warning) {
  const Drawing drawing = r.drawing.valid() ? r.drawing.get() : draw_svg(r.dot);
  if (!drawing.error.empty() && warning != nullptr) *warning = drawing.error;
  return render_page(fmt::format("stitch report: {} ({}, {})", r.graph_name, r.planner, r.backend),
                     render_body(r, drawing));
}

}  // namespace stitch::report
