// Shrinking a failing graph to a small one that still fails (docs/testing.md,
// Soak): the soak runner's reproducers. Greedy, like a delta debugger over
// the graph's structure: drop outputs, return one node's value alone, cut a
// node's producers off (its value becomes a parameter), or bypass a node (its
// users read one of its inputs of the same type), keeping each step that
// still fails, until no step does.
#pragma once

#include <functional>

#include "stitch/graph.h"

namespace stitch::testing {

struct ShrinkStats {
  int attempts = 0;  // candidates tried (each a call of still_fails)
  int accepted = 0;  // steps kept
};

// The smallest graph found from `g` for which still_fails holds (g itself
// when no step keeps the failure). still_fails is called on verified graphs
// only; at most max_attempts times.
Graph shrink_graph(const Graph& g, const std::function<bool(const Graph&)>& still_fails, int max_attempts = 400,
                   ShrinkStats* stats = nullptr);

}  // namespace stitch::testing
