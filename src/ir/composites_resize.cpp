#include "ir/composites_resize.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ir/composite_attrs.h"

namespace stitch {

namespace {

// One resized axis: its extents, the scale the coordinates use, and the
// region of interest (tf_crop_and_resize only).
struct AxisResize {
  int64_t axis = 0, in = 0, out = 0;
  double scale = 1.0, roi_start = 0.0, roi_end = 1.0;
};

struct ResizeMode {
  std::string mode, transform, nearest;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0.0;
};

// One gather along the axis: the source index (i64 [out], clamped into the
// input) and its weight (f64 [out]; none for nearest).
struct Tap {
  ValueId index;
  std::optional<ValueId> weight;
};

ValueId f64_iota(GraphBuilder& b, int64_t n) {
  return b.op(OpKind::Iota, {}, {{"shape", AttrValue(Shape{Dim(n)})}, {"axis", 0}, {"dtype", DType::f64}});
}

// v / d, where v takes the values value_at(0 .. n-1): a multiply by 1 / d
// when that gives the same double at every position (always for a power of
// two), which kernels compute many times faster than a division.
ValueId divide(GraphBuilder& b, ValueId v, const std::function<double(int64_t)>& value_at, int64_t n, double d) {
  const double inverse = 1.0 / d;
  for (int64_t i = 0; i < n; ++i) {
    if (value_at(i) / d != value_at(i) * inverse) return b.div(v, d);
  }
  return b.mul(v, inverse);
}

// The source coordinate of each output position (f64 [out]), ONNX's formula
// for the mode evaluated in the reference's order, with the reference's
// "output width" scale * in (which need not equal `out`).
ValueId source_coordinate(GraphBuilder& b, const AxisResize& a, const std::string& transform) {
  const double in = static_cast<double>(a.in);
  const double width = a.scale * in;
  const ValueId y = f64_iota(b, a.out);
  auto at = [](int64_t i) { return static_cast<double>(i); };
  auto centre = [](int64_t i) { return static_cast<double>(i) + 0.5; };
  auto half_pixel = [&] { return b.sub(divide(b, b.add(y, 0.5), centre, a.out, a.scale), 0.5); };
  auto splat = [&](double v) { return b.constant(v, DType::f64, {Dim(a.out)}); };
  if (transform == "half_pixel") return half_pixel();
  if (transform == "half_pixel_symmetric") {
    const double offset = in / 2 * (1 - static_cast<double>(a.out) / width);
    return b.sub(b.add(divide(b, b.add(y, 0.5), centre, a.out, a.scale), offset), 0.5);
  }
  if (transform == "pytorch_half_pixel") return width == 1.0 ? splat(-0.5) : half_pixel();
  if (transform == "align_corners") {
    if (width == 1.0) return splat(0.0);
    return divide(b, b.mul(y, in - 1), [&](int64_t i) { return at(i) * (in - 1); }, a.out, width - 1);
  }
  if (transform == "asymmetric") return divide(b, y, at, a.out, a.scale);
  if (transform == "tf_crop_and_resize") {
    const double extent = a.roi_end - a.roi_start;
    const ValueId x = width == 1.0 ? splat(extent * (in - 1) / 2) : b.div(b.mul(b.mul(y, extent), in - 1), width - 1);
    return b.add(x, a.roi_start * (in - 1));
  }
  throw UserError(fmt::format("resize: unknown coordinate_transformation_mode \"{}\"", transform));
}

ValueId clamped_index(GraphBuilder& b, ValueId position_f64, int64_t in) {
  return b.op(OpKind::Clamp, {b.cast(position_f64, DType::i64), Operand(int64_t{0}), Operand(in - 1)});
}

// The nearest mode's one tap: floor(x), moved up by the rounding rule.
Tap nearest_tap(GraphBuilder& b, ValueId x, ValueId floor_x, int64_t in, const std::string& rule) {
  if (rule == "floor") return {clamped_index(b, floor_x, in), std::nullopt};
  if (rule == "ceil") return {clamped_index(b, b.unary(OpKind::Ceil, x), in), std::nullopt};
  if (rule != "round_prefer_floor" && rule != "round_prefer_ceil") {
    throw UserError(fmt::format("resize: unknown nearest_mode \"{}\"", rule));
  }
  const ValueId frac = b.sub(x, floor_x);
  const ValueId up = b.binary(rule == "round_prefer_floor" ? OpKind::Gt : OpKind::Ge, frac, 0.5);
  return {clamped_index(b, b.add(floor_x, b.cast(up, DType::f64)), in), std::nullopt};
}

// ONNX's cubic convolution weight of the tap at `offset` (-1, 0, 1, 2) from
// floor(x), for fraction r.
ValueId cubic_weight(GraphBuilder& b, ValueId r, int offset, double A) {
  // Taps -1 and 2 use the outer piece at distance 1 + r and 2 - r; taps 0 and
  // 1 the inner piece at r and 1 - r.
  const ValueId one_minus_r = b.sub(1.0, r);
  if (offset == -1 || offset == 2) {
    const ValueId t = offset == -1 ? b.add(r, 1.0) : b.add(one_minus_r, 1.0);
    return b.sub(b.mul(b.add(b.mul(b.sub(b.mul(t, A), 5 * A), t), 8 * A), t), 4 * A);
  }
  const ValueId t = offset == 0 ? r : one_minus_r;
  return b.add(b.mul(b.mul(b.sub(b.mul(t, A + 2), A + 3), t), t), 1.0);
}

std::vector<Tap> taps(GraphBuilder& b, const AxisResize& a, const ResizeMode& m, ValueId x) {
  const ValueId floor_x = b.unary(OpKind::Floor, x);
  if (m.mode == "nearest") return {nearest_tap(b, x, floor_x, a.in, m.nearest)};
  const ValueId r = b.sub(x, floor_x);
  const ValueId base = b.cast(floor_x, DType::i64);
  std::vector<int> offsets = m.mode == "linear" ? std::vector<int>{0, 1} : std::vector<int>{-1, 0, 1, 2};
  std::vector<Tap> out;
  std::vector<ValueId> raw;
  for (int k : offsets) {
    const ValueId at = k == 0 ? base : b.add(base, int64_t{k});
    const ValueId clamped = b.op(OpKind::Clamp, {at, Operand(int64_t{0}), Operand(a.in - 1)});
    ValueId w = m.mode == "linear" ? (k == 0 ? b.sub(1.0, r) : r) : cubic_weight(b, r, k, m.cubic_a);
    if (m.exclude_outside) {
      const ValueId inside = b.binary(OpKind::Eq, at, clamped);
      w = b.op(OpKind::Select, {inside, w, Operand(0.0)});
    }
    out.push_back({clamped, w});
  }
  if (m.exclude_outside) {
    ValueId sum = *out[0].weight;
    for (size_t i = 1; i < out.size(); ++i) sum = b.add(sum, *out[i].weight);
    const ValueId zero = b.binary(OpKind::Eq, sum, 0.0);
    sum = b.op(OpKind::Select, {zero, Operand(1.0), sum});
    for (Tap& t : out) t.weight = b.div(*t.weight, sum);
  }
  return out;
}

// x resized along one axis; the last op is named `name` ("" for a fresh one).
ValueId resize_axis(GraphBuilder& b, ValueId x, const AxisResize& a, const ResizeMode& m, const std::string& name) {
  const TensorType& xt = b.graph().type(x);
  const DType dtype = xt.dtype;
  const size_t rank = xt.shape.size();
  const ValueId position = source_coordinate(b, a, m.transform);
  // A per-position weight, shaped [out, 1, ...] to broadcast against the axis.
  Shape along{Dim(a.out)};
  for (size_t i = static_cast<size_t>(a.axis) + 1; i < rank; ++i) along.emplace_back(1);
  const bool crop = m.transform == "tf_crop_and_resize";
  std::optional<ValueId> acc;
  const std::vector<Tap> ts = taps(b, a, m, position);
  for (size_t i = 0; i < ts.size(); ++i) {
    const bool last = i + 1 == ts.size() && !crop;
    const std::string out_name = last ? name : "";
    const ValueId g = b.op(OpKind::Gather, {x, ts[i].index}, {{"axis", a.axis}}, ts[i].weight ? "" : out_name);
    if (!ts[i].weight) {
      acc = g;
      continue;
    }
    const ValueId w = b.reshape(b.cast(*ts[i].weight, dtype), along);
    acc = acc ? b.add(*acc, b.mul(g, w), out_name) : b.mul(g, w, ts.size() == 1 ? out_name : "");
  }
  if (!crop) return *acc;
  // tf_crop_and_resize: positions outside the input take extrapolation_value.
  const ValueId outside = b.binary(OpKind::Or, b.binary(OpKind::Lt, position, 0.0),
                                   b.binary(OpKind::Gt, position, static_cast<double>(a.in - 1)));
  const ValueId mask = b.reshape(outside, along);
  const Operand fill = is_float(dtype) ? Operand(m.extrapolation) : Operand(static_cast<int64_t>(m.extrapolation));
  return b.op(OpKind::Select, {mask, fill, *acc}, {}, name);
}

std::vector<AxisResize> resized_axes(const Shape& shape, const CompositeAttrs& a) {
  const std::optional<std::vector<int64_t>> sizes = a.ints("sizes");
  if (!sizes) throw UserError("resize needs sizes (the output extents of the resized axes)");
  const int64_t rank = static_cast<int64_t>(shape.size());
  std::vector<int64_t> axes = a.ints("axes").value_or(std::vector<int64_t>{});
  if (!a.ints("axes")) {
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  const std::vector<double> scales = a.floats("scales").value_or(std::vector<double>{});
  const std::vector<double> roi = a.floats("roi").value_or(std::vector<double>{});
  const size_t n = axes.size();
  if (sizes->size() != n || (!scales.empty() && scales.size() != n) || (!roi.empty() && roi.size() != 2 * n)) {
    throw UserError(fmt::format("resize: {} axes need as many sizes and scales and twice as many roi entries", n));
  }
  std::vector<AxisResize> out;
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (size_t i = 0; i < n; ++i) {
    AxisResize r;
    r.axis = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (r.axis < 0 || r.axis >= rank || seen[static_cast<size_t>(r.axis)]) {
      throw UserError(fmt::format("resize: axis {} is out of range or repeated for rank {}", axes[i], rank));
    }
    seen[static_cast<size_t>(r.axis)] = true;
    const Dim& d = shape[static_cast<size_t>(r.axis)];
    r.out = (*sizes)[i];
    if (d.is_symbolic()) {
      if (r.out == -1) continue;  // a symbolic axis left as it is
      throw UserError(fmt::format("resize: axis {} has the symbolic extent {}; resized axes must be static", r.axis,
                                  d.str()));
    }
    r.in = d.extent();
    if (r.out < 1 || r.in < 1) throw UserError(fmt::format("resize: axis {} resizes {} to {}", r.axis, r.in, r.out));
    r.scale = scales.empty() ? static_cast<double>(r.out) / static_cast<double>(r.in) : scales[i];
    if (!(r.scale > 0) || !std::isfinite(r.scale)) {
      throw UserError(fmt::format("resize: the scale of axis {} must be positive, got {}", r.axis, r.scale));
    }
    if (!roi.empty()) {
      r.roi_start = roi[i];
      r.roi_end = roi[n + i];
    }
    out.push_back(r);
  }
  return out;
}

}  // namespace

ValueId expand_resize(GraphBuilder& b, ValueId x, const Attrs& attrs, const std::string& result_name) {
  const CompositeAttrs a("resize", attrs);
  const TensorType xt = b.graph().type(x);
  ResizeMode m;
  m.mode = a.string("mode", "nearest");
  m.transform = a.string("coordinate_transformation_mode", "half_pixel");
  m.nearest = a.string("nearest_mode", "round_prefer_floor");
  m.cubic_a = a.number("cubic_coeff_a", -0.75);
  m.exclude_outside = a.boolean("exclude_outside", false);
  m.extrapolation = a.number("extrapolation_value", 0.0);
  if (m.mode != "nearest" && m.mode != "linear" && m.mode != "cubic") {
    throw UserError(fmt::format("resize: mode must be \"nearest\", \"linear\" or \"cubic\", got \"{}\"", m.mode));
  }
  if (m.mode != "nearest" && !is_float(xt.dtype)) {
    throw UserError(fmt::format("resize: {} mode needs a floating operand, got {}", m.mode, dtype_name(xt.dtype)));
  }
  if (xt.dtype == DType::boolean) throw UserError("resize: the operand must be numeric, got bool");
  std::vector<AxisResize> axes;
  for (const AxisResize& r : resized_axes(xt.shape, a)) {
    // An axis kept as it is (scale 1 within rounding, same extent, whole roi)
    // is left alone, as the reference does.
    const bool whole = m.transform != "tf_crop_and_resize" || (r.roi_start == 0.0 && r.roi_end == 1.0);
    if (r.out == r.in && std::abs(r.scale - 1.0) <= 1e-9 && whole) continue;
    axes.push_back(r);
  }
  if (axes.empty()) return b.reshape(x, xt.shape, result_name);
  ValueId y = x;
  for (size_t i = 0; i < axes.size(); ++i) y = resize_axis(b, y, axes[i], m, i + 1 == axes.size() ? result_name : "");
  return y;
}

}  // namespace stitch
