// conv(x, w[, bias]) on the CPU as one oneDNN convolution (docs/cpu-backend.md,
// Convolutions): f32, x and the result in plain [N, C, spatial...] or
// channels-last [N, spatial..., C] order and the weights in their own
// [O, C / groups, kernel...] order, so no operand is reordered; oneDNN picks
// its implementation for that layout (channels-last: its brgemm kernels on
// AVX-512; channels-first: im2col and a JIT gemm). The primitive for each distinct
// problem is created once per process and kept; it runs on OpenMP's threads.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
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
  // The side input is the result's own buffer (the executable planned the
  // result in the side input's place, docs/executable.md): added by a sum
  // post-op that reads the destination, instead of a binary add.
  bool side_in_place = false;
  double activation_min = -1.0 / 0.0, activation_max = 1.0 / 0.0;

  bool operator<(const ConvProblem& o) const;
};

// Weights in the layout oneDNN's implementation wants, packed once per
// weights address and problem, for weights the caller keeps unchanged
// between calls (an executable's constant parameters, CompileOptions).
class PackedWeights {
 public:
  // The packed copy for `key`, made by `pack` into a buffer of `bytes` the
  // first time.
  template <class Pack>
  const std::vector<uint8_t>& get(const std::pair<const void*, const void*>& key, size_t bytes, Pack&& pack) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = packed_.find(key);
    if (it == packed_.end()) {
      it = packed_.emplace(key, std::vector<uint8_t>(bytes)).first;
      pack(it->second.data());
    }
    return it->second;
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(mutex_);
    return packed_.size();
  }

 private:
  std::mutex mutex_;
  std::map<std::pair<const void*, const void*>, std::vector<uint8_t>> packed_;
};

// Computes `out` from contiguous f32 buffers; `bias` and `side` are null
// without them. With `constant`, weights needing a reorder are packed once
// per address there instead of on every call.
void run_conv(const ConvProblem& p, const float* x, const float* w, const float* bias, const float* side, float* out,
              PackedWeights* constant = nullptr);

}  // namespace stitch::runtime::cpu
