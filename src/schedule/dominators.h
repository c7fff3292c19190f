// Dominators on a directed graph, by the iterative algorithm of Cooper, Harvey
// and Kennedy ("A Simple, Fast Dominance Algorithm", 2001): nodes numbered in
// reverse postorder, each immediate dominator refined by intersecting the
// dominator-tree paths of its processed predecessors ("two fingers"). The
// shared-memory planner runs it on a kernel's data-flow graph (FusionStitching
// 2019, Alg. 4); it accepts any directed graph, cycles included.
#pragma once

#include <string>
#include <vector>

namespace stitch {

// Successor lists: successors[n] holds the nodes that n has an edge to.
using Digraph = std::vector<std::vector<int>>;

class DominatorTree {
 public:
  // Dominators of the nodes reachable from `entry`.
  static DominatorTree build(const Digraph& successors, int entry);
  // For a graph with several sources: a virtual entry, node successors.size(),
  // gets an edge to every node without predecessors and is the root.
  static DominatorTree with_virtual_entry(const Digraph& successors);
  // Post-dominators: dominators of the reversed graph rooted at a virtual exit,
  // node successors.size(), that every node without successors flows into.
  static DominatorTree post_dominators(const Digraph& successors);

  int size() const { return static_cast<int>(idom_.size()); }  // the virtual node included
  int root() const { return root_; }
  bool root_is_virtual() const { return virtual_root_; }
  bool reachable(int node) const;

  // -1 for the root and for unreachable nodes.
  int idom(int node) const;
  const std::vector<int>& idoms() const { return idom_; }
  const std::vector<int>& children(int node) const;  // ascending
  int depth(int node) const;                         // root 0, unreachable -1

  // Every path from the root to b passes a (reflexive); false when either is unreachable.
  bool dominates(int a, int b) const;
  bool strictly_dominates(int a, int b) const { return a != b && dominates(a, b); }

  // The tree, one node a line, indented by depth; the virtual root prints as
  // "entry" or "exit", unreachable nodes are listed last:
  //   entry
  //     0
  //       1
  //   unreachable: 5
  std::string to_string() const;

 private:
  std::vector<int> idom_;
  std::vector<std::vector<int>> children_;
  std::vector<int> depth_;
  // Preorder interval of each node in the tree: a dominates b iff a's interval holds b's.
  std::vector<int> enter_;
  std::vector<int> exit_;
  int root_ = -1;
  bool virtual_root_ = false;
  bool post_ = false;
};

}  // namespace stitch
