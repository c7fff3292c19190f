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
  // Column reductions (a reduction over leading axes: L rows of C kept
  // columns) whose C columns are fewer than this are split along their rows,
  // [L, C] -> [P, L/P, C] reduced over the middle axis, then over P: P the
  // smallest power of two dividing L with P * C >= column_target and L / P >=
  // min_column_part_length. The column schedules give each block a tile of
  // columns, so C columns alone fill C / 256 blocks (a GPU's 132 SMs want
  // hundreds; a CPU's cores a few blocks each). 0: column reductions stay
  // whole.
  int64_t column_target = 0;
  int64_t min_column_part_length = 64;
  int64_t min_column_elements = 0;  // column reductions of fewer input elements stay whole
};

// `g` with every eligible full reduction split: reduce_sum, reduce_prod,
// reduce_mean, reduce_max, reduce_min, reduce_any, reduce_all over all axes of
// a static input of f32, f64, integer or bool dtype (f16/bf16 partials would
// round once more, so they stay whole). Returns `g` unchanged when nothing
// qualifies; output names are kept. With options.column_target, column
// reductions of the same ops and dtypes are split too (above).
Graph split_full_reductions(const Graph& g, const SplitReductionOptions& options = {});

// The options for the CPU: column reductions of at least 2^16 elements split
// to at least 8192 first-stage columns, so that they spread over the cores
// (an [6144, 196] column sum: 64 parts of 96 rows, each one block of 196
// columns, column_schedule.h); full reductions as above.
SplitReductionOptions cpu_split_options();

// The options for a GPU target: column reductions split to about 2^17
// first-stage columns (512 blocks of 256).
SplitReductionOptions gpu_split_options();

}  // namespace stitch
