// Convexity questions on a DAG of kernels that does not change while they are
// asked (docs/fusion.md, Planning time): the pattern space asks hundreds of
// thousands on a model-sized graph. GroupDag::between walks every edge of each
// group it passes, and a group read by hundreds of kernels made that 190
// million edges on a 100,000-node model graph. Here each group's successors
// are kept by ascending position and its predecessors by descending position,
// so a walk bounded by a window of the order stops at the first edge out of it.
#pragma once

#include <utility>
#include <vector>

#include "fusion/group_dag.h"

namespace stitch {

class ConvexityIndex {
 public:
  // A snapshot of `dag`'s edges and order; valid until the DAG changes.
  explicit ConvexityIndex(const GroupDag& dag);

  // A group outside `members` (group ids, no id twice) on a path from one
  // member to another, the first the walk meets; -1 when there is none
  // (GroupDag::between(members) is empty).
  int one_between(const std::vector<int>& members) const;
  bool convex(const std::vector<int>& members) const { return one_between(members) < 0; }
  // Whether `convex` (convex itself, without `added`) joined by `added` is
  // convex: GroupDag::joins_without_cycle.
  bool joins_without_cycle(const std::vector<int>& convex, int added) const;

 private:
  // Marks `members` and returns the window [first, last] of their positions.
  std::pair<int, int> mark_members(const std::vector<int>& members) const;
  bool member(int gi) const { return member_[gi] == members_stamp_; }

  std::vector<int> pos_;
  std::vector<std::vector<int>> succ_;  // ascending position
  std::vector<std::vector<int>> pred_;  // descending position
  mutable std::vector<int> member_, mark_;
  mutable int stamp_ = 0, members_stamp_ = 0;
  mutable std::vector<int> stack_;
};

}  // namespace stitch
