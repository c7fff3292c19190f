#include "fusion/fusion_plan.h"

#include <algorithm>
#include <map>
#include <queue>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "fusion/legality.h"
#include "fusion/stitched_group.h"
#include "fusion/tile_group.h"

namespace stitch {

namespace {

GroupKind kind_from_roots(const Graph& g, const std::vector<int>& roots) {
  bool reduction = false;
  for (int r : roots) {
    OpCategory c = op_info(g.nodes()[r].op).category;
    if (c == OpCategory::Dot) return GroupKind::Library;
    reduction |= c == OpCategory::Reduction;
  }
  return reduction ? GroupKind::Reduction : GroupKind::Loop;
}

void sort_unique(std::vector<int>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

// Kahn's algorithm; among ready groups the one with the smallest root goes
// first, so the order follows the source text where the DAG allows. A dot
// epilogue and its dot's group are one vertex (the epilogue's other
// producers must precede the dot), and the epilogue follows the dot.
std::vector<int> topological_group_order(const Graph& g, const std::vector<FusionGroup>& groups,
                                         const GroupGraph& gg) {
  const int n = static_cast<int>(groups.size());
  std::vector<int> vertex(n), epilogue(n, -1);
  for (int i = 0; i < n; ++i) vertex[i] = i;
  std::map<int, int> library_group;  // dot node -> its group
  for (int i = 0; i < n; ++i) {
    if (groups[i].kind == GroupKind::Library) library_group.emplace(groups[i].roots.front(), i);
  }
  for (int i = 0; i < n; ++i) {
    if (groups[i].epilogue_of < 0) continue;
    const auto found = library_group.find(groups[i].epilogue_of);
    const int dot_group = found == library_group.end() ? -1 : found->second;
    STITCH_ASSERT(dot_group >= 0 && epilogue[dot_group] < 0, "a dot epilogue names a dot with no group of its own, or a second epilogue");
    vertex[i] = dot_group;
    epilogue[dot_group] = i;
  }
  std::vector<std::vector<int>> successors(n);
  for (int a = 0; a < n; ++a) {
    for (int b : gg.successors[a]) {
      if (vertex[a] != vertex[b]) successors[vertex[a]].push_back(vertex[b]);
    }
  }
  std::vector<int> indegree(n, 0);
  for (std::vector<int>& succ : successors) {
    if (!library_group.empty()) {  // a contracted pair may repeat an edge
      std::sort(succ.begin(), succ.end());
      succ.erase(std::unique(succ.begin(), succ.end()), succ.end());
    }
    for (int b : succ) ++indegree[b];
  }
  using Entry = std::pair<int, int>;  // (smallest root, group)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> ready;
  for (int i = 0; i < n; ++i)
    if (vertex[i] == i && indegree[i] == 0) ready.emplace(groups[i].roots.front(), i);
  std::vector<int> order;
  while (!ready.empty()) {
    int gi = ready.top().second;
    ready.pop();
    order.push_back(gi);
    if (epilogue[gi] >= 0) order.push_back(epilogue[gi]);
    for (int s : successors[gi])
      if (--indegree[s] == 0) ready.emplace(groups[s].roots.front(), s);
  }
  STITCH_ASSERT(static_cast<int>(order.size()) == n,
                fmt::format("fusion plan of {} has a cycle between groups (a dot epilogue counted with its dot)", g.name()));
  return order;
}

}  // namespace

void drop_fused_refusals(FusionPlan& plan) {
  std::unordered_map<int, std::vector<int>> groups_of;
  for (int gi = 0; gi < static_cast<int>(plan.groups.size()); ++gi)
    for (int n : plan.groups[gi].nodes) groups_of[n].push_back(gi);
  auto in = [&](int node) -> const std::vector<int>& { return groups_of[node]; };
  std::erase_if(plan.refusals, [&](const FusionRefusal& r) {
    if (r.relation == FusionRefusal::Relation::Siblings) {
      return std::any_of(in(r.producer).begin(), in(r.producer).end(),
                         [&](int gi) { return plan.groups[gi].contains(r.consumer); });
    }
    return std::none_of(in(r.consumer).begin(), in(r.consumer).end(),
                        [&](int gi) { return !plan.groups[gi].contains(r.producer); });
  });
}

void finalize_plan(const Graph& g, FusionPlan& plan) {
  plan.graph_name = g.name();
  for (FusionGroup& grp : plan.groups) {
    sort_unique(grp.nodes);
    sort_unique(grp.roots);
    STITCH_ASSERT(!grp.roots.empty(), "fusion group without a root");
    grp.kind = kind_from_roots(g, grp.roots);
    if (grp.kind != GroupKind::Library && is_stitched_group(g, grp.nodes, grp.roots)) grp.kind = GroupKind::Stitched;
    // Reductions over different axes of one tile: neither a reduction nor a
    // stitched kernel can hold them (both need one set of axes).
    if ((grp.kind == GroupKind::Reduction || grp.kind == GroupKind::Stitched) &&
        tile_group_problem(g, grp.nodes, grp.roots).empty()) {
      grp.kind = GroupKind::Tile;
    }
  }
  GroupGraph gg = build_group_graph(g, plan.groups);
  std::vector<int> order = topological_group_order(g, plan.groups, gg);
  std::vector<FusionGroup> ordered;
  for (int gi : order) ordered.push_back(std::move(plan.groups[gi]));
  plan.groups = std::move(ordered);

  std::sort(plan.refusals.begin(), plan.refusals.end(), [](const auto& a, const auto& b) {
    return std::tie(a.relation, a.producer, a.consumer) <
           std::tie(b.relation, b.producer, b.consumer);
  });

  std::set<std::pair<int, int>> explained;
  for (const auto& r : plan.refusals) {
    if (r.relation == FusionRefusal::Relation::ProducerConsumer)
      explained.emplace(r.producer, r.consumer);
  }
  for (const FusionGroup& grp : plan.groups) {
    for (int n : grp.nodes) {
      for (ValueId v : g.nodes()[n].inputs) {
        int p = g.value(v).producer;
        if (p < 0 || grp.contains(p)) continue;
        STITCH_ASSERT(explained.count({p, n}),
                      fmt::format("planner {} left {} -> {} unfused without a reason", plan.planner,
                                  g.value_name(g.nodes()[p].output),
                                  g.value_name(g.nodes()[n].output)));
      }
    }
  }
}

namespace {

std::string node_name(const Graph& g, int index) { return g.value_name(g.nodes()[index].output); }

std::string join_names(const Graph& g, const std::vector<int>& nodes) {
  std::string out;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (i) out += ", ";
    out += node_name(g, nodes[i]);
  }
  return out;
}

}  // namespace

std::string print_plan(const Graph& g, const FusionPlan& plan) {
  const int epilogues = static_cast<int>(plan.groups.size()) - plan.kernel_count();
  std::string out = fmt::format("plan {} (planner {}): {} group{}{}\n", plan.graph_name, plan.planner,
                                plan.groups.size(), plan.groups.size() == 1 ? "" : "s",
                                epilogues == 0 ? std::string()
                                               : fmt::format(", {} of them dot epilogue{}", epilogues, epilogues == 1 ? "" : "s"));
  for (size_t gi = 0; gi < plan.groups.size(); ++gi) {
    const FusionGroup& grp = plan.groups[gi];
    std::string body;
    for (size_t i = 0; i < grp.nodes.size(); ++i) {
      if (i) body += "; ";
      body += describe_node(g, grp.nodes[i]);
    }
    const std::string epilogue =
        grp.epilogue_of < 0 ? std::string() : fmt::format(", epilogue of {}", node_name(g, grp.epilogue_of));
    out += fmt::format("group {} [{}{}] root{} {}: {}\n", gi, group_kind_name(grp.kind), epilogue,
                       grp.roots.size() == 1 ? "" : "s", join_names(g, grp.roots), body);
  }
  // The groups of every node in one pass (groups_containing per node would
  // cost nodes x groups).
  std::vector<std::vector<int>> groups_of(g.nodes().size());
  for (int gi = 0; gi < static_cast<int>(plan.groups.size()); ++gi)
    for (int n : plan.groups[gi].nodes) groups_of[n].push_back(gi);
  for (int n = 0; n < static_cast<int>(g.nodes().size()); ++n) {
    const std::vector<int>& in = groups_of[n];
    if (in.size() < 2) continue;
    std::string list;
    for (size_t i = 0; i < in.size(); ++i) list += (i ? ", " : "") + std::to_string(in[i]);
    out += fmt::format("duplicated: {} in groups {}\n", node_name(g, n), list);
  }
  for (const FusionRefusal& r : plan.refusals) {
    if (r.relation == FusionRefusal::Relation::ProducerConsumer) {
      out += fmt::format("not fused: {} -> {}: {}\n", node_name(g, r.producer),
                         node_name(g, r.consumer), r.reason);
    } else {
      out += fmt::format("not merged: {} + {}: {}\n", node_name(g, r.producer),
                         node_name(g, r.consumer), r.reason);
    }
  }
  return out;
}

namespace {

std::string dot_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::string print_plan_dot(const Graph& g, const FusionPlan& plan) {
  std::string out = fmt::format("digraph \"{}\" {{\n  label=\"plan {} (planner {})\";\n",
                                dot_escape(plan.graph_name), dot_escape(plan.graph_name),
                                dot_escape(plan.planner));
  for (ValueId p : g.params()) {
    out += fmt::format("  p{} [label=\"{}\", shape=ellipse];\n", p.index,
                       dot_escape(g.value_name(p)));
  }
  for (size_t gi = 0; gi < plan.groups.size(); ++gi) {
    const FusionGroup& grp = plan.groups[gi];
    out += fmt::format("  subgraph cluster_{} {{\n    label=\"group {} [{}]\";\n", gi, gi,
                       group_kind_name(grp.kind));
    for (int n : grp.nodes) {
      bool root = std::binary_search(grp.roots.begin(), grp.roots.end(), n);
      out += fmt::format("    g{}_n{} [label=\"{}\", shape=box{}];\n", gi, n,
                         dot_escape(describe_node(g, n)), root ? ", peripheries=2" : "");
    }
    out += "  }\n";
  }
  std::map<std::pair<int, int>, std::string> reasons;
  for (const auto& r : plan.refusals) {
    if (r.relation == FusionRefusal::Relation::ProducerConsumer)
      reasons[{r.producer, r.consumer}] = r.reason;
  }
  for (size_t gi = 0; gi < plan.groups.size(); ++gi) {
    const FusionGroup& grp = plan.groups[gi];
    for (int n : grp.nodes) {
      std::set<int> seen;
      for (ValueId v : g.nodes()[n].inputs) {
        if (!seen.insert(v.index).second) continue;
        int p = g.value(v).producer;
        if (p < 0) {
          out += fmt::format("  p{} -> g{}_n{};\n", v.index, gi, n);
        } else if (grp.contains(p)) {
          out += fmt::format("  g{}_n{} -> g{}_n{};\n", gi, p, gi, n);
        } else {
          out += fmt::format("  g{}_n{} -> g{}_n{} [style=dashed, color=red, label=\"{}\"];\n",
                             plan.home_group(p), p, gi, n, dot_escape(reasons[{p, n}]));
        }
      }
    }
  }
  out += "}\n";
  return out;
}

}  // namespace stitch
