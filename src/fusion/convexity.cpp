#include "fusion/convexity.h"

#include <algorithm>

namespace stitch {

ConvexityIndex::ConvexityIndex(const GroupDag& dag)
    : pos_(dag.capacity(), -1), succ_(dag.capacity()), pred_(dag.capacity()), member_(dag.capacity(), 0),
      mark_(dag.capacity(), 0) {
  for (int gi = 0; gi < dag.capacity(); ++gi)
    if (dag.alive(gi)) pos_[gi] = dag.position(gi);
  for (int gi = 0; gi < dag.capacity(); ++gi) {
    if (!dag.alive(gi)) continue;
    succ_[gi] = dag.successors(gi);
    pred_[gi] = dag.predecessors(gi);
    std::sort(succ_[gi].begin(), succ_[gi].end(), [&](int a, int b) { return pos_[a] < pos_[b]; });
    std::sort(pred_[gi].begin(), pred_[gi].end(), [&](int a, int b) { return pos_[a] > pos_[b]; });
  }
}

std::pair<int, int> ConvexityIndex::mark_members(const std::vector<int>& members) const {
  int first = static_cast<int>(pos_.size()), last = -1;
  members_stamp_ = ++stamp_;
  for (int gi : members) {
    first = std::min(first, pos_[gi]);
    last = std::max(last, pos_[gi]);
    member_[gi] = members_stamp_;
  }
  return {first, last};
}

int ConvexityIndex::one_between(const std::vector<int>& members) const {
  // Plain names, not a structured binding: the walks' lambdas capture them.
  const std::pair<int, int> window = mark_members(members);
  const int first = window.first, last = window.second;
  // Members at consecutive positions have nothing between them.
  if (last - first + 1 == static_cast<int>(members.size())) return -1;
  // Forward from the members through groups before the last one, then
  // backward through groups after the first: a group reached both ways lies
  // on a path that leaves the members and comes back.
  const int forward = ++stamp_;
  std::vector<int>& stack = stack_;
  stack.clear();
  auto push_successors = [&](int gi) {
    for (int s : succ_[gi]) {
      if (pos_[s] >= last) break;
      if (!member(s) && mark_[s] != forward) mark_[s] = forward, stack.push_back(s);
    }
  };
  for (int gi : members) push_successors(gi);
  if (stack.empty()) return -1;
  while (!stack.empty()) {
    const int gi = stack.back();
    stack.pop_back();
    push_successors(gi);
  }
  const int backward = ++stamp_;
  auto reaches_forward = [&](int gi) {
    for (int p : pred_[gi]) {
      if (pos_[p] <= first) break;
      if (member(p) || mark_[p] == backward) continue;
      if (mark_[p] == forward) return p;
      mark_[p] = backward, stack.push_back(p);
    }
    return -1;
  };
  for (int gi : members)
    if (const int found = reaches_forward(gi); found >= 0) return found;
  while (!stack.empty()) {
    const int gi = stack.back();
    stack.pop_back();
    if (const int found = reaches_forward(gi); found >= 0) return found;
  }
  return -1;
}

bool ConvexityIndex::joins_without_cycle(const std::vector<int>& convex, int added) const {
  const std::pair<int, int> window = mark_members(convex);
  const int first = std::min(window.first, pos_[added]);
  const int last = std::max(window.second, pos_[added]);
  member_[added] = members_stamp_;
  // From `added` to a member after it, through groups before the last member
  // (successors ascending), then to a member before it, through groups after
  // the first (predecessors descending).
  auto reaches_member = [&](const std::vector<std::vector<int>>& next, auto inside) {
    const int seen = ++stamp_;
    std::vector<int>& stack = stack_;
    stack.clear();
    stack.push_back(added);
    bool start = true;
    while (!stack.empty()) {
      const int gi = stack.back();
      stack.pop_back();
      for (int s : next[gi]) {
        if (!start && member(s)) return true;
        if (!inside(s)) break;
        if (!member(s) && mark_[s] != seen) mark_[s] = seen, stack.push_back(s);
      }
      start = false;
    }
    return false;
  };
  if (pos_[added] < last && reaches_member(succ_, [&](int gi) { return pos_[gi] < last; })) return false;
  if (pos_[added] > first && reaches_member(pred_, [&](int gi) { return pos_[gi] > first; })) return false;
  return true;
}

}  // namespace stitch
