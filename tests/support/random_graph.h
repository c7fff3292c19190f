// Random valid graphs and inputs for differential tests (DESIGN.md, Testing).
//
// random_graph() builds every graph through GraphBuilder, choosing operands and
// attributes that are valid by construction, so the builder rejecting one of
// them is a bug (in the generator or in src/ir) and surfaces as an exception,
// never as a skipped candidate. The same seed gives the same graph on every
// machine and compiler: the generator draws from its own splitmix64 stream,
// never from <random>'s distributions or unordered containers.
//
// The interpreter never rejects a generated graph on random_inputs(): gather
// indices are built in range (constants in [-n, n), `rem(x, n)` of data,
// `iota`), argmax/argmin only reduce axes of non-zero extent, and symbols are
// bound to at least 1. docs/testing.md describes the suites built on this.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "stitch/graph.h"
#include "stitch/tensor.h"

namespace stitch::testing {

// Relative weights of what a step of the generator adds; 0 turns one off.
// The op families are the planners' OpCategory (ops.def), plus composites and
// verbatim repeats of earlier nodes.
struct OpMix {
  double light_elementwise = 4;  // neg abs relu ... add max and ... comparisons select clamp cast
  double heavy_elementwise = 2;  // exp log tanh erf ... div rem pow atan2
  double broadcast = 0.7;        // explicit broadcast ops (implicit numpy broadcasting comes with binary ops)
  double layout = 2.5;           // reshape transpose slice concat pad
  double gather = 0.5;
  double source = 0.4;           // iota, constant
  double reduction = 1.5;        // reduce_* argmax argmin
  double dot = 0.5;
  double composite = 0.3;        // softmax log_softmax logsumexp layer_norm rms_norm gelu silu
  double repeat = 0.3;           // an earlier node again, same operands and attributes (work for CSE)
  // A reduction whose total, broadcast back, feeds elementwise ops together
  // with the reduction's input: softmax, norms, column centring
  // (random_graph_patterns.cpp). Off by default; stitched_options() turns it on.
  double reduction_pattern = 0;

  double weight(OpCategory c) const;
};

struct RandomGraphOptions {
  uint64_t seed = 0;
  // Primitive nodes (literals and composite expansions count). The generator
  // stops once it reaches a count drawn from [min_nodes, max_nodes] (its last
  // step may add up to kMaxNodesPastTarget more), or earlier when 100 steps in
  // a row find nothing that fits the options.
  int min_nodes = 4;
  int max_nodes = 24;
  // Every value of the graph has one of these dtypes: an op whose operands or
  // result would need another (argmax needs i64, comparisons bool, gather i32
  // or i64 indices) is not generated.
  std::vector<DType> dtypes{std::begin(kAllDTypes), std::end(kAllDTypes)};
  // Parameters may carry the symbols B and N, bound when inputs are made.
  bool symbolic_dims = true;
  int max_rank = 4;
  // Static extents of parameters lie in [2, max_extent] (or are 1).
  int64_t max_extent = 8;
  // Every value holds at most this many elements, counting each symbol as
  // max_symbol_extent; random_symbol_bindings() never binds a symbol above it.
  int64_t max_elements = 256;
  int64_t max_symbol_extent = 4;
  int max_params = 4;
  int max_outputs = 4;
  // Slices may produce zero-extent dims, which then flow into every op.
  bool allow_empty = true;
  OpMix mix;
  // Never added to the graph, by any step (helpers and composites included),
  // e.g. the ops a back end does not implement yet.
  std::vector<OpKind> excluded_ops;
};

// The most nodes a step adds past the count it started below: select or clamp
// with a cast and two operands derived by slice + reshape.
inline constexpr int kMaxNodesPastTarget = 5;

// A valid, verified graph; deterministic in `opts` (seed included). Throws
// std::invalid_argument for contradictory options, and lets any UserError or
// InternalError from the builder through: both are bugs worth a report.
Graph random_graph(const RandomGraphOptions& opts);

// Options that vary with the seed (symbols on or off, rank, dtype subsets,
// graph size), so one loop over seeds covers the space. What the suites use.
RandomGraphOptions varied_options(uint64_t seed);

// Options for the stitch planner's patterns (docs/fuzzing.md, Reduction ->
// consumer graphs): mostly float graphs made of reduction patterns
// (OpMix::reduction_pattern) and elementwise ops, with extents up to 130 (rows
// shorter than 32 and not multiples of 32), symbolic batch dims on some seeds,
// no empty dims. The patterns' constants keep every division and rsqrt away
// from 0, so the documented tolerances hold.
RandomGraphOptions stitched_options(uint64_t seed);

// One extent in [1, max_extent] per symbol of the graph's parameters.
SymbolBindings random_symbol_bindings(const Graph& g, uint64_t seed, int64_t max_extent);

// One tensor per parameter, filled by fill_random (tensor.h). With
// special_values, about one element in eight is replaced by a value that
// exercises edge semantics: ±0, ±inf and NaN for floats, the dtype's min and
// max for integers.
std::vector<Tensor> random_inputs(const Graph& g, uint64_t seed, const SymbolBindings& symbols,
                                  bool special_values = false);

// The seeds a random suite runs: [0, normal_count) normally; for a soak run
// STITCH_SOAK_GRAPHS=N runs N seeds from STITCH_SOAK_FIRST_SEED (default 0).
struct SeedRange {
  uint64_t first = 0;
  uint64_t count = 0;
  bool soak = false;
};
SeedRange random_seed_range(uint64_t normal_count);

// What a failure report needs to reproduce a graph: the seed, the command
// that reruns it alone, and the graph text.
std::string reproducer(uint64_t seed, const Graph& g);

// One graph of a random suite, as handed to its check.
struct RandomCase {
  uint64_t seed;
  const RandomGraphOptions& options;
  const Graph& graph;
};

// The loop every random suite runs: for each seed of random_seed_range(
// normal_count), builds the graph of varied_options(seed) and calls `check`,
// which returns a description of the first failure or "" (an exception is a
// failure too). Each failure is reported with its reproducer; after
// `max_reports` of them the rest is skipped, since a broken invariant usually
// fails every seed.
void check_random_graphs(uint64_t normal_count, const std::function<std::string(const RandomCase&)>& check,
                         int max_reports = 5);

}  // namespace stitch::testing
