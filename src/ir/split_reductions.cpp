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

// P for a full reduction of `n` (0: leave it whole).
int64_t parts_for(const Graph& g, const Node& n, const SplitReductionOptions& o) {
  if (!splittable_op(n.op)) return 0;
  const TensorType& in = g.type(n.inputs[0]);
  if (in.dtype == DType::f16 || in.dtype == DType::bf16) return 0;
  int64_t length = 1;
  for (const Dim& d : in.shape) {
    if (!d.is_static()) return 0;
    length *= d.extent();
  }
  if (n.attrs.get("axes").as_ints().size() != in.shape.size() || length < o.min_length) return 0;
  int64_t parts = 0;
  for (int64_t p = 2; p <= o.max_parts && length % p == 0 && length / p >= o.min_part_length; p *= 2) parts = p;
  return parts;
}

}  // namespace

Graph split_full_reductions(const Graph& g, const SplitReductionOptions& options) {
  bool any = false;
  for (const Node& n : g.nodes()) any = any || parts_for(g, n, options) > 0;
  if (!any) return g;
  Rewriter rw(g);
  for (const Node& n : g.nodes()) {
    const int64_t parts = parts_for(g, n, options);
    if (parts == 0) {
      rw.bind(n, rw.copy(n, rw.mapped_inputs(n)));
      continue;
    }
    int64_t length = 1;
    for (const Dim& d : g.type(n.inputs[0]).shape) length *= d.extent();
    const std::string base = g.value_name(n.output);
    ValueId rows = rw.emit(OpKind::Reshape, {rw.mapped(n.inputs[0])},
                           {{"shape", AttrValue(Shape{Dim(parts), Dim(length / parts)})}}, base + "_rows", n.loc);
    ValueId partial = rw.emit(n.op, {rows}, {{"axes", AttrValue(std::vector<int64_t>{1})}, {"keepdims", AttrValue(false)}},
                              base + "_partial", n.loc);
    ValueId total = rw.emit(n.op, {partial}, {{"axes", AttrValue(std::vector<int64_t>{0})}, {"keepdims", AttrValue(false)}},
                            base + "_total", n.loc);
    // keepdims=true keeps the input's rank in ones.
    const Shape& out = g.type(n.output).shape;
    if (!out.empty()) total = rw.emit(OpKind::Reshape, {total}, {{"shape", AttrValue(out)}}, base, n.loc);
    rw.bind(n, total);
  }
  return rw.finish();
}

}  // namespace stitch
