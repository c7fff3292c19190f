// One group of a plan as a graph of its own (docs/tuning.md): the values the
// group reads from outside become parameters, its roots the outputs, and the
// plan of that graph is the one group. The tuner compiles and times a
// group's candidate schedules on it, and keys its cache by its structure.
#pragma once

#include <string>

#include "fusion/fusion_plan.h"
#include "stitch/graph.h"

namespace stitch::tune {

struct GroupGraph {
  Graph graph;
  FusionPlan plan;  // one group: every node, the roots as in the original group
};

// Group `group` of a plan over `g`, as a graph named `name`.
GroupGraph group_graph(const Graph& g, const FusionGroup& group, const std::string& name);

}  // namespace stitch::tune
