// Candidate fusion patterns and their scores (docs/fusion.md, The `stitch`
// planner): FusionStitching 2021's PatternReduction. A pattern is a set of
// xla's kernels that may be one stitched (or tile) kernel; its score is what
// the delta evaluator says the one kernel saves over the separate ones:
//   f(P) = sum over v in P of T(v) - T(merged P)
// which is T_saved_memory + T_saved_launches - T_penalty, with T a kernel's
// memory time at the target's measured bandwidth curve, its launch, and its
// expensive ops. The kernels a pattern leaves outside read the same values
// whatever else is merged, so scores add up over disjoint patterns: a plan's
// objective is the sum of its patterns' scores, which both the DP + beam
// search and the ILP maximise.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fusion/convexity.h"
#include "fusion/delta_evaluator.h"
#include "fusion/planner.h"
#include "fusion/stitch_merges.h"

namespace stitch {

struct Pattern {
  std::vector<int> members;  // group ids of the DAG, by position in its order; members[0] is the head
  double score = 0;          // seconds saved (DeltaEvaluator)
};

struct PatternOptions {
  // Patterns kept per kernel, and the best single-consumer extensions
  // combined pairwise. At 3 and 4 the beam missed the optimum by up to 27%
  // on small random graphs (tests/fusion/search_test.cpp); at 8 and 6 it
  // finds it on all of them.
  int top_k = 8;
  int combine = 6;
  // Consumer kernels a kernel extends through, the nearest in the order: a
  // pattern holding a kernel and a far consumer is rarely convex (the path
  // between them leaves it), and a value that every later kernel reads (xla
  // recomputing a residual sum in each) would make the work per kernel grow
  // with the graph.
  int consumers = 8;
};

// Post-order over the DAG (consumers first): a kernel's patterns are the
// kernel with a consumer, or with one of the best patterns or stubs holding a
// consumer, and pairs of those over different consumers; the top_k by score
// are kept per kernel. Each legal pattern holds a reduction, is convex (no
// path leaves it and comes back), passes StitchMerges::kernel_refusal and the
// operand limits, and scores above zero. Work per kernel is bounded by its
// degree and top_k, so the space is built in time linear in the graph.
class PatternSpace {
 public:
  PatternSpace(const StitchMerges& merges, const DeltaEvaluator& evaluator, PatternOptions options = {});

  // Patterns headed by `gi`, best first.
  const std::vector<Pattern>& headed_by(int gi) const { return heads_[gi]; }
  // Every kept pattern, by head position then score.
  std::vector<Pattern> all() const;
  // Seconds of kernel gi alone.
  double seconds(int gi) const { return seconds_[gi]; }
  // Why the producer kernel and its consumer kernel were not a pattern by
  // themselves, for the edges a plan leaves between them: an illegal merge's
  // reason, or the score that made it unprofitable. Absent where the pair
  // was a candidate.
  const std::map<std::pair<int, int>, Refusal>& pair_reasons() const { return pair_reasons_; }
  // The pattern's score, or why it is not a pattern (the reason's text for a
  // pair only; a larger set gets the cause), and (`stub`) whether a
  // larger set might be: it fails only for want of a reduction, as a stitched
  // group, or on profit, not on a cycle or a limit.
  // `added`, when given, is a member without which the others are convex (a
  // pattern or stub the search extends): the cycle check walks from it alone.
  std::optional<Pattern> evaluate(std::vector<int> members, Refusal* why_not = nullptr, bool* stub = nullptr,
                                  int added = -1) const;
  int evaluations() const { return static_cast<int>(memo_entries_.size()); }

 private:
  bool read_outside(int node, const std::vector<int>& members) const;
  // The groups that read `node` from memory (not recomputing it), ascending;
  // -1 first for a graph output. Made when first asked for: the DAG does not
  // change while the space is built.
  const std::vector<int>& memory_readers(int node) const;
  std::vector<int> nearest_consumers(int v) const;

  const StitchMerges& merges_;
  const GroupDag& dag_;
  ConvexityIndex convexity_;  // the DAG does not change while the space is built
  const DeltaEvaluator& evaluator_;
  PatternOptions options_;
  std::vector<double> seconds_;
  std::vector<std::vector<Pattern>> heads_;
  std::map<std::pair<int, int>, Refusal> pair_reasons_;
  struct Memo {
    bool legal = false;
    bool stub = false;
    double score = 0;
    Refusal why_not;
  };
  // Every set evaluated, once (ids ascending, one after another in one
  // array), found by open addressing on its hash: hundreds of thousands of
  // sets on a large graph, where a hash map of vectors spent more time
  // allocating, probing and freeing than the checks it saved.
  struct MemoEntry {
    uint64_t hash = 0;
    uint32_t offset = 0, size = 0;  // into memo_ids_
    Memo memo;
  };
  // The entry of `members` (ascending, unique), made when missing; sets
  // `inserted`. The reference lasts until the next call.
  Memo& memo_of(const std::vector<int>& members, bool* inserted) const;
  mutable std::vector<int> memo_ids_;
  mutable std::vector<MemoEntry> memo_entries_;
  mutable std::vector<int32_t> memo_slots_;  // entry index or -1; a power of two long
  mutable std::vector<std::vector<int>> memory_readers_;  // by node
  mutable std::vector<char> memory_readers_known_;
};

// The summed score of disjoint patterns.
double objective(const std::vector<Pattern>& patterns);

}  // namespace stitch

namespace stitch {

// Merges each pattern's kernels into one kernel, patterns by their heads'
// positions, members in order; a pattern no longer convex once the earlier
// ones are merged (a cycle through another pattern) is left apart and
// returned. Before merging, the edges between kernels the plan may leave
// apart get the reasons the pattern space recorded.
std::vector<Pattern> apply_patterns(StitchMerges& merges, const PatternSpace& space, std::vector<Pattern> patterns);

// The DP + beam search over the pattern space (planner_dp.cpp): `width`
// partial plans walk the kernels in the DAG's order; returns the best plan's
// patterns, disjoint.
std::vector<Pattern> beam_search(const GroupDag& dag, const PatternSpace& space, int width);
// The `stitch` planner's beam: partial plans kept per kernel.
inline constexpr int kBeamWidth = 3;

// The exact choice (planner_ilp.cpp): the best packing of `patterns` that
// makes no cycle between them, by CBC with cuts.
struct ExactChoice {
  std::vector<int> chosen;  // indices into the patterns, ascending
  bool optimal = true;      // every solve proven optimal, and the cuts converged
  int cycle_cuts = 0;
  double seconds = 0;
};
ExactChoice choose_exactly(const GroupDag& dag, const std::vector<Pattern>& patterns, double time_limit_seconds);
// The patterns (indices) on one cycle that merging `chosen` in `dag` would
// make (each chosen pattern contracted to one vertex), ascending; empty when
// they all merge. Linear in the DAG.
std::vector<int> cycle_among(const GroupDag& dag, const std::vector<Pattern>& patterns, const std::vector<int>& chosen);

// The end of a searching planner (stitch, ilp): `chosen` merged
// (apply_patterns), the scored greedy step, tile siblings, absorbing, loop
// producers and packing; `before` is the plan's seconds the search started
// from, for the report's objective. Fills the report's patterns merged,
// objective and chosen patterns.
FusionPlan finish_search(StitchMerges& merges, const PatternSpace& space, const std::vector<Pattern>& chosen,
                         const DeltaEvaluator& evaluator, double before, const std::string& planner,
                         PlanSearchReport* report);

}  // namespace stitch
