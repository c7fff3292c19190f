#include "report/graph_drawing.h"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <vector>

namespace stitch::report {

namespace {

std::string dot_string(const std::string& s) {
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

namespace {

std::string drawing_header(const FusionPlan& plan) {
  return fmt::format(
      "digraph {} {{\n  graph [rankdir=TB, fontname=\"Helvetica\", fontsize=11, nodesep=0.2, ranksep=0.3];\n"
      "  node [fontname=\"Helvetica\", fontsize=9, shape=box, style=\"rounded,filled\", fillcolor=\"#ffffff\", "
      "height=0.3, margin=\"0.06,0.03\"];\n  edge [color=\"#555555\", arrowsize=0.5];\n",
      dot_string(plan.graph_name));
}

std::string parameters(const Graph& g) {
  std::string out;
  for (ValueId p : g.params()) {
    out += fmt::format("  p{} [label={}, shape=ellipse, fillcolor=\"#f4f4f4\", tooltip={}];\n", p.index,
                       dot_string(g.value_name(p)), dot_string("parameter " + g.value_name(p)));
  }
  return out;
}

std::map<std::pair<int, int>, std::string> edge_reasons(const FusionPlan& plan) {
  std::map<std::pair<int, int>, std::string> reasons;
  for (const FusionRefusal& r : plan.refusals) {
    if (r.relation == FusionRefusal::Relation::ProducerConsumer) reasons[{r.producer, r.consumer}] = r.reason;
  }
  return reasons;
}

std::string group_link(const std::string& anchor, size_t gi) { return dot_string(fmt::format("#{}group-{}", anchor, gi)); }

// Every op drawn inside its group's box.
std::string op_drawing(const Graph& g, const FusionPlan& plan, const std::string& anchor) {
  std::string out = drawing_header(plan) + parameters(g);
  for (size_t gi = 0; gi < plan.groups.size(); ++gi) {
    const FusionGroup& grp = plan.groups[gi];
    const auto [fill, border] = kind_colors(grp.kind);
    out += fmt::format(
        "  subgraph cluster_{} {{\n    label={}; URL={}; tooltip={}; style=\"rounded,filled\"; fillcolor=\"{}\"; "
        "color=\"{}\";\n",
        gi, dot_string(fmt::format("group {} · {}", gi, group_kind_name(grp.kind))), group_link(anchor, gi),
        dot_string(fmt::format("group {}: {} ops", gi, grp.nodes.size())), fill, border);
    for (int n : grp.nodes) {
      const bool root = std::binary_search(grp.roots.begin(), grp.roots.end(), n);
      out += fmt::format("    g{}_n{} [label={}, URL={}, tooltip={}{}];\n", gi, n, dot_string(node_label(g, n)),
                         group_link(anchor, gi), dot_string(describe_node(g, n)), root ? ", penwidth=2" : "");
    }
    out += "  }\n";
  }
  std::map<std::pair<int, int>, std::string> reasons = edge_reasons(plan);
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
                             dot_string(why.empty() ? "between kernels" : "not fused: " + why));
        }
      }
    }
  }
  return out + "}\n";
}

// The edges of a DAG over nodes 0..n-1 (numbered in a topological order)
// that no longer path implies: its transitive reduction.
std::set<std::pair<int, int>> transitive_reduction(int n, const std::set<std::pair<int, int>>& edges) {
  std::vector<std::vector<int>> successors(static_cast<size_t>(n));
  for (const auto& [from, to] : edges) successors[static_cast<size_t>(from)].push_back(to);
  const size_t words = (static_cast<size_t>(n) + 63) / 64;
  std::vector<std::vector<uint64_t>> reach(static_cast<size_t>(n), std::vector<uint64_t>(words, 0));
  auto reaches = [&](int from, int to) { return (reach[static_cast<size_t>(from)][to / 64] >> (to % 64)) & 1; };
  std::set<std::pair<int, int>> kept;
  for (int u = n - 1; u >= 0; --u) {
    std::vector<uint64_t>& r = reach[static_cast<size_t>(u)];
    for (int v : successors[static_cast<size_t>(u)]) {
      const std::vector<uint64_t>& below = reach[static_cast<size_t>(v)];
      for (size_t w = 0; w < words; ++w) r[w] |= below[w];
    }
    for (int v : successors[static_cast<size_t>(u)]) {
      // Implied when another successor reaches v.
      if (!reaches(u, v)) kept.insert({u, v});
    }
    for (int v : successors[static_cast<size_t>(u)]) r[static_cast<size_t>(v) / 64] |= uint64_t{1} << (v % 64);
  }
  return kept;
}

// One box per group and only the edges no path implies (a transitive
// reduction): the op-level drawing of a large graph, and even every edge
// between its groups (a transformer's residual stream feeds dozens of
// them), outgrow what Graphviz lays out in seconds.
std::string group_drawing(const Graph& g, const FusionPlan& plan, const std::string& anchor) {
  // Fewer network-simplex and crossing-minimisation rounds: the layout of a
  // 2,000-node model's groups took 24 s with Graphviz's defaults, 1.5 s so.
  std::string out = drawing_header(plan) + "  graph [nslimit=2, nslimit1=2, mclimit=0.2];\n" + parameters(g);
  const int params = static_cast<int>(g.params().size());
  std::map<int, int> param_node;  // value index -> node number
  for (int i = 0; i < params; ++i) param_node[g.params()[static_cast<size_t>(i)].index] = i;
  for (size_t gi = 0; gi < plan.groups.size(); ++gi) {
    const FusionGroup& grp = plan.groups[gi];
    const auto [fill, border] = kind_colors(grp.kind);
    std::string writes;
    for (size_t i = 0; i < grp.roots.size() && i < 3; ++i) {
      writes += (i ? ", " : "") + g.value_name(g.nodes()[grp.roots[i]].output);
    }
    if (grp.roots.size() > 3) writes += fmt::format(" +{}", grp.roots.size() - 3);
    std::string ops;
    for (int n : grp.nodes) ops += describe_node(g, n) + "\n";
    out += fmt::format("  g{} [label={}, URL={}, tooltip={}, fillcolor=\"{}\", color=\"{}\"];\n", gi,
                       dot_string(fmt::format("group {} · {}\n{} op{} → {}", gi, group_kind_name(grp.kind),
                                              grp.nodes.size(), grp.nodes.size() == 1 ? "" : "s", writes)),
                       group_link(anchor, gi), dot_string(ops), fill, border);
  }
  // Nodes: the parameters, then the groups in plan order (topological).
  std::set<std::pair<int, int>> edges;
  std::map<std::pair<int, int>, std::string> why;
  std::map<std::pair<int, int>, std::string> reasons = edge_reasons(plan);
  for (size_t gi = 0; gi < plan.groups.size(); ++gi) {
    const int to = params + static_cast<int>(gi);
    for (int n : plan.groups[gi].nodes) {
      for (ValueId v : g.nodes()[n].inputs) {
        const int p = g.value(v).producer;
        if (p < 0) {
          edges.insert({param_node.at(v.index), to});
        } else if (!plan.groups[gi].contains(p)) {
          const std::pair<int, int> e{params + plan.home_group(p), to};
          edges.insert(e);
          const std::string& reason = reasons[{p, n}];
          if (!reason.empty() && why[e].find(reason) == std::string::npos) why[e] += "not fused: " + reason + "\n";
        }
      }
    }
  }
  const auto name = [&](int node) {
    return node < params ? fmt::format("p{}", g.params()[static_cast<size_t>(node)].index)
                         : fmt::format("g{}", node - params);
  };
  for (const auto& e : transitive_reduction(params + static_cast<int>(plan.groups.size()), edges)) {
    if (e.first < params) {
      out += fmt::format("  {} -> {};\n", name(e.first), name(e.second));
      continue;
    }
    const std::string& text = why[e];
    out += fmt::format("  {} -> {} [style=dashed, color=\"#c0392b\", tooltip={}];\n", name(e.first), name(e.second),
                       dot_string(text.empty() ? "between kernels" : text));
  }
  return out + "}\n";
}

}  // namespace

std::string plan_drawing(const Graph& g, const FusionPlan& plan, const std::string& anchor) {
  size_t drawn = 0;
  for (const FusionGroup& grp : plan.groups) drawn += grp.nodes.size();
  return drawn <= kOpDrawingLimit ? op_drawing(g, plan, anchor) : group_drawing(g, plan, anchor);
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
  FILE* pipe = popen(fmt::format("timeout {} dot -Tsvg '{}' 2>&1", kDrawingTimeoutSeconds, path).c_str(), "r");
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
    const int code = status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    d.error = code == 127   ? "Graphviz's `dot` is not installed (Debian: apt-get install graphviz)"
              : code == 124 ? fmt::format("Graphviz's `dot` took more than {} s to lay the plan out",
                                          kDrawingTimeoutSeconds)
                            : fmt::format("Graphviz's `dot` failed: {}", out.substr(0, 400));
    return d;
  }
  d.svg = out.substr(svg);
  return d;
}

}  // namespace stitch::report
