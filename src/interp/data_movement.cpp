// Layout and data-movement ops. Each is a strided copy: the op only decides the
// source and destination strides and offsets. Values move unchanged, so no
// rounding is needed except for pad's fill value.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

#include "interp/op_evaluators.h"
#include "interp/strided_loop.h"

namespace stitch::interp {

namespace {

struct StridedView {
  int64_t offset = 0;
  std::vector<int64_t> strides;
};

template <class T>
void strided_copy(const std::vector<int64_t>& extents, const T* src, const StridedView& from, T* dst,
                  const StridedView& to) {
  for_each_strided<2>(extents, {to.strides, from.strides}, {to.offset, from.offset},
                      [&](const Offsets<2>& o) { dst[o[0]] = src[o[1]]; });
}

StridedView dense(const std::vector<int64_t>& shape) { return {0, contiguous_strides(shape)}; }

// Where each output element of a layout op reads its input.
StridedView source_view(const OpCall& call) {
  const WideBuffer& in = call.in(0);
  const std::vector<int64_t> in_strides = contiguous_strides(in.shape());
  const Attrs& attrs = call.node.attrs;
  StridedView view;
  switch (call.op()) {
    case OpKind::Broadcast:
      view.strides = broadcast_strides(in.shape(), call.out_shape);
      return view;
    case OpKind::Transpose:
      for (int64_t axis : attrs.get("perm").as_ints()) view.strides.push_back(in_strides[axis]);
      return view;
    case OpKind::Slice: {
      const auto& start = attrs.get("start").as_ints();
      const auto& step = attrs.get("step").as_ints();
      for (size_t d = 0; d < in_strides.size(); ++d) {
        view.offset += start[d] * in_strides[d];
        // A step past the end leaves one element; its stride is never walked
        // and step * stride could overflow.
        view.strides.push_back(call.out_shape[d] > 1 ? step[d] * in_strides[d] : 0);
      }
      return view;
    }
    default: break;
  }
  STITCH_ASSERT(false, fmt::format("source_view: {} is not a strided view", op_name(call.op())));
}

template <class T>
WideBuffer concat(const OpCall& call) {
  WideBuffer out = call.make_output();
  const int64_t axis = call.node.attrs.get("axis").as_int();
  StridedView to = dense(call.out_shape);
  for (const WideBuffer* in : call.inputs) {
    strided_copy(in->shape(), in->data<T>(), dense(in->shape()), out.data<T>(), to);
    to.offset += in->shape()[axis] * to.strides[axis];
  }
  return out;
}

template <class T>
T pad_value(const OpCall& call) {
  const AttrValue& v = call.node.attrs.get("value");
  if constexpr (std::is_floating_point_v<T>) {
    return round_to_float_dtype(v.as_number(), call.out_dtype);
  } else {
    return v.is_bool() ? int64_t{v.as_bool()} : v.as_int();
  }
}

template <class T>
WideBuffer pad(const OpCall& call) {
  WideBuffer out = call.make_output();
  std::fill_n(out.data<T>(), out.numel(), pad_value<T>(call));
  const auto& low = call.node.attrs.get("low").as_ints();
  StridedView to = dense(call.out_shape);
  for (size_t d = 0; d < low.size(); ++d) to.offset += low[d] * to.strides[d];
  const WideBuffer& in = call.in(0);
  strided_copy(in.shape(), in.data<T>(), dense(in.shape()), out.data<T>(), to);
  return out;
}

// numpy `take`: an index in [-n, n) selects along the axis, negatives counting
// from the end. Checked up front so a bad index leaves nothing half written.
std::vector<int64_t> checked_indices(const OpCall& call, int64_t axis, int64_t extent) {
  const WideBuffer& indices = call.in(1);
  std::vector<int64_t> out(indices.ints(), indices.ints() + indices.numel());
  for (int64_t& i : out) {
    if (i < -extent || i >= extent) {
      throw UserError(fmt::format("gather: index {} is out of range for axis {} of extent {}", i, axis, extent));
    }
    if (i < 0) i += extent;
  }
  return out;
}

template <class T>
WideBuffer gather(const OpCall& call) {
  const WideBuffer& x = call.in(0);
  const int64_t axis = call.node.attrs.get("axis").as_int();
  const std::vector<int64_t>& shape = x.shape();
  const int64_t extent = shape[axis];
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  std::vector<int64_t> indices = checked_indices(call, axis, extent);
  WideBuffer out = call.make_output();
  const T* src = x.data<T>();
  T* dst = out.data<T>();
  const int64_t count = static_cast<int64_t>(indices.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t k = 0; k < count; ++k) {
      std::copy_n(src + (o * extent + indices[k]) * inner, inner, dst + (o * count + k) * inner);
    }
  }
  return out;
}

}  // namespace

WideBuffer evaluate_layout(const OpCall& call) {
  return with_storage_type(call.out_dtype, [&]<class T>() {
    switch (call.op()) {
      case OpKind::Reshape: {
        WideBuffer out = call.make_output();
        std::copy_n(call.in(0).data<T>(), out.numel(), out.data<T>());
        return out;
      }
      case OpKind::Concat: return concat<T>(call);
      case OpKind::Pad: return pad<T>(call);
      default: {
        WideBuffer out = call.make_output();
        strided_copy(call.out_shape, call.in(0).data<T>(), source_view(call), out.data<T>(),
                     dense(call.out_shape));
        return out;
      }
    }
  });
}

WideBuffer evaluate_gather(const OpCall& call) {
  return with_storage_type(call.out_dtype, [&]<class T>() { return gather<T>(call); });
}

}  // namespace stitch::interp
