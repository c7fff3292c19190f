// Operator-at-a-time (DESIGN.md, `none`): what PyTorch eager runs, the floor
// every other planner is measured from.
#include <set>

#include "fusion/planner.h"

namespace stitch {

FusionPlan plan_none(const Graph& g) {
  FusionPlan plan;
  plan.planner = "none";
  for (int n = 0; n < static_cast<int>(g.nodes().size()); ++n) {
    plan.groups.push_back({GroupKind::Loop, {n}, {n}});
    std::set<int> producers;
    for (ValueId v : g.nodes()[n].inputs) {
      int p = g.value(v).producer;
      if (p >= 0) producers.insert(p);
    }
    for (int p : producers)
      plan.refusals.push_back({p, n, "planner none runs one op per kernel", FusionRefusal::Relation::ProducerConsumer,
                               RefusalCause::Unprofitable});
  }
  finalize_plan(g, plan);
  return plan;
}

}  // namespace stitch
