#include "report/graph_drawing.h"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

namespace stitch::report {

namespace {

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

// Fill and border per group kind: the page's legend uses the same colours.
std::pair<const char*, const char*> kind_colors(GroupKind k) {
  switch (k) {
    case GroupKind::Loop: return {"#e8f0fe", "#3b6fd4"};
    case GroupKind::Reduction: return {"#fff1e0", "#d9822b"};
    case GroupKind::Stitched: return {"#e6f6ea", "#2e8b57"};
    case GroupKind::Tile: return {"#f3e8fb", "#8e44ad"};
    case GroupKind::Library: return {"#eeeeee", "#666666"};
  }
  return {"#ffffff", "#000000"};
}

std::string node_label(const Graph& g, int n) {
  const Node& node = g.nodes()[n];
  return fmt::format("{}\n{}", g.value_name(node.output), op_name(node.op));
}

}  // namespace

std::string plan_drawing(const Graph& g, const FusionPlan& plan, const std::string& anchor) {
  std::string out = fmt::format(
      "digraph {} {{\n  graph [rankdir=TB, fontname=\"Helvetica\", fontsize=11, nodesep=0.2, ranksep=0.3];\n"
      "  node [fontname=\"Helvetica\", fontsize=9, shape=box, style=\"rounded,filled\", fillcolor=\"#ffffff\", "
      "height=0.3, margin=\"0.06,0.03\"];\n  edge [color=\"#555555\", arrowsize=0.5];\n",
      quoted(plan.graph_name));
  for (ValueId p : g.params()) {
    out += fmt::format("  p{} [label={}, shape=ellipse, fillcolor=\"#f4f4f4\", tooltip={}];\n", p.index,
                       quoted(g.value_name(p)), quoted("parameter " + g.value_name(p)));
  }
  for (size_t gi = 0; gi < plan.groups.size(); ++gi) {
    const FusionGroup& grp = plan.groups[gi];
    const auto [fill, border] = kind_colors(grp.kind);
    const std::string link = quoted(fmt::format("#{}group-{}", anchor, gi));
    out += fmt::format(
        "  subgraph cluster_{} {{\n    label={}; URL={}; tooltip={}; style=\"rounded,filled\"; fillcolor=\"{}\"; "
        "color=\"{}\";\n",
        gi, quoted(fmt::format("group {} · {}", gi, group_kind_name(grp.kind))), link,
        quoted(fmt::format("group {}: {} ops", gi, grp.nodes.size())), fill, border);
    for (int n : grp.nodes) {
      const bool root = std::binary_search(grp.roots.begin(), grp.roots.end(), n);
      out += fmt::format("    g{}_n{} [label={}, URL={}, tooltip={}{}];\n", gi, n, quoted(node_label(g, n)), link,
                         quoted(describe_node(g, n)), root ? ", penwidth=2" : "");
    }
    out += "  }\n";
  }
  std::map<std::pair<int, int>, std::string> reasons;
  for (const FusionRefusal& r : plan.refusals) {
    if (r.relation == FusionRefusal::Relation::ProducerConsumer) reasons[{r.producer, r.consumer}] = r.reason;
  }
  for (size_t gi = 0; gi < plan.groups.size(); ++gi) {
    for (int n : plan.groups[gi].nodes) {
      std::set<int> seen;
      for (ValueId v : g.nodes()[n].inputs) {
        if (!seen.insert(v.index).second) continue;
        const int p = g.value(v).producer;
        if (p < 0) {
          out += fmt::format("  p{} -> g{}_n{};\n", v.index, gi, n);
        } else if (plan.groups[gi].contains(p)) {
          out += fmt::format("  g{}_n{} -> g{}_n{};\n", gi, p, gi, n);
        } else {
          const std::string& why = reasons[{p, n}];
          out += fmt::format("  g{}_n{} -> g{}_n{} [style=dashed, color=\"#c0392b\", tooltip={}];\n",
                             plan.home_group(p), p, gi, n,
                             quoted(why.empty() ? "between kernels" : "not fused: " + why));
        }
      }
    }
  }
  return out + "}\n";
}

Drawing draw_svg(const std::string& dot_source) {
  Drawing d;
  std::string path = (std::filesystem::temp_directory_path() / "stitch-report-XXXXXX").string();
  const int fd = mkstemp(path.data());
  if (fd < 0) {
    d.error = "cannot create a temporary file for Graphviz's input";
    return d;
  }
  close(fd);
  {
    std::ofstream f(path);
    f << dot_source;
  }
  FILE* pipe = popen(fmt::format("dot -Tsvg '{}' 2>&1", path).c_str(), "r");
  std::string out;
  if (pipe != nullptr) {
    char buffer[1 << 16];
    size_t n;
    while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  }
  const int status = pipe == nullptr ? -1 : pclose(pipe);
  std::filesystem::remove(path);
  const size_t svg = out.find("<svg");
  if (status != 0 || svg == std::string::npos) {
    const bool missing = status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 127;
    d.error = missing ? "Graphviz's `dot` is not installed (Debian: apt-get install graphviz)"
                      : fmt::format("Graphviz's `dot` failed: {}", out.substr(0, 400));
    return d;
  }
  d.svg = out.substr(svg);
  return d;
}

}  // namespace stitch::report
