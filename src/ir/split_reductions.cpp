#include "ir/split_reductions.h"

#include <cstdint>

#include "ir/rewriter.h"

namespace stitch {

namespace {

bool splittable_op(OpKind op) {
  switch (op) {
    case OpKind::ReduceSum:
    case OpKind::ReduceProd:
    case OpKind::ReduceMean:
    case OpKind::ReduceMax:
    case OpKind::ReduceMin:
    case OpKind::ReduceAny:
    case OpKind::ReduceAll: return true;
    default: return false;
  }
}

// How a reduction is split: into `parts` of its `length` reduced elements,
// keeping `columns` trailing elements (1 for a full reduction).
struct Split {
  int64_t parts = 0;  // 0: left whole
  int64_t length = 1;
  int64_t columns = 1;
  int reduced_axes = 0;  // the leading axes reduced
};

Split split_for(const Graph& g, const Node& n, const SplitReductionOptions& o) {
  if (!splittable_op(n.op)) return {};
  const TensorType& in = g.type(n.inputs[0]);
  if (in.dtype == DType::f16 || in.dtype == DType::bf16) return {};
  for (const Dim& d : in.shape) {
    if (!d.is_static()) return {};
  }
  const std::vector<int64_t>& axes = n.attrs.get("axes").as_ints();
  const int rank = static_cast<int>(in.shape.size());
  // Reduced axes must be the leading ones, 0..k-1 (canonical graphs list
  // them sorted and non-negative).
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] != static_cast<int64_t>(i)) return {};
  }
  Split s;
  s.reduced_axes = static_cast<int>(axes.size());
  for (int a = 0; a < rank; ++a) (a < s.reduced_axes ? s.length : s.columns) *= in.shape[a].extent();
  if (s.reduced_axes == rank) {
    if (s.length < o.min_length) return {};
    for (int64_t p = 2; p <= o.max_parts && s.length % p == 0 && s.length / p >= o.min_part_length; p *= 2) {
      s.parts = p;
    }
    return s;
  }
  if (s.reduced_axes == 0 || o.column_target <= 0 || s.columns >= o.column_target ||
      s.length * s.columns < o.min_column_elements) {
    return {};
  }
  for (int64_t p = 2; s.length % p == 0 && s.length / p >= o.min_column_part_length; p *= 2) {
    s.parts = p;
    if (p * s.columns >= o.column_target) break;
  }
  return s;
}

}  // namespace

Graph split_full_reductions(const Graph& g, const SplitReductionOptions& options) {
  bool any = false;
  for (const Node& n : g.nodes()) any = any || split_for(g, n, options).parts > 0;
  if (!any) return g;
  Rewriter rw(g);
  for (const Node& n : g.nodes()) {
    const Split s = split_for(g, n, options);
    if (s.parts == 0) {
      rw.bind(n, rw.copy(n, rw.mapped_inputs(n)));
      continue;
    }
    // [P, L/P] rows, or [P, L/P, kept axes...] for a column reduction.
    Shape split_shape{Dim(s.parts), Dim(s.length / s.parts)};
    const Shape& in_shape = g.type(n.inputs[0]).shape;
    split_shape.insert(split_shape.end(), in_shape.begin() + s.reduced_axes, in_shape.end());
    const std::string base = g.value_name(n.output);
    ValueId rows = rw.emit(OpKind::Reshape, {rw.mapped(n.inputs[0])}, {{"shape", AttrValue(split_shape)}},
                           base + "_rows", n.loc);
    ValueId partial = rw.emit(n.op, {rows}, {{"axes", AttrValue(std::vector<int64_t>{1})}, {"keepdims", AttrValue(false)}},
                              base + "_partial", n.loc);
    // keepdims=true keeps the input's rank in ones: a reshape to it. A column
    // reduction without keepdims has its shape already.
    const Shape& out = g.type(n.output).shape;
    const Shape kept(in_shape.begin() + s.reduced_axes, in_shape.end());
    const bool reshaped = !out.empty() && out != kept;
    ValueId total = rw.emit(n.op, {partial}, {{"axes", AttrValue(std::vector<int64_t>{0})}, {"keepdims", AttrValue(false)}},
                            reshaped || out.empty() ? base + "_total" : base, n.loc);
    if (reshaped) total = rw.emit(OpKind::Reshape, {total}, {{"shape", AttrValue(out)}}, base, n.loc);
    rw.bind(n, total);
  }
  return rw.finish();
}

SplitReductionOptions cpu_split_options() {
  SplitReductionOptions o;
  o.column_target = 8192;
  o.min_column_elements = int64_t{1} << 16;
  return o;
}

SplitReductionOptions gpu_split_options() {
  SplitReductionOptions o;
  o.column_target = int64_t{1} << 17;
  return o;
}

}  // namespace stitch
