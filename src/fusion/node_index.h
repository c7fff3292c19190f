// Where each node of a node list sits, looked up in O(1): the planners' checks
// run per candidate kernel over lists of up to thousands of nodes, and a
// sorted copy searched by bisection (or a hash set) was their largest cost
// after the checks themselves (docs/fusion.md, Planning time). The dense
// per-graph arrays come from a pool of this thread's, so building an index
// costs O(list), not O(graph), and several may be alive at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace stitch {

class NodeIndex {
 public:
  // `node_count`: the graph's node count (every id in `nodes` is below it).
  NodeIndex(const std::vector<int>& nodes, size_t node_count);
  ~NodeIndex();
  NodeIndex(const NodeIndex&) = delete;
  NodeIndex& operator=(const NodeIndex&) = delete;

  // The position of `node` in the list, or -1 (also for ids < 0).
  int find(int node) const {
    return node >= 0 && static_cast<size_t>(node) < slots_->size() ? (*slots_)[static_cast<size_t>(node)] : -1;
  }
  bool contains(int node) const { return find(node) >= 0; }

 private:
  const std::vector<int>& nodes_;
  std::vector<int>* slots_;  // from the pool; -1 outside the list
};

// A set of ids (nodes or values) below `id_count`, grown one insert at a
// time, on a pooled dense array like NodeIndex's: O(1) inserts and lookups,
// O(inserted) to build and to drop.
class IdSet {
 public:
  explicit IdSet(size_t id_count);
  ~IdSet();
  IdSet(const IdSet&) = delete;
  IdSet& operator=(const IdSet&) = delete;

  // True when `id` was not in the set yet.
  bool insert(int id);
  // The order `id` was inserted in (0 for the first), or -1.
  int find(int id) const {
    return id >= 0 && static_cast<size_t>(id) < slots_->size() ? (*slots_)[static_cast<size_t>(id)] : -1;
  }
  bool contains(int id) const { return find(id) >= 0; }
  size_t size() const { return inserted_.size(); }

 private:
  std::vector<int> inserted_;
  std::vector<int>* slots_;
};

// The union of lists of ids >= 0 (several may hold one id), ascending
// and unique: marked in a bitmap over their span and read back a word at a
// time, O(total + span / 64) instead of a sort of the concatenation; ids
// more than 256 x total below the largest are sorted apart.
std::vector<int> sorted_union(const std::vector<const std::vector<int>*>& lists);

}  // namespace stitch
