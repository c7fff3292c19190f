// A fusion plan as data (DESIGN.md, Fusion planners): which nodes share a
// kernel, and for every producer -> consumer edge left between kernels, why.
// It partitions the nodes of a Graph IR graph; fusion/ makes it (the planners,
// finalize_plan in fusion/fusion_plan.h), and every later stage and the
// runtime read it, so the type lives with the Graph IR.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stitch/graph.h"

namespace stitch {

// What kind of kernel a group becomes, decided by its roots.
enum class GroupKind : uint8_t {
  Loop,       // elementwise / broadcast / layout / gather roots: one thread per output element
  Reduction,  // at least one root is a reduction: XLA's "input fusion"
  Stitched,   // a reduction's result is read inside the kernel, or written beside other roots (stitched_group.h)
  Tile,       // reductions over different axes of one tile, a block per tile (tile_group.h)
  Library,    // a dot: a BLAS call, never fused
};

std::string_view group_kind_name(GroupKind k);

// One kernel. A node may appear in several groups: a cheap producer is
// recomputed inside every consumer kernel that absorbed it (duplication).
// The group listing a node among its roots is that node's home: the one
// kernel that writes the node's value to memory for other kernels or the
// graph outputs. A node that is in groups but in no group's roots is never
// materialised.
struct FusionGroup {
  GroupKind kind = GroupKind::Loop;
  std::vector<int> nodes;  // indices into Graph::nodes(), ascending (topological)
  std::vector<int> roots;  // subset of nodes, ascending: the values this kernel writes
  // A dot node, or -1. Set: this group is that dot's epilogue (dot_epilogues.h):
  // its kernel runs inside the dot's library call, a panel of the dot's rows at
  // a time, right after the group that computes the dot, and reads the dot's
  // result while it is in the cache. It is not a launch of its own.
  int epilogue_of = -1;

  bool contains(int node) const;
};

// Why a fusion was not made (docs/fusion.md, Refusal causes): it would be
// wrong or cannot be expressed as one kernel (Illegal), it would pass a
// resource limit or the fusion cap (Budget), or a rule or the cost model
// says it does not pay (Unprofitable).
enum class RefusalCause : uint8_t { Illegal, Budget, Unprofitable };
std::string_view refusal_cause_name(RefusalCause c);

struct Refusal {
  RefusalCause cause = RefusalCause::Illegal;
  std::string reason;
};

// A producer -> consumer pair left in different kernels, or two sibling
// groups that were not merged, with the reason (STYLE.md §4).
struct FusionRefusal {
  enum class Relation : uint8_t { ProducerConsumer, Siblings };
  int producer = -1;  // for Siblings: a root of the first group
  int consumer = -1;  // for Siblings: a root of the second group
  std::string reason;
  Relation relation = Relation::ProducerConsumer;
  RefusalCause cause = RefusalCause::Illegal;
};

struct FusionPlan {
  std::string graph_name;
  std::string planner;
  std::vector<FusionGroup> groups;  // in an order where every group's inputs come from earlier groups
  std::vector<FusionRefusal> refusals;

  std::vector<int> groups_containing(int node) const;
  int home_group(int node) const;  // -1 when the node is never materialised
  // Launches: the groups less the dot epilogues, which run inside their dot's call.
  int kernel_count() const;
};

// "name = op(a, b)" for node `index`.
std::string describe_node(const Graph& g, int index);

}  // namespace stitch
