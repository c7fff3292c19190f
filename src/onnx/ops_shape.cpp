// ONNX layout and shape ops (docs/onnx.md, Ops).
#include <fmt/format.h>

#include "onnx/context.h"

namespace stitch::onnx_import {

namespace {

using ::onnx::NodeProto;

}  // namespace

void register_shape_ops(ConverterTable& table) {
  table["Transpose"] = [](ImportContext& ctx, const NodeProto& n) {
    ImportContext::require_inputs(n, 1, 1);
    ValueId x = ctx.input(n, 0);
    std::vector<int64_t> perm;
    for (int64_t d = ctx.rank(x) - 1; d >= 0; --d) perm.push_back(d);
    ctx.define(n, ctx.builder().transpose(x, ImportContext::ints_attr(n, "perm").value_or(perm), ctx.out_name(n)));
  };
}

}  // namespace stitch::onnx_import
