#include "ir/attention_pattern.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "ir/canonicalize.h"
#include "ir/rewriter.h"
#include "ir/type_inference.h"

namespace stitch {

namespace {

constexpr double kMinusInf = -std::numeric_limits<double>::infinity();

// One term above the scaled scores: `add(s, value)`, or a select that keeps
// s where `value` (a bool mask) is `keep`, else -inf.
struct BiasTerm {
  bool mask = false;
  bool keep = true;
  ValueId value;  // as the graph reads it (the canonical form's full shape)
  // A mask filling the dtype's lowest finite value rather than -inf (Hugging
  // Face's GPT-2 fills torch.finfo(dtype).min): the same softmax wherever a row
  // keeps a key, so it is taken only as a causal mask that hides no whole row.
  bool finite_fill = false;
};

// The dtype's lowest finite value, as a double; -inf for a non-float dtype.
double lowest_finite(DType t) {
  switch (t) {
    case DType::f64: return std::numeric_limits<double>::lowest();
    case DType::f32: return std::numeric_limits<float>::lowest();
    case DType::f16: return -65504.0;
    case DType::bf16: return -3.3895313892515355e38;
    default: return kMinusInf;
  }
}

struct AttentionMatch {
  ValueId q, kt, v;  // kt: [..., D, Tk]
  double scale = 1;
  bool causal = false;
  std::vector<BiasTerm> terms;  // innermost first
};

// An index along one of the last two axes plus a constant: `iota` (read
// through a broadcast) and add/sub of a splat constant.
struct AxisIndex {
  int from_end = 0;  // 2: the row (query) axis, 1: the column (key) axis
  double offset = 0;
};

std::vector<int> use_counts(const Graph& g) {
  std::vector<int> uses(g.num_values(), 0);
  for (const Node& n : g.nodes()) {
    for (ValueId in : n.inputs) ++uses[in.index];
  }
  for (const GraphOutput& o : g.outputs()) ++uses[o.value.index];
  return uses;
}

std::optional<double> splat_value(const Graph& g, ValueId v) {
  const Node* p = g.producer(v);
  if (!p || p->op != OpKind::Constant || !is_float(g.type(v).dtype)) return std::nullopt;
  return p->attrs.get("value").as_number();
}

// x where v = broadcast(x), else v.
ValueId unbroadcast(const Graph& g, ValueId v) {
  const Node* p = g.producer(v);
  return p && p->op == OpKind::Broadcast ? p->inputs[0] : v;
}

// The permutation that swaps the last two of `rank` axes.
std::vector<int64_t> swap_last_two(size_t rank) {
  std::vector<int64_t> perm;
  for (size_t i = 0; i < rank; ++i) perm.push_back(static_cast<int64_t>(i));
  std::swap(perm[rank - 1], perm[rank - 2]);
  return perm;
}

class Matcher {
 public:
  explicit Matcher(const Graph& g) : g_(g), uses_(use_counts(g)) {}

  // The match whose result is `out`, a dot node.
  std::optional<AttentionMatch> match(const Node& out) const {
    if (out.op != OpKind::Dot || !is_float(g_.type(out.output).dtype)) return std::nullopt;
    const ValueId x = softmax_input(out.inputs[0]);
    if (!x.valid()) return std::nullopt;
    AttentionMatch m;
    m.v = out.inputs[1];
    if (!scores(x, m, false, 2)) return std::nullopt;
    if (!shapes_fit(m)) return std::nullopt;
    std::vector<BiasTerm> kept;
    for (const BiasTerm& t : m.terms) {
      if (t.mask && is_causal_mask(t, m) && (!t.finite_fill || hides_no_row(m))) {
        m.causal = true;
      } else if (t.finite_fill) {
        return std::nullopt;  // a finite fill equals -inf only while every row keeps a key
      } else {
        kept.push_back(t);
      }
    }
    m.terms = std::move(kept);
    return m;
  }

 private:
  // The node producing v when it is `op` and v has exactly `uses` users.
  const Node* only(ValueId v, OpKind op, int uses = 1) const {
    const Node* p = g_.producer(v);
    return p && p->op == op && uses_[v.index] == uses ? p : nullptr;
  }

  bool reduces_last_axis(const Node& n) const {
    const int rank = g_.type(n.inputs[0]).rank();
    const auto& axes = n.attrs.get("axes").as_ints();
    return rank >= 1 && axes.size() == 1 && axes[0] == rank - 1 && n.attrs.get("keepdims").as_bool();
  }

  // x where p = softmax(x) over the last axis, as the composite expands and
  // canonicalisation leaves it; invalid otherwise.
  ValueId softmax_input(ValueId p) const {
    const Node* div = only(p, OpKind::Div);
    if (!div) return {};
    const ValueId e = div->inputs[0];
    const Node* sum_b = only(div->inputs[1], OpKind::Broadcast);
    const Node* sum = sum_b ? only(sum_b->inputs[0], OpKind::ReduceSum) : nullptr;
    const Node* exp = only(e, OpKind::Exp, 2);
    if (!sum || sum->inputs[0] != e || !reduces_last_axis(*sum) || !exp) return {};
    const Node* sub = only(exp->inputs[0], OpKind::Sub);
    if (!sub) return {};
    const ValueId x = sub->inputs[0];
    const Node* max_b = only(sub->inputs[1], OpKind::Broadcast);
    const Node* max = max_b ? only(max_b->inputs[0], OpKind::ReduceMax) : nullptr;
    if (!max || max->inputs[0] != x || !reduces_last_axis(*max) || uses_[x.index] != 2) return {};
    return x;
  }

  // Peels mul/div by splat constants off `v` (each of one user) into `scale`.
  ValueId peel_scale(ValueId v, double& scale) const {
    for (;;) {
      const Node* n = g_.producer(v);
      if (!n || uses_[v.index] != 1 || (n->op != OpKind::Mul && n->op != OpKind::Div)) return v;
      if (std::optional<double> c = splat_value(g_, n->inputs[1])) {
        scale = n->op == OpKind::Mul ? scale * *c : scale / *c;
        v = n->inputs[0];
      } else if (std::optional<double> c0 = splat_value(g_, n->inputs[0]); c0 && n->op == OpKind::Mul) {
        scale *= *c0;
        v = n->inputs[1];
      } else {
        return v;
      }
    }
  }

  // Whether `x`, of `users` users, is terms(scale(dot(..))); `scaled`: a
  // scale was peeled above, so no bias term may follow below it (it would
  // scale the bias too).
  bool scores(ValueId x, AttentionMatch& m, bool scaled, int users) const {
    const Node* n = g_.producer(x);
    if (!n || uses_[x.index] != users) return false;
    if (n->op == OpKind::Add && !scaled) {
      for (int side = 0; side < 2; ++side) {
        AttentionMatch tried = m;
        tried.terms.insert(tried.terms.begin(), BiasTerm{false, true, n->inputs[1 - side]});
        if (scores(n->inputs[side], tried, false, 1)) {
          m = tried;
          return true;
        }
      }
      return false;
    }
    if (n->op == OpKind::Select && !scaled) {
      for (int side = 1; side <= 2; ++side) {
        std::optional<double> fill = splat_value(g_, n->inputs[3 - side]);
        const double lowest = lowest_finite(g_.type(x).dtype);
        if (!fill || (*fill != kMinusInf && !(std::isfinite(lowest) && *fill <= lowest))) continue;
        AttentionMatch tried = m;
        tried.terms.insert(tried.terms.begin(), BiasTerm{true, side == 1, n->inputs[0], *fill != kMinusInf});
        if (scores(n->inputs[side], tried, false, 1)) {
          m = tried;
          return true;
        }
      }
      return false;
    }
    if (n->op == OpKind::Mul || n->op == OpKind::Div) {
      if (std::optional<double> c = splat_value(g_, n->inputs[1])) {
        m.scale = n->op == OpKind::Mul ? m.scale * *c : m.scale / *c;
        return scores(n->inputs[0], m, true, 1);
      }
      if (std::optional<double> c = splat_value(g_, n->inputs[0]); c && n->op == OpKind::Mul) {
        m.scale *= *c;
        return scores(n->inputs[1], m, true, 1);
      }
      return false;
    }
    if (n->op != OpKind::Dot) return false;
    m.q = peel_scale(n->inputs[0], m.scale);
    m.kt = peel_scale(n->inputs[1], m.scale);
    return true;
  }

  std::optional<AxisIndex> axis_index(ValueId v) const {
    v = unbroadcast(g_, v);
    const Node* n = g_.producer(v);
    if (!n) return std::nullopt;
    if (n->op == OpKind::Iota) {
      const int from_end = g_.type(v).rank() - static_cast<int>(n->attrs.get("axis").as_int());
      if (from_end != 1 && from_end != 2) return std::nullopt;
      return AxisIndex{from_end, 0};
    }
    if (n->op != OpKind::Add && n->op != OpKind::Sub) return std::nullopt;
    const Node* c1 = g_.producer(unbroadcast(g_, n->inputs[1]));
    const Node* c0 = g_.producer(unbroadcast(g_, n->inputs[0]));
    if (c1 && c1->op == OpKind::Constant) {
      std::optional<AxisIndex> a = axis_index(n->inputs[0]);
      const double c = c1->attrs.get("value").as_number();
      if (a) a->offset += n->op == OpKind::Add ? c : -c;
      return a;
    }
    if (c0 && c0->op == OpKind::Constant && n->op == OpKind::Add) {
      std::optional<AxisIndex> a = axis_index(n->inputs[1]);
      if (a) a->offset += c0->attrs.get("value").as_number();
      return a;
    }
    return std::nullopt;
  }

  // Whether a causal mask leaves every query a key: Tq <= Tk (query i keeps
  // key i + Tk - Tq >= 0).
  bool hides_no_row(const AttentionMatch& m) const {
    const Shape& q = g_.type(m.q).shape;
    const Dim& tq = q[q.size() - 2];
    const Dim& tk = g_.type(m.kt).shape.back();
    return tq == tk || (tq.is_static() && tk.is_static() && tq.extent() <= tk.extent());
  }

  // Whether the mask term keeps exactly the keys j <= i + (Tk - Tq) of query
  // i: a comparison of the row and column indices (from iotas) with that offset.
  bool is_causal_mask(const BiasTerm& t, const AttentionMatch& m) const {
    const Node* cmp = g_.producer(unbroadcast(g_, t.value));
    if (!cmp || !is_comparison(cmp->op) || cmp->op == OpKind::Eq || cmp->op == OpKind::Ne) return false;
    std::optional<AxisIndex> a = axis_index(cmp->inputs[0]), b = axis_index(cmp->inputs[1]);
    if (!a || !b || a->from_end == b->from_end) return false;
    OpKind op = cmp->op;
    // The condition as "visible", then as row OP col.
    if (!t.keep) op = op == OpKind::Gt ? OpKind::Le : op == OpKind::Ge ? OpKind::Lt : op == OpKind::Lt ? OpKind::Ge : OpKind::Gt;
    if (a->from_end == 1) {
      std::swap(a, b);
      op = op == OpKind::Gt ? OpKind::Lt : op == OpKind::Ge ? OpKind::Le : op == OpKind::Lt ? OpKind::Gt : OpKind::Ge;
    }
    // i + a.offset OP j + b.offset: visible keys j <= i + offset.
    double offset = a->offset - b->offset;
    if (op == OpKind::Gt) {
      offset -= 1;
    } else if (op != OpKind::Ge) {
      return false;
    }
    const Shape& q = g_.type(m.q).shape;
    const Dim& tq = q[q.size() - 2];
    const Dim& tk = g_.type(m.kt).shape.back();
    if (tq == tk) return offset == 0;
    return tq.is_static() && tk.is_static() && offset == static_cast<double>(tk.extent() - tq.extent());
  }

  bool shapes_fit(const AttentionMatch& m) const {
    const TensorType &q = g_.type(m.q), &kt = g_.type(m.kt), &v = g_.type(m.v);
    const size_t r = q.shape.size();
    if (r < 2 || kt.shape.size() != r || v.shape.size() != r) return false;
    for (size_t i = 0; i + 2 < r; ++i) {
      if (kt.shape[i] != q.shape[i] || v.shape[i] != q.shape[i]) return false;
    }
    if (!is_float(q.dtype) || std::isnan(m.scale)) return false;
    Shape scores_shape(q.shape.begin(), q.shape.end() - 1);
    scores_shape.push_back(kt.shape[r - 1]);
    for (const BiasTerm& t : m.terms) {
      if (t.mask ? g_.type(t.value).dtype != DType::boolean : g_.type(t.value).dtype != q.dtype) return false;
      if (g_.type(t.value).shape != scores_shape) return false;
    }
    return true;
  }

  const Graph& g_;
  std::vector<int> uses_;
};

// A splat constant of `shape` and `dtype`.
ValueId splat(Rewriter& rw, double value, const Shape& shape, DType dtype, const std::string& hint, const SourceLoc& loc) {
  return rw.emit(OpKind::Constant, {}, {{"value", AttrValue(value)}, {"shape", AttrValue(shape)}, {"dtype", AttrValue(dtype)}},
                 hint, loc);
}

// The bias the terms add up to: one term read through its broadcast (a
// padding mask of [B, 1, 1, Tk] stays that small), several in the scores'
// shape; invalid with no term.
ValueId build_bias(Rewriter& rw, const Graph& g, const AttentionMatch& m, const Node& out) {
  if (m.terms.empty()) return {};
  const DType dtype = g.type(m.q).dtype;
  const std::string hint = g.value_name(out.output) + "_bias";
  auto select = [&](ValueId mask, bool keep, ValueId kept, const Shape& shape) {
    const ValueId masked = splat(rw, kMinusInf, shape, dtype, hint + "_masked", out.loc);
    return keep ? rw.emit(OpKind::Select, {mask, kept, masked}, {}, hint, out.loc)
                : rw.emit(OpKind::Select, {mask, masked, kept}, {}, hint, out.loc);
  };
  if (m.terms.size() == 1) {
    const BiasTerm& t = m.terms.front();
    const ValueId source = rw.mapped(unbroadcast(g, t.value));
    if (!t.mask) return source;
    const Shape& shape = rw.dst().type(source).shape;
    return select(source, t.keep, splat(rw, 0.0, shape, dtype, hint + "_zero", out.loc), shape);
  }
  const Shape& full = g.type(m.terms.front().value).shape;
  ValueId bias;
  for (const BiasTerm& t : m.terms) {
    const ValueId value = rw.mapped(t.value);
    if (!t.mask) {
      bias = bias.valid() ? rw.emit(OpKind::Add, {bias, value}, {}, hint, out.loc) : value;
      continue;
    }
    if (!bias.valid()) bias = splat(rw, 0.0, full, dtype, hint + "_zero", out.loc);
    bias = select(value, t.keep, bias, full);
  }
  return bias;
}

// k from kt = k with its last two axes swapped: a transpose's operand read
// through the composed permutation (none when that is the identity).
ValueId untransposed(Rewriter& rw, const Graph& g, ValueId kt, const Node& out) {
  const size_t rank = g.type(kt).shape.size();
  const std::vector<int64_t> swap = swap_last_two(rank);
  ValueId source = kt;
  std::vector<int64_t> perm = swap;
  if (const Node* t = g.producer(kt); t && t->op == OpKind::Transpose) {
    const auto& inner = t->attrs.get("perm").as_ints();
    source = t->inputs[0];
    for (size_t i = 0; i < rank; ++i) perm[i] = inner[static_cast<size_t>(swap[i])];
  }
  bool identity = true;
  for (size_t i = 0; i < rank; ++i) identity = identity && perm[i] == static_cast<int64_t>(i);
  if (identity) return rw.mapped(source);
  return rw.emit(OpKind::Transpose, {rw.mapped(source)}, {{"perm", AttrValue(perm)}}, g.value_name(out.output) + "_k",
                 out.loc);
}

}  // namespace

Graph fuse_attention(const Graph& g) {
  const Matcher matcher(g);
  std::vector<std::optional<AttentionMatch>> matches;
  bool any = false;
  for (const Node& n : g.nodes()) {
    matches.push_back(matcher.match(n));
    any = any || matches.back().has_value();
  }
  if (!any) return g;
  Rewriter rw(g);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    if (!matches[i]) {
      rw.bind(n, rw.copy(n, rw.mapped_inputs(n)));
      continue;
    }
    const AttentionMatch& m = *matches[i];
    std::vector<ValueId> inputs{rw.mapped(m.q), untransposed(rw, g, m.kt, n), rw.mapped(m.v)};
    if (const ValueId bias = build_bias(rw, g, m, n); bias.valid()) inputs.push_back(bias);
    rw.bind(n, rw.emit(OpKind::Attention, std::move(inputs), {{"scale", AttrValue(m.scale)}, {"causal", AttrValue(m.causal)}},
                       g.value_name(n.output), n.loc));
  }
  // The softmax and the scores it read are dead now.
  return eliminate_dead_values(rw.finish());
}

Graph expand_attention(const Graph& g) {
  bool any = false;
  for (const Node& n : g.nodes()) any = any || n.op == OpKind::Attention;
  if (!any) return g;
  Rewriter rw(g);
  for (const Node& n : g.nodes()) {
    if (n.op != OpKind::Attention) {
      rw.bind(n, rw.copy(n, rw.mapped_inputs(n)));
      continue;
    }
    const std::vector<ValueId> in = rw.mapped_inputs(n);
    const Graph& d = rw.dst();
    const std::string base = g.value_name(n.output);
    const SourceLoc& loc = n.loc;
    const DType dtype = d.type(in[0]).dtype;
    const size_t rank = d.type(in[0]).shape.size();
    auto emit = [&](OpKind op, std::vector<ValueId> operands, Attrs attrs, const char* suffix) {
      return rw.emit(op, std::move(operands), std::move(attrs), base + suffix, loc);
    };
    const ValueId kt = emit(OpKind::Transpose, {in[1]}, {{"perm", AttrValue(swap_last_two(rank))}}, "_kt");
    ValueId s = emit(OpKind::Dot, {in[0], kt}, {}, "_scores");
    const Shape full = d.type(s).shape;
    s = emit(OpKind::Mul, {s, splat(rw, n.attrs.get("scale").as_number(), full, dtype, base + "_scale", loc)}, {}, "_scaled");
    if (in.size() == 4) {
      const ValueId bias = d.type(in[3]).shape == full ? in[3] : emit(OpKind::Broadcast, {in[3]}, {{"shape", AttrValue(full)}}, "_bias");
      s = emit(OpKind::Add, {s, bias}, {}, "_biased");
    }
    if (n.attrs.get("causal").as_bool()) {
      // Key j is visible to query i when i + (Tk - Tq) >= j.
      const Shape square(full.end() - 2, full.end());
      const Dim tq = square[0], tk = square[1];
      const ValueId i = emit(OpKind::Iota, {}, {{"shape", AttrValue(square)}, {"axis", AttrValue(0)}, {"dtype", AttrValue(DType::i64)}}, "_row");
      const ValueId j = emit(OpKind::Iota, {}, {{"shape", AttrValue(square)}, {"axis", AttrValue(1)}, {"dtype", AttrValue(DType::i64)}}, "_col");
      if (tq != tk && !(tq.is_static() && tk.is_static())) {
        throw UserError("attention: a causal mask needs Tq == Tk or both static to expand into its composite");
      }
      const double diff = tq == tk ? 0.0 : static_cast<double>(tk.extent() - tq.extent());
      const ValueId offset = splat(rw, diff, square, DType::i64, base + "_offset", loc);
      ValueId visible = emit(OpKind::Ge, {emit(OpKind::Add, {i, offset}, {}, "_last"), j}, {}, "_visible");
      if (square != full) visible = emit(OpKind::Broadcast, {visible}, {{"shape", AttrValue(full)}}, "_visible");
      s = emit(OpKind::Select, {visible, s, splat(rw, kMinusInf, full, dtype, base + "_masked", loc)}, {}, "_causal");
    }
    const std::vector<int64_t> last{static_cast<int64_t>(rank) - 1};
    const Attrs reduce{{"axes", AttrValue(last)}, {"keepdims", AttrValue(true)}};
    const ValueId max = emit(OpKind::ReduceMax, {s}, reduce, "_max");
    const ValueId shifted = emit(OpKind::Sub, {s, emit(OpKind::Broadcast, {max}, {{"shape", AttrValue(full)}}, "_max_b")}, {}, "_shifted");
    const ValueId e = emit(OpKind::Exp, {shifted}, {}, "_exp");
    const ValueId sum = emit(OpKind::ReduceSum, {e}, reduce, "_sum");
    const ValueId p = emit(OpKind::Div, {e, emit(OpKind::Broadcast, {sum}, {{"shape", AttrValue(full)}}, "_sum_b")}, {}, "_p");
    rw.bind(n, rw.emit(OpKind::Dot, {p, in[2]}, {}, base, loc));
  }
  return canonicalize(rw.finish());
}

}  // namespace stitch
