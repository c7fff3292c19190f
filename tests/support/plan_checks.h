// The invariants every FusionPlan must satisfy whatever planner made it,
// without GoogleTest, so that the fusion tests (tests/fusion/plan_invariants.h)
// and the planner fuzzer (fuzz/planner_fuzzer.cpp) check the same things.
// Header-only: tests/support/*.cpp are linked into test binaries that do not
// link the planners.
#pragma once

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "fusion/fusion_plan.h"
#include "fusion/legality.h"

namespace stitch::testing {

// Empty when the plan is a valid cover of `g`; otherwise one line per problem:
// every node in at least one group, every root in exactly one, every output
// written, no group reading from a later one, every unfused edge explained by
// a refusal with a reason, and no cycle between groups.
inline std::string plan_invariant_violations(const Graph& g, const FusionPlan& plan) {
  std::string problems;
  auto fail = [&](const std::string& what) { problems += what + "\n"; };
  const int num_nodes = static_cast<int>(g.nodes().size());
  std::vector<int> home(num_nodes, -1);
  std::vector<int> cover(num_nodes, 0);
  for (int gi = 0; gi < static_cast<int>(plan.groups.size()); ++gi) {
    const FusionGroup& grp = plan.groups[gi];
    std::string where = "group " + std::to_string(gi) + ": ";
    if (grp.nodes.empty() || grp.roots.empty()) fail(where + "empty");
    if (!std::is_sorted(grp.nodes.begin(), grp.nodes.end()) ||
        std::adjacent_find(grp.nodes.begin(), grp.nodes.end()) != grp.nodes.end())
      fail(where + "nodes not strictly ascending");
    for (int n : grp.nodes) {
      if (n < 0 || n >= num_nodes) {
        fail(where + "node index out of range");
        return problems;
      }
      ++cover[n];
      for (ValueId v : g.nodes()[n].inputs) {
        int p = g.value(v).producer;
        if (p >= 0 && grp.contains(p) && p >= n) fail(where + "internal edge against topological order");
      }
    }
    for (int r : grp.roots) {
      if (r < 0 || r >= num_nodes) {
        fail(where + "root index out of range");
        return problems;
      }
      if (!grp.contains(r)) fail(where + "root not among its nodes");
      if (home[r] != -1) fail(where + "node is a root of two groups");
      home[r] = gi;
    }
  }
  for (int n = 0; n < num_nodes; ++n)
    if (cover[n] == 0) fail("node " + g.value_name(g.nodes()[n].output) + " is in no group");
  for (const GraphOutput& out : g.outputs()) {
    int p = g.value(out.value).producer;
    if (p >= 0 && home[p] < 0) fail("output " + out.name + " is written by no group");
  }
  std::set<std::pair<int, int>> explained;
  for (const FusionRefusal& r : plan.refusals) {
    if (r.relation == FusionRefusal::Relation::ProducerConsumer) explained.emplace(r.producer, r.consumer);
    if (r.reason.empty()) fail("a refusal without a reason");
  }
  for (int gi = 0; gi < static_cast<int>(plan.groups.size()); ++gi) {
    for (int n : plan.groups[gi].nodes) {
      for (ValueId v : g.nodes()[n].inputs) {
        int p = g.value(v).producer;
        if (p < 0 || plan.groups[gi].contains(p)) continue;
        if (home[p] < 0) fail(g.value_name(v) + " is read across groups but never written");
        else if (home[p] >= gi) fail("group " + std::to_string(gi) + " reads from a later group");
        if (!explained.count({p, n})) fail("unfused edge without a reason: " + g.value_name(v));
      }
    }
  }
  if (problems.empty() && !is_acyclic(build_group_graph(g, plan.groups))) fail("group graph has a cycle");
  return problems;
}

}  // namespace stitch::testing
