// Symbolic index tags (docs/fusion.md, Stitched groups and Tile groups): the
// stitched and tile checks walk backwards from a value with, per dim, the
// position of the kernel's domain index that dim's index equals (or a marker
// of their own), to see where each reduction result is read. The steps
// through ops that only move indices are the same for both, and live here.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "fusion/node_index.h"
#include "stitch/graph.h"

namespace stitch {

// A dim read at a literal 0: a static 1 that a broadcast or reshape made.
inline constexpr int kTagZero = -1;
using IndexTags = std::vector<int>;

bool is_static_one(const Dim& d);

// A reduction node's reduced axes of its input, ascending (all without `axes`).
std::vector<size_t> reduced_axes(const Graph& g, const Node& n);

// The nodes among `nodes` (ascending) whose value depends, inside them, on a
// reduction's result; ascending.
std::vector<int> reduction_dependents(const Graph& g, const std::vector<int>& nodes);

// What a backward walk over a group's reads of reduction results must still
// visit: `next(v, tags)` is the producer of `v` when it is a node of the group
// that depends on a reduction and (v, tags) was not visited before, else null.
class ReductionReadWalk {
 public:
  ReductionReadWalk(const Graph& g, const std::vector<int>& nodes);
  ReductionReadWalk(const ReductionReadWalk&) = delete;
  ReductionReadWalk& operator=(const ReductionReadWalk&) = delete;
  const Node* next(ValueId v, const IndexTags& tags);

 private:
  const Graph& g_;
  std::vector<int> depends_;  // nodes whose value depends on a reduction of the group, ascending
  NodeIndex depends_index_;   // over depends_
  // (value, tags) visited: tags packed a byte a dim when they fit (rank <= 8,
  // tags in [-1, 254]; the value fixes the rank), else whole. Most values
  // are visited at one index only: the first packed tags of each sit in a
  // dense slot, any others in a set.
  IdSet visited_values_;
  std::vector<uint64_t> first_packed_;  // by visited_values_'s insertion order
  std::set<std::pair<int, uint64_t>> more_packed_;
  std::set<std::pair<int, IndexTags>> visited_;
};

// The tags each operand of `node` is read at when its output is read at
// `tags`, for ops that only move indices or keep them: broadcast, transpose,
// reshapes that insert or drop static 1s, and elementwise ops (all operands
// of the output's shape). nullopt otherwise; `problem` is then set when the op
// is one of those but cannot keep the tags ("mixes shapes").
std::optional<std::vector<IndexTags>> operand_index_tags(const Graph& g, const Node& node, const IndexTags& tags,
                                                         std::string* problem);

}  // namespace stitch
