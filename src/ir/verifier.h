// Graph IR verifier: the invariants every pass may rely on.
#pragma once

#include <string>
#include <vector>

#include "stitch/graph.h"

namespace stitch {

struct VerifyOptions {
  // Also require canonical form: elementwise operands already have the
  // result's shape (broadcasts explicit), no identity reshape/transpose/
  // broadcast/slice/cast, no value that does not reach an output.
  bool canonical = false;
};

// Every violated invariant, one message each; empty when the graph is valid.
std::vector<std::string> verify(const Graph& g, VerifyOptions opts = {});

// Throws InternalError listing the problems: a graph built by Stitch that
// fails verification is a bug in Stitch, not in the user's program.
void verify_or_throw(const Graph& g, VerifyOptions opts = {});

}  // namespace stitch
