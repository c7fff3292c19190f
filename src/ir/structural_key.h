// A graph's structure as text, free of value and graph names (DESIGN.md,
// Runtime: the in-memory kernel cache is keyed by "the graph's structural
// hash: canonical value numbering, dtypes, shape class"). Two graphs with the
// same key compute the same function of their parameters, so they can share
// one compiled executable; value indices are part of the key because the
// compiled form refers to values by index.
#pragma once

#include <string>

#include "stitch/graph.h"

namespace stitch {

// One line per parameter, node and output: "%3 = add(%1, %2) {} : f32[B, 1024]".
// Symbol names stay (they are the shape class: which dims are equal and which
// are bound at run time); value, output and graph names do not.
std::string structural_key(const Graph& g);

}  // namespace stitch
