// The `ilp` planner: FusionStitching 2019's exact formulation (§4.1) over
// the `stitch` planner's pattern space (docs/fusion.md, The `ilp` planner).
// One binary per candidate pattern, one row per kernel (no kernel in two
// chosen patterns), the summed scores maximised by CBC (set_packing.h). Each
// pattern is convex by itself, but two chosen patterns can still make a
// cycle between them (2019, Figure 3): with each chosen pattern contracted
// to one vertex the DAG is sorted (Kahn); where a cycle is left, the patterns
// on it are forbidden together and the problem solved again, until no cycle
// is left.
#include <algorithm>
#include <cstdint>

#include <fmt/format.h>

#include "fusion/patterns.h"
#include "fusion/planner.h"
#include "fusion/set_packing.h"

namespace stitch {
namespace {

// A wider space than the beam's: the yardstick should see what the beam
// search pruned. At 16 patterns a kernel the residual chains' optima were the
// same as at 12 and planning took 5% longer.
constexpr PatternOptions kIlpPatterns{.top_k = 12, .combine = 8};
constexpr int kMaxCycleRounds = 100;

}  // namespace

std::vector<int> cycle_among(const GroupDag& dag, const std::vector<Pattern>& patterns, const std::vector<int>& chosen) {
  // Each chosen pattern contracted to its head; Kahn's algorithm over the
  // contracted DAG. Vertices left over lie on cycles or after one: walking
  // back along predecessors that are left over must close a cycle.
  const int n = dag.capacity();
  std::vector<int> vertex(static_cast<size_t>(n)), pattern_at(static_cast<size_t>(n), -1);
  for (int gi = 0; gi < n; ++gi) vertex[gi] = gi;
  std::vector<std::vector<int>> members_of(static_cast<size_t>(n));  // per pattern head: its members
  for (int c : chosen) {
    const std::vector<int>& m = patterns[c].members;
    for (int gi : m) vertex[gi] = m[0];
    pattern_at[m[0]] = c;
    members_of[m[0]] = m;
  }
  auto members = [&](int v) -> std::vector<int> { return pattern_at[v] >= 0 ? members_of[v] : std::vector<int>{v}; };
  std::vector<int> indegree(static_cast<size_t>(n), 0);
  const std::vector<int> alive = dag.order();
  for (int a : alive) {
    for (int s : dag.successors(a)) {
      if (vertex[a] != vertex[s]) ++indegree[vertex[s]];
    }
  }
  std::vector<int> ready;
  int vertices = 0;
  for (int a : alive) {
    if (vertex[a] != a) continue;
    ++vertices;
    if (indegree[a] == 0) ready.push_back(a);
  }
  std::vector<bool> done(static_cast<size_t>(n), false);
  int processed = 0;
  while (!ready.empty()) {
    const int v = ready.back();
    ready.pop_back();
    done[v] = true;
    ++processed;
    for (int gi : members(v)) {
      for (int s : dag.successors(gi)) {
        if (vertex[s] != v && --indegree[vertex[s]] == 0) ready.push_back(vertex[s]);
      }
    }
  }
  if (processed == vertices) return {};
  // A vertex left over has a predecessor left over: walk back until one repeats.
  int v = -1;
  for (int a : alive) {
    if (vertex[a] == a && !done[a]) {
      v = a;
      break;
    }
  }
  std::vector<int> step_of(static_cast<size_t>(n), -1);
  std::vector<int> path;
  while (step_of[v] < 0) {
    step_of[v] = static_cast<int>(path.size());
    path.push_back(v);
    int next = -1;
    for (int gi : members(v)) {
      for (int p : dag.predecessors(gi)) {
        if (vertex[p] != v && !done[vertex[p]]) {
          next = vertex[p];
          break;
        }
      }
      if (next >= 0) break;
    }
    STITCH_ASSERT(next >= 0, "ilp planner: a vertex left by Kahn's algorithm without a predecessor left");
    v = next;
  }
  std::vector<int> cycle;
  for (size_t i = static_cast<size_t>(step_of[v]); i < path.size(); ++i) {
    if (pattern_at[path[i]] >= 0) cycle.push_back(pattern_at[path[i]]);
  }
  STITCH_ASSERT(cycle.size() > 1, "a convex pattern closes a cycle through no other pattern");
  std::sort(cycle.begin(), cycle.end());
  return cycle;
}

ExactChoice choose_exactly(const GroupDag& dag, const std::vector<Pattern>& patterns, double time_limit_seconds) {
  SetPackingProblem problem;
  problem.num_elements = dag.capacity();
  // Scores in microseconds: CBC's tolerances are absolute (1e-6 and so on),
  // and scores in seconds (1e-6 for a small kernel) would fall below them.
  for (const Pattern& p : patterns) problem.candidates.push_back({p.members, p.score * 1e6});
  ExactChoice out;
  // Each round's new forbidden sets touch a few components: the rest are
  // taken from the memo.
  SetPackingMemo memo;
  for (int round = 0;; ++round) {
    // The limit is the whole search's: each round gets what the earlier
    // ones left (a 422-node graph took 67 rounds of cuts).
    problem.time_limit_seconds = std::max(0.0, time_limit_seconds - out.seconds);
    const SetPackingResult result = solve_set_packing(problem, &memo);
    out.seconds += result.seconds;
    out.optimal = out.optimal && result.optimal;
    // Every cycle the packing makes is cut this round, not only the first:
    // after each, the cycle's lowest-scoring pattern is set aside and the
    // rest searched again (a plan of hundreds of patterns, as under a fusion
    // cap, can close more cycles than rounds). What is left is acyclic.
    std::vector<int> kept = result.chosen;
    int cuts = 0;
    for (std::vector<int> cycle = cycle_among(dag, patterns, kept); !cycle.empty();
         cycle = cycle_among(dag, patterns, kept)) {
      const int worst = *std::min_element(cycle.begin(), cycle.end(),
                                          [&](int a, int b) { return patterns[a].score < patterns[b].score; });
      problem.at_most_one_less.push_back(std::move(cycle));
      ++cuts;
      kept.erase(std::find(kept.begin(), kept.end(), worst));
    }
    out.cycle_cuts += cuts;
    if (cuts == 0) {
      out.chosen = result.chosen;
      return out;
    }
    if (round == kMaxCycleRounds || out.seconds >= time_limit_seconds) {
      // Out of rounds or of time: the packing less what broke its cycles,
      // not proven best.
      out.chosen = std::move(kept);
      out.optimal = false;
      return out;
    }
  }
}

FusionPlan plan_ilp(const Graph& g, int max_fusions, int64_t row_hold_bytes, PlanSearchReport* report, const TargetModel& target,
                    double time_limit_seconds) {
  StitchMerges merges = StitchMerges::from_xla(g, max_fusions, row_hold_bytes);
  const DeltaEvaluator evaluator(target);
  const double before = merges.plan_seconds(evaluator);
  const PatternSpace space(merges, evaluator, kIlpPatterns);
  const std::vector<Pattern> patterns = space.all();

  // Under a fusion cap xla may have spent it all: nothing would be merged.
  const ExactChoice exact =
      merges.budget_spent() ? ExactChoice{} : choose_exactly(merges.dag(), patterns, time_limit_seconds);
  std::vector<Pattern> chosen;
  for (int c : exact.chosen) chosen.push_back(patterns[c]);
  PlanSearchReport found;
  // Not proven (the time limit, or cuts out of rounds): CBC's packing may be
  // poor (or empty), and the beam search over the same space costs little.
  if (!exact.optimal) {
    std::vector<Pattern> beam = beam_search(merges.dag(), space, kBeamWidth);
    if (objective(beam) > objective(chosen)) {
      chosen = std::move(beam);
      found.beam_fallback = true;
    }
  }
  found.evaluations = space.evaluations();
  found.optimal = exact.optimal;
  found.cycle_cuts = exact.cycle_cuts;
  found.solve_seconds = exact.seconds;
  FusionPlan plan = finish_search(merges, space, chosen, evaluator, before, "ilp", &found);
  if (report) *report = found;
  return plan;
}

}  // namespace stitch
