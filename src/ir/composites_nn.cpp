// The convolution and pooling composites (docs/text-format.md, Composite ops):
// windows over the spatial axes of [N, C, spatial...] as strided slices of the
// padded input, so every planner and back end runs them without an op of their
// own. conv: the slices stacked (im2col) into one batched dot per group, or,
// depthwise, a sum of the slices times their weights that fuses into one
// kernel; max_pool and avg_pool: the elementwise max or sum of the slices.
#include "ir/composites_nn.h"

#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

namespace stitch {

namespace {

using Ints = std::vector<int64_t>;

Ints ints_or(const Attrs& attrs, const char* name, size_t count, int64_t fallback) {
  const AttrValue* v = attrs.find(name);
  if (!v) return Ints(count, fallback);
  if (!v->is_ints()) throw UserError(fmt::format("attribute '{}' must be a list of integers, got {}", name, v->str()));
  return v->as_ints();
}

}  // namespace

std::vector<Window> windows(std::string_view op, const Shape& x, const Ints& kernel, const Attrs& attrs,
                            bool ceil_mode) {
  const size_t spatial = x.size() - 2;
  Ints strides = ints_or(attrs, "strides", spatial, 1);
  Ints dilations = ints_or(attrs, "dilations", spatial, 1);
  Ints pads = ints_or(attrs, "pads", 2 * spatial, 0);
  if (kernel.size() != spatial || strides.size() != spatial || dilations.size() != spatial ||
      pads.size() != 2 * spatial) {
    throw UserError(fmt::format("{}: kernel, strides and dilations need {} entries and pads {}", op, spatial,
                                2 * spatial));
  }
  std::vector<Window> w(spatial);
  for (size_t i = 0; i < spatial; ++i) {
    const Dim& extent = x[2 + i];
    if (extent.is_symbolic()) {
      throw UserError(fmt::format("{}: spatial axis {} is the symbol {}; its extent must be static", op, 2 + i,
                                  extent.name()));
    }
    w[i] = {kernel[i], strides[i], dilations[i], pads[i], pads[spatial + i], extent.extent(), 0};
    if (w[i].kernel < 1 || w[i].stride < 1 || w[i].dilation < 1 || w[i].pad_begin < 0 || w[i].pad_end < 0) {
      throw UserError(fmt::format("{}: kernel, strides and dilations must be positive and pads non-negative", op));
    }
    const int64_t span = w[i].dilation * (w[i].kernel - 1) + 1;
    const int64_t room = w[i].in + w[i].pad_begin + w[i].pad_end - span;
    if (room < 0) throw UserError(fmt::format("{}: the window is larger than the padded axis {}", op, 2 + i));
    w[i].out = (ceil_mode ? (room + w[i].stride - 1) / w[i].stride : room / w[i].stride) + 1;
    // A last window that would start in the end padding is dropped (as PyTorch
    // and ONNX do); what the rest reach past the end padding is padded too.
    if (ceil_mode && (w[i].out - 1) * w[i].stride >= w[i].in + w[i].pad_begin) --w[i].out;
  }
  return w;
}

namespace {

// x padded for the windows: the attributes' pads with `value`, then what ceil
// mode reaches past them with `beyond`.
ValueId padded(GraphBuilder& b, ValueId x, const std::vector<Window>& w, double value, double beyond) {
  const size_t rank = w.size() + 2;
  Ints low(rank, 0), high(rank, 0), extra(rank, 0);
  bool any = false, any_extra = false;
  for (size_t i = 0; i < w.size(); ++i) {
    low[2 + i] = w[i].pad_begin;
    high[2 + i] = w[i].pad_end;
    const int64_t reach = (w[i].out - 1) * w[i].stride + w[i].dilation * (w[i].kernel - 1) + 1;
    extra[2 + i] = std::max<int64_t>(0, reach - (w[i].in + w[i].pad_begin + w[i].pad_end));
    any = any || w[i].pad_begin > 0 || w[i].pad_end > 0;
    any_extra = any_extra || extra[2 + i] > 0;
  }
  if (any) x = b.op(OpKind::Pad, {x}, {{"low", AttrValue(low)}, {"high", AttrValue(high)}, {"value", value}});
  if (any_extra) {
    x = b.op(OpKind::Pad, {x}, {{"low", AttrValue(Ints(rank, 0))}, {"high", AttrValue(extra)}, {"value", beyond}});
  }
  return x;
}

// Every kernel position's strided slice of the padded input, [N, C, out...]
// each, the first kernel axis slowest.
std::vector<ValueId> window_slices(GraphBuilder& b, ValueId xp, const std::vector<Window>& w) {
  const Shape shape = b.graph().type(xp).shape;
  std::vector<ValueId> slices;
  Ints position(w.size(), 0);
  for (;;) {
    Ints start(shape.size(), 0), step(shape.size(), 1);
    Shape stop = shape;
    bool whole = true;
    for (size_t i = 0; i < w.size(); ++i) {
      start[2 + i] = position[i] * w[i].dilation;
      step[2 + i] = w[i].stride;
      stop[2 + i] = Dim(start[2 + i] + (w[i].out - 1) * w[i].stride + 1);
      whole = whole && start[2 + i] == 0 && w[i].stride == 1 && stop[2 + i] == shape[2 + i];
    }
    slices.push_back(whole ? xp
                           : b.op(OpKind::Slice, {xp},
                                  {{"start", AttrValue(start)}, {"stop", AttrValue(stop)}, {"step", AttrValue(step)}}));
    size_t axis = w.size();
    while (axis > 0 && ++position[axis - 1] == w[axis - 1].kernel) position[--axis] = 0;
    if (axis == 0) return slices;
  }
}

// [1, C, 1, ...]: a per-channel vector broadcast over the batch and space.
ValueId per_channel(GraphBuilder& b, ValueId v, size_t rank) {
  Shape s(rank, Dim(1));
  s[1] = b.graph().type(v).shape.at(0);
  return b.reshape(v, s);
}

}  // namespace

ValueId expand_conv(GraphBuilder& b, const std::vector<ValueId>& args, const Attrs& attrs) {
  const Shape x = b.graph().type(args[0]).shape;
  const Shape wshape = b.graph().type(args[1]).shape;
  const std::vector<Window> w = conv_windows(x, wshape, attrs);
  const int64_t groups = attrs.get("groups").as_int();
  const int64_t out_channels = wshape[0].extent(), per_group = wshape[1].extent();
  const ConvOperands operands = conv_operands(args.size(), attrs);
  std::vector<ValueId> slices = window_slices(b, padded(b, args[0], w, 0.0, 0.0), w);
  const auto taps = static_cast<int64_t>(slices.size());
  std::optional<ValueId> y;
  if (per_group == 1 && out_channels == groups) {
    // Depthwise: y = sum over taps of slice * w[:, 0, tap], per channel.
    ValueId wt = b.reshape(args[1], Shape{Dim(out_channels), Dim(taps)});
    for (int64_t t = 0; t < taps; ++t) {
      ValueId column = b.op(OpKind::Slice, {wt}, {{"start", AttrValue(Ints{0, t})},
                                                  {"stop", AttrValue(Shape{Dim(out_channels), Dim(t + 1)})}});
      ValueId term = b.mul(slices[t], per_channel(b, b.reshape(column, Shape{Dim(out_channels)}), x.size()));
      y = y ? b.add(*y, term) : term;
    }
  } else {
    // im2col: [N, C, taps, P] -> [N, groups, C / groups * taps, P], times the
    // weights as [groups, O / groups, C / groups * taps].
    int64_t positions = 1;
    for (const Window& wi : w) positions *= wi.out;
    std::vector<Operand> columns;
    for (ValueId s : slices) columns.emplace_back(b.reshape(s, Shape{x[0], x[1], Dim(1), Dim(positions)}));
    ValueId patches = taps == 1 ? columns[0].value : b.op(OpKind::Concat, columns, {{"axis", int64_t{2}}});
    patches = b.reshape(patches, Shape{x[0], Dim(groups), Dim(per_group * taps), Dim(positions)});
    ValueId weights = b.reshape(args[1], Shape{Dim(groups), Dim(out_channels / groups), Dim(per_group * taps)});
    y = b.reshape(b.op(OpKind::Dot, {weights, patches}), window_result_shape(x, Dim(out_channels), w));
  }
  // The epilogue: bias, side input, clamp.
  if (operands.bias) y = b.add(*y, per_channel(b, args[operands.bias_index()], x.size()));
  if (operands.side) y = b.add(*y, args[operands.side_index()]);
  const AttrValue* lo = attrs.find("activation_min");
  const AttrValue* hi = attrs.find("activation_max");
  const double inf = std::numeric_limits<double>::infinity();
  if ((lo && lo->as_number() != -inf) || (hi && hi->as_number() != inf)) {
    y = b.op(OpKind::Clamp, {*y, Operand(lo ? lo->as_number() : -inf), Operand(hi ? hi->as_number() : inf)});
  }
  return *y;
}

ValueId expand_pool(GraphBuilder& b, std::string_view name, ValueId x, const Attrs& attrs, const std::string& r) {
  const Shape shape = b.graph().type(x).shape;
  if (shape.size() < 3) throw UserError(fmt::format("{} takes [N, C, spatial...], got {}", name, shape_str(shape)));
  const AttrValue* k = attrs.find("kernel_shape");
  if (!k || !k->is_ints()) throw UserError(fmt::format("{} needs kernel_shape", name));
  const AttrValue* c = attrs.find("ceil_mode");
  const bool ceil_mode = c && c->as_bool();
  std::vector<Window> w = windows(name, shape, k->as_ints(), attrs, ceil_mode);
  const bool is_max = name == "max_pool";
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<ValueId> slices = window_slices(b, padded(b, x, w, is_max ? -inf : 0.0, is_max ? -inf : 0.0), w);
  ValueId acc = slices[0];
  for (size_t t = 1; t < slices.size(); ++t) {
    const bool last = t + 1 == slices.size();
    acc = is_max ? b.max(acc, slices[t], last ? r : "") : b.add(acc, slices[t]);
  }
  if (is_max) return slices.size() == 1 ? b.max(acc, acc, r) : acc;
  // The divisor: the taps that fall inside the input, or inside it or the
  // explicit pads with count_include_pad; never what ceil mode reaches beyond.
  const AttrValue* include = attrs.find("count_include_pad");
  const bool include_pad = include && include->as_bool();
  Shape ones_shape(shape.size(), Dim(1));
  for (size_t i = 0; i < w.size(); ++i) ones_shape[2 + i] = shape[2 + i];
  ValueId ones = b.constant(1.0, b.graph().type(x).dtype, ones_shape);
  std::vector<ValueId> counted = window_slices(b, padded(b, ones, w, include_pad ? 1.0 : 0.0, 0.0), w);
  ValueId count = counted[0];
  for (size_t t = 1; t < counted.size(); ++t) count = b.add(count, counted[t]);
  return b.div(acc, count, r);
}

std::vector<Window> conv_windows(const Shape& x, const Shape& wshape, const Attrs& attrs) {
  if (x.size() < 3 || wshape.size() != x.size()) {
    throw UserError(fmt::format("conv takes x [N, C, spatial...] and w [O, C / groups, kernel...] of one rank >= 3, "
                                "got {} and {}",
                                shape_str(x), shape_str(wshape)));
  }
  for (const Dim& d : wshape) {
    if (d.is_symbolic()) throw UserError("conv: the weights' extents must be static");
  }
  const AttrValue* g = attrs.find("groups");
  const int64_t groups = g ? g->as_int() : 1;
  const int64_t out_channels = wshape[0].extent(), per_group = wshape[1].extent();
  if (x[1].is_symbolic() || groups < 1 || x[1].extent() != groups * per_group || out_channels % groups != 0) {
    throw UserError(fmt::format("conv: {} input channels, {} per group in the weights and {} groups do not agree",
                                x[1].str(), per_group, groups));
  }
  Ints kernel;
  for (size_t i = 2; i < wshape.size(); ++i) kernel.push_back(wshape[i].extent());
  return windows("conv", x, kernel, attrs, false);
}

ConvOperands conv_operands(size_t operand_count, const Attrs& attrs) {
  const AttrValue* side = attrs.find("side_input");
  ConvOperands o;
  o.side = side && side->as_bool();
  o.bias = operand_count == (o.side ? 4u : 3u);
  return o;
}

std::vector<int64_t> channels_first_perm(size_t rank) {
  std::vector<int64_t> p{0, static_cast<int64_t>(rank) - 1};
  for (size_t i = 1; i + 1 < rank; ++i) p.push_back(static_cast<int64_t>(i));
  return p;
}

std::vector<int64_t> channels_last_perm(size_t rank) {
  std::vector<int64_t> p{0};
  for (size_t i = 2; i < rank; ++i) p.push_back(static_cast<int64_t>(i));
  p.push_back(1);
  return p;
}

bool is_depthwise_conv(const Dim& channels, const Shape& wshape, int64_t groups) {
  return wshape.at(1) == Dim(1) && wshape.at(0) == Dim(groups) && channels == Dim(groups);
}

Shape window_result_shape(const Shape& x, Dim channels, const std::vector<Window>& w) {
  Shape s{x[0], channels};
  for (const Window& wi : w) s.emplace_back(wi.out);
  return s;
}

}  // namespace stitch
