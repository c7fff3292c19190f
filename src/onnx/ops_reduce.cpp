// ONNX reductions (docs/onnx.md, Ops).
#include <fmt/format.h>

#include "onnx/context.h"

namespace stitch::onnx_import {

namespace {

using ::onnx::NodeProto;

void add_reduce(ImportContext& ctx, const NodeProto& n, OpKind kind) {
  ValueId x = ctx.input(n, 0);
  bool keepdims = ImportContext::int_attr(n, "keepdims", 1) != 0;
  std::optional<std::vector<int64_t>> axes;
  // ReduceSum takes axes as an input from opset 13; the others until opset 18 as an attribute.
  if (kind == OpKind::ReduceSum) {
    ImportContext::require_inputs(n, 1, 2);
    if (ImportContext::has_input(n, 1)) axes = ImportContext::ints_of(ctx.known_input(n, 1, "the axes input"));
  } else {
    ImportContext::require_inputs(n, 1, 1);
    axes = ImportContext::ints_attr(n, "axes");
  }
  if (!axes || axes->empty()) {
    if (ImportContext::int_attr(n, "noop_with_empty_axes", 0) != 0) {
      ctx.define(n, x);
      return;
    }
    axes = std::vector<int64_t>();
    for (int d = 0; d < ctx.rank(x); ++d) axes->push_back(d);
  }
  ctx.define(n, ctx.builder().reduce(kind, x, *axes, keepdims, ctx.out_name(n)));
}

}  // namespace

void register_reduce_ops(ConverterTable& table) {
  const std::pair<const char*, OpKind> reduce[] = {
      {"ReduceSum", OpKind::ReduceSum}, {"ReduceMean", OpKind::ReduceMean}, {"ReduceMax", OpKind::ReduceMax}};
  for (auto [name, kind] : reduce) {
    table[name] = [kind](ImportContext& ctx, const NodeProto& n) { add_reduce(ctx, n, kind); };
  }
}

}  // namespace stitch::onnx_import
