// ONNX layout and shape ops (docs/onnx.md, Ops): Transpose, Reshape, Squeeze,
// Unsqueeze, Flatten, Expand, Slice, Split, Gather, Concat, Pad, Shape,
// ConstantOfShape, Range. Shape-like operands (a Reshape's shape, a Slice's
// starts, pads, axes) must be known tensors; a node whose inputs are all known
// is folded by the importer, so Shape -> Gather -> Concat -> Reshape chains
// leave a static reshape and nothing else.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>

#include "onnx/context.h"

namespace stitch::onnx_import {

namespace {

using ::onnx::NodeProto;
using Ints = std::vector<int64_t>;

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

Ints known_ints(const ImportContext& ctx, const NodeProto& n, int i, const std::string& what) {
  return ImportContext::ints_of(ctx.known_input(n, i, what));
}

bool is_one(const Dim& d) { return d.is_static() && d.extent() == 1; }

// The extent of dims [lo, hi) taken together: a static product, or a single
// symbol when every other dim is 1 (the IR cannot name `B * 3`).
Dim dim_product(const Shape& s, size_t lo, size_t hi, const std::string& what) {
  int64_t product = 1;
  std::optional<Dim> symbol;
  for (size_t d = lo; d < hi; ++d) {
    if (s[d].is_static()) {
      product *= s[d].extent();
    } else if (symbol) {
      throw UserError(fmt::format("{}: the dims {} and {} would merge into one, which the IR cannot express",
                                  what, symbol->name(), s[d].name()));
    } else {
      symbol = s[d];
    }
  }
  if (!symbol) return Dim(product);
  if (product != 1) {
    throw UserError(fmt::format("{}: symbolic dim {} would merge with static extent {}, which the IR cannot express",
                                what, symbol->name(), product));
  }
  return *symbol;
}

// Axes of an op (Squeeze, Unsqueeze): the second input from opset 13, or the
// older attribute, which some exporters still write.
std::optional<Ints> axes_of(const ImportContext& ctx, const NodeProto& n) {
  if (ImportContext::has_input(n, 1)) return known_ints(ctx, n, 1, "the axes input");
  return ImportContext::ints_attr(n, "axes");
}

// Sorted, unique, non-negative axes for a tensor of `rank`.
Ints normalized_axes(const Ints& axes, int64_t rank) {
  Ints out;
  for (int64_t a : axes) out.push_back(ImportContext::normalize_axis(a, rank));
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end()) throw UserError("an axis is repeated");
  return out;
}

std::string spec_str(const std::vector<SymInt>& spec) {
  std::vector<std::string> parts;
  for (const SymInt& e : spec) parts.push_back(e.str());
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

// ONNX Reshape's target: 0 copies the input dim (unless allowzero), one -1 is
// inferred. Inference also works with symbols: [B, 3, 4] -> [-1, 12] gives B.
Shape reshape_target(const Shape& in, const std::vector<SymInt>& spec, bool allowzero) {
  Shape out;
  std::optional<size_t> infer;
  for (size_t i = 0; i < spec.size(); ++i) {
    if (!spec[i].symbol.empty()) {  // a symbolic dim from shape arithmetic (shape_values.h)
      out.push_back(Dim::symbol(spec[i].symbol));
      continue;
    }
    int64_t s = spec[i].value;
    if (s == -1) {
      if (infer) throw UserError("the shape has more than one -1");
      infer = i;
      out.emplace_back(1);
    } else if (s == 0 && !allowzero) {
      if (i >= in.size()) throw UserError(fmt::format("shape entry {} is 0 but the input has rank {}", i, in.size()));
      out.push_back(in[i]);
    } else if (s < 0) {
      throw UserError(fmt::format("shape entry {} is {}", i, s));
    } else {
      out.emplace_back(s);
    }
  }
  if (!infer) return out;
  // What the input has that the known entries do not: a static ratio and a
  // multiset of symbols, which must reduce to one static extent or one symbol.
  int64_t in_static = 1, out_static = 1;
  std::map<std::string, int> symbols;
  for (const Dim& d : in) {
    if (d.is_static()) {
      in_static *= d.extent();
    } else {
      ++symbols[d.name()];
    }
  }
  for (const Dim& d : out) {
    if (d.is_static()) {
      out_static *= d.extent();
    } else {
      --symbols[d.name()];
    }
  }
  std::vector<std::string> left;
  for (const auto& [name, count] : symbols) {
    if (count < 0 || count > 1 || (count == 1 && !left.empty())) {
      throw UserError(fmt::format("cannot infer the -1 of shape {} from the input shape {}", spec_str(spec),
                                  shape_str(in)));
    }
    if (count == 1) left.push_back(name);
  }
  if (out_static == 0 || in_static % out_static != 0 || (!left.empty() && in_static != out_static)) {
    throw UserError(fmt::format("cannot infer the -1 of shape {} from the input shape {}", spec_str(spec),
                                shape_str(in)));
  }
  out[*infer] = left.empty() ? Dim(in_static / out_static) : Dim::symbol(left[0]);
  return out;
}

// A rank-1 i64 index [start, start + step, ...] of `count` entries, built from
// an iota so that it needs no bound tensor.
ValueId index_ramp(GraphBuilder& b, int64_t count, int64_t start, int64_t step) {
  ValueId i = b.op(OpKind::Iota, {}, {{"shape", AttrValue(Shape{Dim(count)})}, {"axis", 0}, {"dtype", DType::i64}});
  if (step != 1) i = b.mul(i, step);
  return start != 0 ? b.add(i, start) : i;
}

void add_slice(ImportContext& ctx, const NodeProto& n) {
  ImportContext::require_inputs(n, 3, 5);
  ValueId x = ctx.input(n, 0);
  const Shape shape = ctx.type(x).shape;
  const auto rank = static_cast<int64_t>(shape.size());
  Ints starts = known_ints(ctx, n, 1, "the starts input");
  Ints ends = known_ints(ctx, n, 2, "the ends input");
  Ints axes;
  if (ImportContext::has_input(n, 3)) {
    axes = known_ints(ctx, n, 3, "the axes input");
  } else {
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  Ints steps = ImportContext::has_input(n, 4) ? known_ints(ctx, n, 4, "the steps input") : Ints(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) {
    throw UserError("starts, ends, axes and steps must have one entry each per sliced axis");
  }
  Ints start(rank, 0), step(rank, 1);
  Shape stop = shape;
  std::vector<bool> seen(rank, false);
  // Negative steps become gathers of a descending index: (axis, first, step, count).
  std::vector<std::array<int64_t, 4>> reversed;
  for (size_t k = 0; k < axes.size(); ++k) {
    int64_t a = ImportContext::normalize_axis(axes[k], rank);
    if (seen[a]) throw UserError(fmt::format("axis {} is sliced twice", a));
    seen[a] = true;
    int64_t s = starts[k], e = ends[k], st = steps[k];
    if (st == 0) throw UserError(fmt::format("step 0 on axis {}", a));
    if (shape[a].is_symbolic()) {
      // Exporters write "to the end" as INT64_MAX or INT32_MAX.
      if (s == 0 && st == 1 && e >= kInt32Max) continue;
      throw UserError(fmt::format("axis {} has symbolic extent {}; Slice can only take it whole (start 0, end "
                                  "INT64_MAX or INT32_MAX, step 1), got start {}, end {}, step {}",
                                  a, shape[a].name(), s, e, st));
    }
    const int64_t dim = shape[a].extent();
    auto clamp = [dim](int64_t v, int64_t lo, int64_t hi) { return std::clamp(v < 0 ? v + dim : v, lo, hi); };
    if (st > 0) {
      start[a] = clamp(s, 0, dim);
      stop[a] = Dim(std::max(clamp(e, 0, dim), start[a]));
      step[a] = st;
      continue;
    }
    int64_t first = 0, count = 0;
    if (dim > 0) {
      first = clamp(s, 0, dim - 1);
      int64_t last = clamp(e, -1, dim - 1);
      // 1 + (first - last - 1) / |step|, with |step| unsigned so that INT64_MIN works.
      auto magnitude = 0 - static_cast<uint64_t>(st);
      if (first > last) count = 1 + static_cast<int64_t>(static_cast<uint64_t>(first - last - 1) / magnitude);
    }
    if (count <= 1) {
      start[a] = count == 0 ? 0 : first;
      stop[a] = Dim(count == 0 ? 0 : first + 1);
    } else {
      reversed.push_back({a, first, st, count});
    }
  }
  GraphBuilder& b = ctx.builder();
  bool any_slice = start != Ints(rank, 0) || step != Ints(rank, 1) || stop != shape;
  if (any_slice || reversed.empty()) {
    x = b.op(OpKind::Slice, {x}, {{"start", AttrValue(start)}, {"stop", AttrValue(stop)}, {"step", AttrValue(step)}},
             reversed.empty() ? ctx.out_name(n) : "");
  }
  for (size_t k = 0; k < reversed.size(); ++k) {
    auto [a, first, st, count] = reversed[k];
    x = b.op(OpKind::Gather, {x, index_ramp(b, count, first, st)}, {{"axis", a}},
             k + 1 == reversed.size() ? ctx.out_name(n) : "");
  }
  ctx.define(n, x);
}

// Pad's edge, reflect and wrap modes: a gather along `axis` of an index
// computed from an iota over the padded extent (i = position - low).
ValueId pad_by_gather(GraphBuilder& b, ValueId x, int64_t axis, int64_t dim, int64_t low, int64_t high,
                      const std::string& mode) {
  ValueId i = index_ramp(b, dim + low + high, -low, 1);
  if (mode == "wrap") {
    // Periodic: (i mod dim) with i moved up by whole periods so it is never negative.
    const int64_t periods = (low + dim - 1) / dim;
    i = b.binary(OpKind::Rem, b.add(i, periods * dim), dim);
  } else if (mode == "edge" || dim == 1) {
    i = b.op(OpKind::Clamp, {i, int64_t{0}, dim - 1});
  } else {
    // Reflection about 0 and dim - 1 has period p = 2 (dim - 1): m = |i| mod p, then min(m, p - m).
    int64_t period = 2 * (dim - 1);
    ValueId m = b.binary(OpKind::Rem, b.unary(OpKind::Abs, i), period);
    i = b.binary(OpKind::Min, m, b.sub(period, m));
  }
  return b.op(OpKind::Gather, {x, i}, {{"axis", axis}});
}

// Split along `axis` (0): the sizes from the `split` input (opset 13; an
// attribute before), else `num_outputs` parts (opset 18) or one part per
// output, each ceil(extent / parts) long but the last.
void add_split(ImportContext& ctx, const NodeProto& n) {
  ImportContext::require_inputs(n, 1, 2);
  ValueId x = ctx.input(n, 0);
  const Shape shape = ctx.type(x).shape;
  const auto rank = static_cast<int64_t>(shape.size());
  const int64_t axis = ImportContext::normalize_axis(ImportContext::int_attr(n, "axis", 0), rank);
  if (shape[axis].is_symbolic()) {
    throw UserError(fmt::format("axis {} has symbolic extent {}; Split needs a static one", axis, shape[axis].name()));
  }
  const int64_t extent = shape[axis].extent();
  Ints sizes;
  if (ImportContext::has_input(n, 1)) {
    sizes = known_ints(ctx, n, 1, "the split input");
  } else if (auto attr = ImportContext::ints_attr(n, "split")) {
    sizes = *attr;
  } else {
    const int64_t parts = ImportContext::int_attr(n, "num_outputs", n.output_size());
    if (parts < 1) throw UserError(fmt::format("Split into {} parts", parts));
    const int64_t chunk = (extent + parts - 1) / parts;
    for (int64_t k = 0, at = 0; k < parts; ++k, at += chunk) sizes.push_back(std::clamp(extent - at, int64_t{0}, chunk));
  }
  if (static_cast<int64_t>(sizes.size()) != n.output_size()) {
    throw UserError(fmt::format("Split makes {} parts but the node has {} outputs", sizes.size(), n.output_size()));
  }
  int64_t total = 0;
  for (int64_t size : sizes) {
    if (size < 0 || size > extent - total) {
      throw UserError(fmt::format("split sizes {} do not add up to the axis' extent {}", fmt::join(sizes, ", "), extent));
    }
    total += size;
  }
  if (total != extent) {
    throw UserError(fmt::format("split sizes {} do not add up to the axis' extent {}", fmt::join(sizes, ", "), extent));
  }
  GraphBuilder& b = ctx.builder();
  Ints start(rank, 0);
  Shape stop = shape;
  for (int i = 0; i < n.output_size(); ++i) {
    stop[axis] = Dim(start[axis] + sizes[i]);
    if (ImportContext::wants_output(n, i)) {
      ctx.define(n, i, b.op(OpKind::Slice, {x}, {{"start", AttrValue(start)}, {"stop", AttrValue(stop)}},
                            ctx.out_name(n, i)));
    }
    start[axis] += sizes[i];
  }
}

void add_pad(ImportContext& ctx, const NodeProto& n) {
  ImportContext::require_inputs(n, 2, 4);
  ValueId x = ctx.input(n, 0);
  Shape shape = ctx.type(x).shape;
  const auto rank = static_cast<int64_t>(shape.size());
  std::string mode = ImportContext::string_attr(n, "mode", "constant");
  if (mode != "constant" && mode != "edge" && mode != "reflect" && mode != "wrap") {
    throw UserError(fmt::format("mode '{}' is not supported (constant, edge, reflect, wrap are)", mode));
  }
  Ints pads = known_ints(ctx, n, 1, "the pads input");
  Ints axes;
  if (ImportContext::has_input(n, 3)) {
    axes = normalized_axes(known_ints(ctx, n, 3, "the axes input"), rank);
  } else {
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  }
  if (pads.size() != 2 * axes.size()) {
    throw UserError(fmt::format("pads has {} entries, expected {} (begin and end per axis)", pads.size(),
                                2 * axes.size()));
  }
  Ints low(rank, 0), high(rank, 0);
  for (size_t k = 0; k < axes.size(); ++k) {
    low[axes[k]] = pads[k];
    high[axes[k]] = pads[k + axes.size()];
  }
  GraphBuilder& b = ctx.builder();
  // Negative pads crop first.
  Ints start(rank, 0);
  Shape stop = shape;
  bool crop = false;
  for (int64_t a = 0; a < rank; ++a) {
    if (low[a] >= 0 && high[a] >= 0) continue;
    if (shape[a].is_symbolic()) throw UserError(fmt::format("negative pad on axis {} of symbolic extent", a));
    // Checked before negating: -INT64_MIN overflows.
    const int64_t extent = shape[a].extent();
    if (low[a] < -extent || high[a] < -extent) {
      throw UserError(fmt::format("negative pads on axis {} remove more than its extent", a));
    }
    start[a] = std::max<int64_t>(-low[a], 0);
    int64_t end = extent - std::max<int64_t>(-high[a], 0);
    if (end < start[a]) throw UserError(fmt::format("negative pads on axis {} remove more than its extent", a));
    stop[a] = Dim(end);
    shape[a] = Dim(end - start[a]);
    low[a] = std::max<int64_t>(low[a], 0);
    high[a] = std::max<int64_t>(high[a], 0);
    crop = true;
  }
  if (crop) x = b.op(OpKind::Slice, {x}, {{"start", AttrValue(start)}, {"stop", AttrValue(stop)}});
  if (mode != "constant") {
    for (int64_t a = 0; a < rank; ++a) {
      if (low[a] == 0 && high[a] == 0) continue;
      if (shape[a].is_symbolic()) throw UserError(fmt::format("{} padding of axis {} of symbolic extent", mode, a));
      if (shape[a].extent() == 0) throw UserError(fmt::format("{} padding of the empty axis {}", mode, a));
      x = pad_by_gather(b, x, a, shape[a].extent(), low[a], high[a], mode);
    }
    ctx.define(n, x);
    return;
  }
  DType dtype = ctx.dtype(x);
  bool integral = dtype == DType::i8 || dtype == DType::i32 || dtype == DType::i64 || dtype == DType::boolean;
  AttrValue value = integral ? AttrValue(int64_t{0}) : AttrValue(0.0);
  std::optional<ValueId> fill;
  if (ImportContext::has_input(n, 2)) {
    if (const Tensor* t = ctx.known(n.input(2))) {
      if (t->numel() != 1) throw UserError("constant_value must hold one element");
      value = integral ? AttrValue(t->get_i64(0)) : AttrValue(t->get_f64(0));
    } else {
      fill = ctx.input(n, 2);
    }
  }
  Attrs attrs{{"low", AttrValue(low)}, {"high", AttrValue(high)}, {"value", value}};
  if (!fill) {
    ctx.define(n, b.op(OpKind::Pad, {x}, attrs, ctx.out_name(n)));
    return;
  }
  // A constant_value computed in the graph: pad with 0, then select it where a padded mask is false.
  if (ctx.dtype(*fill) != dtype) throw UserError("constant_value must have the dtype of the data");
  Attrs inside_attrs{{"value", true}, {"dtype", DType::boolean}, {"shape", AttrValue(shape)}};
  ValueId inside = b.op(OpKind::Constant, {}, inside_attrs);
  ValueId mask = b.op(OpKind::Pad, {inside}, {{"low", AttrValue(low)}, {"high", AttrValue(high)}, {"value", false}});
  ValueId padded = b.op(OpKind::Pad, {x}, attrs);
  ctx.define(n, b.op(OpKind::Select, {mask, padded, *fill}, {}, ctx.out_name(n)));
}

void add_range(ImportContext& ctx, const NodeProto& n) {
  ImportContext::require_inputs(n, 3, 3);
  // arange(T) of a symbolic extent (positions over a dynamic sequence): an
  // iota of that extent, when it starts at 0 and steps by 1.
  if (const ShapeValue* limit = ctx.shape_value(n.input(1))) {
    const Tensor* start = ctx.known(n.input(0));
    const Tensor* delta = ctx.known(n.input(2));
    if (limit->entries.size() != 1 || limit->entries[0].opaque || !start || !delta || start->numel() != 1 ||
        delta->numel() != 1 || start->get_f64(0) != 0 || delta->get_f64(0) != 1) {
      throw UserError(fmt::format("the limit input ('{}') is symbolic ({}); Range of a symbolic limit needs start 0 "
                                  "and delta 1",
                                  n.input(1), limit->entries.empty() ? "" : limit->entries[0].str()));
    }
    const Dim extent = Dim::symbol(limit->entries[0].symbol);
    ctx.define(n, ctx.builder().op(OpKind::Iota, {}, {{"shape", AttrValue(Shape{extent})}, {"axis", 0},
                                                      {"dtype", start->dtype()}},
                                   ctx.out_name(n)));
    return;
  }
  const Tensor& start = ctx.known_input(n, 0, "the start input");
  const Tensor& limit = ctx.known_input(n, 1, "the limit input");
  const Tensor& delta = ctx.known_input(n, 2, "the delta input");
  if (start.numel() != 1 || limit.numel() != 1 || delta.numel() != 1) {
    throw UserError("start, limit and delta must be scalars");
  }
  DType dtype = start.dtype();
  bool integral = dtype == DType::i8 || dtype == DType::i32 || dtype == DType::i64;
  int64_t count = 0;
  if (integral) {
    int64_t s = start.get_i64(0), l = limit.get_i64(0), d = delta.get_i64(0);
    if (d == 0) throw UserError("delta is 0");
    // ceil((l - s) / d) in integers; a range that runs the wrong way is empty.
    int64_t diff = l - s;
    count = std::max<int64_t>(diff / d + (diff % d != 0 && (diff > 0) == (d > 0)), 0);
  } else {
    double d = delta.get_f64(0);
    if (d == 0) throw UserError("delta is 0");
    count = std::max<int64_t>(static_cast<int64_t>(std::ceil((limit.get_f64(0) - start.get_f64(0)) / d)), 0);
  }
  GraphBuilder& b = ctx.builder();
  ValueId i = b.op(OpKind::Iota, {}, {{"shape", AttrValue(Shape{Dim(count)})}, {"axis", 0}, {"dtype", dtype}});
  Operand step = integral ? Operand(delta.get_i64(0)) : Operand(delta.get_f64(0));
  Operand first = integral ? Operand(start.get_i64(0)) : Operand(start.get_f64(0));
  ctx.define(n, b.add(b.mul(i, step), first, ctx.out_name(n)));
}

// Squeeze: the given axes of extent 1 dropped (all static 1s without axes).
void add_squeeze(ImportContext& ctx, const NodeProto& n) {
  ImportContext::require_inputs(n, 1, 2);
  ValueId x = ctx.input(n, 0);
  const Shape& s = ctx.type(x).shape;
  std::optional<Ints> axes = axes_of(ctx, n);
  std::vector<bool> drop(s.size(), false);
  if (axes) {
    for (int64_t a : normalized_axes(*axes, ctx.rank(x))) {
      if (!is_one(s[a])) throw UserError(fmt::format("axis {} has extent {}, not 1", a, s[a].str()));
      drop[a] = true;
    }
  } else {
    // No axes: every static 1 goes; a symbolic dim is kept, as it may not be 1.
    for (size_t d = 0; d < s.size(); ++d) drop[d] = is_one(s[d]);
  }
  Shape out;
  for (size_t d = 0; d < s.size(); ++d) {
    if (!drop[d]) out.push_back(s[d]);
  }
  ctx.define(n, ctx.builder().reshape(x, out, ctx.out_name(n)));
}

// Unsqueeze: axes of extent 1 inserted where the axes input says.
void add_unsqueeze(ImportContext& ctx, const NodeProto& n) {
  ImportContext::require_inputs(n, 1, 2);
  ValueId x = ctx.input(n, 0);
  const Shape& s = ctx.type(x).shape;
  std::optional<Ints> axes = axes_of(ctx, n);
  if (!axes) throw UserError("the axes input is missing");
  const auto rank = static_cast<int64_t>(s.size() + axes->size());
  Ints sorted = normalized_axes(*axes, rank);
  Shape out;
  size_t next = 0;
  for (int64_t d = 0; d < rank; ++d) {
    if (std::binary_search(sorted.begin(), sorted.end(), d)) {
      out.emplace_back(1);
    } else {
      out.push_back(s[next++]);
    }
  }
  ctx.define(n, ctx.builder().reshape(x, out, ctx.out_name(n)));
}

// Expand: a bidirectional numpy broadcast to the shape input.
void add_expand(ImportContext& ctx, const NodeProto& n) {
  ImportContext::require_inputs(n, 2, 2);
  ValueId x = ctx.input(n, 0);
  const Shape& in = ctx.type(x).shape;
  std::vector<SymInt> given = ctx.known_sym_ints(n, 1, "the shape input");
  // Bidirectional numpy broadcast of the input shape and the given one; a
  // symbolic entry matches the same symbol or a 1.
  const size_t rank = std::max(in.size(), given.size());
  Shape out(rank);
  for (size_t k = 0; k < rank; ++k) {
    Dim a = k + in.size() >= rank ? in[k + in.size() - rank] : Dim(1);
    if (k + given.size() < rank) {
      out[k] = a;
      continue;
    }
    const SymInt& g = given[k + given.size() - rank];
    if (g.is_static() && g.value < 0) throw UserError(fmt::format("shape entry {} is negative", g.value));
    const Dim want = g.is_static() ? Dim(g.value) : Dim::symbol(g.symbol);
    if ((g.is_static() && g.value == 1) || a == want) {
      out[k] = a;
    } else if (is_one(a)) {
      out[k] = want;
    } else {
      throw UserError(fmt::format("the input shape {} cannot be expanded to {}", shape_str(in), spec_str(given)));
    }
  }
  ctx.define(n, ctx.builder().broadcast(x, out, ctx.out_name(n)));
}

// ConstantOfShape: a known tensor of the shape input, filled with `value`.
void add_constant_of_shape(ImportContext& ctx, const NodeProto& n) {
  ImportContext::require_inputs(n, 1, 1);
  Ints shape = known_ints(ctx, n, 0, "the shape input");
  for (int64_t d : shape) {
    if (d < 0) throw UserError(fmt::format("shape entry {} is negative", d));
  }
  Tensor fill(DType::f32, {1});
  if (const auto* v = ImportContext::attr(n, "value")) {
    fill = tensor_from_proto(v->t());
    if (fill.numel() != 1) throw UserError("the value attribute must hold one element");
  }
  Tensor t(fill.dtype(), shape);
  bool integral = fill.dtype() == DType::i8 || fill.dtype() == DType::i32 || fill.dtype() == DType::i64 ||
                  fill.dtype() == DType::boolean;
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (integral) {
      t.set_i64(i, fill.get_i64(0));
    } else {
      t.set_f64(i, fill.get_f64(0));
    }
  }
  ctx.define_known(n, 0, std::move(t));
}

}  // namespace

void register_shape_ops(ConverterTable& table) {
  table["Transpose"] = [](ImportContext& ctx, const NodeProto& n) {
    ImportContext::require_inputs(n, 1, 1);
    ValueId x = ctx.input(n, 0);
    std::vector<int64_t> perm;
    for (int64_t d = ctx.rank(x) - 1; d >= 0; --d) perm.push_back(d);
    ctx.define(n, ctx.builder().transpose(x, ImportContext::ints_attr(n, "perm").value_or(perm), ctx.out_name(n)));
  };
  table["Reshape"] = [](ImportContext& ctx, const NodeProto& n) {
    ImportContext::require_inputs(n, 2, 2);
    ValueId x = ctx.input(n, 0);
    Shape target = reshape_target(ctx.type(x).shape, ctx.known_sym_ints(n, 1, "the shape input"),
                                  ImportContext::int_attr(n, "allowzero", 0) != 0);
    ctx.define(n, ctx.builder().reshape(x, target, ctx.out_name(n)));
  };
  table["Flatten"] = [](ImportContext& ctx, const NodeProto& n) {
    ImportContext::require_inputs(n, 1, 1);
    ValueId x = ctx.input(n, 0);
    const Shape& s = ctx.type(x).shape;
    int64_t axis = ImportContext::int_attr(n, "axis", 1);
    // Flatten's axis may equal the rank (everything in the first dim).
    if (axis < 0) axis += ctx.rank(x);
    if (axis < 0 || axis > ctx.rank(x)) throw UserError(fmt::format("axis {} is out of range", axis));
    const auto cut = static_cast<size_t>(axis);
    Shape out{dim_product(s, 0, cut, "Flatten"), dim_product(s, cut, s.size(), "Flatten")};
    ctx.define(n, ctx.builder().reshape(x, out, ctx.out_name(n)));
  };
  table["Squeeze"] = add_squeeze;
  table["Unsqueeze"] = add_unsqueeze;
  table["Expand"] = add_expand;
  table["Slice"] = add_slice;
  table["Gather"] = [](ImportContext& ctx, const NodeProto& n) {
    ImportContext::require_inputs(n, 2, 2);
    ValueId x = ctx.input(n, 0);
    int64_t axis = ImportContext::normalize_axis(ImportContext::int_attr(n, "axis", 0), ctx.rank(x));
    // The IR's gather is numpy `take`: negative indices count from the end,
    // as in ONNX, so the indices go in unchanged.
    ctx.define(n, ctx.builder().op(OpKind::Gather, {x, ctx.input(n, 1)}, {{"axis", axis}}, ctx.out_name(n)));
  };
  table["Concat"] = [](ImportContext& ctx, const NodeProto& n) {
    ImportContext::require_inputs(n, 1, 1 << 20);
    std::vector<Operand> parts;
    for (int i = 0; i < n.input_size(); ++i) parts.emplace_back(ctx.input(n, i));
    const ::onnx::AttributeProto* axis_attr = ImportContext::attr(n, "axis");
    if (!axis_attr) throw UserError("the axis attribute is missing");
    int64_t axis = ImportContext::normalize_axis(axis_attr->i(), ctx.rank(parts[0].value));
    ctx.define(n, ctx.builder().op(OpKind::Concat, parts, {{"axis", axis}}, ctx.out_name(n)));
  };
  table["Pad"] = add_pad;
  table["Split"] = add_split;
  table["Shape"] = [](ImportContext& ctx, const NodeProto& n) {
    ImportContext::require_inputs(n, 1, 1);
    Shape s = ctx.shape_of_value(n.input(0));
    const auto rank = static_cast<int64_t>(s.size());
    auto bound = [rank](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank); };
    int64_t lo = bound(ImportContext::int_attr(n, "start", 0));
    int64_t hi = std::max(bound(ImportContext::int_attr(n, "end", rank)), lo);
    // A symbolic dim gives a shape value, which the shape arithmetic after it
    // carries to a Reshape or Expand (shape_values.h); static dims a tensor.
    ShapeValue v;
    for (int64_t d = lo; d < hi; ++d) v.entries.push_back(SymInt::of(s[d]));
    if (ImportContext::wants_output(n, 0)) ctx.define_shape_value(n.output(0), std::move(v));
  };
  table["Size"] = [](ImportContext& ctx, const NodeProto& n) {
    ImportContext::require_inputs(n, 1, 1);
    Tensor t(DType::i64, {});
    int64_t count = 1;
    for (const Dim& d : ctx.shape_of_value(n.input(0))) {
      if (d.is_symbolic()) {
        throw UserError(fmt::format("'{}' has the symbolic dim {}; Size of a symbolic shape is not folded",
                                    n.input(0), d.name()));
      }
      count *= d.extent();
    }
    t.set_i64(0, count);
    ctx.define_known(n, 0, std::move(t));
  };
  table["ConstantOfShape"] = add_constant_of_shape;
  table["Range"] = add_range;
}

}  // namespace stitch::onnx_import
