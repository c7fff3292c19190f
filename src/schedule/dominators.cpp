#include "schedule/dominators.h"

#include <algorithm>
#include <string>
#include <utility>

#include "stitch/error.h"

namespace stitch {
namespace {

// Nodes reachable from `entry` in postorder, by an explicit stack so a long
// chain of ops cannot overflow the call stack.
std::vector<int> postorder(const Digraph& successors, int entry) {
  std::vector<int> order;
  std::vector<char> seen(successors.size(), 0);
  std::vector<std::pair<int, size_t>> stack{{entry, 0}};
  seen[entry] = 1;
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next < successors[node].size()) {
      int succ = successors[node][next++];
      if (!seen[succ]) {
        seen[succ] = 1;
        stack.emplace_back(succ, 0);
      }
    } else {
      order.push_back(node);
      stack.pop_back();
    }
  }
  return order;
}

void check_graph(const Digraph& successors) {
  int n = static_cast<int>(successors.size());
  for (const auto& succs : successors) {
    for (int s : succs) STITCH_ASSERT(s >= 0 && s < n, "dominators: edge to a node outside the graph");
  }
}

}  // namespace

DominatorTree DominatorTree::build(const Digraph& successors, int entry) {
  check_graph(successors);
  int n = static_cast<int>(successors.size());
  STITCH_ASSERT(entry >= 0 && entry < n, "dominators: entry outside the graph");

  std::vector<int> order = postorder(successors, entry);
  std::vector<int> po_number(n, -1);
  for (int i = 0; i < static_cast<int>(order.size()); ++i) po_number[order[i]] = i;
  Digraph preds(n);
  for (int u = 0; u < n; ++u) {
    for (int v : successors[u]) preds[v].push_back(u);
  }

  // idom[b] == -1 means "not yet processed"; the entry is its own dominator
  // while iterating so the intersection walk stops there.
  std::vector<int> idom(n, -1);
  idom[entry] = entry;
  auto intersect = [&](int a, int b) {
    while (a != b) {
      while (po_number[a] < po_number[b]) a = idom[a];
      while (po_number[b] < po_number[a]) b = idom[b];
    }
    return a;
  };
  // One pass suffices on a DAG in reverse postorder; a cycle's back edges need more.
  for (bool changed = true; changed;) {
    changed = false;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      int b = *it;
      if (b == entry) continue;
      int new_idom = -1;
      for (int p : preds[b]) {
        if (idom[p] == -1) continue;
        new_idom = new_idom == -1 ? p : intersect(p, new_idom);
      }
      if (idom[b] != new_idom) {
        idom[b] = new_idom;
        changed = true;
      }
    }
  }
  idom[entry] = -1;

  DominatorTree tree;
  tree.root_ = entry;
  tree.idom_ = std::move(idom);
  tree.children_.assign(n, {});
  tree.depth_.assign(n, -1);
  tree.enter_.assign(n, -1);
  tree.exit_.assign(n, -1);
  for (int v = 0; v < n; ++v) {
    if (tree.idom_[v] >= 0) tree.children_[tree.idom_[v]].push_back(v);
  }
  int clock = 0;
  std::vector<std::pair<int, size_t>> stack{{entry, 0}};
  tree.depth_[entry] = 0;
  tree.enter_[entry] = clock++;
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next < tree.children_[node].size()) {
      int child = tree.children_[node][next++];
      tree.depth_[child] = tree.depth_[node] + 1;
      tree.enter_[child] = clock++;
      stack.emplace_back(child, 0);
    } else {
      tree.exit_[node] = clock;
      stack.pop_back();
    }
  }
  return tree;
}

DominatorTree DominatorTree::with_virtual_entry(const Digraph& successors) {
  check_graph(successors);
  int n = static_cast<int>(successors.size());
  Digraph extended = successors;
  std::vector<char> has_pred(n, 0);
  for (const auto& succs : successors) {
    for (int s : succs) has_pred[s] = 1;
  }
  extended.emplace_back();
  for (int v = 0; v < n; ++v) {
    if (!has_pred[v]) extended[n].push_back(v);
  }
  DominatorTree tree = build(extended, n);
  tree.virtual_root_ = true;
  return tree;
}

DominatorTree DominatorTree::post_dominators(const Digraph& successors) {
  check_graph(successors);
  int n = static_cast<int>(successors.size());
  Digraph reversed(n + 1);
  for (int u = 0; u < n; ++u) {
    for (int v : successors[u]) reversed[v].push_back(u);
    if (successors[u].empty()) reversed[n].push_back(u);
  }
  DominatorTree tree = build(reversed, n);
  tree.virtual_root_ = true;
  tree.post_ = true;
  return tree;
}

bool DominatorTree::reachable(int node) const {
  STITCH_ASSERT(node >= 0 && node < size(), "dominators: node outside the tree");
  return depth_[node] >= 0;
}

int DominatorTree::idom(int node) const {
  STITCH_ASSERT(node >= 0 && node < size(), "dominators: node outside the tree");
  return idom_[node];
}

const std::vector<int>& DominatorTree::children(int node) const {
  STITCH_ASSERT(node >= 0 && node < size(), "dominators: node outside the tree");
  return children_[node];
}

int DominatorTree::depth(int node) const {
  STITCH_ASSERT(node >= 0 && node < size(), "dominators: node outside the tree");
  return depth_[node];
}

bool DominatorTree::dominates(int a, int b) const {
  if (!reachable(a) || !reachable(b)) return false;
  return enter_[a] <= enter_[b] && exit_[b] <= exit_[a];
}

std::string DominatorTree::to_string() const {
  auto name = [&](int node) {
    if (virtual_root_ && node == root_) return std::string(post_ ? "exit" : "entry");
    return std::to_string(node);
  };
  std::string out;
  std::vector<int> stack{root_};
  while (!stack.empty()) {
    int node = stack.back();
    stack.pop_back();
    out += std::string(2 * static_cast<size_t>(depth_[node]), ' ') + name(node) + "\n";
    const auto& kids = children_[node];
    for (auto it = kids.rbegin(); it != kids.rend(); ++it) stack.push_back(*it);
  }
  std::string unreachable;
  for (int v = 0; v < size(); ++v) {
    if (depth_[v] < 0) unreachable += " " + std::to_string(v);
  }
  if (!unreachable.empty()) out += "unreachable:" + unreachable + "\n";
  return out;
}

}  // namespace stitch
