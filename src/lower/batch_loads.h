// Batched loads (docs/lowering.md, Batched loads): a GPU pass over a lowered
// kernel. A thread of a loop kernel computes a few elements in an unrolled
// loop; when an element's computation branches (an IEEE division's slow
// path, a tanh or erf with cases), ptxas issues the next element's loads only
// after the branch, so each thread has one load in flight and the SM too few
// bytes to cover DRAM's latency (bench/results/gpu-2026-12-04-h200-notes.md:
// swish, gelu_tanh and bias_gelu at 0.67 of copy). The pass splits such a loop
// in two: the first loads every element's inputs into per-thread arrays, the
// second computes from them, so all the loads are issued before the first use.
#pragma once

#include "kir/kernel.h"

namespace stitch::lower {

// Rewrites every innermost unrolled or serial loop of `k` with a constant trip
// count whose body holds only locals, assignments (accumulators), stores and
// ifs (and CPU prefetch hints), and whose loads of read-only, unaliased buffers
// can be computed before the body runs (their indices use only integer locals
// free of loads, the loop's variable and names from outside the loop that it
// does not assign, under conditions of the same kind). Loads through other
// paths stay in place. A loop that would hold more than kMaxBatchedElements
// elements in its arrays is left alone. Both loops of a split are unrolled, so
// the arrays stay in registers. Returns how many loops were split.
int batch_loads(kir::Kernel& k);

inline constexpr int64_t kMaxBatchedElements = 32;

}  // namespace stitch::lower
