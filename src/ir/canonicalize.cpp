#include "ir/canonicalize.h"

#include <fmt/format.h>

#include <cstdint>
#include <map>
#include <optional>

#include "ir/rewriter.h"
#include "ir/verifier.h"

namespace stitch {

namespace {

bool is_splat_constant(const Graph& g, ValueId v) {
  const Node* p = g.producer(v);
  return p && p->op == OpKind::Constant;
}

// A constant with a new shape: constants are splats, so any shape will do.
ValueId reshaped_constant(Rewriter& rw, const Graph& g, ValueId c, const Shape& shape, const std::string& hint) {
  Attrs attrs = g.producer(c)->attrs;
  attrs.set("shape", AttrValue(shape));
  return rw.emit(OpKind::Constant, {}, std::move(attrs), hint, g.producer(c)->loc);
}

}  // namespace

Graph make_broadcasts_explicit(const Graph& g) {
  Rewriter rw(g);
  for (const Node& n : g.nodes()) {
    std::vector<ValueId> inputs = rw.mapped_inputs(n);
    if (is_elementwise(n.op)) {
      const Shape& out = g.type(n.output).shape;
      for (ValueId& in : inputs) {
        if (rw.dst().type(in).shape == out) continue;
        std::string hint = rw.dst().value_name(in) + "_bcast";
        in = is_splat_constant(rw.dst(), in)
                 ? reshaped_constant(rw, rw.dst(), in, out, hint)
                 : rw.emit(OpKind::Broadcast, {in}, {{"shape", AttrValue(out)}}, hint, n.loc);
      }
    }
    rw.bind(n, rw.copy(n, std::move(inputs)));
  }
  return rw.finish();
}

Graph fold_layout_identities(const Graph& g) {
  Rewriter rw(g);
  for (const Node& n : g.nodes()) {
    std::vector<ValueId> inputs = rw.mapped_inputs(n);
    const Graph& d = rw.dst();
    const TensorType& out = g.type(n.output);
    ValueId in = inputs.empty() ? ValueId{} : inputs[0];
    const Node* producer = in.valid() ? d.producer(in) : nullptr;
    switch (n.op) {
      case OpKind::Reshape:
      case OpKind::Broadcast:
      case OpKind::Slice:
        if (d.type(in) == out) {
          rw.bind(n, in);
          continue;
        }
        if (n.op != OpKind::Slice && is_splat_constant(d, in)) {
          rw.bind(n, reshaped_constant(rw, d, in, out.shape, g.value_name(n.output)));
          continue;
        }
        // reshape(reshape(x)) and broadcast(broadcast(x)) are one op, or none
        // when x already has the result's type.
        if (n.op != OpKind::Slice && producer && producer->op == n.op) {
          ValueId inner = producer->inputs[0];
          rw.bind(n, d.type(inner) == out ? inner : rw.copy(n, {inner}));
          continue;
        }
        break;
      case OpKind::Cast:
        if (d.type(in).dtype == out.dtype) {
          rw.bind(n, in);
          continue;
        }
        break;
      case OpKind::Transpose: {
        const auto& perm = n.attrs.get("perm").as_ints();
        bool identity = true;
        for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == static_cast<int64_t>(i);
        if (identity) {
          rw.bind(n, in);
          continue;
        }
        if (is_splat_constant(d, in)) {
          rw.bind(n, reshaped_constant(rw, d, in, out.shape, g.value_name(n.output)));
          continue;
        }
        if (producer && producer->op == OpKind::Transpose) {
          // transpose(transpose(x, p), q) == transpose(x, r) with r[i] = p[q[i]].
          const auto& inner = producer->attrs.get("perm").as_ints();
          AttrValue::Ints composed;
          for (int64_t q : perm) composed.push_back(inner[q]);
          bool composed_identity = true;
          for (size_t i = 0; i < composed.size(); ++i) {
            composed_identity = composed_identity && composed[i] == static_cast<int64_t>(i);
          }
          rw.bind(n, composed_identity ? producer->inputs[0]
                                       : rw.emit(OpKind::Transpose, {producer->inputs[0]},
                                                 {{"perm", AttrValue(composed)}}, g.value_name(n.output), n.loc));
          continue;
        }
        break;
      }
      default:
        break;
    }
    rw.bind(n, rw.copy(n, std::move(inputs)));
  }
  return rw.finish();
}

Graph eliminate_common_subexpressions(const Graph& g) {
  Rewriter rw(g);
  std::map<std::string, ValueId> seen;
  for (const Node& n : g.nodes()) {
    std::vector<ValueId> inputs = rw.mapped_inputs(n);
    std::string key = std::string(op_name(n.op)) + "(";
    for (ValueId v : inputs) key += std::to_string(v.index) + ",";
    for (const auto& [k, v] : n.attrs.items()) key += k + "=" + v.str() + ",";
    auto it = seen.find(key);
    if (it != seen.end()) {
      rw.bind(n, it->second);
      continue;
    }
    ValueId v = rw.copy(n, std::move(inputs));
    seen.emplace(key, v);
    rw.bind(n, v);
  }
  return rw.finish();
}

Graph eliminate_dead_values(const Graph& g) {
  std::vector<bool> live(g.num_values(), false);
  for (const GraphOutput& o : g.outputs()) live[o.value.index] = true;
  for (auto it = g.nodes().rbegin(); it != g.nodes().rend(); ++it) {
    if (!live[it->output.index]) continue;
    for (ValueId in : it->inputs) live[in.index] = true;
  }
  Rewriter rw(g);
  for (const Node& n : g.nodes()) {
    if (live[n.output.index]) rw.bind(n, rw.copy(n, rw.mapped_inputs(n)));
  }
  return rw.finish();
}

const std::vector<GraphPass>& canonicalization_passes() {
  static const std::vector<GraphPass> kPasses = {
      {"explicit-broadcasts", make_broadcasts_explicit},
      {"fold-layout-identities", fold_layout_identities},
      {"cse", eliminate_common_subexpressions},
      {"dce", eliminate_dead_values},
  };
  return kPasses;
}

Graph canonicalize(const Graph& g, const std::function<void(const std::string&, const Graph&)>& after_pass) {
  // The first pass reads `g` itself: a copy of a 100,000-node graph is 1% of planning it.
  std::optional<Graph> cur;
  for (const GraphPass& pass : canonicalization_passes()) {
    cur = pass.run(cur ? *cur : g);
    if (after_pass) after_pass(pass.name, *cur);
  }
  if (!cur) cur = g;
  verify_or_throw(*cur, {.canonical = true});
  return std::move(*cur);
}

}  // namespace stitch
