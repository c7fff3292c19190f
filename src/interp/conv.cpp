// conv(x, w[, bias]) (docs/text-format.md): x [N, C, spatial...], w [O, C /
// groups, kernel...]; output channel o of group g = o / (O / groups) sums,
// over its group's input channels and the kernel positions, the products of
// the weights with the input at position * stride - pad_begin + tap *
// dilation along each spatial axis (nothing where that falls outside the
// input), then adds bias[o] and the side input's element, and clamps to
// [activation_min, activation_max] (NaN stays NaN). With channels_last, x
// and the result are [N, spatial..., C] instead. An operand the call passes
// as null (the error bound's stand-ins) counts as absent.
#include <cstdint>
#include <vector>

#include "interp/op_evaluators.h"
#include "interp/scalar_semantics.h"
#include "ir/composites_nn.h"

namespace stitch::interp {

namespace {

int64_t product(const std::vector<int64_t>& s, size_t from) {
  int64_t p = 1;
  for (size_t i = from; i < s.size(); ++i) p *= s[i];
  return p;
}

// For each output position (row-major over the spatial axes) and tap, the
// input's spatial offset, or -1 where the tap falls in the padding.
std::vector<int64_t> tap_offsets(const std::vector<int64_t>& in, const std::vector<int64_t>& kernel,
                                 const std::vector<int64_t>& out, const Node& node) {
  const std::vector<int64_t>& strides = node.attrs.get("strides").as_ints();
  const std::vector<int64_t>& dilations = node.attrs.get("dilations").as_ints();
  const std::vector<int64_t>& pads = node.attrs.get("pads").as_ints();
  const size_t spatial = in.size();
  const int64_t positions = product(out, 0), taps = product(kernel, 0);
  std::vector<int64_t> offsets(static_cast<size_t>(positions * taps));
  for (int64_t p = 0; p < positions; ++p) {
    for (int64_t t = 0; t < taps; ++t) {
      int64_t offset = 0, rest_p = p, rest_t = t;
      bool inside = true;
      for (size_t d = spatial; d-- > 0;) {
        const int64_t pos = rest_p % out[d], tap = rest_t % kernel[d];
        rest_p /= out[d];
        rest_t /= kernel[d];
        const int64_t at = pos * strides[d] - pads[d] + tap * dilations[d];
        inside = inside && at >= 0 && at < in[d];
        offset += at * product(in, d + 1);
      }
      offsets[static_cast<size_t>(p * taps + t)] = inside ? offset : -1;
    }
  }
  return offsets;
}

}  // namespace

WideBuffer evaluate_conv(const OpCall& call) {
  const bool channels_last = call.node.attrs.get("channels_last").as_bool();
  // x and the result as [N, C, spatial...].
  auto channels_first = [channels_last](std::vector<int64_t> s) {
    if (channels_last) {
      s.insert(s.begin() + 1, s.back());
      s.pop_back();
    }
    return s;
  };
  const std::vector<int64_t> xs = channels_first(call.in(0).shape());
  const std::vector<int64_t>& ws = call.in(1).shape();
  const std::vector<int64_t> ys = channels_first(call.out_shape);
  const int64_t batch = xs[0], channels = xs[1], out_channels = ws[0], per_group = ws[1];
  const int64_t groups = call.node.attrs.get("groups").as_int();
  const int64_t out_per_group = out_channels / groups;
  const std::vector<int64_t> in_space(xs.begin() + 2, xs.end()), kernel(ws.begin() + 2, ws.end()),
      out_space(ys.begin() + 2, ys.end());
  const int64_t in_size = product(in_space, 0), taps = product(kernel, 0), positions = product(out_space, 0);
  const std::vector<int64_t> offsets = tap_offsets(in_space, kernel, out_space, call.node);
  WideBuffer out = call.make_output();
  const double* x = call.in(0).floats();
  const double* w = call.in(1).floats();
  const ConvOperands operands = conv_operands(call.node);
  auto optional = [&](bool present, size_t i) -> const double* {
    return present && call.inputs.size() > i && call.inputs[i] ? call.inputs[i]->floats() : nullptr;
  };
  const double* bias = optional(operands.bias, operands.bias_index());
  const double* side = optional(operands.side, operands.side_index());
  const double lo = call.node.attrs.get("activation_min").as_number();
  const double hi = call.node.attrs.get("activation_max").as_number();
  double* y = out.floats();
  // Element strides of a channel and of a spatial position.
  const int64_t x_channel = channels_last ? 1 : in_size, x_position = channels_last ? channels : 1;
  const int64_t y_channel = channels_last ? 1 : positions, y_position = channels_last ? out_channels : 1;
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t o = 0; o < out_channels; ++o) {
      const int64_t first_channel = o / out_per_group * per_group;
      for (int64_t p = 0; p < positions; ++p) {
        // Products of f32, f16 or bf16 values are exact in double; only the
        // additions round, in channel-then-tap order.
        double acc = 0;
        for (int64_t c = 0; c < per_group; ++c) {
          const double* xc = x + n * channels * in_size + (first_channel + c) * x_channel;
          const double* wc = w + (o * per_group + c) * taps;
          for (int64_t t = 0; t < taps; ++t) {
            const int64_t at = offsets[static_cast<size_t>(p * taps + t)];
            if (at >= 0) acc += xc[at * x_position] * wc[t];
          }
        }
        if (bias) acc += bias[o];
        const int64_t at = n * out_channels * positions + o * y_channel + p * y_position;
        if (side) acc += side[at];
        y[at] = scalar::clamp(acc, lo, hi);
      }
    }
  }
  round_to_dtype(out);
  return out;
}

}  // namespace stitch::interp
