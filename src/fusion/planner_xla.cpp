// The XLA fusion rules (DESIGN.md, `xla`; FusionStitching 2019 §2 describes
// them as the baseline): thread composition only, decided producer by
// producer, consumers first, as XLA's InstructionFusion walks the graph in
// reverse post-order; then sibling reductions merge (multi-output fusion).
#include <algorithm>
#include <cstdint>
#include <queue>
#include <unordered_map>

#include <fmt/format.h>

#include "fusion/cost_model.h"
#include "fusion/group_dag.h"
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
std::optional<Refusal> absorb_refusal(const Graph& g, int producer, int consumer) {
  OpCategory p = category(g, producer);
  OpCategory c = category(g, consumer);
  constexpr RefusalCause kIllegal = RefusalCause::Illegal;
  if (p == OpCategory::Dot) return Refusal{kIllegal, "dot is a library call; xla does not fuse its result into a consumer"};
  if (c == OpCategory::Dot) return Refusal{kIllegal, "dot is a library call; xla does not fuse its operands into it"};
  if (p == OpCategory::Reduction) return Refusal{kIllegal, "xla does not fuse a consumer into a reduction's kernel"};
  if (!is_duplicable(p) && reuses_elements(g, producer, consumer)) {
    return Refusal{RefusalCause::Unprofitable,
                   "xla does not fuse an expensive op into a consumer that reuses its elements"};
  }
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
    FusionPlan plan;
    plan.planner = "xla";
    plan.groups = merge_sibling_reductions(std::move(groups_));
    plan.refusals = std::move(refusals_);
    finalize_plan(g_, plan);
    return plan;
  }

 private:
  void refuse(int producer, int consumer, Refusal refusal) {
    refusals_.push_back(
        {producer, consumer, std::move(refusal.reason), FusionRefusal::Relation::ProducerConsumer, refusal.cause});
  }

  void own_group(int node) {
    groups_of_[node].push_back(static_cast<int>(groups_.size()));
    groups_.push_back({GroupKind::Loop, {node}, {node}});
    reads_.emplace_back();
    for (ValueId v : g_.nodes()[node].inputs) insert_sorted(reads_.back(), v.index);
  }

  // check_group_limits for group gi with `node` added, from the reads kept
  // per group: the cost of the inputs of one node, not of the whole group.
  std::optional<Refusal> limit_refusal(int gi, int node) const {
    const FusionLimits limits;
    const FusionGroup& grp = groups_[gi];
    const int nodes = static_cast<int>(grp.nodes.size()) + 1;
    if (nodes > limits.max_nodes_per_group) {
      return Refusal{RefusalCause::Budget,
                     fmt::format("the kernel would have {} ops, over the limit of {}", nodes, limits.max_nodes_per_group)};
    }
    const std::vector<int>& reads = reads_[gi];
    int operands = static_cast<int>(reads.size());
    if (std::binary_search(reads.begin(), reads.end(), g_.nodes()[node].output.index)) --operands;
    const auto& inputs = g_.nodes()[node].inputs;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const bool repeated = std::find(inputs.begin(), inputs.begin() + i, inputs[i]) != inputs.begin() + i;
      const int p = g_.value(inputs[i]).producer;
      if (!repeated && (p < 0 || !grp.contains(p)) && !std::binary_search(reads.begin(), reads.end(), inputs[i].index))
        ++operands;
    }
    const int outputs = static_cast<int>(grp.roots.size());
    if (operands + outputs > limits.max_operands_and_outputs) {
      return Refusal{RefusalCause::Budget, fmt::format("the kernel would have {} operands and outputs, over the limit of {}",
                                                       operands + outputs, limits.max_operands_and_outputs)};
    }
    return budget_refusal();
  }

  static void insert_sorted(std::vector<int>& v, int x) {
    auto it = std::lower_bound(v.begin(), v.end(), x);
    if (it == v.end() || *it != x) v.insert(it, x);
  }

  // STITCH_MAX_FUSIONS (PlanOptions::max_fusions): every fusion applied
  // spends one; once spent, every further fusion is refused.
  std::optional<Refusal> budget_refusal() const {
    if (max_fusions_ < 0 || fusions_ < max_fusions_) return std::nullopt;
    return Refusal{RefusalCause::Budget, fmt::format("STITCH_MAX_FUSIONS={} fusions already applied", max_fusions_)};
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
    auto& reads = reads_[gi];
    auto it = std::lower_bound(reads.begin(), reads.end(), g_.nodes()[node].output.index);
    if (it != reads.end() && *it == g_.nodes()[node].output.index) reads.erase(it);
    for (ValueId v : g_.nodes()[node].inputs) {
      const int p = g_.value(v).producer;
      if (p < 0 || !groups_[gi].contains(p)) insert_sorted(reads, v.index);
    }
  }

  // Cheap: recomputed in every consumer kernel that can take it; written by
  // a kernel of its own only when something still reads it from memory.
  void fuse_cheap_producer(int p) {
    if (std::optional<std::string> reason = duplication_refusal(p)) {
      for (int c : consumers_[p]) refuse(p, c, absorb_refusal(g_, p, c).value_or(Refusal{RefusalCause::Unprofitable, *reason}));
      own_group(p);
      return;
    }
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

  // What recomputing node p reads: a broadcast operand at its source's size, a
  // constant as nothing.
  int64_t recompute_bytes(int p) const {
    const FusionCostModel bytes;
    int64_t read = 0;
    std::vector<int> seen;
    for (ValueId v : g_.nodes()[p].inputs) {
      if (std::find(seen.begin(), seen.end(), v.index) != seen.end()) continue;
      seen.push_back(v.index);
      const Node* producer = g_.producer(v);
      if (producer && category(g_, g_.value(v).producer) == OpCategory::Source) continue;
      if (producer && producer->op == OpKind::Broadcast) {
        read += bytes.value_bytes(g_, producer->inputs[0]);
      } else {
        read += bytes.value_bytes(g_, v);
      }
    }
    return read;
  }

  bool reads_twice_its_size(int p) const {
    return recompute_bytes(p) >= 2 * FusionCostModel().value_bytes(g_, g_.nodes()[p].output);
  }

  // After XLA's globally unfusible producers (ComputeGloballyUnfusible): a
  // cheap op read by several consumers that reads more bytes than it writes,
  // one of whose consumers cannot take it (a dot), is written once by its own
  // kernel and read by every consumer, rather than also recomputed from its
  // larger inputs beside the copy that is written anyway. What it reads
  // counts a broadcast operand at its source's size and a constant as
  // nothing: what recomputing it would read.
  std::optional<std::string> duplication_refusal(int p) const {
    if (consumers_[p].size() + (is_output_[p] ? 1 : 0) < 2) return std::nullopt;
    if (recompute_bytes(p) <= FusionCostModel().value_bytes(g_, g_.nodes()[p].output)) return std::nullopt;
    // Written anyway as a graph output: consumers read that copy rather than
    // recompute it from its larger inputs (an MLP-Mixer block's residual add
    // of a transposed product, read again by the LayerNorm after it).
    if (is_output_[p]) {
      return fmt::format("{} reads more than it writes and is a graph output; xla writes it once",
                         op_name(g_.nodes()[p].op));
    }
    for (int c : consumers_[p]) {
      if (absorb_refusal(g_, p, c)) {
        return fmt::format("{} reads more than it writes and {} cannot take it; xla writes it once",
                           op_name(g_.nodes()[p].op), g_.value_name(g_.nodes()[c].output));
      }
    }
    // A sum of two tensors read by another such sum that is itself recomputed
    // in several kernels: down a residual stream (x + a, then + b, ...) each
    // sum would be recomputed in every kernel after it, and the kernels' reads
    // would grow with the square of the depth (a 12-block GPT-2's last
    // LayerNorm read 49 tensors). Written once, every other sum, they stay
    // bounded.
    if (reads_twice_its_size(p)) {
      for (int c : consumers_[p]) {
        if (groups_of_[c].size() >= 2 && reads_twice_its_size(c)) {
          return fmt::format("{} would be recomputed in every kernel that recomputes {}; xla writes it once",
                             op_name(g_.nodes()[p].op), g_.value_name(g_.nodes()[c].output));
        }
      }
    }
    return std::nullopt;
  }

  // Expensive (heavy elementwise, gather) or never absorbed (reduction, dot):
  // fused only into a sole consumer that is itself computed once.
  void fuse_expensive_producer(int p) {
    const auto& consumers = consumers_[p];
    std::string_view op = op_name(g_.nodes()[p].op);
    if (consumers.size() == 1 && !is_output_[p]) {
      int c = consumers.front();
      std::optional<Refusal> reason = absorb_refusal(g_, p, c);
      if (!reason && groups_of_[c].size() > 1) {
        reason = Refusal{RefusalCause::Unprofitable,
                         fmt::format("its consumer is computed in {} kernels; xla does not duplicate an "
                                     "expensive op",
                                     groups_of_[c].size())};
      }
      if (!reason) reason = limit_refusal(groups_of_[c].front(), p);
      if (!reason) {
        add_to_group(groups_of_[c].front(), p);
        return;
      }
      refuse(p, c, *reason);
    } else {
      for (int c : consumers) {
        std::optional<Refusal> reason = absorb_refusal(g_, p, c);
        if (!reason && is_output_[p]) {
          reason = Refusal{RefusalCause::Unprofitable,
                           fmt::format("{} is also a graph output; xla does not duplicate an expensive op", op)};
        }
        if (!reason) {
          reason = Refusal{RefusalCause::Unprofitable,
                           fmt::format("{} has {} consumers; xla does not duplicate an expensive op", op,
                                       consumers.size())};
        }
        refuse(p, c, *reason);
      }
    }
    own_group(p);
  }

  bool is_reduction_group(const FusionGroup& grp) const {
    return !grp.roots.empty() && std::all_of(grp.roots.begin(), grp.roots.end(), [&](int r) {
      return category(g_, r) == OpCategory::Reduction;
    });
  }

  // Reductions of equal input shape, axes and result shape iterate the same
  // space, so one kernel can compute both (XLA's sibling multi-output fusion).
  bool same_reduction_shape(const FusionGroup& x, const FusionGroup& y) const {
    const Node& a = g_.nodes()[x.roots.front()];
    const Node& b = g_.nodes()[y.roots.front()];
    const AttrValue* axes_a = a.attrs.find("axes");
    const AttrValue* axes_b = b.attrs.find("axes");
    bool same_axes = (axes_a == nullptr) == (axes_b == nullptr) && (!axes_a || *axes_a == *axes_b);
    return same_axes && g_.type(a.inputs[0]).shape == g_.type(b.inputs[0]).shape &&
           g_.type(a.output).shape == g_.type(b.output).shape;
  }

  // Sibling reductions, each with the later ones (by smallest root) that
  // share one of its external inputs: candidates come from an index of the
  // reduction groups reading each value, at most kNeighbourScan of them per
  // value, so the pass costs the reads, not the pairs of reductions (a value
  // that every layer of a model reads would make it quadratic); the cycle
  // check searches only between the two in the DAG's order.
  std::vector<FusionGroup> merge_sibling_reductions(std::vector<FusionGroup> groups) {
    GroupDag dag(g_, std::move(groups));
    std::vector<int> order;  // reduction groups by smallest root
    for (int gi = 0; gi < dag.capacity(); ++gi)
      if (is_reduction_group(dag.group(gi))) order.push_back(gi);
    std::sort(order.begin(), order.end(),
              [&](int a, int b) { return dag.group(a).roots.front() < dag.group(b).roots.front(); });
    std::vector<int> rank(dag.capacity(), -1);
    std::unordered_map<int, std::vector<int>> readers;  // value -> ranks of reduction groups reading it
    for (int i = 0; i < static_cast<int>(order.size()); ++i) {
      rank[order[i]] = i;
      for (int v : dag.external_operands(order[i])) readers[v].push_back(i);
    }
    std::vector<int> queued(order.size(), -1);  // j -> the i that queued it
    for (int i = 0; i < static_cast<int>(order.size()); ++i) {
      const int a = order[i];
      if (!dag.alive(a)) continue;
      // Later siblings sharing an input with a, smallest rank first; a
      // merge adds the merged group's readers past the rank just taken.
      std::priority_queue<int, std::vector<int>, std::greater<>> next;
      auto enqueue_readers = [&](const std::vector<int>& inputs, int after) {
        for (int v : inputs) {
          const std::vector<int>& list = readers[v];
          auto first = std::upper_bound(list.begin(), list.end(), after);
          auto last = list.end() - first > kNeighbourScan ? first + kNeighbourScan : list.end();
          for (auto it = first; it != last; ++it) {
            if (queued[*it] != i) {
              queued[*it] = i;
              next.push(*it);
            }
          }
        }
      };
      enqueue_readers(dag.external_operands(a), i);
      while (!next.empty()) {
        const int j = next.top();
        next.pop();
        const int b = order[j];
        if (!dag.alive(b) || !same_reduction_shape(dag.group(a), dag.group(b))) continue;
        const int ra = dag.group(a).roots.front();
        const int rb = dag.group(b).roots.front();
        if (reads_result_of(dag.external_operands(a), dag.group(b)) ||
            reads_result_of(dag.external_operands(b), dag.group(a))) {
          refusals_.push_back({ra, rb,
                               "one reads the other's result; xla does not consume a reduction "
                               "inside its kernel",
                               FusionRefusal::Relation::Siblings, RefusalCause::Illegal});
          continue;
        }
        std::optional<Refusal> reason = dag.merge_refusal(a, b);
        if (!reason) reason = budget_refusal();
        if (reason) {
          refusals_.push_back({ra, rb, reason->reason, FusionRefusal::Relation::Siblings, reason->cause});
          continue;
        }
        ++fusions_;
        FusionGroup merged = dag.group(a);
        merged.nodes = dag.merged_nodes(a, b);
        merged.roots.insert(merged.roots.end(), dag.group(b).roots.begin(), dag.group(b).roots.end());
        const std::vector<int> absorbed_inputs = dag.external_operands(b);
        dag.merge(a, b, std::move(merged));
        enqueue_readers(absorbed_inputs, j);
      }
    }
    return dag.take_groups();
  }

  // `inputs`: the values the reader reads from outside itself, ascending.
  bool reads_result_of(const std::vector<int>& inputs, const FusionGroup& writer) const {
    for (int r : writer.roots)
      if (std::binary_search(inputs.begin(), inputs.end(), g_.nodes()[r].output.index)) return true;
    return false;
  }

  const Graph& g_;
  const int max_fusions_;  // -1: no cap
  int fusions_ = 0;        // applied so far
  std::vector<FusionGroup> groups_;     // emptied when merged away
  std::vector<std::vector<int>> groups_of_;  // node -> groups computing it
  std::vector<std::vector<int>> reads_;      // group -> values it reads from outside, ascending
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
