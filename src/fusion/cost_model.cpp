#include "fusion/cost_model.h"

#include <cstdint>

#include <fmt/format.h>

#include "fusion/node_index.h"

namespace stitch {

int64_t FusionCostModel::value_bytes(const Graph& g, ValueId v) const {
  const TensorType& t = g.type(v);
  int64_t elements = 1;
  for (const Dim& d : t.shape) {
    if (d.is_static()) {
      elements *= d.extent();
    } else {
      auto it = bindings_.find(d.name());
      elements *= it == bindings_.end() ? default_extent_ : it->second;
    }
  }
  return elements * dtype_size(t.dtype);
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
      if (!in_group.contains(producer) && external.insert(v.index)) cost.bytes_read += value_bytes(g, v);
    }
  }
  for (int r : group.roots) cost.bytes_written += value_bytes(g, g.nodes()[r].output);
  return cost;
}

PlanCost FusionCostModel::plan_cost(const Graph& g, const FusionPlan& plan) const {
  PlanCost total;
  for (const FusionGroup& grp : plan.groups) {
    PlanCost c = group_cost(g, grp);
    total.bytes_read += c.bytes_read;
    total.bytes_written += c.bytes_written;
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
