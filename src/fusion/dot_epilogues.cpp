#include "fusion/dot_epilogues.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "fusion/legality.h"

namespace stitch {

namespace {

int64_t elements(const Shape& s) {
  int64_t n = 1;
  for (const Dim& d : s) n *= d.extent();
  return n;
}

// Why the dot itself cannot take an epilogue: the executable computes it by
// row panels through BLAS (f32, f64), of static, non-empty matrices.
std::string dot_refusal(const Graph& g, const Node& dot) {
  const TensorType& out = g.type(dot.output);
  if (out.dtype != DType::f32 && out.dtype != DType::f64) {
    return fmt::format("a {} dot is not computed by row panels", dtype_name(out.dtype));
  }
  for (ValueId v : dot.inputs) {
    if (g.type(v).rank() < 2) return "a matrix-vector dot is not computed by row panels";
    if (!is_static(g.type(v).shape)) return "a dot of symbolic shape is not computed by row panels";
  }
  if (!is_static(out.shape) || elements(out.shape) == 0) return "the dot's result is empty or of symbolic shape";
  return "";
}

}  // namespace

std::string dot_epilogue_refusal(const Graph& g, int dot, const FusionGroup& consumer) {
  const Node& dot_node = g.nodes()[dot];
  if (std::string why = dot_refusal(g, dot_node); !why.empty()) return why;
  const bool rows = consumer.kind == GroupKind::Reduction || consumer.kind == GroupKind::Stitched;
  if (consumer.kind != GroupKind::Loop && !rows) {
    return fmt::format("a {} kernel does not run by the dot's rows", group_kind_name(consumer.kind));
  }
  // The shapes a block of the consumer covers by rows of the dot's result:
  // the result itself, and one value per row (without and with keepdims).
  const Shape& full = g.type(dot_node.output).shape;
  const Shape per_row(full.begin(), full.end() - 1);
  Shape per_row_kept = per_row;
  per_row_kept.push_back(Dim(1));
  const int64_t last = static_cast<int64_t>(full.size()) - 1;
  auto is_row_shape = [&](const Shape& s) { return rows && (s == per_row || s == per_row_kept); };
  for (int r : consumer.roots) {
    const Shape& s = g.type(g.nodes()[r].output).shape;
    if (s != full && !is_row_shape(s)) {
      return fmt::format("its root {} is not of the dot's shape or one value per row", g.value_name(g.nodes()[r].output));
    }
  }
  // Every value of the consumer computed from the dot's result must be read
  // at the element or the row the block works on.
  std::vector<int> depends;  // consumer nodes that read the dot's result, directly or not
  auto reads_dot = [&](const Node& n) {
    return std::any_of(n.inputs.begin(), n.inputs.end(), [&](ValueId v) {
      const int p = g.value(v).producer;
      return p == dot || std::binary_search(depends.begin(), depends.end(), p);
    });
  };
  for (int id : consumer.nodes) {
    const Node& n = g.nodes()[id];
    if (n.op == OpKind::Transpose) return "a transpose in the kernel (tiled transposes do not run by rows)";
    if (n.op == OpKind::Dot) return "a dot in the kernel";
    if (is_reduction(n.op)) {
      const TensorType& in = g.type(n.inputs[0]);
      const auto axes = n.attrs.get("axes").as_ints();
      if (in.shape != full || axes.size() != 1 || axes[0] != last) {
        return fmt::format("{} does not reduce rows of the dot's shape", g.value_name(n.output));
      }
    }
    if (!reads_dot(n)) continue;
    const Shape& in = g.type(n.inputs[0]).shape;
    const Shape& out = g.type(n.output).shape;
    const bool ok = (is_elementwise(n.op) && (out == full || is_row_shape(out))) || is_reduction(n.op) ||
                    (n.op == OpKind::Broadcast && is_row_shape(in) && in.size() == full.size() && out == full) ||
                    (n.op == OpKind::Reshape && is_row_shape(in) && is_row_shape(out));
    if (!ok) {
      return fmt::format("{} = {} reads the dot's result other than element by element or row by row",
                         g.value_name(n.output), op_name(n.op));
    }
    depends.push_back(id);  // nodes are ascending, so this stays sorted
  }
  return "";
}

int pair_dot_epilogues(const Graph& g, FusionPlan& plan) {
  const int count = static_cast<int>(plan.groups.size());
  const GroupGraph gg = build_group_graph(g, plan.groups);
  std::vector<int> last_producer(count, -1);  // per group, the latest group (in plan order) it reads
  for (int a = 0; a < count; ++a) {
    for (int b : gg.successors[a]) last_producer[b] = std::max(last_producer[b], a);
  }
  std::vector<bool> taken(count, false);
  std::vector<int> epilogue_group(g.nodes().size(), -1);  // per dot node
  int paired = 0;
  for (int c = 0; c < count; ++c) {
    FusionGroup& consumer = plan.groups[c];
    const int l = last_producer[c];
    // Only the latest producer can be run with: every other group the
    // consumer reads must be done when the dot's group starts.
    if (l < 0 || taken[l] || plan.groups[l].kind != GroupKind::Library) continue;
    const int dot = plan.groups[l].roots.front();
    if (!dot_epilogue_refusal(g, dot, consumer).empty()) continue;
    consumer.epilogue_of = dot;
    taken[l] = true;
    epilogue_group[dot] = c;
    ++paired;
  }
  for (FusionRefusal& r : plan.refusals) {
    if (r.relation != FusionRefusal::Relation::ProducerConsumer || epilogue_group[r.producer] < 0) continue;
    if (plan.groups[epilogue_group[r.producer]].contains(r.consumer)) {
      r.reason = "the dot's epilogue: runs inside its library call, a panel of rows at a time";
    }
  }
  if (paired > 0) finalize_plan(g, plan);
  return paired;
}

}  // namespace stitch
