#include "pipeline/group_fallback.h"

#include <algorithm>
#include <set>
#include <utility>

namespace stitch::pipeline {

namespace {

// Whether the kernels of `members` (indices into c.lowered.groups) build as
// one translation unit; the error when not.
bool builds(const Compilation& c, const Backend& backend, const std::vector<size_t>& members, std::string& error,
            int& count) {
  LoweredPlan subset;
  subset.plan = c.lowered.plan;
  for (size_t i : members) {
    subset.groups.push_back(c.lowered.groups[i]);
    subset.kernels.push_back(*c.lowered.groups[i].kernel);
  }
  ++count;
  error.clear();
  return backend.build(backend.emit(subset.kernels), subset, error);
}

// Bisects `members`, which fail together, down to the ones that fail alone,
// within `budget` builds (false when it ran out).
bool bisect(const Compilation& c, const Backend& backend, const std::vector<size_t>& members, int budget,
            FailingGroups& out) {
  if (members.size() == 1) {
    out.groups.push_back(c.lowered.groups[members.front()].group);
    return true;
  }
  const auto middle = members.begin() + static_cast<std::ptrdiff_t>(members.size() / 2);
  const std::vector<size_t> halves[2] = {{members.begin(), middle}, {middle, members.end()}};
  for (const std::vector<size_t>& half : halves) {
    if (out.builds >= budget) return false;
    std::string error;
    if (builds(c, backend, half, error, out.builds)) continue;
    if (half.size() == 1 && out.error.empty()) out.error = error;
    if (!bisect(c, backend, half, budget, out)) return false;
  }
  return true;
}

}  // namespace

FailingGroups locate_failing_groups(const Compilation& c, const Backend& backend) {
  FailingGroups out;
  std::vector<size_t> members;
  for (size_t i = 0; i < c.lowered.groups.size(); ++i) {
    if (c.lowered.groups[i].kernel) members.push_back(i);
  }
  if (members.size() < 2) return out;  // nothing to keep fused beside a failing group
  // Enough builds to find a few failing groups (2 a level of the bisection
  // each); a failure of every unit (a broken compiler or driver) stops there,
  // after about twice the work of the unit itself (the first path down the
  // bisection builds halves, quarters, ...).
  int levels = 0;
  while ((size_t{1} << levels) < members.size()) ++levels;
  const int budget = 6 * levels + 4;
  const bool located = bisect(c, backend, members, budget, out);
  std::sort(out.groups.begin(), out.groups.end());
  // Every group fails, or too many to find: nothing is kept fused.
  if (!located || out.groups.size() == members.size()) out.groups.clear();
  return out;
}

FailingGroups interpret_failing_groups(Compilation& c, const Backend& backend) {
  FailingGroups failing = locate_failing_groups(c, backend);
  for (int gi : failing.groups) {
    if (c.lowered.plan.groups[static_cast<size_t>(gi)].epilogue_of >= 0) failing.groups.clear();
  }
  if (failing.groups.empty()) return failing;
  c.lowered.kernels.clear();
  for (lower::LoweredGroup& l : c.lowered.groups) {
    if (std::binary_search(failing.groups.begin(), failing.groups.end(), l.group)) {
      l.kernel.reset();
      l.interpreted = true;
    } else if (l.kernel) {
      c.lowered.kernels.push_back(*l.kernel);
    }
  }
  c.source = backend.emit(c.lowered.kernels);
  return failing;
}

FusionPlan unfuse_groups(const Graph& g, const FusionPlan& plan, const std::vector<int>& failing,
                         const std::string& reason) {
  FusionPlan out;
  out.graph_name = plan.graph_name;
  out.planner = plan.planner;
  out.refusals = plan.refusals;
  std::set<int> singles;  // the nodes that get a group of their own
  for (int gi = 0; gi < static_cast<int>(plan.groups.size()); ++gi) {
    const FusionGroup& group = plan.groups[gi];
    if (!std::binary_search(failing.begin(), failing.end(), gi)) {
      out.groups.push_back(group);
      continue;
    }
    for (int n : group.nodes) {
      // A node written by another group is read from memory; one that no
      // group writes (computed inside each kernel that needs it) now is.
      const bool root = std::binary_search(group.roots.begin(), group.roots.end(), n);
      if (root || plan.home_group(n) < 0) singles.insert(n);
    }
  }
  std::set<std::pair<int, int>> refused;
  for (const FusionRefusal& r : plan.refusals) refused.emplace(r.producer, r.consumer);
  for (int n : singles) {
    out.groups.push_back({GroupKind::Loop, {n}, {n}});
    for (ValueId v : g.nodes()[n].inputs) {
      const int p = g.value(v).producer;
      if (p < 0 || !refused.emplace(p, n).second) continue;
      out.refusals.push_back({p, n, reason, FusionRefusal::Relation::ProducerConsumer, RefusalCause::Illegal});
    }
  }
  finalize_plan(g, out);
  return out;
}

}  // namespace stitch::pipeline
