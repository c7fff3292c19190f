// Model-shaped random graphs (docs/testing.md, Model-scale graphs): chains and
// branches of residual blocks the size of real models, for the planners'
// tests, the soak, the fuzzer's seeds and bench/planning. Where random_graph()
// draws ops one at a time into graphs of a few dozen nodes, model_graph()
// draws whole blocks (attention, MLPs, norms, softmax, concat/slice,
// transposes, column reductions, long skips) over a residual stream
// f32[batch, seq, hidden] until the graph holds a target number of nodes.
//
// Deterministic in the options (seed included): the generator draws from the
// same splitmix64 stream as random_graph(), never from <random>.
#pragma once

#include <cstdint>
#include <string>

#include "stitch/graph.h"

namespace stitch::testing {

struct ModelGraphOptions {
  uint64_t seed = 0;
  // Primitive nodes (composite expansions and literals count): blocks are
  // added until the graph holds at least this many.
  int target_nodes = 1000;
  // The residual stream is f32[batch, seq, hidden]; with symbolic_batch its
  // first dim is the symbol B.
  int64_t batch = 2;
  bool symbolic_batch = false;
  int64_t seq = 64;
  int64_t hidden = 256;
  // Attention heads of head_dim = hidden / heads: a head_dim of at most 32
  // makes the score dot a small one (fusion's small-dot rule, <= 32 terms).
  int64_t heads = 4;
  // The MLP's inner width; at most 32 makes its second dot a small one.
  int64_t ffn = 1024;
};

// Options that vary with the seed: sizes (every tensor between a few
// thousand and a few million elements, the stream's and the weights'),
// heads, MLP width, static or symbolic batch; the node target drawn from
// [min_nodes, max_nodes]. `run_sized`: tensors of at most a few hundred
// elements, so that the interpreter and cuda-sim run the graph in seconds.
ModelGraphOptions model_graph_options(uint64_t seed, int min_nodes, int max_nodes, bool run_sized = false);

// A valid, verified graph (built through GraphBuilder, so a rejection is a
// bug in the generator or in src/ir, thrown as it is).
Graph model_graph(const ModelGraphOptions& options);

// One line naming the options, for failure messages.
std::string describe(const ModelGraphOptions& options);

}  // namespace stitch::testing
