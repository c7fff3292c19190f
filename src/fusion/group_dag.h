// The kernels of a plan under construction, as a DAG that planners merge in
// place (docs/fusion.md, Planning time). One vertex per group; an edge A -> B
// when B reads a value whose home is A. A topological order is kept across
// merges, so the question every merge asks, whether the merged kernel would
// both feed and consume a third kernel, searches only the groups that lie
// between the two in that order: planning stays linear in the graph when
// merges are local, where rebuilding the group graph per merge
// (check_merge_legality) made it cubic.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "fusion/fusion_plan.h"
#include "fusion/legality.h"

namespace stitch {

// How many neighbouring kernels (or readers of one value) a planner's merge
// step looks at around a kernel: enough for any fusion pattern of a model
// layer, and few enough that a value read by every layer, or a kernel read
// by dozens of others, keeps the step's work bounded (docs/fusion.md,
// Planning time).
inline constexpr int kNeighbourScan = 16;

// The invariants every method keeps, checked by invariant_violations():
//  - a live group has at least one node and at least one root, its nodes and
//    roots ascending and unique, its roots among its nodes;
//  - every root of a live group is a graph output, or is read from memory by
//    another live group (a group that recomputes the node does not read it),
//    or has no reader at all (dead code in a graph not canonicalized):
//    a merge that takes in the last reader of a group's root drops that root,
//    and a group left with none is retired, its producers looked at in turn;
//  - each node is a root of at most one live group (its home), and every node
//    a live group reads from outside itself has one;
//  - a retired (merged-away) group is empty, has no edges and no position;
//  - the edges are exactly the reads between live groups, and every edge goes
//    forward in the kept order.
// A caller holding a group id across a merge checks alive() before using it:
// a merge retires the other members, and any producer it left unread.
class GroupDag {
 public:
  // `groups`: every node read by a group and computed outside it has a home
  // (is a root of exactly one group). Asserts the group graph is acyclic.
  // Roots nobody reads and groups without roots are dropped at once (xla's
  // recomputation can leave a kernel whose every reader computes its value).
  GroupDag(const Graph& g, std::vector<FusionGroup> groups);

  const Graph& graph() const { return g_; }
  // Group ids are stable: merges keep one id and retire the other.
  int capacity() const { return static_cast<int>(groups_.size()); }
  bool alive(int gi) const { return alive_[gi]; }
  int num_alive() const { return num_alive_; }
  const FusionGroup& group(int gi) const { return groups_[gi]; }
  const std::vector<int>& successors(int gi) const { return succ_[gi]; }
  const std::vector<int>& predecessors(int gi) const { return pred_[gi]; }
  // The groups computing `node` (a cheap node may be recomputed in several).
  const std::vector<int>& groups_of(int node) const { return groups_of_[node]; }
  // The group writing `node` to memory, -1 when none does.
  int home(int node) const { return home_[node]; }
  // Distinct consumer nodes of `node`, ascending.
  const std::vector<int>& consumers(int node) const { return consumers_[node]; }
  bool is_output(int node) const { return is_output_[node]; }
  // Position in the topological order kept across merges.
  int position(int gi) const { return pos_[gi]; }
  // Alive groups in topological order.
  std::vector<int> order() const;

  // Whether some group other than `a` and `b` reads `node` from memory, or it
  // is a graph output, or nothing reads it at all (dead code, kept where it
  // is): then a kernel made of a and b must still write it.
  bool read_elsewhere(int node, int a, int b) const;
  // The roots a kernel made of a and b writes: a's and b's roots that are read
  // elsewhere (read_elsewhere), ascending.
  std::vector<int> merged_roots(int a, int b) const;
  // a's nodes and b's, ascending, unique.
  std::vector<int> merged_nodes(int a, int b) const;

  // Why a and b cannot be one kernel, or nullopt: the cycle a path through a
  // third group would make, then the limits on the merged kernel. The same
  // answer as check_merge_legality on the same groups.
  // The cycle is illegal; the limits are the budget.
  std::optional<Refusal> merge_refusal(int a, int b, const FusionLimits& limits = {}) const;
  // The limits half of merge_refusal, for a caller that checked the cycle.
  std::optional<Refusal> pair_limits_refusal(int a, int b, const FusionLimits& limits = {}) const;
  // Why `members` as one kernel of `merged_nodes` (their nodes, ascending,
  // unique) writing `outputs` values would not fit `limits`
  // (check_group_limits' answer, in its words), or nullopt. Counts the
  // merged kernel's operands from each member's cached external operands
  // instead of walking every node.
  std::optional<std::string> limits_refusal(const std::vector<int>& members, const std::vector<int>& merged_nodes,
                                            int outputs, const FusionLimits& limits = {}) const;
  // The groups outside `members` that lie on a path from one member to
  // another: empty when the members can be one kernel without a cycle.
  std::vector<int> between(const std::vector<int>& members) const;
  // between(convex + {added}) is empty, where `convex` (no id twice, without
  // `added`) is itself without a group between its members: a path that
  // leaves the larger set and comes back must start or end at `added`, so
  // only the walks from `added` are needed (the pattern space's extensions).
  bool joins_without_cycle(const std::vector<int>& convex, int added) const;
  // The values group gi reads from outside itself (graph inputs included),
  // ascending; made when first asked for, and again after gi changes.
  const std::vector<int>& external_operands(int gi) const;
  // Only the cycle half of merge_refusal.
  std::optional<std::string> cycle_refusal(int a, int b) const;

  // Replaces group a by `merged` (which must hold a's and b's nodes and the
  // roots the caller wants written) and retires b. Asserts the merge is
  // acyclic. Edges and the order are updated in time proportional to the
  // merged group and the groups between a and b in the order.
  void merge(int a, int b, FusionGroup merged);
  // Merges `members` (alive, distinct, a convex set: no path leaves it and
  // comes back) into the first, as `kind`, writing the members' roots read
  // outside them: what merging the first with each other in turn gives, with
  // one relink of the merged group instead of one per member.
  void merge_all(const std::vector<int>& members, GroupKind kind);
  // Alive groups in topological order; the DAG is left empty.
  std::vector<FusionGroup> take_groups();

  // One line per broken invariant (above), empty when all hold. Walks every
  // group and edge: for tests and the planners' checks between phases.
  std::string invariant_violations() const;

  // Whether group gi holds node.
  bool contains(int gi, int node) const;

 private:
  // Drops the roots of each listed group that no other group reads and no
  // output returns, retiring a group left with none, then does the same for
  // the groups it read from (whose last reader it may have been).
  void drop_unread_roots(std::vector<int> worklist);
  // Retires a group that writes nothing anyone reads.
  void retire(int gi);
  // The groups between lo and hi in the order that lo reaches; sets `hits_hi`
  // when one of them (not lo itself) has an edge to hi.
  std::vector<int> forward_window(int lo, int hi, bool* hits_hi) const;
  // Whether a path from lo to hi (lo before hi in the order) passes through
  // a third group: what merging them would turn into a cycle.
  bool path_through_third(int lo, int hi) const;
  // Recomputes gi's edges from its nodes and roots, and its neighbours' lists.
  void relink(int gi);
  void unlink(int gi);
  // Replaces members[0] by `merged`, retires the other members, relinks, and
  // moves `after` (the groups in the window [pos lo, pos hi] a member reaches)
  // after the merged group.
  void install_merge(const std::vector<int>& members, FusionGroup merged, const std::vector<int>& after, int lo, int hi);

  const Graph& g_;
  std::vector<FusionGroup> groups_;
  std::vector<char> alive_;
  int num_alive_ = 0;
  std::vector<std::vector<int>> succ_, pred_;  // sorted, unique, alive ids
  std::vector<std::vector<int>> groups_of_;    // node -> groups, ascending
  std::vector<int> home_;                      // node -> group or -1
  std::vector<std::vector<int>> consumers_;    // node -> consumer nodes
  std::vector<char> is_output_;
  std::vector<int> pos_;    // group -> position
  std::vector<int> order_;  // position -> group, -1 where a retired group was
  mutable std::vector<int> mark_;    // scratch for searches: stamp per group
  mutable std::vector<int> member_;  // scratch for between() and the backward walks: stamp per group
  // Per group, the values its nodes read from outside it (ascending), made
  // when first asked for; cleared when the group changes.
  mutable std::vector<std::vector<int>> external_;
  mutable std::vector<char> external_known_;
  mutable int stamp_ = 0;
};

}  // namespace stitch
