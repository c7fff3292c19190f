#include "ir/conv_epilogue.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <vector>

#include "ir/canonicalize.h"
#include "ir/composites_nn.h"
#include "ir/rewriter.h"

namespace stitch {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// One conv and what it absorbs.
struct Epilogue {
  int conv = -1;             // node index
  std::vector<int> absorbed;  // node indices, in order; the last one's value is the fused result
  ValueId side;              // the residual, or invalid
  double lo = -kInf, hi = kInf;
};

class EpilogueFinder {
 public:
  explicit EpilogueFinder(const Graph& g) : g_(g), readers_(g.num_values()), outputs_(g.num_values(), false) {
    for (size_t i = 0; i < g.nodes().size(); ++i) {
      for (ValueId v : g.nodes()[i].inputs) readers_[v.index].push_back(static_cast<int>(i));
    }
    for (const GraphOutput& o : g.outputs()) outputs_[o.value.index] = true;
  }

  std::optional<Epilogue> find(int conv) const {
    const Node& c = g_.nodes()[conv];
    if (c.op != OpKind::Conv || conv_operands(c).side || std::isfinite(c.attrs.get("activation_min").as_number()) ||
        std::isfinite(c.attrs.get("activation_max").as_number())) {
      return std::nullopt;
    }
    Epilogue e;
    e.conv = conv;
    ValueId value = c.output;
    if (const Node* add = sole_reader(value); add && add->op == OpKind::Add) {
      const ValueId other = add->inputs[0] == value ? add->inputs[1] : add->inputs[0];
      if (other != value && g_.type(other) == g_.type(value)) {
        e.side = other;
        e.absorbed.push_back(index_of(add));
        value = add->output;
      }
    }
    if (const Node* act = sole_reader(value)) {
      if (act->op == OpKind::Relu) {
        e.lo = 0;
        e.absorbed.push_back(index_of(act));
      } else if (act->op == OpKind::Clamp && act->inputs[0] == value && splat(act->inputs[1]) && splat(act->inputs[2])) {
        e.lo = *splat(act->inputs[1]);
        e.hi = *splat(act->inputs[2]);
        if (!(e.lo <= e.hi)) return e.absorbed.empty() ? std::nullopt : std::optional<Epilogue>(e);
        e.absorbed.push_back(index_of(act));
      }
    }
    if (e.absorbed.empty()) return std::nullopt;
    return e;
  }

 private:
  const Node* sole_reader(ValueId v) const {
    if (outputs_[v.index] || readers_[v.index].size() != 1) return nullptr;
    return &g_.nodes()[readers_[v.index][0]];
  }
  int index_of(const Node* n) const { return static_cast<int>(n - g_.nodes().data()); }
  std::optional<double> splat(ValueId v) const {
    const Node* p = g_.producer(v);
    if (!p || p->op != OpKind::Constant) return std::nullopt;
    return p->attrs.get("value").as_number();
  }

  const Graph& g_;
  std::vector<std::vector<int>> readers_;
  std::vector<bool> outputs_;
};

}  // namespace

Graph fuse_conv_epilogues(const Graph& g) {
  const EpilogueFinder finder(g);
  std::map<int, Epilogue> at_last;  // the last absorbed node -> its epilogue
  std::vector<bool> skipped(g.nodes().size(), false);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    std::optional<Epilogue> e = finder.find(static_cast<int>(i));
    // An add of two convs' results is the earlier one's epilogue only.
    if (!e || std::any_of(e->absorbed.begin(), e->absorbed.end(), [&](int a) { return skipped[static_cast<size_t>(a)]; })) {
      continue;
    }
    skipped[i] = true;
    for (int a : e->absorbed) skipped[static_cast<size_t>(a)] = true;
    at_last.emplace(e->absorbed.back(), *e);
  }
  if (at_last.empty()) return g;
  Rewriter rw(g);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    auto fused = at_last.find(static_cast<int>(i));
    if (fused != at_last.end()) {
      const Epilogue& e = fused->second;
      const Node& conv = g.nodes()[static_cast<size_t>(e.conv)];
      std::vector<ValueId> operands = rw.mapped_inputs(conv);
      Attrs attrs = conv.attrs;
      if (e.side.valid()) {
        operands.push_back(rw.mapped(e.side));
        attrs.set("side_input", AttrValue(true));
      }
      attrs.set("activation_min", AttrValue(e.lo));
      attrs.set("activation_max", AttrValue(e.hi));
      rw.bind(n, rw.emit(OpKind::Conv, operands, attrs, g.value_name(n.output), conv.loc));
      continue;
    }
    if (!skipped[i]) rw.bind(n, rw.copy(n, rw.mapped_inputs(n)));
  }
  return eliminate_dead_values(rw.finish());
}

}  // namespace stitch
