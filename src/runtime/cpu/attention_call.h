// attention(q, k, v[, bias]) on the CPU as one library call (docs/attention.md):
// a flash-style kernel that never writes the [..., Tq, Tk] scores to memory.
// Each task is one (batch, block of query rows); it walks the keys a block at
// a time, keeping each row's running maximum and sum (online softmax) and
// its output accumulated in per-thread scratch, and divides once at the end.
// Tasks run in parallel on OpenMP's threads. f32 blocks are oneDNN sgemm
// calls (one thread each inside the parallel loop); f64 blocks are plain
// loops; f16 and bf16 are widened to f32 and the result rounded once.
#pragma once

#include <cstdint>
#include <vector>

#include "stitch/dtype.h"

namespace stitch::runtime::cpu {

struct AttentionProblem {
  DType dtype = DType::f32;
  int64_t batches = 1;  // the product of the leading dims
  int64_t tq = 0, tk = 0, d = 0, dv = 0;
  double scale = 1;
  bool causal = false;  // key j > query i + (tk - tq) masked out
  // Element strides of the bias over the scores' shape [batch dims..., tq, tk]
  // (0 along a broadcast axis); empty: no bias.
  std::vector<int64_t> lead_shape;  // the leading dims, for the bias offsets
  std::vector<int64_t> bias_strides;
};

// The problem of an attention node with these concrete shapes (bias_shape
// empty and has_bias false without a bias).
AttentionProblem attention_problem(DType dtype, const std::vector<int64_t>& q_shape, const std::vector<int64_t>& k_shape,
                                   const std::vector<int64_t>& v_shape, bool has_bias,
                                   const std::vector<int64_t>& bias_shape, double scale, bool causal);

// Computes the result into `out` ([..., tq, dv], contiguous); `bias` is null
// without a bias. Every buffer is contiguous and holds `p.dtype` elements.
void run_attention(const AttentionProblem& p, const void* q, const void* k, const void* v, const void* bias, void* out);

}  // namespace stitch::runtime::cpu
