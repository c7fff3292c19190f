// Windows over the spatial axes of [N, C, spatial...] (docs/text-format.md):
// the conv op's result shape, and the primitives that conv, max_pool and
// avg_pool expand into (the pools always, when the graph is built; conv where
// no library call runs it, by the pipeline's conv stage, ir/conv_expand.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stitch/builder.h"

namespace stitch {

// One spatial axis of a window: extents, the pads at its two ends, and the
// input and output extents along it.
struct Window {
  int64_t kernel = 1, stride = 1, dilation = 1, pad_begin = 0, pad_end = 0, in = 0, out = 0;
};

// The windows of `x`'s spatial axes: kernel extents from `kernel`, the rest
// from the attributes (`strides`, `dilations`, `pads`: every axis' begin, then
// every axis' end, as ONNX). UserError names `op` when they do not fit.
std::vector<Window> windows(std::string_view op, const Shape& x, const std::vector<int64_t>& kernel,
                            const Attrs& attrs, bool ceil_mode);

// conv's windows, after checking x [N, C, spatial...] against the weights
// [O, C / groups, kernel...] (static) and `groups`.
std::vector<Window> conv_windows(const Shape& x, const Shape& weights, const Attrs& attrs);

// [N, channels, out...] of windows `w` over `x`.
Shape window_result_shape(const Shape& x, Dim channels, const std::vector<Window>& w);

// Which optional operands a conv node has: x, w, then the bias when `bias`,
// then the side input when `side` (attribute side_input).
struct ConvOperands {
  bool bias = false;
  bool side = false;
  size_t bias_index() const { return 2; }
  size_t side_index() const { return bias ? 3 : 2; }
};
ConvOperands conv_operands(size_t operand_count, const Attrs& attrs);
inline ConvOperands conv_operands(const Node& n) { return conv_operands(n.inputs.size(), n.attrs); }

// The transpose perms between the layouts of rank r: [N, spatial..., C] ->
// [N, C, spatial...] (channels_first_perm), and back (channels_last_perm).
std::vector<int64_t> channels_first_perm(size_t rank);
std::vector<int64_t> channels_last_perm(size_t rank);

// Depthwise: one input channel per group and one output channel per group
// (`channels`: the input's).
bool is_depthwise_conv(const Dim& channels, const Shape& weights, int64_t groups);

// conv(x, w[, bias][, side]) as primitives (attributes normalised): im2col
// into one batched dot per group, or, depthwise, a fused sum of the taps;
// then the bias, the side input and the clamp.
ValueId expand_conv(GraphBuilder& b, const std::vector<ValueId>& args, const Attrs& attrs);

// max_pool or avg_pool of `x` as primitives.
ValueId expand_pool(GraphBuilder& b, std::string_view name, ValueId x, const Attrs& attrs,
                    const std::string& result_name);

}  // namespace stitch
