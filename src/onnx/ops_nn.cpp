// ONNX neural-network ops: MatMul, Gemm, Softmax, LogSoftmax,
// LayerNormalization, SoftmaxCrossEntropyLoss (docs/onnx.md, Ops).
#include <cstdint>
#include <optional>

#include <fmt/format.h>

#include "onnx/context.h"

namespace stitch::onnx_import {

namespace {

using ::onnx::NodeProto;

// Gemm: alpha * A' B' + beta * C, A' = transA ? A^T : A (likewise B'), with C
// optional and broadcast to [M, N] by numpy rules.
void add_gemm(ImportContext& ctx, const NodeProto& n) {
  ImportContext::require_inputs(n, 2, 3);
  GraphBuilder& b = ctx.builder();
  ValueId a = ctx.input(n, 0);
  ValueId bm = ctx.input(n, 1);
  if (ctx.rank(a) != 2 || ctx.rank(bm) != 2) {
    throw UserError(fmt::format("Gemm takes 2-D A and B, got {} and {}", ctx.type(a).str(), ctx.type(bm).str()));
  }
  if (ImportContext::int_attr(n, "transA", 0) != 0) a = b.transpose(a, {1, 0});
  if (ImportContext::int_attr(n, "transB", 0) != 0) bm = b.transpose(bm, {1, 0});
  double alpha = ImportContext::float_attr(n, "alpha", 1.0);
  double beta = ImportContext::float_attr(n, "beta", 1.0);
  bool has_c = ImportContext::has_input(n, 2) && beta != 0.0;
  bool scale_ab = alpha != 1.0;
  ValueId y = b.op(OpKind::Dot, {a, bm}, {}, has_c || scale_ab ? "" : ctx.out_name(n));
  if (scale_ab) y = b.mul(y, alpha, has_c ? "" : ctx.out_name(n));
  if (has_c) {
    ValueId c = ctx.input(n, 2);
    if (beta != 1.0) c = b.mul(c, beta);
    y = b.add(y, c, ctx.out_name(n));
    if (ctx.type(y).shape != Shape{ctx.type(a).shape[0], ctx.type(bm).shape[1]}) {
      throw UserError(fmt::format("Gemm: C of type {} does not broadcast to [M, N]", ctx.type(c).str()));
    }
  }
  ctx.define(n, y);
}

// LayerNormalization (opset 17): normalises over the axes from `axis` (-1)
// to the last, computing in `stash_type` (float by default); the outputs Mean
// and InvStdDev keep the normalised axes as 1s. Y alone is the IR's
// layer_norm composite; with the statistics it is built from the same
// primitives, so the three outputs agree.
void add_layer_norm(ImportContext& ctx, const NodeProto& n) {
  ImportContext::require_inputs(n, 2, 3);
  GraphBuilder& b = ctx.builder();
  ValueId x = ctx.input(n, 0);
  int64_t rank = ctx.rank(x);
  int64_t axis = ImportContext::normalize_axis(ImportContext::int_attr(n, "axis", -1), rank);
  std::vector<int64_t> axes;
  for (int64_t d = axis; d < rank; ++d) axes.push_back(d);
  double eps = ImportContext::float_attr(n, "epsilon", 1e-5);
  auto stash_type = static_cast<int32_t>(ImportContext::int_attr(n, "stash_type", ::onnx::TensorProto::FLOAT));
  std::optional<DType> stash = dtype_of_onnx(stash_type);
  if (!stash || !is_float(*stash)) {
    throw UserError(fmt::format("stash_type {} is not a floating type Stitch supports", elem_type_name(stash_type)));
  }
  DType dtype = ctx.dtype(x);
  std::vector<Operand> affine{ctx.input(n, 1)};
  if (ImportContext::has_input(n, 2)) affine.emplace_back(ctx.input(n, 2));
  bool wants_stats = ImportContext::wants_output(n, 1) || ImportContext::wants_output(n, 2);
  if (!wants_stats && *stash == dtype) {
    std::vector<Operand> args{x};
    args.insert(args.end(), affine.begin(), affine.end());
    ctx.define(n, b.op("layer_norm", args, {{"axes", AttrValue(axes)}, {"eps", AttrValue(eps)}}, ctx.out_name(n)));
    return;
  }
  ValueId xs = *stash == dtype ? x : b.cast(x, *stash);
  ValueId mean = b.reduce(OpKind::ReduceMean, xs, axes, true, ctx.out_name(n, 1));
  ValueId centred = b.sub(xs, mean);
  ValueId var = b.reduce(OpKind::ReduceMean, b.mul(centred, centred), axes, true);
  ValueId inv_std = b.unary(OpKind::Rsqrt, b.add(var, eps), ctx.out_name(n, 2));
  ValueId y = b.mul(centred, inv_std);
  if (*stash != dtype) y = b.cast(y, dtype);
  bool has_bias = affine.size() == 2;
  y = b.mul(y, affine[0], has_bias ? "" : ctx.out_name(n, 0));
  if (has_bias) y = b.add(y, affine[1], ctx.out_name(n, 0));
  ctx.define(n, 0, y);
  ctx.define(n, 1, mean);
  ctx.define(n, 2, inv_std);
}

// SoftmaxCrossEntropyLoss (opset 13): scores [N, C, D...], labels [N, D...],
// optional weights [C]; loss = -log_softmax(scores)[label] * weight[label],
// 0 where the label is `ignore_index`; `reduction` "mean" (divided by the
// weights summed over the labels not ignored), "sum" or "none". Output 1,
// when wanted, is the log_softmax. The label's entry is picked by comparing
// an iota over C with it, so a label out of range picks nothing (ONNX leaves
// that undefined).
void add_softmax_cross_entropy(ImportContext& ctx, const NodeProto& n) {
  ImportContext::require_inputs(n, 2, 3);
  GraphBuilder& b = ctx.builder();
  ValueId scores = ctx.input(n, 0);
  ValueId labels = ctx.input(n, 1);
  const Shape shape = ctx.type(scores).shape;
  const int64_t rank = ctx.rank(scores);
  if (rank < 2 || ctx.rank(labels) != rank - 1 || !is_integer(ctx.dtype(labels)) || !is_float(ctx.dtype(scores))) {
    throw UserError(fmt::format("SoftmaxCrossEntropyLoss takes float scores [N, C, ...] and integer labels [N, ...], "
                                "got {} and {}",
                                ctx.type(scores).str(), ctx.type(labels).str()));
  }
  const std::string reduction = ImportContext::string_attr(n, "reduction", "mean");
  if (reduction != "mean" && reduction != "sum" && reduction != "none") {
    throw UserError(fmt::format("reduction '{}' (mean, sum or none)", reduction));
  }
  const DType dtype = ctx.dtype(scores);
  ValueId log_prob = b.op("log_softmax", {scores}, {{"axis", AttrValue(int64_t{1})}},
                          ImportContext::wants_output(n, 1) ? ctx.out_name(n, 1) : "");
  if (ctx.dtype(labels) != DType::i64) labels = b.cast(labels, DType::i64);
  Shape with_class = ctx.type(labels).shape;
  with_class.insert(with_class.begin() + 1, Dim(1));
  ValueId classes = b.op(OpKind::Iota, {}, {{"shape", AttrValue(shape)}, {"axis", AttrValue(int64_t{1})},
                                            {"dtype", DType::i64}});
  ValueId hit = b.binary(OpKind::Eq, classes, b.reshape(labels, with_class));
  ValueId zero = b.constant(0.0, dtype);
  ValueId picked = b.reduce(OpKind::ReduceSum, b.op(OpKind::Select, {hit, log_prob, zero}), {1}, false);
  std::optional<ValueId> weight;
  if (ImportContext::has_input(n, 2)) {
    Shape along_classes(rank, Dim(1));
    along_classes[1] = shape[1];
    ValueId w = b.reshape(ctx.input(n, 2), along_classes);
    weight = b.reduce(OpKind::ReduceSum, b.op(OpKind::Select, {hit, w, zero}), {1}, false);
  }
  if (const auto* ignore = ImportContext::attr(n, "ignore_index")) {
    ValueId kept = b.cast(b.binary(OpKind::Ne, labels, int64_t{ignore->i()}), dtype);
    weight = weight ? b.mul(*weight, kept) : kept;
  }
  ValueId loss = b.unary(OpKind::Neg, weight ? b.mul(picked, *weight) : picked,
                         reduction == "none" ? ctx.out_name(n) : "");
  std::vector<int64_t> all(static_cast<size_t>(rank - 1));
  for (int64_t d = 0; d < rank - 1; ++d) all[static_cast<size_t>(d)] = d;
  if (reduction == "sum") {
    loss = b.reduce(OpKind::ReduceSum, loss, all, false, ctx.out_name(n));
  } else if (reduction == "mean" && weight) {
    loss = b.div(b.reduce(OpKind::ReduceSum, loss, all, false), b.reduce(OpKind::ReduceSum, *weight, all, false),
                 ctx.out_name(n));
  } else if (reduction == "mean") {
    loss = b.reduce(OpKind::ReduceMean, loss, all, false, ctx.out_name(n));
  }
  ctx.define(n, 0, loss);
  ctx.define(n, 1, log_prob);
}

}  // namespace

void register_nn_ops(ConverterTable& table) {
  table["MatMul"] = [](ImportContext& ctx, const NodeProto& n) {
    ImportContext::require_inputs(n, 2, 2);
    ctx.define(n, ctx.builder().op(OpKind::Dot, {ctx.input(n, 0), ctx.input(n, 1)}, {}, ctx.out_name(n)));
  };
  table["Gemm"] = add_gemm;
  // Opset 13 semantics: one axis, default -1 (opsets < 13 flattened).
  table["Softmax"] = [](ImportContext& ctx, const NodeProto& n) {
    ImportContext::require_inputs(n, 1, 1);
    ctx.define(n, ctx.builder().op("softmax", {ctx.input(n, 0)},
                                   {{"axis", AttrValue(ImportContext::int_attr(n, "axis", -1))}}, ctx.out_name(n)));
  };
  table["LogSoftmax"] = [](ImportContext& ctx, const NodeProto& n) {
    ImportContext::require_inputs(n, 1, 1);
    ctx.define(n, ctx.builder().op("log_softmax", {ctx.input(n, 0)},
                                   {{"axis", AttrValue(ImportContext::int_attr(n, "axis", -1))}}, ctx.out_name(n)));
  };
  table["LayerNormalization"] = add_layer_norm;
  table["SoftmaxCrossEntropyLoss"] = add_softmax_cross_entropy;
}

}  // namespace stitch::onnx_import
