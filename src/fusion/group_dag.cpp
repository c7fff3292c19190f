#include "fusion/group_dag.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "fusion/node_index.h"

namespace stitch {
namespace {

void insert_sorted(std::vector<int>& v, int x) {
  auto it = std::lower_bound(v.begin(), v.end(), x);
  if (it == v.end() || *it != x) v.insert(it, x);
}

void erase_sorted(std::vector<int>& v, int x) {
  auto it = std::lower_bound(v.begin(), v.end(), x);
  if (it != v.end() && *it == x) v.erase(it);
}

void sort_unique(std::vector<int>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

}  // namespace

GroupDag::GroupDag(const Graph& g, std::vector<FusionGroup> groups) : g_(g), groups_(std::move(groups)) {
  const int num_nodes = static_cast<int>(g.nodes().size());
  const int n = static_cast<int>(groups_.size());
  consumers_.resize(num_nodes);
  for (int c = 0; c < num_nodes; ++c) {
    for (ValueId v : g.nodes()[c].inputs) {
      const int p = g.value(v).producer;
      if (p >= 0) consumers_[p].push_back(c);
    }
  }
  for (auto& list : consumers_) sort_unique(list);
  is_output_.assign(num_nodes, 0);
  for (const GraphOutput& out : g.outputs()) {
    const int p = g.value(out.value).producer;
    if (p >= 0) is_output_[p] = 1;
  }
  groups_of_.resize(num_nodes);
  home_.assign(num_nodes, -1);
  for (int gi = 0; gi < n; ++gi) {
    sort_unique(groups_[gi].nodes);
    sort_unique(groups_[gi].roots);
    for (int node : groups_[gi].nodes) groups_of_[node].push_back(gi);
    for (int r : groups_[gi].roots) {
      STITCH_ASSERT(home_[r] == -1, "a node is a root of two fusion groups");
      STITCH_ASSERT(contains(gi, r), "a fusion group's root is not among its nodes");
      home_[r] = gi;
    }
  }
  alive_.assign(n, 1);
  num_alive_ = n;
  succ_.resize(n);
  pred_.resize(n);
  mark_.assign(n, 0);
  member_.assign(n, 0);
  external_.assign(n, {});
  external_known_.assign(n, 0);
  for (int gi = 0; gi < n; ++gi) relink(gi);

  // Kahn's algorithm, ready groups in id order.
  std::vector<int> indegree(n, 0);
  for (int gi = 0; gi < n; ++gi) indegree[gi] = static_cast<int>(pred_[gi].size());
  std::vector<int> ready;
  for (int gi = n - 1; gi >= 0; --gi)
    if (indegree[gi] == 0) ready.push_back(gi);
  pos_.assign(n, -1);
  while (!ready.empty()) {
    const int gi = ready.back();
    ready.pop_back();
    pos_[gi] = static_cast<int>(order_.size());
    order_.push_back(gi);
    for (auto it = succ_[gi].rbegin(); it != succ_[gi].rend(); ++it)
      if (--indegree[*it] == 0) ready.push_back(*it);
  }
  STITCH_ASSERT(static_cast<int>(order_.size()) == n, "fusion groups form a cycle");
  std::vector<int> all(n);
  for (int gi = 0; gi < n; ++gi) all[gi] = gi;
  drop_unread_roots(std::move(all));
}

bool GroupDag::contains(int gi, int node) const {
  // The shorter of the two lists: a node is in a few groups, a group holds
  // hundreds of nodes (but a literal is recomputed in thousands of groups).
  const auto& groups = groups_of_[node];
  const auto& nodes = groups_[gi].nodes;
  if (groups.size() < nodes.size()) return std::binary_search(groups.begin(), groups.end(), gi);
  return std::binary_search(nodes.begin(), nodes.end(), node);
}

std::vector<int> GroupDag::order() const {
  std::vector<int> out;
  out.reserve(num_alive_);
  for (int gi : order_)
    if (gi >= 0) out.push_back(gi);
  return out;
}

bool GroupDag::read_elsewhere(int node, int a, int b) const {
  // A value nothing reads (dead code in a graph that was not canonicalized)
  // stays written where it is, so every node keeps a group.
  if (is_output_[node] || consumers_[node].empty()) return true;
  for (int c : consumers_[node]) {
    for (int gj : groups_of_[c]) {
      if (gj != a && gj != b && !contains(gj, node)) return true;
    }
  }
  return false;
}

std::vector<int> GroupDag::merged_roots(int a, int b) const {
  std::vector<int> roots;
  for (int gi : {a, b}) {
    for (int r : groups_[gi].roots)
      if (read_elsewhere(r, a, b)) roots.push_back(r);
  }
  sort_unique(roots);
  return roots;
}

std::vector<int> GroupDag::merged_nodes(int a, int b) const {
  std::vector<int> nodes;
  nodes.reserve(groups_[a].nodes.size() + groups_[b].nodes.size());
  std::set_union(groups_[a].nodes.begin(), groups_[a].nodes.end(), groups_[b].nodes.begin(), groups_[b].nodes.end(),
                 std::back_inserter(nodes));
  return nodes;
}

std::vector<int> GroupDag::forward_window(int lo, int hi, bool* hits_hi) const {
  *hits_hi = false;
  const int top = pos_[hi];
  ++stamp_;
  std::vector<int> found;
  std::vector<int> stack;
  auto visit = [&](int s) {
    if (s == hi || pos_[s] >= top || mark_[s] == stamp_) return;
    mark_[s] = stamp_;
    stack.push_back(s);
  };
  for (int s : succ_[lo]) visit(s);
  while (!stack.empty()) {
    const int gi = stack.back();
    stack.pop_back();
    found.push_back(gi);
    for (int s : succ_[gi]) {
      if (s == hi) *hits_hi = true;
      visit(s);
    }
  }
  return found;
}

bool GroupDag::path_through_third(int lo, int hi) const {
  // Forward from lo and backward from hi, a step of each in turn, within the
  // window between them: the first side to run out has walked all it reaches
  // without meeting hi (or lo), so there is no path; a group both sides reach
  // is on one. Each step costs at most twice the smaller side.
  const int bottom = pos_[lo], top = pos_[hi];
  const int forward = ++stamp_;
  const int backward = ++stamp_;
  std::vector<int> ahead, behind;
  bool met = false;
  auto visit_ahead = [&](int s) {
    if (s == hi || pos_[s] >= top || mark_[s] == forward) return;
    met = met || member_[s] == backward;
    mark_[s] = forward;
    ahead.push_back(s);
  };
  auto visit_behind = [&](int p) {
    if (p == lo || pos_[p] <= bottom || member_[p] == backward) return;
    met = met || mark_[p] == forward;
    member_[p] = backward;
    behind.push_back(p);
  };
  for (int s : succ_[lo]) visit_ahead(s);
  for (int p : pred_[hi]) visit_behind(p);
  while (!met && !ahead.empty() && !behind.empty()) {
    const int x = ahead.back();
    ahead.pop_back();
    for (int s : succ_[x]) {
      if (s == hi) return true;
      visit_ahead(s);
    }
    if (met) break;
    const int y = behind.back();
    behind.pop_back();
    for (int p : pred_[y]) {
      if (p == lo) return true;
      visit_behind(p);
    }
  }
  return met;
}

std::vector<int> GroupDag::between(const std::vector<int>& members) const {
  int first = capacity(), last = -1;
  for (int gi : members) {
    first = std::min(first, pos_[gi]);
    last = std::max(last, pos_[gi]);
  }
  std::vector<int> inside = members;
  std::sort(inside.begin(), inside.end());
  inside.erase(std::unique(inside.begin(), inside.end()), inside.end());
  // Members at consecutive positions have nothing between them.
  if (last - first + 1 == static_cast<int>(inside.size())) return {};
  ++stamp_;
  const int members_stamp = stamp_;
  for (int gi : inside) member_[gi] = members_stamp;
  // Forward from the members within their window of the order, then
  // backward: a group the backward pass finds still marked by the forward
  // one is reached both ways, so it lies between two members.
  auto member = [&](int gi) { return member_[gi] == members_stamp; };
  ++stamp_;
  const int forward = stamp_;
  std::vector<int> stack;
  for (int gi : members)
    for (int s : succ_[gi])
      if (!member(s) && pos_[s] < last && mark_[s] != forward) mark_[s] = forward, stack.push_back(s);
  std::vector<int> reached;
  while (!stack.empty()) {
    const int gi = stack.back();
    stack.pop_back();
    reached.push_back(gi);
    for (int s : succ_[gi])
      if (!member(s) && pos_[s] < last && mark_[s] != forward) mark_[s] = forward, stack.push_back(s);
  }
  if (reached.empty()) return {};
  ++stamp_;
  const int backward = stamp_;
  std::vector<int> out;
  for (int gi : members)
    for (int p : pred_[gi])
      if (!member(p) && pos_[p] > first && mark_[p] != backward) {
        if (mark_[p] == forward) out.push_back(p);
        mark_[p] = backward, stack.push_back(p);
      }
  while (!stack.empty()) {
    const int gi = stack.back();
    stack.pop_back();
    for (int p : pred_[gi])
      if (!member(p) && pos_[p] > first && mark_[p] != backward) {
        if (mark_[p] == forward) out.push_back(p);
        mark_[p] = backward, stack.push_back(p);
      }
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool GroupDag::joins_without_cycle(const std::vector<int>& convex, int added) const {
  int first = pos_[added], last = pos_[added];
  ++stamp_;
  const int members_stamp = stamp_;
  for (int gi : convex) {
    first = std::min(first, pos_[gi]);
    last = std::max(last, pos_[gi]);
    member_[gi] = members_stamp;
  }
  member_[added] = members_stamp;
  auto member = [&](int gi) { return member_[gi] == members_stamp; };
  // Forward from `added` to a member after it, through groups before the
  // last member; then backward to a member before it.
  auto reaches_member = [&](const std::vector<std::vector<int>>& next, auto inside_window) {
    ++stamp_;
    const int seen = stamp_;
    std::vector<int> stack;
    for (int s : next[added])
      if (!member(s) && inside_window(s) && mark_[s] != seen) mark_[s] = seen, stack.push_back(s);
    while (!stack.empty()) {
      const int gi = stack.back();
      stack.pop_back();
      for (int s : next[gi]) {
        if (member(s)) return true;
        if (inside_window(s) && mark_[s] != seen) mark_[s] = seen, stack.push_back(s);
      }
    }
    return false;
  };
  if (pos_[added] < last && reaches_member(succ_, [&](int gi) { return pos_[gi] < last; })) return false;
  if (pos_[added] > first && reaches_member(pred_, [&](int gi) { return pos_[gi] > first; })) return false;
  return true;
}

std::optional<std::string> GroupDag::cycle_refusal(int a, int b) const {
  STITCH_ASSERT(a != b && alive_[a] && alive_[b], "merging a group with itself or a retired one");
  const int lo = pos_[a] < pos_[b] ? a : b;
  const int hi = lo == a ? b : a;
  if (!path_through_third(lo, hi)) return std::nullopt;
  return fmt::format("merging would create a cycle: {} reaches {} through another kernel",
                     g_.value_name(g_.nodes()[groups_[lo].roots.front()].output),
                     g_.value_name(g_.nodes()[groups_[hi].roots.front()].output));
}

std::optional<Refusal> GroupDag::merge_refusal(int a, int b, const FusionLimits& limits) const {
  if (auto reason = cycle_refusal(a, b)) return Refusal{RefusalCause::Illegal, std::move(*reason)};
  return pair_limits_refusal(a, b, limits);
}

std::optional<Refusal> GroupDag::pair_limits_refusal(int a, int b, const FusionLimits& limits) const {
  const int outputs = static_cast<int>(groups_[a].roots.size() + groups_[b].roots.size());
  if (auto reason = limits_refusal({a, b}, merged_nodes(a, b), outputs, limits)) {
    return Refusal{RefusalCause::Budget, std::move(*reason)};
  }
  return std::nullopt;
}

const std::vector<int>& GroupDag::external_operands(int gi) const {
  if (!external_known_[gi]) {
    std::vector<int>& ext = external_[gi];
    ext.clear();
    for (int n : groups_[gi].nodes) {
      for (ValueId v : g_.nodes()[n].inputs) {
        const int p = g_.value(v).producer;
        if (p < 0 || !contains(gi, p)) ext.push_back(v.index);
      }
    }
    sort_unique(ext);
    external_known_[gi] = 1;
  }
  return external_[gi];
}

std::optional<std::string> GroupDag::limits_refusal(const std::vector<int>& members,
                                                    const std::vector<int>& merged_nodes, int outputs,
                                                    const FusionLimits& limits) const {
  const size_t node_count = merged_nodes.size();
  if (static_cast<int>(node_count) > limits.max_nodes_per_group) {
    return fmt::format("the kernel would have {} ops, over the limit of {}", node_count, limits.max_nodes_per_group);
  }
  // A value a member reads from outside itself stays an operand of the
  // merged kernel unless another member computes it.
  const NodeIndex in_kernel(merged_nodes, g_.nodes().size());
  IdSet operands(static_cast<size_t>(g_.num_values()));
  for (int i : members) {
    for (int v : external_operands(i)) {
      if (!in_kernel.contains(g_.value(ValueId{v}).producer)) operands.insert(v);
    }
  }
  const int count = static_cast<int>(operands.size());
  if (count + outputs > limits.max_operands_and_outputs) {
    return fmt::format("the kernel would have {} operands and outputs, over the limit of {}", count + outputs,
                       limits.max_operands_and_outputs);
  }
  return std::nullopt;
}

void GroupDag::unlink(int gi) {
  for (int s : succ_[gi]) erase_sorted(pred_[s], gi);
  for (int p : pred_[gi]) erase_sorted(succ_[p], gi);
  succ_[gi].clear();
  pred_[gi].clear();
}

void GroupDag::relink(int gi) {
  unlink(gi);
  const FusionGroup& grp = groups_[gi];
  for (int node : grp.nodes) {
    for (ValueId v : g_.nodes()[node].inputs) {
      const int p = g_.value(v).producer;
      if (p < 0 || contains(gi, p)) continue;
      STITCH_ASSERT(home_[p] >= 0, fmt::format("{} is read by a fusion group but no group writes it", g_.value_name(v)));
      pred_[gi].push_back(home_[p]);
    }
  }
  for (int r : grp.roots) {
    for (int c : consumers_[r]) {
      for (int gj : groups_of_[c])
        if (gj != gi && !contains(gj, r)) succ_[gi].push_back(gj);
    }
  }
  sort_unique(pred_[gi]);
  sort_unique(succ_[gi]);
  for (int p : pred_[gi]) insert_sorted(succ_[p], gi);
  for (int s : succ_[gi]) insert_sorted(pred_[s], gi);
}

void GroupDag::merge(int a, int b, FusionGroup merged) {
  STITCH_ASSERT(a != b && alive_[a] && alive_[b], "merging a group with itself or a retired one");
  const int lo = pos_[a] < pos_[b] ? a : b;
  const int hi = lo == a ? b : a;
  bool cycle = false;
  const std::vector<int> after = forward_window(lo, hi, &cycle);
  STITCH_ASSERT(!cycle, "a merge would make the fusion groups cyclic");

  sort_unique(merged.nodes);
  sort_unique(merged.roots);
  for (int gi : {a, b}) {
    for (int r : groups_[gi].roots) {
      STITCH_ASSERT(std::binary_search(merged.roots.begin(), merged.roots.end(), r) || !read_elsewhere(r, a, b),
                    "a merge dropped a root that another kernel still reads");
    }
  }
  install_merge({a, b}, std::move(merged), after, lo, hi);
}

void GroupDag::install_merge(const std::vector<int>& members, FusionGroup merged, const std::vector<int>& after, int lo,
                             int hi) {
  const int a = members[0];
  auto is_member = [&](int gi) { return std::find(members.begin(), members.end(), gi) != members.end(); };
  // The members' producers, whose last reader the merged kernel may have
  // become by computing their values itself; looked at once it is installed.
  std::vector<int> producers{a};
  for (int m : members) {
    producers.insert(producers.end(), pred_[m].begin(), pred_[m].end());
    for (int r : groups_[m].roots) home_[r] = -1;
  }
  for (size_t i = 1; i < members.size(); ++i) {
    const int b = members[i];
    for (int node : groups_[b].nodes) erase_sorted(groups_of_[node], b);
    unlink(b);
    alive_[b] = 0;
    --num_alive_;
    groups_[b] = FusionGroup{};
    external_known_[b] = 0;
  }
  groups_[a] = std::move(merged);
  external_known_[a] = 0;
  for (int node : groups_[a].nodes) insert_sorted(groups_of_[node], a);
  for (int r : groups_[a].roots) {
    STITCH_ASSERT(contains(a, r), "a merged group's root is not among its nodes");
    STITCH_ASSERT(home_[r] == -1, "a merged group's root is written by another group");
    home_[r] = a;
  }
  relink(a);

  // Reorder the window [pos lo, pos hi]: the groups that reach a member and
  // the unrelated ones keep their order, then the merged group, then those a
  // member reaches (none of which reaches a member, or the merge would be cyclic).
  const int first = pos_[lo];
  const int last = pos_[hi];
  ++stamp_;
  for (int gi : after) mark_[gi] = stamp_;
  std::vector<int> head, tail;
  for (int p = first; p <= last; ++p) {
    const int gi = order_[p];
    if (gi < 0 || is_member(gi)) continue;
    (mark_[gi] == stamp_ ? tail : head).push_back(gi);
  }
  int p = first;
  for (int gi : head) pos_[gi] = p, order_[p++] = gi;
  pos_[a] = p, order_[p++] = a;
  for (int gi : tail) pos_[gi] = p, order_[p++] = gi;
  while (p <= last) order_[p++] = -1;
  for (size_t i = 1; i < members.size(); ++i) pos_[members[i]] = -1;
  drop_unread_roots(std::move(producers));
  STITCH_ASSERT(alive_[a], "a merged group writes nothing any other group reads");
}

void GroupDag::merge_all(const std::vector<int>& members, GroupKind kind) {
  STITCH_ASSERT(members.size() >= 2, "merge_all of fewer than two groups");
  const int a = members[0];
  std::vector<int> sorted = members;
  std::sort(sorted.begin(), sorted.end());
  STITCH_ASSERT(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end(), "merge_all of a group twice");
  auto is_member = [&](int gi) { return std::binary_search(sorted.begin(), sorted.end(), gi); };
  int lo = a, hi = a;
  for (int m : members) {
    STITCH_ASSERT(alive_[m], "merging a retired group");
    if (pos_[m] < pos_[lo]) lo = m;
    if (pos_[m] > pos_[hi]) hi = m;
  }
  FusionGroup merged;
  merged.kind = kind;
  for (int m : members) {
    merged.nodes.insert(merged.nodes.end(), groups_[m].nodes.begin(), groups_[m].nodes.end());
    for (int r : groups_[m].roots) {
      bool outside = is_output_[r] || consumers_[r].empty();  // as read_elsewhere
      for (size_t i = 0; !outside && i < consumers_[r].size(); ++i) {
        for (int gj : groups_of_[consumers_[r][i]]) {
          if (!is_member(gj) && !contains(gj, r)) {
            outside = true;
            break;
          }
        }
      }
      if (outside) merged.roots.push_back(r);
    }
  }
  sort_unique(merged.nodes);
  sort_unique(merged.roots);

  // The groups before the last member that some member reaches: after the
  // merged group. None of them reaches a member (the set is convex).
  const int top = pos_[hi];
  ++stamp_;
  std::vector<int> after, stack;
  auto visit = [&](int s) {
    if (is_member(s) || pos_[s] >= top || mark_[s] == stamp_) return;
    mark_[s] = stamp_;
    stack.push_back(s);
  };
  for (int m : members)
    for (int s : succ_[m]) visit(s);
  while (!stack.empty()) {
    const int gi = stack.back();
    stack.pop_back();
    after.push_back(gi);
    for (int s : succ_[gi]) {
      STITCH_ASSERT(!is_member(s), "a merge would make the fusion groups cyclic");
      visit(s);
    }
  }

  install_merge(members, std::move(merged), after, lo, hi);
}

void GroupDag::retire(int gi) {
  STITCH_ASSERT(alive_[gi] && succ_[gi].empty(), "retiring a group that another still reads");
  for (int r : groups_[gi].roots) STITCH_ASSERT(!is_output_[r], "retiring a group that writes a graph output");
  unlink(gi);
  for (int node : groups_[gi].nodes) erase_sorted(groups_of_[node], gi);
  for (int r : groups_[gi].roots) home_[r] = -1;
  alive_[gi] = 0;
  --num_alive_;
  order_[pos_[gi]] = -1;
  pos_[gi] = -1;
  groups_[gi] = FusionGroup{};
  external_known_[gi] = 0;
}

void GroupDag::drop_unread_roots(std::vector<int> worklist) {
  while (!worklist.empty()) {
    const int gi = worklist.back();
    worklist.pop_back();
    if (!alive_[gi]) continue;
    std::vector<int> kept;
    for (int r : groups_[gi].roots)
      if (read_elsewhere(r, gi, gi)) kept.push_back(r);
    if (kept.size() == groups_[gi].roots.size() && !kept.empty()) continue;
    worklist.insert(worklist.end(), pred_[gi].begin(), pred_[gi].end());
    if (kept.empty()) {
      retire(gi);
      continue;
    }
    for (int r : groups_[gi].roots) home_[r] = -1;
    for (int r : kept) home_[r] = gi;
    groups_[gi].roots = std::move(kept);
    relink(gi);
  }
}

std::string GroupDag::invariant_violations() const {
  std::string out;
  auto fail = [&](int gi, const std::string& what) { out += fmt::format("group {}: {}\n", gi, what); };
  std::vector<int> homes(g_.nodes().size(), -1);
  int alive = 0;
  for (int gi = 0; gi < capacity(); ++gi) {
    const FusionGroup& grp = groups_[gi];
    if (!alive_[gi]) {
      if (!grp.nodes.empty() || !grp.roots.empty() || !succ_[gi].empty() || !pred_[gi].empty() || pos_[gi] != -1)
        fail(gi, "retired but not empty");
      continue;
    }
    ++alive;
    if (grp.nodes.empty() || grp.roots.empty()) fail(gi, "alive without nodes or roots");
    auto strictly_ascending = [](const std::vector<int>& v) {
      return std::adjacent_find(v.begin(), v.end(), [](int x, int y) { return x >= y; }) == v.end();
    };
    if (!strictly_ascending(grp.nodes) || !strictly_ascending(grp.roots)) fail(gi, "nodes or roots not ascending");
    if (pos_[gi] < 0 || order_[pos_[gi]] != gi) fail(gi, "no place in the order");
    for (int node : grp.nodes)
      if (!std::binary_search(groups_of_[node].begin(), groups_of_[node].end(), gi)) fail(gi, "missing from groups_of");
    for (int r : grp.roots) {
      if (!contains(gi, r)) fail(gi, fmt::format("root {} not among its nodes", r));
      if (homes[r] != -1) fail(gi, fmt::format("root {} also a root of group {}", r, homes[r]));
      homes[r] = gi;
      if (home_[r] != gi) fail(gi, fmt::format("root {} has home {}", r, home_[r]));
      if (!read_elsewhere(r, gi, gi)) fail(gi, fmt::format("root {} is read by no other group", r));
    }
  }
  if (alive != num_alive_) out += fmt::format("{} groups alive, {} counted\n", alive, num_alive_);
  size_t succ_edges = 0, pred_edges = 0;
  for (int gi = 0; gi < capacity(); ++gi) succ_edges += succ_[gi].size(), pred_edges += pred_[gi].size();
  if (succ_edges != pred_edges) out += fmt::format("{} successor edges, {} predecessor edges\n", succ_edges, pred_edges);
  for (int gi = 0; gi < capacity(); ++gi) {
    if (!alive_[gi]) continue;
    std::vector<int> pred;
    for (int node : groups_[gi].nodes) {
      for (ValueId v : g_.nodes()[node].inputs) {
        const int p = g_.value(v).producer;
        if (p < 0 || contains(gi, p)) continue;
        if (homes[p] < 0) fail(gi, fmt::format("reads {}, which no group writes", g_.value_name(v)));
        else pred.push_back(homes[p]);
      }
    }
    sort_unique(pred);
    if (pred != pred_[gi]) fail(gi, "predecessor list differs from its reads");
    for (int p : pred) {
      if (pos_[p] >= pos_[gi]) fail(gi, fmt::format("reads group {}, which is not before it in the order", p));
      if (!std::binary_search(succ_[p].begin(), succ_[p].end(), gi)) fail(p, "successor list misses a reader");
    }
  }
  return out;
}

std::vector<FusionGroup> GroupDag::take_groups() {
  std::vector<FusionGroup> out;
  out.reserve(num_alive_);
  for (int gi : order()) out.push_back(std::move(groups_[gi]));
  groups_.clear();
  alive_.clear();
  succ_.clear();
  pred_.clear();
  pos_.clear();
  order_.clear();
  num_alive_ = 0;
  return out;
}

}  // namespace stitch
