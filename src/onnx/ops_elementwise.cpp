// Elementwise ONNX ops: unary math, activations (LeakyRelu, Gelu, Clip),
// binary arithmetic, variadic Sum/Mean/Max/Min, comparisons and logic, Where,
// Cast, CastLike, Identity (docs/onnx.md, Ops).
#include <cstdint>

#include <fmt/format.h>

#include "onnx/context.h"

namespace stitch::onnx_import {

namespace {

using ::onnx::NodeProto;

void add_unary(ImportContext& ctx, const NodeProto& n, OpKind kind) {
  ImportContext::require_inputs(n, 1, 1);
  ctx.define(n, ctx.builder().unary(kind, ctx.input(n, 0), ctx.out_name(n)));
}

// Binary ops with numpy broadcasting; Max and Min are variadic and fold left.
void add_binary(ImportContext& ctx, const NodeProto& n, OpKind kind, bool variadic) {
  ImportContext::require_inputs(n, variadic ? 1 : 2, variadic ? 1 << 20 : 2);
  ValueId acc = ctx.input(n, 0);
  if (n.input_size() == 1) {
    ctx.define(n, acc);
    return;
  }
  for (int i = 1; i < n.input_size(); ++i) {
    ValueId rhs = ctx.input(n, i);
    // ONNX Pow allows an exponent of another type; the IR wants one dtype.
    if (kind == OpKind::Pow && ctx.dtype(rhs) != ctx.dtype(acc)) rhs = ctx.builder().cast(rhs, ctx.dtype(acc));
    acc = ctx.builder().binary(kind, acc, rhs, i + 1 == n.input_size() ? ctx.out_name(n) : "");
  }
  ctx.define(n, acc);
}

// LeakyRelu: x where x >= 0, alpha * x elsewhere (a NaN stays NaN).
void add_leaky_relu(ImportContext& ctx, const NodeProto& n) {
  ImportContext::require_inputs(n, 1, 1);
  GraphBuilder& b = ctx.builder();
  ValueId x = ctx.input(n, 0);
  double alpha = ImportContext::float_attr(n, "alpha", 0.01);
  ValueId negative = b.binary(OpKind::Lt, x, 0);
  ctx.define(n, b.op(OpKind::Select, {negative, b.mul(x, alpha), x}, {}, ctx.out_name(n)));
}

// Mean: the variadic Sum divided by the number of inputs.
void add_mean(ImportContext& ctx, const NodeProto& n) {
  ImportContext::require_inputs(n, 1, 1 << 20);
  GraphBuilder& b = ctx.builder();
  ValueId acc = ctx.input(n, 0);
  if (n.input_size() == 1) {
    ctx.define(n, acc);
    return;
  }
  for (int i = 1; i < n.input_size(); ++i) acc = b.add(acc, ctx.input(n, i));
  ctx.define(n, b.div(acc, static_cast<double>(n.input_size()), ctx.out_name(n)));
}

// Clip: the bounds are the optional inputs 1 and 2 from opset 11 (graph values
// or known scalars, "" when omitted), the float attributes min/max before.
// min(max(x, lo), hi), so lo > hi gives hi everywhere, as the spec says.
void add_clip(ImportContext& ctx, const NodeProto& n) {
  ImportContext::require_inputs(n, 1, 3);
  GraphBuilder& b = ctx.builder();
  ValueId x = ctx.input(n, 0);
  auto bound = [&](int i, const char* attr_name) -> std::optional<Operand> {
    if (ImportContext::has_input(n, i)) {
      ValueId v = ctx.input(n, i);
      for (const Dim& d : ctx.type(v).shape) {
        if (d != Dim(1)) {
          throw UserError(fmt::format("the {} input of Clip must be a scalar, its shape is {}", attr_name,
                                      shape_str(ctx.type(v).shape)));
        }
      }
      if (ctx.rank(v) != 0) v = b.reshape(v, {});
      if (ctx.dtype(v) != ctx.dtype(x)) {
        throw UserError(fmt::format("the {} input of Clip has type {}, but the data has type {}", attr_name,
                                    dtype_name(ctx.dtype(v)), dtype_name(ctx.dtype(x))));
      }
      return Operand(v);
    }
    if (ImportContext::attr(n, attr_name)) return Operand(ImportContext::float_attr(n, attr_name, 0.0));
    return std::nullopt;
  };
  std::optional<Operand> lo = bound(1, "min");
  std::optional<Operand> hi = bound(2, "max");
  if (lo && hi) {
    ctx.define(n, b.op(OpKind::Clamp, {x, *lo, *hi}, {}, ctx.out_name(n)));
  } else if (lo) {
    ctx.define(n, b.max(x, *lo, ctx.out_name(n)));
  } else if (hi) {
    ctx.define(n, b.binary(OpKind::Min, x, *hi, ctx.out_name(n)));
  } else {
    ctx.define(n, x);
  }
}

}  // namespace

void register_elementwise_ops(ConverterTable& table) {
  const std::pair<const char*, OpKind> unary[] = {
      {"Neg", OpKind::Neg},   {"Abs", OpKind::Abs},   {"Exp", OpKind::Exp},         {"Log", OpKind::Log},
      {"Sqrt", OpKind::Sqrt}, {"Tanh", OpKind::Tanh}, {"Reciprocal", OpKind::Reciprocal},
      {"Sigmoid", OpKind::Sigmoid}, {"Relu", OpKind::Relu}, {"Erf", OpKind::Erf}, {"Not", OpKind::Not},
      {"Floor", OpKind::Floor}, {"Ceil", OpKind::Ceil}, {"Sin", OpKind::Sin}, {"Cos", OpKind::Cos},
      {"Tan", OpKind::Tan}, {"Sign", OpKind::Sign}, {"Round", OpKind::Round}, {"IsNaN", OpKind::IsNan},
  };
  for (auto [name, kind] : unary) {
    table[name] = [kind = kind](ImportContext& ctx, const NodeProto& n) { add_unary(ctx, n, kind); };
  }
  const std::pair<const char*, OpKind> binary[] = {
      {"Add", OpKind::Add}, {"Sub", OpKind::Sub},    {"Mul", OpKind::Mul},     {"Div", OpKind::Div},
      {"Pow", OpKind::Pow}, {"Equal", OpKind::Eq},   {"Less", OpKind::Lt},     {"Greater", OpKind::Gt},
      {"And", OpKind::And}, {"Or", OpKind::Or},      {"Xor", OpKind::Xor},      {"LessOrEqual", OpKind::Le}, {"GreaterOrEqual", OpKind::Ge},
  };
  for (auto [name, kind] : binary) {
    table[name] = [kind = kind](ImportContext& ctx, const NodeProto& n) { add_binary(ctx, n, kind, false); };
  }
  // IsInf: `detect_positive` and `detect_negative` (both 1) pick the infinities.
  table["IsInf"] = [](ImportContext& ctx, const NodeProto& n) {
    ImportContext::require_inputs(n, 1, 1);
    GraphBuilder& b = ctx.builder();
    ValueId x = ctx.input(n, 0);
    bool positive = ImportContext::int_attr(n, "detect_positive", 1) != 0;
    bool negative = ImportContext::int_attr(n, "detect_negative", 1) != 0;
    if (positive && negative) {
      ctx.define(n, b.unary(OpKind::IsInf, x, ctx.out_name(n)));
    } else if (positive || negative) {
      ValueId side = b.binary(positive ? OpKind::Gt : OpKind::Lt, x, 0.0);
      ctx.define(n, b.op(OpKind::And, {b.unary(OpKind::IsInf, x), side}, {}, ctx.out_name(n)));
    } else {
      ctx.define(n, b.op(OpKind::Constant, {},
                         {{"value", AttrValue(false)}, {"shape", AttrValue(ctx.type(x).shape)},
                          {"dtype", AttrValue(DType::boolean)}},
                         ctx.out_name(n)));
    }
  };
  table["Max"] = [](ImportContext& ctx, const NodeProto& n) { add_binary(ctx, n, OpKind::Max, true); };
  table["Min"] = [](ImportContext& ctx, const NodeProto& n) { add_binary(ctx, n, OpKind::Min, true); };
  table["Sum"] = [](ImportContext& ctx, const NodeProto& n) { add_binary(ctx, n, OpKind::Add, true); };
  table["Mean"] = add_mean;
  table["LeakyRelu"] = add_leaky_relu;
  table["Clip"] = add_clip;
  // Gelu is an opset-20 op; models exported for older opsets may still carry it.
  table["Gelu"] = [](ImportContext& ctx, const NodeProto& n) {
    ImportContext::require_inputs(n, 1, 1);
    std::string approximate = ImportContext::string_attr(n, "approximate", "none");
    ctx.define(n, ctx.builder().op("gelu", {ctx.input(n, 0)}, {{"approximate", AttrValue(approximate)}},
                                   ctx.out_name(n)));
  };
  table["Identity"] = [](ImportContext& ctx, const NodeProto& n) {
    ImportContext::require_inputs(n, 1, 1);
    if (const Tensor* t = ctx.known(n.input(0))) {
      ctx.define_known(n, 0, *t);
    } else {
      ctx.define(n, ctx.input(n, 0));
    }
  };
  table["Where"] = [](ImportContext& ctx, const NodeProto& n) {
    ImportContext::require_inputs(n, 3, 3);
    ctx.define(n, ctx.builder().op(OpKind::Select, {ctx.input(n, 0), ctx.input(n, 1), ctx.input(n, 2)}, {},
                                   ctx.out_name(n)));
  };
  table["Cast"] = [](ImportContext& ctx, const NodeProto& n) {
    ImportContext::require_inputs(n, 1, 1);
    auto to = static_cast<int32_t>(ImportContext::int_attr(n, "to", 0));
    std::optional<DType> dtype = dtype_of_onnx(to);
    if (!dtype) throw UserError(fmt::format("cast to {} is not supported", elem_type_name(to)));
    ctx.define(n, ctx.builder().cast(ctx.input(n, 0), *dtype, ctx.out_name(n)));
  };
  table["CastLike"] = [](ImportContext& ctx, const NodeProto& n) {
    ImportContext::require_inputs(n, 2, 2);
    DType to = ctx.dtype_of_value(n.input(1));
    ctx.define(n, ctx.builder().cast(ctx.input(n, 0), to, ctx.out_name(n)));
  };
}

}  // namespace stitch::onnx_import
