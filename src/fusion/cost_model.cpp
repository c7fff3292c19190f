#include "fusion/cost_model.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include <fmt/format.h>

#include "fusion/node_index.h"

namespace stitch {

namespace {

// Byte counts cannot wrap: one value counts at most kMaxTensorBytes = 2^48
// (a value over the limit is an error wherever it is bound, docs/limits.md;
// here it is only the planner's estimate with unbound symbols at their default
// extent, capped), and sums saturate at int64's maximum, which no real count
// reaches (2^63 bytes is 2^15 values at the limit); `stitch plan` reports a
// saturated total as an error rather than print it.
int64_t saturating_add(int64_t a, int64_t b) {
  int64_t sum = 0;
  return __builtin_add_overflow(a, b, &sum) ? std::numeric_limits<int64_t>::max() : sum;
}

}  // namespace

int64_t FusionCostModel::value_bytes(const Graph& g, ValueId v) const {
  const TensorType& t = g.type(v);
  // Each factor is at most kMaxTensorBytes once capped, so each product is at
  // most 2^96 before the cap: computed in 128 bits.
  unsigned __int128 bytes = static_cast<unsigned __int128>(dtype_size(t.dtype));
  for (const Dim& d : t.shape) {
    int64_t extent = 0;
    if (d.is_static()) {
      extent = d.extent();
    } else {
      auto it = bindings_.find(d.name());
      extent = it == bindings_.end() ? default_extent_ : it->second;
    }
    extent = std::clamp<int64_t>(extent, 0, kMaxTensorBytes);
    bytes = std::min<unsigned __int128>(bytes * static_cast<unsigned __int128>(extent), kMaxTensorBytes);
  }
  return static_cast<int64_t>(bytes);
}

PlanCost FusionCostModel::group_cost(const Graph& g, const FusionGroup& group) const {
  // Each value read from outside the group counts once.
  const NodeIndex in_group(group.nodes, g.nodes().size());
  IdSet external(static_cast<size_t>(g.num_values()));
  PlanCost cost;
  // A dot epilogue runs inside its dot's call and reads the dot's result from
  // the cache (dot_epilogues.h).
  cost.launches = group.epilogue_of < 0 ? 1 : 0;
  for (int n : group.nodes) {
    for (ValueId v : g.nodes()[n].inputs) {
      const int producer = g.value(v).producer;
      if (producer >= 0 && producer == group.epilogue_of) continue;
      if (!in_group.contains(producer) && external.insert(v.index)) cost.bytes_read = saturating_add(cost.bytes_read, value_bytes(g, v));
    }
  }
  for (int r : group.roots) cost.bytes_written = saturating_add(cost.bytes_written, value_bytes(g, g.nodes()[r].output));
  return cost;
}

PlanCost FusionCostModel::plan_cost(const Graph& g, const FusionPlan& plan) const {
  PlanCost total;
  for (const FusionGroup& grp : plan.groups) {
    PlanCost c = group_cost(g, grp);
    total.bytes_read = saturating_add(total.bytes_read, c.bytes_read);
    total.bytes_written = saturating_add(total.bytes_written, c.bytes_written);
    total.launches += c.launches;
  }
  return total;
}

std::string plan_summary(const Graph& g, const FusionPlan& plan, const FusionCostModel& model) {
  PlanCost c = model.plan_cost(g, plan);
  return fmt::format("plan {} (planner {}): {} kernel{}, {} bytes read, {} bytes written\n",
                     plan.graph_name, plan.planner, c.launches, c.launches == 1 ? "" : "s",
                     c.bytes_read, c.bytes_written);
}

}  // namespace stitch
