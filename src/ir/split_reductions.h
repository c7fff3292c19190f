// A target rewrite, not canonicalisation (docs/executable.md, Full
// reductions): a reduction of every element of a large static tensor becomes
// a reduction of [P, L/P] rows followed by a reduction of the P partials, so
// the first kernel has P independent rows to spread over cores (or blocks)
// instead of one. Sums and means reassociate (within the documented tolerance
// for a reduction of length L); max, min, any, all and integer sums are exact.
#pragma once

#include <cstdint>

#include "stitch/graph.h"

namespace stitch {

struct SplitReductionOptions {
  int64_t min_length = int64_t{1} << 16;  // elements; shorter reductions stay whole
  int64_t max_parts = 64;                 // P: a power of two dividing L, at most this
  int64_t min_part_length = 1024;         // L / P at least this
};

// `g` with every eligible full reduction split: reduce_sum, reduce_prod,
// reduce_mean, reduce_max, reduce_min, reduce_any, reduce_all over all axes of
// a static input of f32, f64, integer or bool dtype (f16/bf16 partials would
// round once more, so they stay whole). Returns `g` unchanged when nothing
// qualifies; output names are kept.
Graph split_full_reductions(const Graph& g, const SplitReductionOptions& options = {});

}  // namespace stitch
