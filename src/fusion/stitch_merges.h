// The merges the FusionStitching planners share (docs/fusion.md, The `stitch`
// planner): they all start from xla's plan (thread composition), turn small
// dots into loop code, and end by absorbing duplicated loop kernels and
// packing small ones; between those steps each decides which kernels to
// stitch across reductions by its own search (greedy, DP + beam, ILP), over
// the legality checks here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fusion/delta_evaluator.h"
#include "fusion/fusion_plan.h"
#include "fusion/group_dag.h"
#include "fusion/stitched_group.h"

namespace stitch {

class StitchMerges {
 public:
  // `budget`: merges allowed after xla's fusions (-1: no cap); `max_fusions`
  // only names the whole plan's cap in refusals.
  StitchMerges(const Graph& g, FusionPlan xla_plan, int max_fusions, int budget, int64_t row_hold_bytes);
  // Where every FusionStitching planner starts: xla's plan, its fusions
  // counted against `max_fusions` (-1: no cap), and the small dots fused.
  static StitchMerges from_xla(const Graph& g, int max_fusions, int64_t row_hold_bytes);

  const Graph& graph() const { return g_; }
  GroupDag& dag() { return dag_; }
  const GroupDag& dag() const { return dag_; }

  // A small dot read only by one elementwise loop kernel joins it.
  void fuse_small_dots();
  // Merges each reduction kernel with the sibling reduction kernels sharing
  // an input where the two are a tile group (the searches leave those alone).
  void merge_tile_siblings();
  // A loop kernel another loop kernel recomputes whole gives its roots to it.
  void absorb_loops();
  // Multi-output loop fusion: a loop kernel whose roots a consumer loop
  // kernel of the same shape reads elementwise, at its own index, joins that
  // consumer, and its roots that others read stay roots (one pass instead of
  // two, nothing computed twice). Given an evaluator, only where the merged
  // kernel is estimated faster than the two.
  void fuse_loop_producers(const DeltaEvaluator* scored = nullptr);
  // Independent loop kernels become one packed kernel: small ones (each its
  // part of the grid), and any whose roots all have one shape (one loop) or
  // one static element count (equal parts of the grid).
  void pack_small_loops();
  // The plan, the unfused edges with their reasons. Checks the DAG's
  // invariants first (GroupDag), as from_xla does after its merges.
  FusionPlan finish(std::string planner);
  // An internal error naming `after` and every broken invariant of the DAG.
  void check_dag(std::string_view after) const;

  // xla's plan puts every reduction among its kernel's roots, so a group's
  // kind says whether it holds one, and every merge here keeps that true.
  bool has_reduction(int gi) const;
  // Nodes of group b that read a root of group a, as (root, reader) edges.
  std::vector<std::pair<int, int>> edges(int a, int b) const;
  // Groups that are neighbours of a, or reduction kernels reading one of its
  // inputs from memory, ascending by position in the DAG's order.
  std::vector<int> candidates(int a) const;
  bool shares_input(int a, int b) const;

  // Why `nodes` writing `roots` cannot be one stitched or tile kernel, or
  // nullopt: the node cap, the stitched (or tile) group rules, and for a
  // stitched group what a block re-reads between phases. The cycle and the
  // operand limits are the DAG's (GroupDag::merge_refusal). `tile` is set to
  // whether it would be a tile group.
  std::optional<Refusal> kernel_refusal(const std::vector<int>& nodes, const std::vector<int>& roots,
                                        bool* tile = nullptr) const;
  // kernel_refusal of a and b merged, then the DAG's checks, then the budget.
  // `siblings`: a and b read none of each other's results; they merge only
  // as a tile group.
  std::optional<Refusal> merge_refusal(int a, int b, bool siblings = false) const;
  // Merges b into a when they may be stitched (the greedy step) and, given
  // an evaluator, the merge scores above zero; on a refusal, the unfused
  // edges between them carry its reason.
  bool try_stitch(int a, int b, const DeltaEvaluator* scored = nullptr);
  // Each kernel holding a reduction, in the DAG's order, absorbs every
  // neighbour try_stitch allows: the `greedy` planner unscored, and the
  // searching planners' last step, scored, after their patterns.
  void stitch_greedily(const DeltaEvaluator* scored = nullptr);
  // Seconds of the plan's kernels by the evaluator's estimate.
  double plan_seconds(const DeltaEvaluator& evaluator) const;
  void merge(int a, int b, GroupKind kind = GroupKind::Stitched);
  // A convex set of kernels into its first, one fusion per other member.
  void merge_all(const std::vector<int>& members);
  bool budget_spent() const { return budget_ >= 0 && applied_ >= budget_; }
  // Whether `fusions` more fit the cap.
  bool budget_left(int fusions) const { return budget_ < 0 || applied_ + fusions <= budget_; }
  std::string budget_reason() const;
  // Sets the reason and cause of the unfused edge producer -> consumer, if
  // it has one.
  void explain(int producer, int consumer, const Refusal& refusal);

 private:
  bool is_small_dot(int n) const;
  bool absorbs(const FusionGroup& into, const FusionGroup& from) const;
  bool packable(const FusionGroup& grp) const;
  // Every root of both of one shape, or of one static element count.
  bool same_parallelism(const FusionGroup& a, const FusionGroup& b) const;
  bool is_tile_merge(const std::vector<int>& nodes, const std::vector<int>& roots) const;
  bool absorb_pass();
  // The shape every root of a loop group has, or null when they differ.
  const Shape* loop_shape(const FusionGroup& grp) const;
  // Every read of a's roots (of loop shape `shape`) by b (of `consumer_shape`)
  // is at its own index: an elementwise op of that shape, or, where the shapes
  // differ, a reshape to b's shape that only b's elementwise ops read.
  bool reads_in_place(int a, int b, const Shape& shape, const Shape& consumer_shape) const;

  const int64_t row_hold_bytes_;
  const Graph& g_;
  GroupDag dag_;
  std::vector<FusionRefusal> refusals_;
  std::unordered_map<int64_t, int> refusal_of_;                // producer -> consumer refusal's index
  std::unordered_map<int, std::vector<int>> input_consumers_;  // graph input value -> consumer nodes
  const int max_fusions_;
  const int budget_;
  int applied_ = 0;
};

// Why a block of the stitched kernel `nodes` would re-read more between its
// phases than it holds, or nullopt (docs/fusion.md, What a block re-reads).
std::optional<std::string> reread_refusal(const Graph& g, const std::vector<int>& nodes, const std::vector<int>& roots,
                                          const StitchedDomain& domain, int64_t row_hold_bytes);

}  // namespace stitch
