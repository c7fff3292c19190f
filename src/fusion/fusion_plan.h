// Making and printing fusion plans (DESIGN.md, Fusion planners): the
// planners' common last step and the plan's text and Graphviz forms. The
// plan itself is data of the Graph IR (ir/fusion_plan.h).
#pragma once

#include <string>

#include "ir/fusion_plan.h"
#include "stitch/graph.h"

namespace stitch {

// Sorts nodes and roots, derives each group's kind (a group with reductions
// that tile_group_problem accepts is a tile group), orders the groups
// topologically (ties by their smallest root; a dot epilogue right after its
// dot's group) and the refusals by node. Asserts that every unfused
// producer -> consumer edge carries a reason.
void finalize_plan(const Graph& g, FusionPlan& plan);

// Drops the refusals of edges now inside one kernel (they need no reason).
void drop_fused_refusals(FusionPlan& plan);

// The deterministic text form that golden tests pin:
//   plan softmax_small (planner xla): 3 groups
//   group 0 [reduction] root y_max: y_max = reduce_max(x)
//   duplicated: c in groups 1, 2
//   not fused: y_max -> y_max_bcast: <reason>
std::string print_plan(const Graph& g, const FusionPlan& plan);

// Graphviz: one cluster per group; a duplicated node is drawn in each cluster
// that computes it; an edge between clusters is labelled with its refusal.
std::string print_plan_dot(const Graph& g, const FusionPlan& plan);

}  // namespace stitch
