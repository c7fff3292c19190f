#include "graph_shrink.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "stitch/builder.h"
#include "stitch/error.h"

namespace stitch::testing {

namespace {

// What a candidate changes in the graph it is rebuilt from.
struct Edit {
  std::optional<size_t> only_output;  // keep this output alone
  int root = -1;                      // or return this node's value alone
  int cut = -1;                       // node whose value becomes a parameter
  int bypass = -1;                    // node whose users read ...
  ValueId bypass_to{};                // ... this input instead
};

bool same_type(const Graph& g, ValueId a, ValueId b) {
  return g.type(a).dtype == g.type(b).dtype && g.type(a).shape == g.type(b).shape;
}

// `g` rebuilt with the edit, keeping only what the outputs need; nullopt
// when the builder or the verifier refuses it (the candidate is skipped).
std::optional<Graph> rebuild(const Graph& g, const Edit& edit) {
  std::vector<GraphOutput> outputs = g.outputs();
  if (edit.only_output) outputs = {outputs[*edit.only_output]};
  if (edit.root >= 0) {
    const ValueId v = g.nodes()[static_cast<size_t>(edit.root)].output;
    outputs = {GraphOutput{g.value_name(v), v}};
  }
  // Values are redirected by the bypass; what the outputs need, backwards.
  auto redirect = [&](ValueId v) {
    if (edit.bypass >= 0 && v == g.nodes()[static_cast<size_t>(edit.bypass)].output) return edit.bypass_to;
    return v;
  };
  std::set<int> needed;
  std::vector<ValueId> work;
  for (const GraphOutput& o : outputs) work.push_back(redirect(o.value));
  while (!work.empty()) {
    const ValueId v = work.back();
    work.pop_back();
    if (!needed.insert(v.index).second) continue;
    const int producer = g.value(v).producer;
    if (producer < 0 || producer == edit.cut) continue;
    for (ValueId in : g.nodes()[static_cast<size_t>(producer)].inputs) work.push_back(redirect(in));
  }
  try {
    GraphBuilder b(g.name());
    std::map<int, ValueId> mapped;
    // Parameters first (the builder wants them before any op): the graph's,
    // then the cut node's value.
    for (ValueId p : g.params()) {
      if (needed.contains(p.index)) mapped[p.index] = b.param(g.value_name(p), g.type(p).dtype, g.type(p).shape);
    }
    if (edit.cut >= 0) {
      const ValueId v = g.nodes()[static_cast<size_t>(edit.cut)].output;
      if (needed.contains(v.index)) mapped[v.index] = b.param(g.value_name(v), g.type(v).dtype, g.type(v).shape);
    }
    for (size_t i = 0; i < g.nodes().size(); ++i) {
      const Node& n = g.nodes()[i];
      const int index = static_cast<int>(i);
      if (!needed.contains(n.output.index) || index == edit.bypass || index == edit.cut) continue;
      std::vector<Operand> args;
      for (ValueId in : n.inputs) args.emplace_back(mapped.at(redirect(in).index));
      mapped[n.output.index] = b.op(n.op, std::move(args), n.attrs, g.value_name(n.output));
    }
    for (const GraphOutput& o : outputs) b.output(mapped.at(redirect(o.value).index), o.name);
    return b.finish();
  } catch (const UserError&) {
    return std::nullopt;
  } catch (const InternalError&) {
    return std::nullopt;
  }
}

// Candidates from the cheapest to describe to the most local.
std::vector<Edit> candidate_edits(const Graph& g) {
  std::vector<Edit> edits;
  if (g.outputs().size() > 1) {
    for (size_t o = 0; o < g.outputs().size(); ++o) edits.push_back({o, -1, -1, -1, {}});
  }
  for (int i = 0; i < static_cast<int>(g.nodes().size()); ++i) {
    if (!g.nodes()[static_cast<size_t>(i)].inputs.empty()) edits.push_back({std::nullopt, i, -1, -1, {}});
  }
  // From the last node back: cutting late nodes removes the most.
  for (int i = static_cast<int>(g.nodes().size()) - 1; i >= 0; --i) {
    const Node& n = g.nodes()[static_cast<size_t>(i)];
    for (ValueId in : n.inputs) {
      if (same_type(g, in, n.output)) edits.push_back({std::nullopt, -1, -1, i, in});
    }
    if (!n.inputs.empty()) edits.push_back({std::nullopt, -1, i, -1, {}});
  }
  return edits;
}

size_t size_of(const Graph& g) { return g.nodes().size() + g.outputs().size() + g.params().size(); }

}  // namespace

Graph shrink_graph(const Graph& g, const std::function<bool(const Graph&)>& still_fails, int max_attempts,
                   ShrinkStats* stats) {
  ShrinkStats local;
  ShrinkStats& s = stats ? *stats : local;
  Graph current = g;
  // Rounds over the candidates; after a kept step the scan goes on from the
  // same position in the new graph's candidates rather than from the start,
  // so the steps that failed once are not all retried after every success.
  for (bool progress = true; progress && s.attempts < max_attempts;) {
    progress = false;
    std::vector<Edit> edits = candidate_edits(current);
    for (size_t i = 0; i < edits.size() && s.attempts < max_attempts; ++i) {
      std::optional<Graph> candidate = rebuild(current, edits[i]);
      if (!candidate || size_of(*candidate) >= size_of(current)) continue;
      ++s.attempts;
      if (!still_fails(*candidate)) continue;
      current = std::move(*candidate);
      ++s.accepted;
      progress = true;
      edits = candidate_edits(current);
      if (i > 0) --i;
    }
  }
  return current;
}

}  // namespace stitch::testing
