#include "schedule/group_shared_memory.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>

#include <fmt/format.h>

#include "stitch/error.h"

namespace stitch::schedule {
namespace {

// Bytes of one element of a shared buffer of dtype `t`: the emitters keep
// f16 and bf16 in shared memory as f32 (their compute type, as kir's
// shared_element_bytes says), which is also the accumulator's width of a
// block reduction's partials (docs/lowering.md, Accumulator).
int64_t shared_bytes(DType t) {
  return (t == DType::f16 || t == DType::bf16) ? 4 : static_cast<int64_t>(dtype_size(t));
}

class Planner {
 public:
  Planner(const Graph& g, const FusionGroup& group, const StitchedDomain& domain, const StitchedLayout& layout)
      : g_(g), group_(group), domain_(domain), layout_(layout) {
    for (size_t k = 0; k < group.nodes.size(); ++k) local_[group.nodes[k]] = static_cast<int>(k);
  }

  GroupSharedMemory run() {
    GroupSharedMemory m;
    m.problem.successors.assign(group_.nodes.size(), {});
    for (size_t k = 0; k < group_.nodes.size(); ++k) {
      const Node& n = node(group_.nodes[k]);
      m.problem.op_names.push_back(fmt::format("%{}", g_.value(n.output).name));
      for (ValueId in : n.inputs) {
        auto it = local_.find(g_.value(in).producer);
        if (it != local_.end()) add_edge(m.problem.successors, it->second, static_cast<int>(k));
      }
    }
    m.problem.budget_bytes = layout_.budget_bytes;
    if (layout_.scratch_slots > 0) {
      for (const auto& phase : domain_.phases) {
        for (int r : phase) {
          const int64_t bytes =
              layout_.scratch_slots * layout_.rows_per_block * shared_bytes(g_.type(node(r).output).dtype);
          m.problem.requests.push_back({local_.at(r), bytes, {}});
          m.request_nodes.push_back(r);
          name_request(m.problem, local_.at(r), "scratch");
        }
      }
    }
    // Each cacheable value is tried in turn and kept only if the arena still fits.
    for (int n : layout_.row_caches ? cacheable() : std::vector<int>{}) {
      GroupSharedMemory trial = m;
      const int64_t bytes = layout_.row_len * layout_.rows_per_block *
                            shared_bytes(g_.type(node(n).output).dtype);
      trial.problem.requests.push_back({local_.at(n), bytes, trial.problem.successors[local_.at(n)]});
      trial.request_nodes.push_back(n);
      name_request(trial.problem, local_.at(n), "row cache");
      trial.plan = plan_shared_memory(trial.problem);
      if (!trial.plan.ok()) continue;
      trial.cached.push_back(n);
      m = std::move(trial);
    }
    m.plan = plan_shared_memory(m.problem);
    return m;
  }

 private:
  const Node& node(int n) const { return g_.nodes()[static_cast<size_t>(n)]; }

  // The printed plan names a buffer by its op: "scratch %m", "row cache %e".
  static void name_request(SharedMemoryProblem& problem, int op, const char* purpose) {
    std::string& name = problem.op_names[static_cast<size_t>(op)];
    name = fmt::format("{} {}", purpose, name);
  }

  static void add_edge(Digraph& graph, int from, int to) {
    std::vector<int>& out = graph[static_cast<size_t>(from)];
    if (std::find(out.begin(), out.end(), to) == out.end()) out.push_back(to);
  }

  // In-group nodes whose values `from` is computed from within one phase: the
  // walk stops at reductions (their totals are row-uniform) and at the group's edge.
  void reach(ValueId from, std::set<int>& seen) const {
    const int p = g_.value(from).producer;
    if (p < 0 || !group_.contains(p) || is_reduction(node(p).op) || !seen.insert(p).second) return;
    for (ValueId in : node(p).inputs) reach(in, seen);
  }

  // As reach, stopping also at the values in `stop` (kept in a row cache, so a
  // later phase reads them rather than computing what they are made from).
  void reach_until(ValueId from, const std::set<int>& stop, std::set<int>& seen) const {
    const int p = g_.value(from).producer;
    if (p < 0 || !group_.contains(p) || is_reduction(node(p).op) || stop.count(p) || !seen.insert(p).second) return;
    for (ValueId in : node(p).inputs) reach_until(in, stop, seen);
  }

  bool computed_through_heavy_op(int n) const {
    std::set<int> inside;
    reach(node(n).output, inside);
    return std::any_of(inside.begin(), inside.end(),
                       [&](int m) { return op_info(node(m).op).category == OpCategory::HeavyElementwise; });
  }

  // Values of the row's shape computed through an expensive op (HeavyElementwise:
  // exp, erf, div, ...) that one phase computes and a later one (a later
  // reduction, or the phase storing the roots) reads again. The last in node
  // order is taken first, and a later phase's walk stops at the values taken:
  // so the value a later phase reads is kept, not an expensive one upstream of
  // it with the cheap ops between recomputed in every phase (a bf16 softmax's
  // scale, mask and four roundings between its scores' `div` and its max's
  // input). Returned in node order.
  std::vector<int> cacheable() const {
    std::vector<std::vector<ValueId>> starts;  // per phase, the values its walk starts from
    for (const auto& phase : domain_.phases) {
      starts.emplace_back();
      for (int r : phase) starts.back().push_back(node(r).inputs[0]);
    }
    starts.emplace_back();
    for (int r : group_.roots) {
      if (g_.type(node(r).output).shape == domain_.shape && !is_reduction(node(r).op)) {
        starts.back().push_back(node(r).output);
      }
    }
    std::vector<std::set<int>> used(starts.size());
    for (size_t q = 0; q < starts.size(); ++q) {
      for (ValueId v : starts[q]) reach(v, used[q]);
    }
    std::map<int, size_t> kept;  // node -> the phase that first computes it
    for (auto it = group_.nodes.rbegin(); it != group_.nodes.rend(); ++it) {
      const int n = *it;
      if (g_.type(node(n).output).shape != domain_.shape || is_reduction(node(n).op)) continue;
      size_t first = 0;
      while (first < used.size() && !used[first].count(n)) ++first;
      bool reused = false;
      for (size_t q = first + 1; q < starts.size() && !reused; ++q) {
        std::set<int> cached;  // what phase q reads from a cache: kept, computed before it
        for (const auto& [m, computed] : kept) {
          if (computed < q) cached.insert(m);
        }
        std::set<int> seen;
        for (ValueId v : starts[q]) reach_until(v, cached, seen);
        reused = seen.count(n) > 0;
      }
      if (reused && computed_through_heavy_op(n)) kept.emplace(n, first);
    }
    std::vector<int> out;
    for (int n : group_.nodes) {
      if (kept.count(n)) out.push_back(n);
    }
    return out;
  }

  const Graph& g_;
  const FusionGroup& group_;
  const StitchedDomain& domain_;
  const StitchedLayout& layout_;
  std::map<int, int> local_;  // Graph node index -> index among the group's ops
};

}  // namespace

GroupSharedMemory plan_group_shared_memory(const Graph& g, const FusionGroup& group, const StitchedDomain& domain,
                                           const StitchedLayout& layout) {
  STITCH_ASSERT(layout.row_len > 0 && layout.rows_per_block > 0, "plan_group_shared_memory: the layout needs a static row");
  return Planner(g, group, domain, layout).run();
}

std::optional<GroupSharedMemory> plan_stitched_shared_memory(const Graph& g, const FusionGroup& group,
                                                             const RowSchedule& row, int64_t budget_bytes,
                                                             bool row_caches) {
  StitchedDomain domain;
  if (group.kind != GroupKind::Stitched || !stitched_group_problem(g, group.nodes, group.roots, &domain).empty() ||
      !domain.innermost()) {
    return std::nullopt;
  }
  int64_t row_len = 1;
  for (size_t a : domain.axes) {
    if (!domain.shape[a].is_static()) return std::nullopt;
    row_len *= domain.shape[a].extent();
  }
  if (row_len <= 0) return std::nullopt;
  StitchedLayout layout;
  layout.row_len = row_len;
  layout.rows_per_block = row.rows_per_block();
  layout.scratch_slots =
      row.kind == RowScheduleKind::BlockPerRow ? block_per_row_threads(row_len, row.threads) / kRowScheduleWarpSize : 0;
  layout.budget_bytes = budget_bytes;
  layout.row_caches = row_caches;
  return plan_group_shared_memory(g, group, domain, layout);
}

std::string print_group_shared_memory(const GroupSharedMemory& m) {
  return print_shared_memory_plan(m.problem, m.plan);
}

}  // namespace stitch::schedule
