// Canonical form of the Graph IR (DESIGN.md, Graph IR): broadcasts explicit,
// identity layout ops folded, common subexpressions merged, dead values gone.
// Written as an ordered table of passes so STITCH_DUMP can show each step.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "stitch/graph.h"

namespace stitch {

struct GraphPass {
  std::string name;
  std::function<Graph(const Graph&)> run;
};

// The passes of canonicalize(), in order.
const std::vector<GraphPass>& canonicalization_passes();

// Runs every pass; `after_pass` (if set) sees the graph after each one.
Graph canonicalize(const Graph& g,
                   const std::function<void(const std::string&, const Graph&)>& after_pass = {});

Graph make_broadcasts_explicit(const Graph& g);
Graph fold_layout_identities(const Graph& g);
Graph eliminate_common_subexpressions(const Graph& g);
Graph eliminate_dead_values(const Graph& g);

}  // namespace stitch
