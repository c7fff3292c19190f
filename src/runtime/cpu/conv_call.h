// conv(x, w[, bias]) on the CPU as one oneDNN convolution (docs/cpu-backend.md,
// Convolutions): f32, x and the result in plain [N, C, spatial...] or
// channels-last [N, spatial..., C] order and the weights in their own
// [O, C / groups, kernel...] order, so no operand is reordered; oneDNN picks
// its implementation for that layout (channels-last: its brgemm kernels on
// AVX-512; channels-first: im2col and a JIT gemm). The primitive for each distinct
// problem is created once per process and kept; it runs on OpenMP's threads.
#pragma once

#include <cstdint>
#include <vector>

namespace stitch::runtime::cpu {

struct ConvProblem {
  std::vector<int64_t> x_shape, w_shape, out_shape;  // concrete
  std::vector<int64_t> strides, dilations, pads;     // the op's attributes (pads: begins, then ends)
  int64_t groups = 1;
  bool has_bias = false;
  // x and the result laid out [N, spatial..., C] (their shapes above are
  // still [N, C, spatial...], as oneDNN counts dims).
  bool channels_last = false;
  // The epilogue, as oneDNN post-ops: a side input of the result's layout
  // added, then a clamp to [activation_min, activation_max] (+-inf: none).
  bool has_side = false;
  double activation_min = -1.0 / 0.0, activation_max = 1.0 / 0.0;

  bool operator<(const ConvProblem& o) const;
};

// Computes `out` from contiguous f32 buffers; `bias` and `side` are null
// without them.
void run_conv(const ConvProblem& p, const float* x, const float* w, const float* bias, const float* side, float* out);

}  // namespace stitch::runtime::cpu
