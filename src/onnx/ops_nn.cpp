// ONNX neural-network ops: MatMul, Softmax (docs/onnx.md, Ops).
#include <fmt/format.h>

#include "onnx/context.h"

namespace stitch::onnx_import {

namespace {

using ::onnx::NodeProto;

}  // namespace

void register_nn_ops(ConverterTable& table) {
  table["MatMul"] = [](ImportContext& ctx, const NodeProto& n) {
    ImportContext::require_inputs(n, 2, 2);
    ctx.define(n, ctx.builder().op(OpKind::Dot, {ctx.input(n, 0), ctx.input(n, 1)}, {}, ctx.out_name(n)));
  };
  table["Softmax"] = [](ImportContext& ctx, const NodeProto& n) {
    ImportContext::require_inputs(n, 1, 1);
    // Opset 13 semantics: one axis, default -1 (opsets < 13 flattened).
    ctx.define(n, ctx.builder().op("softmax", {ctx.input(n, 0)},
                                   {{"axis", AttrValue(ImportContext::int_attr(n, "axis", -1))}}, ctx.out_name(n)));
  };
}

}  // namespace stitch::onnx_import
