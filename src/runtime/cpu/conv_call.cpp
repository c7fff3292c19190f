#include "runtime/cpu/conv_call.h"

#include <fmt/format.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>
#include <unordered_map>

#include "stitch/error.h"

namespace stitch::runtime::cpu {

bool ConvProblem::operator<(const ConvProblem& o) const {
  return std::tie(x_shape, w_shape, out_shape, strides, dilations, pads, groups, has_bias, channels_last, has_side,
                  side_in_place, activation_min, activation_max) <
         std::tie(o.x_shape, o.w_shape, o.out_shape, o.strides, o.dilations, o.pads, o.groups, o.has_bias, o.channels_last,
                  o.has_side, o.side_in_place, o.activation_min, o.activation_max);
}

namespace {

using dnnl::memory;
using Tag = memory::format_tag;

// Plain layouts by rank: [N, C, spatial...] or [N, spatial..., C], and the
// weights, grouped or not.
Tag data_tag(size_t rank, bool channels_last) {
  if (channels_last) return rank == 3 ? Tag::nwc : rank == 4 ? Tag::nhwc : Tag::ndhwc;
  return rank == 3 ? Tag::ncw : rank == 4 ? Tag::nchw : Tag::ncdhw;
}
Tag weights_tag(size_t rank, bool grouped) {
  if (grouped) return rank == 3 ? Tag::goiw : rank == 4 ? Tag::goihw : Tag::goidhw;
  return rank == 3 ? Tag::oiw : rank == 4 ? Tag::oihw : Tag::oidhw;
}

memory::dims dims_of(const std::vector<int64_t>& v) { return memory::dims(v.begin(), v.end()); }

struct Prepared {
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::convolution_forward primitive;
  memory::desc x, w, bias, out, scratchpad;
  // The weights as the implementation wants them, when that is not their own
  // order: reordered into a scratch buffer on every call, or once for
  // constant weights (PackedWeights).
  memory::desc packed_w;
  std::optional<dnnl::reorder> pack;
};

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

std::shared_ptr<const Prepared> prepare(const ConvProblem& p) {
  const size_t rank = p.x_shape.size();
  const size_t spatial = rank - 2;
  const bool grouped = p.groups > 1;
  memory::dims w = dims_of(p.w_shape);
  if (grouped) {
    w[0] /= p.groups;
    w.insert(w.begin(), p.groups);
  }
  memory::dims strides = dims_of(p.strides), begin(spatial), end(spatial), dilations(spatial);
  for (size_t i = 0; i < spatial; ++i) {
    begin[i] = p.pads[i];
    end[i] = p.pads[spatial + i];
    dilations[i] = p.dilations[i] - 1;  // oneDNN counts the gaps
  }
  const memory::desc x(dims_of(p.x_shape), memory::data_type::f32, data_tag(rank, p.channels_last));
  const memory::desc wd(w, memory::data_type::f32, weights_tag(rank, grouped));
  // Channels-last: the weights' layout is the implementation's choice (oneDNN
  // has no fast kernel for nhwc data with plain weights, only its reference
  // loops); channels-first: plain, which its im2col + gemm reads as it is.
  const memory::desc w_any(w, memory::data_type::f32, p.channels_last ? Tag::any : weights_tag(rank, grouped));
  const memory::desc out(dims_of(p.out_shape), memory::data_type::f32, data_tag(rank, p.channels_last));
  const memory::desc bias = p.has_bias ? memory::desc({p.w_shape[0]}, memory::data_type::f32, Tag::x) : memory::desc();
  dnnl::primitive_attr attr;
  // The scratchpad is this call's, so two threads may run one primitive at once.
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::post_ops post;
  // In place, the destination holds the side input: a sum post-op adds it
  // as the result is written, which oneDNN's brgemm kernels take (its binary
  // add sends a 1x1 conv to an older kernel: 64 -> 128 channels at 112 x 112,
  // batch 8, 14.4 ms with the binary add, 10.0 ms with the sum, 2-core EPYC).
  if (p.has_side && p.side_in_place) {
    post.append_sum(1.0f);
  } else if (p.has_side) {
    post.append_binary(dnnl::algorithm::binary_add, out);
  }
  if (std::isfinite(p.activation_min) || std::isfinite(p.activation_max)) {
    // clip_v2: x > hi ? hi : (x < lo ? lo : x), so NaN passes as NaN; float
    // bounds, and at float's extremes where the clamp is one-sided.
    const float lo = std::isfinite(p.activation_min) ? static_cast<float>(p.activation_min) : -FLT_MAX;
    const float hi = std::isfinite(p.activation_max) ? static_cast<float>(p.activation_max) : FLT_MAX;
    post.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip_v2, lo, hi);
  }
  attr.set_post_ops(post);
  const dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, x,
                                          w_any, bias, out, strides, dilations, begin, end);
  dnnl::convolution_forward::primitive_desc pd(d, attr, engine());
  auto prepared = std::make_shared<Prepared>(Prepared{pd, dnnl::convolution_forward(pd), x, wd, bias, out, {}, {}, {}});
  prepared->scratchpad = pd.scratchpad_desc();
  if (pd.weights_desc() != wd) {
    prepared->packed_w = pd.weights_desc();
    prepared->pack.emplace(dnnl::reorder::primitive_desc(engine(), wd, engine(), pd.weights_desc()));
  }
  return prepared;
}

std::shared_ptr<const Prepared> prepared_for(const ConvProblem& p) {
  static std::mutex mutex;
  static std::map<ConvProblem, std::shared_ptr<const Prepared>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(p);
  if (it == cache.end()) it = cache.emplace(p, prepare(p)).first;
  return it->second;
}

}  // namespace

void run_conv(const ConvProblem& p, const float* x, const float* w, const float* bias, const float* side, float* out,
              PackedWeights* constant) {
  int64_t positions = 1;
  for (size_t i = 2; i < p.out_shape.size(); ++i) positions *= p.out_shape[i];
  if (positions * p.out_shape[0] * p.out_shape[1] == 0) return;
  if (p.x_shape[1] == 0) {
    // No input channel: the epilogue alone.
    const int64_t channels = p.out_shape[1];
    const float lo = static_cast<float>(p.activation_min), hi = static_cast<float>(p.activation_max);
    for (int64_t i = 0; i < p.out_shape[0] * channels * positions; ++i) {
      const int64_t o = p.channels_last ? i % channels : i / positions % channels;
      float v = bias ? bias[o] : 0.0f;
      if (side) v += side[i];  // in place too: element i is read before it is written
      out[i] = v > hi ? hi : v < lo ? lo : v;
    }
    return;
  }
  try {
    const std::shared_ptr<const Prepared> c = prepared_for(p);
    dnnl::engine& e = engine();
    // The calling thread's buffers, kept between calls: fresh ones would
    // page-fault every call (9 MB of packed weights for a 3x3, 512-channel conv).
    thread_local std::vector<uint8_t> scratch, packed;
    if (scratch.size() < c->scratchpad.get_size()) scratch.resize(c->scratchpad.get_size());
    dnnl::stream s(e);
    memory weights(c->w, e, const_cast<float*>(w));
    if (c->pack && constant) {
      const std::vector<uint8_t>& kept =
          constant->get({w, c.get()}, c->packed_w.get_size(), [&](uint8_t* into) {
            memory to(c->packed_w, e, into);
            c->pack->execute(s, weights, to);
            s.wait();
          });
      weights = memory(c->packed_w, e, const_cast<uint8_t*>(kept.data()));
    } else if (c->pack) {
      if (packed.size() < c->packed_w.get_size()) packed.resize(c->packed_w.get_size());
      memory to(c->packed_w, e, packed.data());
      c->pack->execute(s, weights, to);
      weights = to;
    }
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, memory(c->x, e, const_cast<float*>(x))},
        {DNNL_ARG_WEIGHTS, weights},
        {DNNL_ARG_DST, memory(c->out, e, out)},
        {DNNL_ARG_SCRATCHPAD, memory(c->scratchpad, e, scratch.data())},
    };
    if (p.has_bias) args.emplace(DNNL_ARG_BIAS, memory(c->bias, e, const_cast<float*>(bias)));
    if (p.has_side && !p.side_in_place) {
      args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, memory(c->out, e, const_cast<float*>(side)));
    }
    c->primitive.execute(s, args);
    s.wait();
  } catch (const dnnl::error& err) {
    throw InternalError(fmt::format("oneDNN convolution failed: {} (status {})", err.what(), static_cast<int>(err.status)),
                        __FILE__, __LINE__);
  }
}

}  // namespace stitch::runtime::cpu
