// Elementwise ONNX ops: unary math, binary arithmetic, comparisons and logic,
// Where, Cast, Identity (docs/onnx.md, Ops).
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

}  // namespace

void register_elementwise_ops(ConverterTable& table) {
  const std::pair<const char*, OpKind> unary[] = {
      {"Neg", OpKind::Neg},   {"Abs", OpKind::Abs},   {"Exp", OpKind::Exp},         {"Log", OpKind::Log},
      {"Sqrt", OpKind::Sqrt}, {"Tanh", OpKind::Tanh}, {"Reciprocal", OpKind::Reciprocal},
      {"Sigmoid", OpKind::Sigmoid}, {"Relu", OpKind::Relu}, {"Erf", OpKind::Erf}, {"Not", OpKind::Not},
      {"Floor", OpKind::Floor}, {"Ceil", OpKind::Ceil},
  };
  for (auto [name, kind] : unary) {
    table[name] = [kind](ImportContext& ctx, const NodeProto& n) { add_unary(ctx, n, kind); };
  }
  const std::pair<const char*, OpKind> binary[] = {
      {"Add", OpKind::Add}, {"Sub", OpKind::Sub},    {"Mul", OpKind::Mul},     {"Div", OpKind::Div},
      {"Pow", OpKind::Pow}, {"Equal", OpKind::Eq},   {"Less", OpKind::Lt},     {"Greater", OpKind::Gt},
      {"And", OpKind::And}, {"Or", OpKind::Or},
  };
  for (auto [name, kind] : binary) {
    table[name] = [kind](ImportContext& ctx, const NodeProto& n) { add_binary(ctx, n, kind, false); };
  }
  table["Max"] = [](ImportContext& ctx, const NodeProto& n) { add_binary(ctx, n, OpKind::Max, true); };
  table["Min"] = [](ImportContext& ctx, const NodeProto& n) { add_binary(ctx, n, OpKind::Min, true); };
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
}

}  // namespace stitch::onnx_import
