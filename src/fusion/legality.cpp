#include "fusion/legality.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

namespace stitch {

GroupGraph build_group_graph(const Graph& g, const std::vector<FusionGroup>& groups) {
  const int num_nodes = static_cast<int>(g.nodes().size());
  std::vector<int> home(num_nodes, -1);
  for (int gi = 0; gi < static_cast<int>(groups.size()); ++gi) {
    for (int r : groups[gi].roots) {
      STITCH_ASSERT(home[r] == -1, "a node is a root of two fusion groups");
      home[r] = gi;
    }
  }
  GroupGraph gg;
  gg.successors.resize(groups.size());
  // member[n] == gi: n is in group gi (one array for every group, so a build
  // costs the groups' sizes, not groups x nodes).
  std::vector<int> member(num_nodes, -1);
  for (int gi = 0; gi < static_cast<int>(groups.size()); ++gi) {
    for (int n : groups[gi].nodes) member[n] = gi;
    for (int n : groups[gi].nodes) {
      for (ValueId v : g.nodes()[n].inputs) {
        int p = g.value(v).producer;
        if (p < 0 || member[p] == gi) continue;
        STITCH_ASSERT(home[p] >= 0,
                      fmt::format("{} is read by group {} but no group writes it",
                                  g.value_name(v), gi));
        gg.successors[home[p]].push_back(gi);
      }
    }
  }
  for (auto& succ : gg.successors) {
    std::sort(succ.begin(), succ.end());
    succ.erase(std::unique(succ.begin(), succ.end()), succ.end());
  }
  return gg;
}

bool is_acyclic(const GroupGraph& gg) {
  const int n = static_cast<int>(gg.successors.size());
  std::vector<int> indegree(n, 0);
  for (const auto& succ : gg.successors)
    for (int s : succ) ++indegree[s];
  std::vector<int> ready;
  for (int i = 0; i < n; ++i)
    if (indegree[i] == 0) ready.push_back(i);
  int visited = 0;
  while (!ready.empty()) {
    int gi = ready.back();
    ready.pop_back();
    ++visited;
    for (int s : gg.successors[gi])
      if (--indegree[s] == 0) ready.push_back(s);
  }
  return visited == n;
}

int count_external_operands(const Graph& g, const std::vector<int>& nodes) {
  std::vector<int> inside(nodes);
  std::sort(inside.begin(), inside.end());
  inside.erase(std::unique(inside.begin(), inside.end()), inside.end());
  std::vector<int> operands;  // value indices
  for (int n : inside) {
    for (ValueId v : g.nodes()[n].inputs) {
      int p = g.value(v).producer;
      if (p < 0 || !std::binary_search(inside.begin(), inside.end(), p)) operands.push_back(v.index);
    }
  }
  std::sort(operands.begin(), operands.end());
  return static_cast<int>(std::unique(operands.begin(), operands.end()) - operands.begin());
}

std::optional<std::string> check_group_limits(const Graph& g, const std::vector<int>& nodes,
                                              int num_outputs, const FusionLimits& limits) {
  std::vector<int> unique(nodes);
  std::sort(unique.begin(), unique.end());
  unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
  if (static_cast<int>(unique.size()) > limits.max_nodes_per_group) {
    return fmt::format("the kernel would have {} ops, over the limit of {}", unique.size(),
                       limits.max_nodes_per_group);
  }
  int operands = count_external_operands(g, unique);
  if (operands + num_outputs > limits.max_operands_and_outputs) {
    return fmt::format("the kernel would have {} operands and outputs, over the limit of {}",
                       operands + num_outputs, limits.max_operands_and_outputs);
  }
  return std::nullopt;
}

namespace {

// Whether `to` is reachable from `from` by a path whose first step is not
// straight to `to`: the path goes through some third group.
bool reaches_through_third_group(const GroupGraph& gg, int from, int to) {
  std::vector<char> seen(gg.successors.size(), 0);
  std::vector<int> stack;
  for (int s : gg.successors[from]) {
    if (s != to) {
      stack.push_back(s);
      seen[s] = 1;
    }
  }
  while (!stack.empty()) {
    int gi = stack.back();
    stack.pop_back();
    if (gi == to) return true;
    for (int s : gg.successors[gi]) {
      if (!seen[s]) {
        seen[s] = 1;
        stack.push_back(s);
      }
    }
  }
  return false;
}

}  // namespace

std::optional<std::string> check_merge_legality(const Graph& g,
                                                const std::vector<FusionGroup>& groups, int a,
                                                int b, const FusionLimits& limits) {
  STITCH_ASSERT(a != b, "merging a group with itself");
  GroupGraph gg = build_group_graph(g, groups);
  for (auto [from, to] : {std::pair{a, b}, std::pair{b, a}}) {
    if (reaches_through_third_group(gg, from, to)) {
      return fmt::format("merging would create a cycle: {} reaches {} through another kernel",
                         g.value_name(g.nodes()[groups[from].roots.front()].output),
                         g.value_name(g.nodes()[groups[to].roots.front()].output));
    }
  }
  std::vector<int> merged = groups[a].nodes;
  merged.insert(merged.end(), groups[b].nodes.begin(), groups[b].nodes.end());
  int outputs = static_cast<int>(groups[a].roots.size() + groups[b].roots.size());
  return check_group_limits(g, merged, outputs, limits);
}

}  // namespace stitch
