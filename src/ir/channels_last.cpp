#include "ir/channels_last.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/canonicalize.h"
#include "ir/composites_nn.h"
#include "ir/rewriter.h"

namespace stitch {

namespace {

using Ints = std::vector<int64_t>;

// transpose(x, perm): result axis i is x's axis perm[i].
Shape permuted(const Shape& s, const Ints& perm) {
  Shape out;
  for (int64_t p : perm) out.push_back(s[static_cast<size_t>(p)]);
  return out;
}

Ints inverse(const Ints& perm) {
  Ints inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return inv;
}

class ChannelsLast {
 public:
  explicit ChannelsLast(const Graph& g) : g_(g), rw_(g) {}

  Graph run() {
    for (const Node& n : g_.nodes()) rw_.bind(n, rewrite(n));
    return canonicalize(rw_.finish());
  }

 private:
  // A value of the new graph that is transpose(source, perm), emitted by
  // this pass: its consumers may read `source` instead.
  struct Pending {
    ValueId source;
    Ints perm;
  };

  const Graph& d() const { return rw_.dst(); }

  ValueId emit(OpKind op, std::vector<ValueId> in, Attrs attrs, const Node& n, const std::string& suffix) {
    return rw_.emit(op, std::move(in), std::move(attrs), g_.value_name(n.output) + suffix, n.loc);
  }

  // transpose(source, perm), remembered as pending.
  ValueId transposed(ValueId source, const Ints& perm, const Node& n) {
    const ValueId t = emit(OpKind::Transpose, {source}, {{"perm", AttrValue(perm)}}, n, "_t");
    pending_[t.index] = {source, perm};
    return t;
  }

  std::optional<Pending> pending(ValueId v) const {
    auto it = pending_.find(v.index);
    if (it == pending_.end()) return std::nullopt;
    return it->second;
  }

  ValueId rewrite(const Node& n) {
    const std::vector<ValueId> in = rw_.mapped_inputs(n);
    if (n.op == OpKind::Conv && !n.attrs.get("channels_last").as_bool()) return conv(n, in);
    // The first operand's pending transpose sets the layout the op may run in.
    std::optional<Pending> lead;
    for (ValueId v : in) {
      if ((lead = pending(v))) break;
    }
    if (!lead) return rw_.copy(n, in);
    if (is_elementwise(n.op)) {
      if (std::optional<ValueId> r = elementwise(n, in, lead->perm)) return *r;
    } else if (n.op == OpKind::Pad || n.op == OpKind::Slice) {
      return layout(n, *lead);
    } else if (is_reduction(n.op) && n.attrs.find("axes") && n.attrs.find("keepdims")) {
      return reduction(n, *lead);
    } else if (n.op == OpKind::Gather && pending(in[0]) && d().type(in[1]).rank() == 1) {
      // An upsampling gather too: its rows are then read along the channels,
      // and a transpose left at the end runs in tiles (docs/lowering.md,
      // Transpose tiles) where a transpose first would make every read a
      // strided gather.
      return gather(n, *pending(in[0]), in[1]);
    }
    return rw_.copy(n, in);
  }

  // A gather by a 1-D index (resize's) keeps the rank and replaces one axis'
  // extent: gather(transpose(x, perm), i, a) is transpose(gather(x, i, perm[a]), perm).
  ValueId gather(const Node& n, const Pending& p, ValueId index) {
    Attrs attrs = n.attrs;
    attrs.set("axis", AttrValue(p.perm[static_cast<size_t>(n.attrs.get("axis").as_int())]));
    return transposed(emit(OpKind::Gather, {p.source, index}, attrs, n, "_cl"), p.perm, n);
  }

  ValueId conv(const Node& n, const std::vector<ValueId>& in) {
    const size_t rank = d().type(in[0]).rank();
    const Ints first = channels_first_perm(rank);
    // x, and a side input, in the channels-last layout.
    auto channels_last = [&](ValueId v) {
      std::optional<Pending> p = pending(v);
      return p && p->perm == first ? p->source
                                   : emit(OpKind::Transpose, {v}, {{"perm", AttrValue(inverse(first))}}, n, "_nhwc");
    };
    std::vector<ValueId> operands = in;
    operands[0] = channels_last(in[0]);
    const ConvOperands o = conv_operands(n);
    if (o.side) operands[o.side_index()] = channels_last(in[o.side_index()]);
    Attrs attrs = n.attrs;
    attrs.set("channels_last", AttrValue(true));
    return transposed(emit(OpKind::Conv, operands, attrs, n, "_cl"), first, n);
  }

  // An operand of an elementwise op in the permuted layout, if it is cheap
  // there: a pending transpose with `perm`, a splat constant, or a broadcast
  // of a value at most 1/8 of the result.
  std::optional<ValueId> permuted_operand(ValueId v, const Ints& perm, const Node& n) {
    if (std::optional<Pending> p = pending(v)) {
      if (p->perm == perm) return p->source;
      return std::nullopt;
    }
    const Node* producer = d().producer(v);
    const Ints back = inverse(perm);
    if (producer && producer->op == OpKind::Constant) {
      Attrs attrs = producer->attrs;
      attrs.set("shape", AttrValue(permuted(d().type(v).shape, back)));
      return emit(OpKind::Constant, {}, attrs, n, "_const");
    }
    if (!producer || producer->op != OpKind::Broadcast) return std::nullopt;
    const ValueId small = producer->inputs[0];
    const std::optional<int64_t> small_n = static_numel(d().type(small).shape);
    const std::optional<int64_t> full_n = static_numel(d().type(v).shape);
    if (!small_n || !full_n || *small_n * 8 > *full_n) return std::nullopt;
    // The small value at the full rank (leading 1s), permuted, broadcast.
    const Shape& s = d().type(small).shape;
    Shape full_rank(perm.size() - s.size(), Dim(1));
    full_rank.insert(full_rank.end(), s.begin(), s.end());
    ValueId at_rank = full_rank == s ? small : emit(OpKind::Reshape, {small}, {{"shape", AttrValue(full_rank)}}, n, "_rank");
    ValueId moved = moves_only_ones(full_rank, back)
                        ? emit(OpKind::Reshape, {at_rank}, {{"shape", AttrValue(permuted(full_rank, back))}}, n, "_small")
                        : emit(OpKind::Transpose, {at_rank}, {{"perm", AttrValue(back)}}, n, "_small_t");
    return emit(OpKind::Broadcast, {moved}, {{"shape", AttrValue(permuted(d().type(v).shape, back))}}, n, "_bcast");
  }

  // Whether transposing `s` by `perm` keeps its axes other than 1 in their
  // order, so that it is a reshape.
  static bool moves_only_ones(const Shape& s, const Ints& perm) {
    int64_t last = -1;
    for (int64_t p : perm) {
      if (s[static_cast<size_t>(p)] == Dim(1)) continue;
      if (p < last) return false;
      last = p;
    }
    return true;
  }

  static std::optional<int64_t> static_numel(const Shape& s) {
    int64_t count = 1;
    for (const Dim& dim : s) {
      if (dim.is_symbolic()) return std::nullopt;
      count *= dim.extent();
    }
    return count;
  }

  std::optional<ValueId> elementwise(const Node& n, const std::vector<ValueId>& in, const Ints& perm) {
    std::vector<ValueId> operands;
    for (ValueId v : in) {
      std::optional<ValueId> p = permuted_operand(v, perm, n);
      if (!p) return std::nullopt;
      operands.push_back(*p);
    }
    return transposed(emit(n.op, operands, n.attrs, n, "_cl"), perm, n);
  }

  // pad and slice: their per-axis attributes moved to the source's axes.
  ValueId layout(const Node& n, const Pending& p) {
    Attrs attrs = n.attrs;
    auto move = [&](const char* name) {
      const AttrValue* a = n.attrs.find(name);
      if (!a) return;
      if (a->is_ints()) {
        const Ints& v = a->as_ints();
        Ints out(v.size());
        for (size_t i = 0; i < v.size(); ++i) out[static_cast<size_t>(p.perm[i])] = v[i];
        attrs.set(name, AttrValue(out));
      } else {
        const Shape& v = a->as_shape();
        Shape out(v.size());
        for (size_t i = 0; i < v.size(); ++i) out[static_cast<size_t>(p.perm[i])] = v[i];
        attrs.set(name, AttrValue(out));
      }
    };
    for (const char* name : {"low", "high", "start", "stop", "step"}) move(name);
    return transposed(emit(n.op, {p.source}, attrs, n, "_cl"), p.perm, n);
  }

  // A reduction over the source's axes; without keepdims the axes left keep
  // the source's order, permuted back by what remains of `perm`.
  ValueId reduction(const Node& n, const Pending& p) {
    Attrs attrs = n.attrs;
    const Ints& axes = n.attrs.get("axes").as_ints();
    Ints moved;
    for (int64_t a : axes) moved.push_back(p.perm[static_cast<size_t>(a)]);
    std::sort(moved.begin(), moved.end());
    attrs.set("axes", AttrValue(moved));
    const ValueId r = emit(n.op, {p.source}, attrs, n, "_cl");
    if (n.attrs.get("keepdims").as_bool()) return transposed(r, p.perm, n);
    Ints kept;  // the source axes left, in the result's order
    for (size_t i = 0; i < p.perm.size(); ++i) {
      if (std::find(axes.begin(), axes.end(), static_cast<int64_t>(i)) == axes.end()) kept.push_back(p.perm[i]);
    }
    Ints order = kept;
    std::sort(order.begin(), order.end());
    Ints perm;
    for (int64_t a : kept) perm.push_back(std::find(order.begin(), order.end(), a) - order.begin());
    bool identity = true;
    for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == static_cast<int64_t>(i);
    return identity ? r : transposed(r, perm, n);
  }

  const Graph& g_;
  Rewriter rw_;
  std::map<int, Pending> pending_;
};

}  // namespace

Graph channels_last_convs(const Graph& g) {
  const bool any = std::any_of(g.nodes().begin(), g.nodes().end(), [](const Node& n) {
    return n.op == OpKind::Conv && !n.attrs.get("channels_last").as_bool();
  });
  return any ? ChannelsLast(g).run() : g;
}

}  // namespace stitch
