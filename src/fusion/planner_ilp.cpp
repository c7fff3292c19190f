// The `ilp` planner: FusionStitching 2019's exact formulation (§4.1) over
// the `stitch` planner's pattern space (docs/fusion.md, The `ilp` planner).
// One binary per candidate pattern, one row per kernel (no kernel in two
// chosen patterns), the summed scores maximised by CBC (set_packing.h). Each
// pattern is convex by itself, but two chosen patterns can still make a
// cycle between them (2019, Figure 3): the solution's patterns are merged in
// a copy of the DAG, and where one no longer can be, the patterns on the
// paths that close the cycle are forbidden together and the problem solved
// again, until no cycle is left.
#include <algorithm>
#include <cstdint>

#include <fmt/format.h>

#include "fusion/patterns.h"
#include "fusion/planner.h"
#include "fusion/set_packing.h"

namespace stitch {
namespace {

// A wider space than the beam's: the yardstick should see what the beam
// search pruned.
constexpr PatternOptions kIlpPatterns{.top_k = 16, .combine = 8};
constexpr int kMaxCycleRounds = 100;
constexpr double kTimeLimitSeconds = 60;

}  // namespace

std::vector<int> cycle_among(const GroupDag& dag, const std::vector<Pattern>& patterns, const std::vector<int>& chosen) {
  GroupDag copy = dag;
  std::vector<int> order = chosen;
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return dag.position(patterns[a].members[0]) < dag.position(patterns[b].members[0]);
  });
  std::vector<int> survivor_of(dag.capacity(), -1);  // merged group id -> pattern index
  for (int c : order) {
    const std::vector<int> between = copy.between(patterns[c].members);
    if (!between.empty()) {
      std::vector<int> cycle{c};
      for (int gi : between)
        if (survivor_of[gi] >= 0) cycle.push_back(survivor_of[gi]);
      STITCH_ASSERT(cycle.size() > 1, "a convex pattern closes a cycle through no other pattern");
      std::sort(cycle.begin(), cycle.end());
      return cycle;
    }
    merge_members(copy, patterns[c].members);
    survivor_of[patterns[c].members[0]] = c;
  }
  return {};
}

ExactChoice choose_exactly(const GroupDag& dag, const std::vector<Pattern>& patterns, double time_limit_seconds) {
  SetPackingProblem problem;
  problem.num_elements = dag.capacity();
  problem.time_limit_seconds = time_limit_seconds;
  // Scores in microseconds: CBC's tolerances are absolute (1e-6 and so on),
  // and scores in seconds (1e-6 for a small kernel) would fall below them.
  for (const Pattern& p : patterns) problem.candidates.push_back({p.members, p.score * 1e6});
  ExactChoice out;
  for (int round = 0;; ++round) {
    const SetPackingResult result = solve_set_packing(problem);
    out.seconds += result.seconds;
    out.optimal = result.optimal;
    std::vector<int> cycle = cycle_among(dag, patterns, result.chosen);
    if (cycle.empty()) {
      out.chosen = result.chosen;
      return out;
    }
    if (round == kMaxCycleRounds) {
      fail_internal(fmt::format("ilp planner: cycles between patterns remain after {} rounds of cuts", round), __FILE__,
                    __LINE__);
    }
    problem.at_most_one_less.push_back(std::move(cycle));
    ++out.cycle_cuts;
  }
}

FusionPlan plan_ilp(const Graph& g, int max_fusions, int64_t row_hold_bytes, PlanSearchReport* report, const TargetModel& target) {
  StitchMerges merges = StitchMerges::from_xla(g, max_fusions, row_hold_bytes);
  const DeltaEvaluator evaluator(target);
  const double before = merges.plan_seconds(evaluator);
  const PatternSpace space(merges, evaluator, kIlpPatterns);
  const std::vector<Pattern> patterns = space.all();

  const ExactChoice exact = choose_exactly(merges.dag(), patterns, kTimeLimitSeconds);
  std::vector<Pattern> chosen;
  for (int c : exact.chosen) chosen.push_back(patterns[c]);
  PlanSearchReport found;
  found.evaluations = space.evaluations();
  found.optimal = exact.optimal;
  found.cycle_cuts = exact.cycle_cuts;
  found.solve_seconds = exact.seconds;
  FusionPlan plan = finish_search(merges, space, chosen, evaluator, before, "ilp", &found);
  if (report) *report = found;
  return plan;
}

}  // namespace stitch
