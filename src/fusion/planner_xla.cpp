// The XLA fusion rules (DESIGN.md, `xla`; FusionStitching 2019 §2 describes
// them as the baseline): thread composition only, decided producer by
// producer, consumers first, as XLA's InstructionFusion walks the graph in
// reverse post-order; then sibling reductions merge (multi-output fusion).
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "fusion/legality.h"
#include "fusion/planner.h"

namespace stitch {
namespace {

OpCategory category(const Graph& g, int n) { return op_info(g.nodes()[n].op).category; }

// XLA recomputes cheap producers in every consumer kernel rather than write
// them to memory; an expensive one is recomputed nowhere (IsExpensive).
bool is_duplicable(OpCategory c) {
  return c == OpCategory::LightElementwise || c == OpCategory::Broadcast ||
         c == OpCategory::Layout || c == OpCategory::Source;
}

// A consumer that reads each element of the operand many times would
// recompute an expensive producer per read (XLA's ReusesOperandElements).
bool reuses_elements(const Graph& g, int producer, int consumer) {
  const Node& c = g.nodes()[consumer];
  if (c.op == OpKind::Broadcast) return true;
  return c.op == OpKind::Gather && g.value(c.inputs[0]).producer == producer;
}

// Why XLA would not compute `producer` inside `consumer`'s kernel, whatever
// else the producer feeds.
std::optional<std::string> absorb_refusal(const Graph& g, int producer, int consumer) {
  OpCategory p = category(g, producer);
  OpCategory c = category(g, consumer);
  if (p == OpCategory::Dot) return "dot is a library call; xla does not fuse its result into a consumer";
  if (c == OpCategory::Dot) return "dot is a library call; xla does not fuse its operands into it";
  if (p == OpCategory::Reduction) return "xla does not fuse a consumer into a reduction's kernel";
  if (!is_duplicable(p) && reuses_elements(g, producer, consumer))
    return "xla does not fuse an expensive op into a consumer that reuses its elements";
  return std::nullopt;
}

class XlaPlanner {
 public:
  XlaPlanner(const Graph& g, int max_fusions) : g_(g), max_fusions_(max_fusions), groups_of_(g.nodes().size()) {
    const int n = static_cast<int>(g.nodes().size());
    consumers_.resize(n);
    is_output_.assign(n, false);
    for (int c = 0; c < n; ++c) {
      for (ValueId v : g.nodes()[c].inputs) {
        int p = g.value(v).producer;
        if (p >= 0) consumers_[p].push_back(c);
      }
    }
    for (auto& list : consumers_) list.erase(std::unique(list.begin(), list.end()), list.end());
    for (const GraphOutput& out : g.outputs()) {
      int p = g.value(out.value).producer;
      if (p >= 0) is_output_[p] = true;
    }
  }

  int fusions_applied() const { return fusions_; }

  FusionPlan run() {
    for (int p = static_cast<int>(g_.nodes().size()) - 1; p >= 0; --p) {
      if (is_duplicable(category(g_, p))) {
        fuse_cheap_producer(p);
      } else {
        fuse_expensive_producer(p);
      }
    }
    merge_sibling_reductions();
    FusionPlan plan;
    plan.planner = "xla";
    for (auto& grp : groups_)
      if (!grp.roots.empty()) plan.groups.push_back(std::move(grp));
    plan.refusals = std::move(refusals_);
    finalize_plan(g_, plan);
    return plan;
  }

 private:
  void refuse(int producer, int consumer, std::string reason) {
    refusals_.push_back({producer, consumer, std::move(reason)});
  }

  void own_group(int node) {
    groups_of_[node].push_back(static_cast<int>(groups_.size()));
    groups_.push_back({GroupKind::Loop, {node}, {node}});
  }

  std::optional<std::string> limit_refusal(int gi, int node) const {
    std::vector<int> nodes = groups_[gi].nodes;
    nodes.push_back(node);
    if (auto reason = check_group_limits(g_, nodes, static_cast<int>(groups_[gi].roots.size()))) return reason;
    return budget_refusal();
  }

  // STITCH_MAX_FUSIONS (PlanOptions::max_fusions): every fusion applied
  // spends one; once spent, every further fusion is refused.
  std::optional<std::string> budget_refusal() const {
    if (max_fusions_ < 0 || fusions_ < max_fusions_) return std::nullopt;
    return fmt::format("STITCH_MAX_FUSIONS={} fusions already applied", max_fusions_);
  }

  // A fusion: `node` absorbed into group `gi`.
  void add_to_group(int gi, int node) {
    ++fusions_;
    insert_node(gi, node);
  }

  void insert_node(int gi, int node) {
    auto& nodes = groups_[gi].nodes;
    nodes.insert(std::upper_bound(nodes.begin(), nodes.end(), node), node);
    groups_of_[node].push_back(gi);
  }

  // Cheap: recomputed in every consumer kernel that can take it; written by
  // a kernel of its own only when something still reads it from memory.
  void fuse_cheap_producer(int p) {
    bool materialise = is_output_[p] || consumers_[p].empty();
    for (int c : consumers_[p]) {
      if (auto reason = absorb_refusal(g_, p, c)) {
        refuse(p, c, *reason);
        materialise = true;
        continue;
      }
      bool refused = false;
      for (int gi : groups_of_[c]) {
        if (groups_[gi].contains(p)) continue;
        if (auto reason = limit_refusal(gi, p)) {
          if (!refused) refuse(p, c, *reason);
          refused = true;
          materialise = true;
          continue;
        }
        add_to_group(gi, p);
      }
    }
    if (materialise) own_group(p);
  }

  // Expensive (heavy elementwise, gather) or never absorbed (reduction, dot):
  // fused only into a sole consumer that is itself computed once.
  void fuse_expensive_producer(int p) {
    const auto& consumers = consumers_[p];
    std::string_view op = op_name(g_.nodes()[p].op);
    if (consumers.size() == 1 && !is_output_[p]) {
      int c = consumers.front();
      std::optional<std::string> reason = absorb_refusal(g_, p, c);
      if (!reason && groups_of_[c].size() > 1) {
        reason = fmt::format("its consumer is computed in {} kernels; xla does not duplicate an "
                             "expensive op",
                             groups_of_[c].size());
      }
      if (!reason) reason = limit_refusal(groups_of_[c].front(), p);
      if (!reason) {
        add_to_group(groups_of_[c].front(), p);
        return;
      }
      refuse(p, c, *reason);
    } else {
      for (int c : consumers) {
        std::optional<std::string> reason = absorb_refusal(g_, p, c);
        if (!reason && is_output_[p]) {
          reason = fmt::format("{} is also a graph output; xla does not duplicate an expensive op", op);
        }
        if (!reason) {
          reason = fmt::format("{} has {} consumers; xla does not duplicate an expensive op", op,
                               consumers.size());
        }
        refuse(p, c, *reason);
      }
    }
    own_group(p);
  }

  bool is_reduction_group(int gi) const {
    const auto& roots = groups_[gi].roots;
    return !roots.empty() && std::all_of(roots.begin(), roots.end(), [&](int r) {
      return category(g_, r) == OpCategory::Reduction;
    });
  }

  // Reductions of equal input shape, axes and result shape iterate the same
  // space, so one kernel can compute both (XLA's sibling multi-output fusion).
  bool same_reduction_shape(int gi, int gj) const {
    const Node& a = g_.nodes()[groups_[gi].roots.front()];
    const Node& b = g_.nodes()[groups_[gj].roots.front()];
    const AttrValue* axes_a = a.attrs.find("axes");
    const AttrValue* axes_b = b.attrs.find("axes");
    bool same_axes = (axes_a == nullptr) == (axes_b == nullptr) && (!axes_a || *axes_a == *axes_b);
    return same_axes && g_.type(a.inputs[0]).shape == g_.type(b.inputs[0]).shape &&
           g_.type(a.output).shape == g_.type(b.output).shape;
  }

  std::set<int> external_inputs(int gi) const {
    std::set<int> values;
    for (int n : groups_[gi].nodes) {
      for (ValueId v : g_.nodes()[n].inputs) {
        int p = g_.value(v).producer;
        if (p < 0 || !groups_[gi].contains(p)) values.insert(v.index);
      }
    }
    return values;
  }

  bool reads_result_of(int reader, int writer) const {
    std::set<int> inputs = external_inputs(reader);
    for (int r : groups_[writer].roots)
      if (inputs.count(g_.nodes()[r].output.index)) return true;
    return false;
  }

  void merge_sibling_reductions() {
    std::vector<int> order;
    for (int gi = 0; gi < static_cast<int>(groups_.size()); ++gi)
      if (is_reduction_group(gi)) order.push_back(gi);
    std::sort(order.begin(), order.end(), [&](int a, int b) {
      return groups_[a].roots.front() < groups_[b].roots.front();
    });
    for (size_t i = 0; i < order.size(); ++i) {
      int a = order[i];
      if (groups_[a].roots.empty()) continue;
      for (size_t j = i + 1; j < order.size(); ++j) {
        int b = order[j];
        if (groups_[b].roots.empty() || !same_reduction_shape(a, b)) continue;
        std::set<int> in_a = external_inputs(a);
        std::set<int> in_b = external_inputs(b);
        bool share = std::any_of(in_a.begin(), in_a.end(), [&](int v) { return in_b.count(v); });
        if (!share) continue;
        int ra = groups_[a].roots.front();
        int rb = groups_[b].roots.front();
        if (reads_result_of(a, b) || reads_result_of(b, a)) {
          refusals_.push_back({ra, rb,
                               "one reads the other's result; xla does not consume a reduction "
                               "inside its kernel",
                               FusionRefusal::Relation::Siblings});
          continue;
        }
        std::optional<std::string> reason = check_merge_legality(g_, groups_, a, b);
        if (!reason) reason = budget_refusal();
        if (reason) {
          refusals_.push_back({ra, rb, *reason, FusionRefusal::Relation::Siblings});
          continue;
        }
        ++fusions_;
        merge_into(a, b);
      }
    }
  }

  void merge_into(int into, int from) {
    FusionGroup& dst = groups_[into];
    FusionGroup& src = groups_[from];
    for (int n : src.nodes) {
      auto& of = groups_of_[n];
      of.erase(std::remove(of.begin(), of.end(), from), of.end());
      if (!dst.contains(n)) insert_node(into, n);
    }
    dst.roots.insert(dst.roots.end(), src.roots.begin(), src.roots.end());
    std::sort(dst.roots.begin(), dst.roots.end());
    src.nodes.clear();
    src.roots.clear();
  }

  const Graph& g_;
  const int max_fusions_;  // -1: no cap
  int fusions_ = 0;        // applied so far
  std::vector<FusionGroup> groups_;     // emptied when merged away
  std::vector<std::vector<int>> groups_of_;  // node -> groups computing it
  std::vector<std::vector<int>> consumers_;  // node -> distinct consumer nodes, ascending
  std::vector<bool> is_output_;
  std::vector<FusionRefusal> refusals_;
};

}  // namespace

FusionPlan plan_xla(const Graph& g, int max_fusions, int* fusions_applied) {
  XlaPlanner planner(g, max_fusions);
  FusionPlan plan = planner.run();
  if (fusions_applied) *fusions_applied = planner.fusions_applied();
  return plan;
}

}  // namespace stitch
