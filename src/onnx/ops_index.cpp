// ONNX ops that pick or combine elements by position (docs/onnx.md, Ops):
// GatherElements (a gather from the flattened data), Trilu (a select on
// row and column iotas), CumSum (a product with a triangular matrix) and TopK
// (the top_k composites).
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

#include "onnx/context.h"

namespace stitch::onnx_import {

namespace {

using ::onnx::NodeProto;

ValueId iota(GraphBuilder& b, const Shape& shape, int64_t axis) {
  return b.op(OpKind::Iota, {}, {{"shape", AttrValue(shape)}, {"axis", AttrValue(axis)}, {"dtype", DType::i64}});
}

// One integer from a known scalar or one-element input.
int64_t known_scalar(const ImportContext& ctx, const NodeProto& n, int i, const std::string& what) {
  std::vector<int64_t> v = ImportContext::ints_of(ctx.known_input(n, i, what));
  if (v.size() != 1) throw UserError(fmt::format("{} must hold one value, it holds {}", what, v.size()));
  return v[0];
}

// GatherElements: out[i] = data[i with indices[i] at `axis`], indices of any
// extents no larger than data's. The flat position of each element in data is
// the sum of its coordinates times data's strides, so data's extents must be
// static; a negative index counts from the end, as ONNX allows.
void add_gather_elements(ImportContext& ctx, const NodeProto& n) {
  ImportContext::require_inputs(n, 2, 2);
  GraphBuilder& b = ctx.builder();
  ValueId data = ctx.input(n, 0);
  ValueId index = ctx.input(n, 1);
  const Shape shape = ctx.type(data).shape;
  const Shape out_shape = ctx.type(index).shape;
  const int64_t rank = ctx.rank(data);
  if (rank == 0 || ctx.rank(index) != rank) {
    throw UserError(fmt::format("GatherElements takes data and indices of one rank >= 1, got {} and {}",
                                ctx.type(data).str(), ctx.type(index).str()));
  }
  if (!is_integer(ctx.dtype(index))) {
    throw UserError(fmt::format("the indices must be integers, got {}", ctx.type(index).str()));
  }
  const int64_t axis = ImportContext::normalize_axis(ImportContext::int_attr(n, "axis", 0), rank);
  int64_t numel = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (shape[d].is_symbolic()) {
      throw UserError(fmt::format("data dim {} is the symbol {}; GatherElements needs static data extents", d,
                                  shape[d].name()));
    }
    numel *= shape[d].extent();
  }
  const bool no_indices = std::any_of(out_shape.begin(), out_shape.end(),
                                      [](const Dim& e) { return !e.is_symbolic() && e.extent() == 0; });
  if (numel == 0 && !no_indices) {
    throw UserError(fmt::format("GatherElements reads from data {} with no elements", ctx.type(data).str()));
  }
  std::vector<int64_t> strides(static_cast<size_t>(rank), 1);
  for (int64_t d = rank - 1; d > 0; --d) strides[d - 1] = strides[d] * shape[d].extent();
  ValueId flat;
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t stride = strides[d];
    ValueId coord;
    if (d == axis) {
      ValueId i = ctx.dtype(index) == DType::i64 ? index : b.cast(index, DType::i64);
      ValueId wrapped = b.add(i, shape[d].extent());
      coord = b.op(OpKind::Select, {b.binary(OpKind::Lt, i, int64_t{0}), wrapped, i});
    } else {
      coord = iota(b, out_shape, d);
    }
    if (stride != 1) coord = b.mul(coord, stride);
    flat = d == 0 ? coord : b.add(flat, coord);
  }
  ValueId line = b.reshape(data, Shape{Dim(numel)});
  ctx.define(n, b.op(OpKind::Gather, {line, flat}, {{"axis", AttrValue(int64_t{0})}}, ctx.out_name(n)));
}

// Trilu: the upper (`upper` 1) or lower triangle of the last two axes, from
// diagonal k (input 1, 0): element (i, j) is kept where j - i >= k (upper)
// or j - i <= k (lower), else 0.
void add_trilu(ImportContext& ctx, const NodeProto& n) {
  ImportContext::require_inputs(n, 1, 2);
  GraphBuilder& b = ctx.builder();
  ValueId x = ctx.input(n, 0);
  const int64_t rank = ctx.rank(x);
  if (rank < 2) throw UserError(fmt::format("Trilu takes rank >= 2, got {}", ctx.type(x).str()));
  const int64_t k = ImportContext::has_input(n, 1) ? known_scalar(ctx, n, 1, "the k input") : 0;
  const bool upper = ImportContext::int_attr(n, "upper", 1) != 0;
  const Shape shape = ctx.type(x).shape;
  Shape square{shape[rank - 2], shape[rank - 1]};
  ValueId offset = b.sub(iota(b, square, 1), iota(b, square, 0));
  ValueId keep = b.binary(upper ? OpKind::Ge : OpKind::Le, offset, k);
  ValueId zero = b.op(OpKind::Constant, {}, {{"value", AttrValue(0.0)}, {"dtype", AttrValue(ctx.dtype(x))}});
  ctx.define(n, b.op(OpKind::Select, {keep, x, zero}, {}, ctx.out_name(n)));
}

// CumSum along `axis` (input 1, known): out[i] sums x[j] for j <= i, j < i
// with `exclusive`, j >= i with `reverse` (j > i with both). Written as the
// product of x (axis moved last) with the 0/1 matrix M[j, i] of that rule, so
// it costs n^2 per row of n: right for the short axes exporters use it on
// (positions from a mask), slow on long ones (docs/onnx.md, Ops). Floats are
// summed in the product's order, not left to right.
void add_cumsum(ImportContext& ctx, const NodeProto& n) {
  ImportContext::require_inputs(n, 2, 2);
  GraphBuilder& b = ctx.builder();
  ValueId x = ctx.input(n, 0);
  const int64_t rank = ctx.rank(x);
  if (rank == 0) throw UserError("CumSum of a scalar");
  if (ctx.dtype(x) == DType::boolean) throw UserError(fmt::format("CumSum of {}", ctx.type(x).str()));
  const int64_t axis = ImportContext::normalize_axis(known_scalar(ctx, n, 1, "the axis input"), rank);
  const Dim extent = ctx.type(x).shape[axis];
  const bool exclusive = ImportContext::int_attr(n, "exclusive", 0) != 0;
  const bool reverse = ImportContext::int_attr(n, "reverse", 0) != 0;
  Shape square{extent, extent};
  ValueId j = iota(b, square, 0);
  ValueId i = iota(b, square, 1);
  OpKind rule = reverse ? (exclusive ? OpKind::Gt : OpKind::Ge) : (exclusive ? OpKind::Lt : OpKind::Le);
  ValueId mask = b.cast(b.binary(rule, j, i), ctx.dtype(x));
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < rank; ++d) {
    if (d != axis) perm.push_back(d);
  }
  perm.push_back(axis);
  const bool moved = axis != rank - 1;
  ValueId moved_x = moved ? b.transpose(x, perm) : x;
  ValueId y = b.op(OpKind::Dot, {moved_x, mask}, {}, moved ? "" : ctx.out_name(n));
  if (moved) {
    std::vector<int64_t> back(rank);
    for (int64_t d = 0; d < rank; ++d) back[perm[d]] = d;
    y = b.transpose(y, back, ctx.out_name(n));
  }
  ctx.define(n, y);
}

// TopK with a known K: the top_k and top_k_indices composites (sorted always,
// which sorted=0 allows).
void add_top_k(ImportContext& ctx, const NodeProto& n) {
  ImportContext::require_inputs(n, 2, 2);
  ValueId x = ctx.input(n, 0);
  const int64_t k = known_scalar(ctx, n, 1, "K");
  Attrs a{{"k", AttrValue(k)},
          {"axis", AttrValue(ImportContext::normalize_axis(ImportContext::int_attr(n, "axis", -1), ctx.rank(x)))},
          {"largest", AttrValue(ImportContext::int_attr(n, "largest", 1) != 0)}};
  GraphBuilder& b = ctx.builder();
  if (ImportContext::wants_output(n, 0)) ctx.define(n, 0, b.op("top_k", {x}, a, ctx.out_name(n, 0)));
  if (ImportContext::wants_output(n, 1)) ctx.define(n, 1, b.op("top_k_indices", {x}, a, ctx.out_name(n, 1)));
}

}  // namespace

void register_index_ops(ConverterTable& table) {
  table["GatherElements"] = add_gather_elements;
  table["Trilu"] = add_trilu;
  table["CumSum"] = add_cumsum;
  table["TopK"] = add_top_k;
}

}  // namespace stitch::onnx_import
