#include "fusion/dot_epilogues.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <vector>

#include "fusion/legality.h"

namespace stitch {

namespace {

int64_t elements(const Shape& s) {
  int64_t n = 1;
  for (const Dim& d : s) n *= d.extent();
  return n;
}

// The product of every axis but the last: a dot result's rows.
int64_t leading(const Shape& s) {
  int64_t n = 1;
  for (size_t d = 0; d + 1 < s.size(); ++d) n *= s[d].extent();
  return n;
}

// Why the dot itself cannot take an epilogue: the executable computes it by
// row panels through BLAS (f32, f64), of static, non-empty matrices.
std::string dot_refusal(const Graph& g, const Node& dot) {
  if (dot.op != OpKind::Dot) return fmt::format("{} is one library call, with no epilogue", op_name(dot.op));
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

// Whether `n`, reading values computed from the dot's result, computes row r
// of its result from row r of theirs alone (rows of the dot's result: a
// value's row r is its elements [r * w, (r + 1) * w) for w = elements /
// rows). Elementwise ops and reshapes keep the linear order; a slice or
// concat of the last axis, and a broadcast along it, keep the leading axes.
// `from_dot` says which of n's inputs are computed from the dot's result.
bool keeps_rows(const Graph& g, const Node& n, int64_t rows, const std::function<bool(ValueId)>& from_dot) {
  const Shape& out = g.type(n.output).shape;
  if (!is_static(out) || elements(out) % rows != 0) return false;
  if (n.op == OpKind::Reshape) return true;
  if (is_elementwise(n.op)) {  // without an implicit broadcast of a row
    return std::all_of(n.inputs.begin(), n.inputs.end(),
                       [&](ValueId v) { return !from_dot(v) || g.type(v).shape == out; });
  }
  const int last = static_cast<int>(out.size()) - 1;
  if (last < 0 || leading(out) != rows) return false;
  const Shape& in = g.type(n.inputs[0]).shape;
  switch (n.op) {
    case OpKind::Slice: return leading(in) == rows;  // with equal products, no leading axis is cut
    case OpKind::Concat: return n.attrs.get("axis").as_int() == last;
    case OpKind::Broadcast:
      return in.size() == out.size() && std::equal(in.begin(), in.end() - 1, out.begin()) &&
             (in.back().extent() == 1 || in.back() == out.back());
    default: return false;
  }
}

}  // namespace

std::string dot_epilogue_refusal(const Graph& g, int dot, const FusionGroup& consumer) {
  const Node& dot_node = g.nodes()[dot];
  if (std::string why = dot_refusal(g, dot_node); !why.empty()) return why;
  const bool loop = consumer.kind == GroupKind::Loop;
  if (!loop && consumer.kind != GroupKind::Reduction && consumer.kind != GroupKind::Stitched) {
    return fmt::format("a {} kernel does not run by the dot's rows", group_kind_name(consumer.kind));
  }
  // A loop kernel runs by blocks of the dot's rows, each root the same rows
  // (any width); a row kernel's blocks cover rows of the dot's shape, its
  // roots the dot's shape or one value per row (without and with keepdims).
  const Shape& full = g.type(dot_node.output).shape;
  const int64_t rows = leading(full);
  const Shape per_row(full.begin(), full.end() - 1);
  Shape per_row_kept = per_row;
  per_row_kept.push_back(Dim(1));
  const int64_t last = static_cast<int64_t>(full.size()) - 1;
  auto is_row_shape = [&](const Shape& s) { return !loop && (s == per_row || s == per_row_kept); };
  for (int r : consumer.roots) {
    const Shape& s = g.type(g.nodes()[r].output).shape;
    const bool ok = loop ? is_static(s) && elements(s) % rows == 0 : s == full || is_row_shape(s);
    if (!ok) {
      return fmt::format("its root {} is not {}", g.value_name(g.nodes()[r].output),
                         loop ? "made of rows of the dot's result" : "of the dot's shape or one value per row");
    }
  }
  // Every value of the consumer computed from the dot's result must be read
  // at the element or the row the block works on.
  std::vector<int> depends;  // consumer nodes that read the dot's result, directly or not
  auto from_dot = [&](ValueId v) {
    const int p = g.value(v).producer;
    return p == dot || std::binary_search(depends.begin(), depends.end(), p);
  };
  auto reads_dot = [&](const Node& n) { return std::any_of(n.inputs.begin(), n.inputs.end(), from_dot); };
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
    const bool ok = loop ? keeps_rows(g, n, rows, from_dot)
                         : (is_elementwise(n.op) && (out == full || is_row_shape(out))) || is_reduction(n.op) ||
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

namespace {

void sorted_union(std::vector<int>& into, const std::vector<int>& from) {
  into.insert(into.end(), from.begin(), from.end());
  std::sort(into.begin(), into.end());
  into.erase(std::unique(into.begin(), into.end()), into.end());
}

// Loop kernels that read a loop epilogue's rows join it (docs/fusion.md,
// Dot epilogues): a kernel whose latest producer is the epilogue (or its
// dot), every other producer done before the dot, runs inside the dot's
// call too where the joined kernel still computes each row from the same
// row of the dot. A GRU's next input, a concat of the gates' slices, is one.
// `plan` is finalized, each epilogue right after its dot. Returns how many
// kernels joined.
int join_loop_epilogues(const Graph& g, FusionPlan& plan) {
  std::vector<FusionGroup>& groups = plan.groups;
  const int count = static_cast<int>(groups.size());
  const GroupGraph gg = build_group_graph(g, groups);
  std::vector<std::vector<int>> producers(count);
  for (int a = 0; a < count; ++a) {
    for (int b : gg.successors[a]) producers[b].push_back(a);
  }
  std::map<int, int> epilogue_after;  // a dot's group -> its loop epilogue (the next group)
  for (int i = 1; i < count; ++i) {
    if (groups[i].epilogue_of >= 0 && groups[i].kind == GroupKind::Loop) epilogue_after[i - 1] = i;
  }
  std::vector<int> owner(count);  // the group each group's roots are now written by
  for (int i = 0; i < count; ++i) owner[i] = i;
  std::vector<int> joined_into;   // epilogues that took a kernel
  int joined = 0;
  for (int c = 0; c < count; ++c) {
    const FusionGroup& consumer = groups[c];
    if (consumer.kind != GroupKind::Loop || consumer.epilogue_of >= 0 || producers[c].empty()) continue;
    std::vector<int> from;
    for (int p : producers[c]) from.push_back(owner[p]);
    std::sort(from.begin(), from.end());
    int e = from.back();
    if (groups[e].epilogue_of < 0) {
      const auto after = epilogue_after.find(e);
      if (after == epilogue_after.end()) continue;
      e = after->second;
    }
    if (groups[e].kind != GroupKind::Loop) continue;
    const int d = e - 1;
    if (std::any_of(from.begin(), from.end(), [&](int p) { return p != d && p != e && p > d; })) continue;
    FusionGroup merged = groups[e];
    sorted_union(merged.nodes, consumer.nodes);
    sorted_union(merged.roots, consumer.roots);
    if (!dot_epilogue_refusal(g, merged.epilogue_of, merged).empty()) continue;
    if (check_group_limits(g, merged.nodes, static_cast<int>(merged.roots.size()))) continue;
    groups[e] = std::move(merged);
    groups[c].roots.clear();
    owner[c] = e;
    joined_into.push_back(e);
    ++joined;
  }
  if (joined == 0) return 0;
  std::erase_if(groups, [](const FusionGroup& grp) { return grp.roots.empty(); });
  // A root the joined kernel alone read is no longer written. A value nothing
  // reads at all (dead code in a graph not canonicalized) stays written, as in
  // GroupDag, so no kernel is left without a root.
  std::vector<bool> read_outside(g.num_values(), true);
  for (const Node& n : g.nodes())
    for (ValueId v : n.inputs) read_outside[v.index] = false;
  for (const GraphOutput& o : g.outputs()) read_outside[o.value.index] = true;
  for (const FusionGroup& grp : groups) {
    for (int n : grp.nodes) {
      for (ValueId v : g.nodes()[n].inputs) {
        const int p = g.value(v).producer;
        if (p >= 0 && !grp.contains(p)) read_outside[v.index] = true;
      }
    }
  }
  for (FusionGroup& grp : groups) {
    if (grp.epilogue_of < 0) continue;
    std::erase_if(grp.roots, [&](int r) { return !read_outside[g.nodes()[r].output.index]; });
    STITCH_ASSERT(!grp.roots.empty(), "a dot epilogue that took in its readers writes nothing");
  }
  drop_fused_refusals(plan);
  return joined;
}

}  // namespace

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
  if (paired == 0) return 0;
  finalize_plan(g, plan);
  if (join_loop_epilogues(g, plan) > 0) finalize_plan(g, plan);
  return paired;
}

bool swaps_last_two_axes(const Graph& g, const Node& node) {
  const size_t rank = g.type(node.output).rank();
  if (node.op != OpKind::Transpose || rank < 2) return false;
  std::vector<int64_t> perm;
  if (const AttrValue* p = node.attrs.find("perm")) perm = p->as_ints();
  for (size_t k = perm.size(); k < rank; ++k) perm.push_back(static_cast<int64_t>(rank - 1 - k));  // default: reversed
  for (size_t d = 0; d < rank; ++d) {
    const size_t want = d + 2 < rank ? d : (d + 2 == rank ? rank - 1 : rank - 2);
    if (perm[d] != static_cast<int64_t>(want)) return false;
  }
  return true;
}

std::vector<bool> dot_operand_transposes(const Graph& g) {
  const std::vector<Node>& nodes = g.nodes();
  std::vector<bool> is(nodes.size(), false);
  for (size_t n = 0; n < nodes.size(); ++n) is[n] = swaps_last_two_axes(g, nodes[n]);
  // Every reader must be such a dot, reading it as B; a graph output is read outside.
  std::vector<bool> read(nodes.size(), false);
  auto refuse = [&](ValueId v) {
    const int p = g.value(v).producer;
    if (p >= 0) is[static_cast<size_t>(p)] = false;
  };
  for (const Node& user : nodes) {
    const DType dtype = g.type(user.output).dtype;
    const bool dot = user.op == OpKind::Dot && user.inputs.size() == 2 && g.type(user.inputs[0]).rank() >= 2 &&
                     (dtype == DType::f32 || dtype == DType::f64);
    for (size_t i = 0; i < user.inputs.size(); ++i) {
      if (dot && i == 1) {
        const int p = g.value(user.inputs[i]).producer;
        if (p >= 0) read[static_cast<size_t>(p)] = true;
      } else {
        refuse(user.inputs[i]);
      }
    }
  }
  for (const GraphOutput& o : g.outputs()) refuse(o.value);
  for (size_t n = 0; n < nodes.size(); ++n) is[n] = is[n] && read[n];
  return is;
}

}  // namespace stitch
