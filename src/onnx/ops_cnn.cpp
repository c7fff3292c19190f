// ONNX convolution-network ops (docs/onnx.md, Ops): Conv, MaxPool and
// AveragePool as the IR's conv, max_pool and avg_pool composites (auto_pad
// turned into pads), GlobalAveragePool and GlobalMaxPool as reductions over
// the spatial axes, BatchNormalization (inference) as a per-channel scale and
// shift, Resize as the resize composite.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "onnx/context.h"

namespace stitch::onnx_import {

namespace {

using ::onnx::NodeProto;
using Ints = std::vector<int64_t>;

// The pads of a windowed op: its `pads`, or what `auto_pad` SAME_UPPER /
// SAME_LOWER needs for ceil(in / stride) outputs (the odd one at the end for
// UPPER, at the start for LOWER), or none for VALID.
Ints pads_of(const NodeProto& n, const Shape& x, const Ints& kernel, const Ints& strides, const Ints& dilations) {
  const size_t spatial = kernel.size();
  const std::string mode = ImportContext::string_attr(n, "auto_pad", "NOTSET");
  if (mode == "NOTSET") return ImportContext::ints_attr(n, "pads").value_or(Ints(2 * spatial, 0));
  if (mode == "VALID") return Ints(2 * spatial, 0);
  if (mode != "SAME_UPPER" && mode != "SAME_LOWER") throw UserError(fmt::format("auto_pad '{}'", mode));
  Ints pads(2 * spatial, 0);
  for (size_t i = 0; i < spatial; ++i) {
    const Dim& d = x.at(2 + i);
    if (d.is_symbolic()) throw UserError(fmt::format("auto_pad {} on the symbolic axis {}", mode, d.name()));
    const int64_t out = (d.extent() + strides[i] - 1) / strides[i];
    const int64_t total =
        std::max<int64_t>(0, (out - 1) * strides[i] + dilations[i] * (kernel[i] - 1) + 1 - d.extent());
    const int64_t small = total / 2, large = total - small;
    pads[i] = mode == "SAME_UPPER" ? small : large;
    pads[spatial + i] = mode == "SAME_UPPER" ? large : small;
  }
  return pads;
}

Attrs window_attrs(const NodeProto& n, const Shape& x, const Ints& kernel, bool dilated) {
  const size_t spatial = kernel.size();
  if (x.size() != spatial + 2) {
    throw UserError(fmt::format("a kernel of {} axes on an input of rank {}", spatial, x.size()));
  }
  Ints strides = ImportContext::ints_attr(n, "strides").value_or(Ints(spatial, 1));
  Ints dilations = dilated ? ImportContext::ints_attr(n, "dilations").value_or(Ints(spatial, 1)) : Ints(spatial, 1);
  if (strides.size() != spatial || dilations.size() != spatial) {
    throw UserError(fmt::format("strides and dilations need {} entries", spatial));
  }
  Attrs a{{"strides", AttrValue(strides)}, {"pads", AttrValue(pads_of(n, x, kernel, strides, dilations))}};
  if (dilated) a.set("dilations", AttrValue(dilations));
  return a;
}

void add_conv(ImportContext& ctx, const NodeProto& n) {
  ImportContext::require_inputs(n, 2, 3);
  ValueId x = ctx.input(n, 0);
  ValueId w = ctx.input(n, 1);
  const Shape wshape = ctx.type(w).shape;
  Ints kernel;
  for (size_t i = 2; i < wshape.size(); ++i) {
    if (wshape[i].is_symbolic()) throw UserError("the weights' extents must be static");
    kernel.push_back(wshape[i].extent());
  }
  if (auto given = ImportContext::ints_attr(n, "kernel_shape"); given && *given != kernel) {
    throw UserError("kernel_shape disagrees with the weights' shape");
  }
  Attrs a = window_attrs(n, ctx.type(x).shape, kernel, true);
  a.set("groups", AttrValue(ImportContext::int_attr(n, "group", 1)));
  std::vector<Operand> args{x, w};
  if (ImportContext::has_input(n, 2)) args.emplace_back(ctx.input(n, 2));
  ctx.define(n, ctx.builder().op("conv", args, a, ctx.out_name(n)));
}

void add_pool(ImportContext& ctx, const NodeProto& n, bool is_max) {
  ImportContext::require_inputs(n, 1, 1);
  if (is_max && ImportContext::wants_output(n, 1)) throw UserError("the Indices output of MaxPool is not supported");
  if (is_max && ImportContext::int_attr(n, "storage_order", 0) != 0) throw UserError("storage_order 1");
  ValueId x = ctx.input(n, 0);
  std::optional<Ints> kernel = ImportContext::ints_attr(n, "kernel_shape");
  if (!kernel) throw UserError("kernel_shape is missing");
  // AveragePool has dilations from opset 19.
  Attrs a = window_attrs(n, ctx.type(x).shape, *kernel, is_max || ctx.opset() >= 19);
  a.set("kernel_shape", AttrValue(*kernel));
  a.set("ceil_mode", AttrValue(ImportContext::int_attr(n, "ceil_mode", 0) != 0));
  if (!is_max) {
    if (a.find("dilations") && a.find("dilations")->as_ints() != Ints(kernel->size(), 1)) {
      throw UserError("AveragePool with dilations");
    }
    a = Attrs{{"kernel_shape", *a.find("kernel_shape")}, {"strides", *a.find("strides")}, {"pads", *a.find("pads")},
              {"ceil_mode", *a.find("ceil_mode")},
              {"count_include_pad", AttrValue(ImportContext::int_attr(n, "count_include_pad", 0) != 0)}};
  }
  ctx.define(n, ctx.builder().op(is_max ? "max_pool" : "avg_pool", {x}, a, ctx.out_name(n)));
}

void add_global_pool(ImportContext& ctx, const NodeProto& n, OpKind kind) {
  ImportContext::require_inputs(n, 1, 1);
  ValueId x = ctx.input(n, 0);
  if (ctx.rank(x) < 3) throw UserError(fmt::format("takes [N, C, spatial...], got {}", ctx.type(x).str()));
  Ints axes;
  for (int64_t d = 2; d < ctx.rank(x); ++d) axes.push_back(d);
  ctx.define(n, ctx.builder().reduce(kind, x, axes, true, ctx.out_name(n)));
}

// BatchNormalization in inference: (x - mean) / sqrt(var + epsilon) * scale + B,
// the per-channel factor and offset computed once (from initializers, folded).
void add_batch_norm(ImportContext& ctx, const NodeProto& n) {
  ImportContext::require_inputs(n, 5, 5);
  if (ImportContext::int_attr(n, "training_mode", 0) != 0 || ImportContext::wants_output(n, 1) ||
      ImportContext::wants_output(n, 2)) {
    throw UserError("BatchNormalization in training mode (running statistics as outputs) is not supported");
  }
  GraphBuilder& b = ctx.builder();
  ValueId x = ctx.input(n, 0);
  const int64_t rank = ctx.rank(x);
  if (rank < 2) throw UserError(fmt::format("takes [N, C, ...], got {}", ctx.type(x).str()));
  const double eps = ImportContext::float_attr(n, "epsilon", 1e-5);
  Shape per_channel(static_cast<size_t>(rank), Dim(1));
  per_channel[1] = ctx.type(x).shape[1];
  auto channel = [&](int i) { return b.reshape(ctx.input(n, i), per_channel); };
  ValueId factor = b.mul(channel(1), b.unary(OpKind::Rsqrt, b.add(channel(4), eps)));
  ValueId offset = b.sub(channel(2), b.mul(channel(3), factor));
  ctx.define(n, b.add(b.mul(x, factor), offset, ctx.out_name(n)));
}

// Resize (opset 13 on): the resize composite. roi, scales and sizes must be
// known; a symbolic axis may only keep its extent (scale 1, or its own size).
// antialias and a keep_aspect_ratio_policy other than stretch with sizes are
// handled as the reference does for the policy and refused for antialias.
void add_resize(ImportContext& ctx, const NodeProto& n) {
  ImportContext::require_inputs(n, 1, 4);
  if (ImportContext::int_attr(n, "antialias", 0) != 0) throw UserError("Resize with antialias is not supported");
  ValueId x = ctx.input(n, 0);
  const Shape shape = ctx.type(x).shape;
  const int64_t rank = ctx.rank(x);
  Ints axes;
  if (auto given = ImportContext::ints_attr(n, "axes")) {
    for (int64_t a : *given) axes.push_back(ImportContext::normalize_axis(a, rank));
  } else {
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  }
  auto known_floats = [&](int i, const char* what) {
    std::vector<double> v;
    if (!ImportContext::has_input(n, i)) return v;
    const Tensor& t = ctx.known_input(n, i, what);
    for (int64_t k = 0; k < t.numel(); ++k) v.push_back(t.get_f64(k));
    return v;
  };
  const std::vector<double> roi = known_floats(1, "the roi input");
  std::vector<double> scales = known_floats(2, "the scales input");
  std::vector<SymInt> sizes;
  if (ImportContext::has_input(n, 3)) sizes = ctx.known_sym_ints(n, 3, "the sizes input");
  if (scales.empty() == sizes.empty()) throw UserError("Resize needs exactly one of scales and sizes");
  const size_t count = axes.size();
  if ((!scales.empty() && scales.size() != count) || (!sizes.empty() && sizes.size() != count)) {
    throw UserError(fmt::format("scales or sizes has {} entries for {} axes", std::max(scales.size(), sizes.size()),
                                count));
  }
  Ints out(count, -1);
  if (!sizes.empty()) {
    // The reference's scales: out / in per axis, or one scale for every axis
    // under keep_aspect_ratio_policy, the sizes then rounded from it.
    const std::string policy = ImportContext::string_attr(n, "keep_aspect_ratio_policy", "stretch");
    std::vector<double> ratio(count, 1.0);
    for (size_t i = 0; i < count; ++i) {
      const Dim& d = shape[static_cast<size_t>(axes[i])];
      const SymInt& s = sizes[i];
      if (d.is_symbolic() || !s.is_static()) {
        if (s.symbol != (d.is_symbolic() ? d.name() : "")) {
          throw UserError(fmt::format("axis {} ({}) resized to {}: resized axes must be static", axes[i], d.str(),
                                      s.str()));
        }
        continue;
      }
      out[i] = s.value;
      ratio[i] = static_cast<double>(s.value) / static_cast<double>(d.extent());
    }
    if (policy == "not_larger" || policy == "not_smaller") {
      double one = policy == "not_larger" ? *std::min_element(ratio.begin(), ratio.end())
                                          : *std::max_element(ratio.begin(), ratio.end());
      for (size_t i = 0; i < count; ++i) {
        const Dim& d = shape[static_cast<size_t>(axes[i])];
        ratio[i] = one;
        if (d.is_static()) out[i] = static_cast<int64_t>(one * static_cast<double>(d.extent()) + 0.5);
      }
    } else if (policy != "stretch") {
      throw UserError(fmt::format("unknown keep_aspect_ratio_policy \"{}\"", policy));
    }
    scales = ratio;
  } else {
    for (size_t i = 0; i < count; ++i) {
      const Dim& d = shape[static_cast<size_t>(axes[i])];
      if (d.is_symbolic()) {
        if (scales[i] != 1.0) throw UserError(fmt::format("axis {} ({}) scaled by {}: resized axes must be static", axes[i], d.str(), scales[i]));
        continue;
      }
      // The reference's floor(in * scale), in double from the f32 scale.
      out[i] = static_cast<int64_t>(std::floor(static_cast<double>(d.extent()) * scales[i]));
    }
  }
  Attrs a{{"axes", AttrValue(axes)}, {"sizes", AttrValue(out)}, {"scales", AttrValue(scales)}};
  a.set("mode", AttrValue(ImportContext::string_attr(n, "mode", "nearest")));
  const std::string transform = ImportContext::string_attr(n, "coordinate_transformation_mode", "half_pixel");
  a.set("coordinate_transformation_mode", AttrValue(transform));
  a.set("nearest_mode", AttrValue(ImportContext::string_attr(n, "nearest_mode", "round_prefer_floor")));
  a.set("cubic_coeff_a", AttrValue(ImportContext::float_attr(n, "cubic_coeff_a", -0.75)));
  a.set("exclude_outside", AttrValue(ImportContext::int_attr(n, "exclude_outside", 0) != 0));
  a.set("extrapolation_value", AttrValue(ImportContext::float_attr(n, "extrapolation_value", 0.0)));
  if (transform == "tf_crop_and_resize") {
    // roi lists starts then ends, for the axes given (opset 18) or every axis.
    if (roi.size() != 2 * count && roi.size() != 2 * static_cast<size_t>(rank)) {
      throw UserError(fmt::format("tf_crop_and_resize needs roi of {} entries, got {}", 2 * count, roi.size()));
    }
    const bool per_axis = roi.size() == 2 * count;
    std::vector<double> r(2 * count);
    for (size_t i = 0; i < count; ++i) {
      const size_t at = per_axis ? i : static_cast<size_t>(axes[i]);
      r[i] = roi[at];
      r[count + i] = roi[at + roi.size() / 2];
    }
    a.set("roi", AttrValue(r));
  }
  ctx.define(n, ctx.builder().op("resize", {x}, a, ctx.out_name(n)));
}

}  // namespace

void register_cnn_ops(ConverterTable& table) {
  table["Conv"] = add_conv;
  table["MaxPool"] = [](ImportContext& ctx, const NodeProto& n) { add_pool(ctx, n, true); };
  table["AveragePool"] = [](ImportContext& ctx, const NodeProto& n) { add_pool(ctx, n, false); };
  table["GlobalAveragePool"] = [](ImportContext& ctx, const NodeProto& n) {
    add_global_pool(ctx, n, OpKind::ReduceMean);
  };
  table["GlobalMaxPool"] = [](ImportContext& ctx, const NodeProto& n) { add_global_pool(ctx, n, OpKind::ReduceMax); };
  table["BatchNormalization"] = add_batch_norm;
  table["Resize"] = add_resize;
}

}  // namespace stitch::onnx_import
