// ONNX reductions: ReduceSum/Mean/Max/Min/Prod, the composed ones (L1, L2,
// SumSquare, LogSum, LogSumExp), and ArgMax/ArgMin (docs/onnx.md, Ops).
#include <cstdint>

#include <fmt/format.h>

#include "onnx/context.h"

namespace stitch::onnx_import {

namespace {

using ::onnx::NodeProto;

// A reduction as ONNX composes it: an elementwise step before, a primitive
// reduction, an elementwise step after.
enum class Pre { None, Abs, Square };
enum class Post { None, Sqrt, Log };

struct ReduceSpec {
  OpKind kind;
  Pre pre = Pre::None;
  Post post = Post::None;
  bool logsumexp = false;  // the IR's logsumexp composite, shifted by the max
};

// The axes of a reduction: the second input when present (ReduceSum from
// opset 13, every reduction from opset 18), else the `axes` attribute. Both
// forms are accepted at every opset, since exporters mix them up.
std::optional<std::vector<int64_t>> reduce_axes(ImportContext& ctx, const NodeProto& n) {
  ImportContext::require_inputs(n, 1, 2);
  if (ImportContext::has_input(n, 1)) return ImportContext::ints_of(ctx.known_input(n, 1, "the axes input"));
  return ImportContext::ints_attr(n, "axes");
}

ValueId apply_pre(GraphBuilder& b, Pre pre, ValueId x, const std::string& name = "") {
  switch (pre) {
    case Pre::None: return x;
    case Pre::Abs: return b.unary(OpKind::Abs, x, name);
    case Pre::Square: return b.mul(x, x, name);
  }
  return x;
}

ValueId apply_post(GraphBuilder& b, Post post, ValueId x, const std::string& name) {
  switch (post) {
    case Post::None: return x;
    case Post::Sqrt: return b.unary(OpKind::Sqrt, x, name);
    case Post::Log: return b.unary(OpKind::Log, x, name);
  }
  return x;
}

void add_reduce(ImportContext& ctx, const NodeProto& n, const ReduceSpec& spec) {
  GraphBuilder& b = ctx.builder();
  std::optional<std::vector<int64_t>> axes = reduce_axes(ctx, n);
  ValueId x = ctx.input(n, 0);
  bool keepdims = ImportContext::int_attr(n, "keepdims", 1) != 0;
  if (!axes || axes->empty()) {
    if (ImportContext::int_attr(n, "noop_with_empty_axes", 0) != 0) {
      // Nothing is reduced, but the steps before and after still apply
      // (the spec as clarified in onnx/onnx#7137: ReduceSumSquare squares).
      if (spec.logsumexp) {
        ctx.define(n, x);  // log(exp(x))
        return;
      }
      bool last_is_pre = spec.post == Post::None;
      ValueId pre = apply_pre(b, spec.pre, x, last_is_pre ? ctx.out_name(n) : "");
      ctx.define(n, last_is_pre ? pre : apply_post(b, spec.post, pre, ctx.out_name(n)));
      return;
    }
    axes = std::vector<int64_t>();
    for (int d = 0; d < ctx.rank(x); ++d) axes->push_back(d);
  }
  if (spec.logsumexp) {
    ctx.define(n, b.op("logsumexp", {x}, {{"axes", AttrValue(*axes)}, {"keepdims", AttrValue(keepdims)}},
                       ctx.out_name(n)));
    return;
  }
  ValueId pre = apply_pre(b, spec.pre, x);
  // ReduceMax and ReduceMin take bool tensors from opset 20: any and all.
  OpKind kind = spec.kind;
  if (ctx.dtype(x) == DType::boolean && (kind == OpKind::ReduceMax || kind == OpKind::ReduceMin)) {
    kind = kind == OpKind::ReduceMax ? OpKind::ReduceAny : OpKind::ReduceAll;
  }
  if (spec.post == Post::None) {
    ctx.define(n, b.reduce(kind, pre, *axes, keepdims, ctx.out_name(n)));
    return;
  }
  ValueId reduced = b.reduce(kind, pre, *axes, keepdims);
  ctx.define(n, apply_post(b, spec.post, reduced, ctx.out_name(n)));
}

// ArgMax/ArgMin: `axis` (0), `keepdims` (1), `select_last_index` (0). The IR
// picks the first extremum; the last one is the largest index among the
// positions equal to the extremum: reduce_max(select(x == m, iota, -1)).
// A NaN counts as the extremum, as in the IR's argmax (and numpy's).
void add_arg_reduce(ImportContext& ctx, const NodeProto& n, bool is_max) {
  ImportContext::require_inputs(n, 1, 1);
  GraphBuilder& b = ctx.builder();
  ValueId x = ctx.input(n, 0);
  int64_t axis = ImportContext::normalize_axis(ImportContext::int_attr(n, "axis", 0), ctx.rank(x));
  bool keepdims = ImportContext::int_attr(n, "keepdims", 1) != 0;
  std::vector<int64_t> axes{axis};
  if (ImportContext::int_attr(n, "select_last_index", 0) == 0) {
    ctx.define(n, b.op(is_max ? OpKind::ArgMax : OpKind::ArgMin, {x},
                       {{"axes", AttrValue(axes)}, {"keepdims", AttrValue(keepdims)}}, ctx.out_name(n)));
    return;
  }
  ValueId extremum = b.reduce(is_max ? OpKind::ReduceMax : OpKind::ReduceMin, x, axes, true);
  ValueId hit = b.binary(OpKind::Eq, x, extremum);
  if (is_float(ctx.dtype(x))) hit = b.op(OpKind::Or, {hit, b.unary(OpKind::IsNan, x)});
  ValueId index = b.op(OpKind::Iota, {},
                       {{"shape", AttrValue(ctx.type(x).shape)}, {"axis", AttrValue(axis)},
                        {"dtype", AttrValue(DType::i64)}});
  ValueId candidates = b.op(OpKind::Select, {hit, index, int64_t{-1}});
  ctx.define(n, b.reduce(OpKind::ReduceMax, candidates, axes, keepdims, ctx.out_name(n)));
}

}  // namespace

void register_reduce_ops(ConverterTable& table) {
  const std::pair<const char*, ReduceSpec> reduce[] = {
      {"ReduceSum", {OpKind::ReduceSum}},
      {"ReduceMean", {OpKind::ReduceMean}},
      {"ReduceMax", {OpKind::ReduceMax}},
      {"ReduceMin", {OpKind::ReduceMin}},
      {"ReduceProd", {OpKind::ReduceProd}},
      {"ReduceL1", {OpKind::ReduceSum, Pre::Abs}},
      {"ReduceL2", {OpKind::ReduceSum, Pre::Square, Post::Sqrt}},
      {"ReduceSumSquare", {OpKind::ReduceSum, Pre::Square}},
      {"ReduceLogSum", {OpKind::ReduceSum, Pre::None, Post::Log}},
      {"ReduceLogSumExp", {OpKind::ReduceSum, Pre::None, Post::None, /*logsumexp=*/true}},
  };
  for (const auto& [name, spec] : reduce) {
    table[name] = [spec = spec](ImportContext& ctx, const NodeProto& n) { add_reduce(ctx, n, spec); };
  }
  table["ArgMax"] = [](ImportContext& ctx, const NodeProto& n) { add_arg_reduce(ctx, n, true); };
  table["ArgMin"] = [](ImportContext& ctx, const NodeProto& n) { add_arg_reduce(ctx, n, false); };
}

}  // namespace stitch::onnx_import
