#include "ir/composites_top_k.h"

#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "ir/composite_attrs.h"

namespace stitch {

namespace {

// What fills the positions already taken, so a max (min) never picks them:
// the dtype's lowest (highest) value.
Operand filler(DType t, bool largest) {
  const double inf = std::numeric_limits<double>::infinity();
  switch (t) {
    case DType::i8: return largest ? int64_t{std::numeric_limits<int8_t>::min()} : int64_t{std::numeric_limits<int8_t>::max()};
    case DType::i32: return largest ? int64_t{std::numeric_limits<int32_t>::min()} : int64_t{std::numeric_limits<int32_t>::max()};
    case DType::i64: return largest ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
    default: return largest ? -inf : inf;
  }
}

}  // namespace

// Entry t is the largest (smallest) value among the entries that come after
// entry t-1 in the order (value descending (ascending), index ascending):
// those with a smaller (larger) value, or its value and a higher index. Its
// index is the lowest index holding that value among them. Each step is one
// max (min) and one min over the axis, exact for every value, infinities
// included; which entries a NaN displaces is unspecified.
ValueId expand_top_k(GraphBuilder& b, std::string_view name, ValueId x, const Attrs& attrs, const std::string& r) {
  const CompositeAttrs a(name, attrs);
  const TensorType xt = b.graph().type(x);
  if (xt.dtype == DType::boolean) throw UserError(fmt::format("{}: the operand must be numeric, got bool", name));
  const int64_t rank = static_cast<int64_t>(xt.shape.size());
  int64_t axis = a.integer("axis", -1);
  if (axis < -rank || axis >= rank) throw UserError(fmt::format("{}: axis {} is out of range for rank {}", name, axis, rank));
  if (axis < 0) axis += rank;
  const Dim& d = xt.shape[static_cast<size_t>(axis)];
  if (d.is_symbolic()) throw UserError(fmt::format("{}: axis {} has the symbolic extent {}; it must be static", name, axis, d.str()));
  const int64_t k = a.integer("k", -1), n = d.extent();
  if (k < 1 || k > n) throw UserError(fmt::format("{}: k must be in [1, {}] (the axis' extent), got {}", name, n, k));
  if (k > kMaxTopK) {
    throw UserError(fmt::format("{}: k = {} is above {}; top_k expands into 2k reductions over the axis", name, k, kMaxTopK));
  }
  const bool largest = a.boolean("largest", true);
  Shape along{Dim(n)};
  for (int64_t i = axis + 1; i < rank; ++i) along.emplace_back(1);
  const ValueId index = b.reshape(
      b.op(OpKind::Iota, {}, {{"shape", AttrValue(Shape{Dim(n)})}, {"axis", 0}, {"dtype", DType::i64}}), along);
  const OpKind pick = largest ? OpKind::ReduceMax : OpKind::ReduceMin;
  const OpKind beyond = largest ? OpKind::Lt : OpKind::Gt;
  std::vector<ValueId> values, indices;
  std::optional<ValueId> eligible;
  for (int64_t t = 0; t < k; ++t) {
    const ValueId candidates = eligible ? b.op(OpKind::Select, {*eligible, x, filler(xt.dtype, largest)}) : x;
    const ValueId v = b.reduce(pick, candidates, {axis}, true);
    const ValueId equal = b.binary(OpKind::Eq, x, v);
    const ValueId hit = eligible ? b.binary(OpKind::And, equal, *eligible) : equal;
    const ValueId i = b.reduce(OpKind::ReduceMin, b.op(OpKind::Select, {hit, index, Operand(n)}), {axis}, true);
    values.push_back(v);
    indices.push_back(i);
    if (t + 1 < k) {
      const ValueId later = b.binary(OpKind::And, equal, b.binary(OpKind::Gt, index, i));
      eligible = b.binary(OpKind::Or, b.binary(beyond, x, v), later);
    }
  }
  const std::vector<ValueId>& out = name == "top_k" ? values : indices;
  if (out.size() == 1) return b.reshape(out[0], b.graph().type(out[0]).shape, r);
  std::vector<Operand> parts(out.begin(), out.end());
  return b.op(OpKind::Concat, parts, {{"axis", axis}}, r);
}

}  // namespace stitch
