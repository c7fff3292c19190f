// The one legality check every planner shares (DESIGN.md, Fusion planners;
// STYLE.md §4): whether a merge is *correct* to make, never whether it pays.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "fusion/fusion_plan.h"

namespace stitch {

// Target-independent limits on one kernel. Generated kernels take each
// operand and output as a parameter, and XLA caps a fusion's operands for the
// same reason (CUDA's 4 KiB parameter space); the node cap keeps a single
// kernel's code size bounded until the schedule stage can say more.
struct FusionLimits {
  int max_nodes_per_group = 512;
  int max_operands_and_outputs = 64;
};

// Groups as vertices; an edge A -> B when B reads a value whose home is A.
struct GroupGraph {
  std::vector<std::vector<int>> successors;  // sorted, unique
};

GroupGraph build_group_graph(const Graph& g, const std::vector<FusionGroup>& groups);
bool is_acyclic(const GroupGraph& gg);

// How many distinct values the nodes read from outside themselves.
int count_external_operands(const Graph& g, const std::vector<int>& nodes);

// Why `nodes` cannot be one kernel under `limits`, or nullopt.
std::optional<std::string> check_group_limits(const Graph& g, const std::vector<int>& nodes,
                                              int num_outputs, const FusionLimits& limits = {});

// Why groups a and b cannot become one kernel, or nullopt: a path from one to
// the other through a third group would make the merged kernel both feed and
// consume that group (a cycle); and the merged kernel must fit the limits.
std::optional<std::string> check_merge_legality(const Graph& g,
                                                const std::vector<FusionGroup>& groups, int a,
                                                int b, const FusionLimits& limits = {});

}  // namespace stitch
