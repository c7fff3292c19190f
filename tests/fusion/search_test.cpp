// The searching planners (docs/fusion.md, The `stitch` planner, The `ilp`
// planner): the exact choice against exhaustive enumeration, cycle
// elimination, and the DP + beam search against the exact optimum.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "fusion/patterns.h"
#include "fusion/planner.h"
#include "plan_invariants.h"
#include "random_graph.h"
#include "stitch/text.h"

namespace stitch {
namespace {

using testing_fusion::canonical_graph;

double objective_of(const std::vector<Pattern>& patterns, const std::vector<int>& chosen) {
  double total = 0;
  for (int c : chosen) total += patterns[c].score;
  return total;
}

// The best disjoint, cycle-free choice, by trying every subset.
double exhaustive_optimum(const GroupDag& dag, const std::vector<Pattern>& patterns) {
  const int n = static_cast<int>(patterns.size());
  double best = 0;
  for (uint32_t mask = 1; mask < (1u << n); ++mask) {
    std::vector<int> chosen;
    std::vector<int> used;
    bool disjoint = true;
    for (int i = 0; i < n && disjoint; ++i) {
      if (!(mask >> i & 1)) continue;
      for (int m : patterns[i].members) {
        if (std::find(used.begin(), used.end(), m) != used.end()) disjoint = false;
        used.push_back(m);
      }
      chosen.push_back(i);
    }
    if (!disjoint) continue;
    const double total = objective_of(patterns, chosen);
    if (total > best && cycle_among(dag, patterns, chosen).empty()) best = total;
  }
  return best;
}

TEST(ExactChoice, CutsACycleBetweenTwoPatterns) {
  // a -> b <- c and a -> d <- c: {a, d} and {c, b} are each convex, but
  // together each feeds the other.
  Graph g = canonical_graph(R"(graph cross(x: f32[8]) {
  a = exp(x)
  c = log(x)
  b = add(a, c)
  d = sub(c, a)
  return b, d
})");
  GroupDag dag(g, plan(g, PlannerKind::None).groups);
  auto id = [&](const char* name) { return dag.home(g.value(g.find_value(name)).producer); };
  auto by_position = [&](std::vector<int> m) {
    std::sort(m.begin(), m.end(), [&](int x, int y) { return dag.position(x) < dag.position(y); });
    return m;
  };
  const std::vector<Pattern> patterns = {
      {by_position({id("a"), id("d")}), 1.0}, {by_position({id("c"), id("b")}), 1.0}, {by_position({id("a"), id("b")}), 0.5}};
  EXPECT_EQ(cycle_among(dag, patterns, {0, 1}).size(), 2u);
  EXPECT_TRUE(cycle_among(dag, patterns, {0}).empty());
  const ExactChoice exact = choose_exactly(dag, patterns, 60);
  EXPECT_EQ(exact.cycle_cuts, 1);
  EXPECT_DOUBLE_EQ(objective_of(patterns, exact.chosen), 1.0);
  EXPECT_DOUBLE_EQ(exhaustive_optimum(dag, patterns), 1.0);
}

// Graphs small enough to enumerate: the corpus's small graphs and random
// reduction-pattern graphs.
std::vector<Graph> small_graphs() {
  std::vector<Graph> out;
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(STITCH_SOURCE_DIR) / "bench/workloads")) {
    Module m = parse_file(entry.path().string());
    for (const Graph& g : m.graphs)
      if (g.name().ends_with("_small")) out.push_back(canonicalize(g));
  }
  for (uint64_t seed = 1; seed <= 60; ++seed) out.push_back(canonicalize(testing::random_graph(testing::stitched_options(seed))));
  return out;
}

TEST(ExactChoice, MatchesExhaustiveEnumerationAndTheBeamComesClose) {
  int compared = 0, nontrivial = 0;
  double worst = 1;
  for (const Graph& g : small_graphs()) {
    StitchMerges merges(g, plan(g, PlannerKind::Xla), -1, -1, PlanOptions::kCpuRowHoldBytes);
    merges.fuse_small_dots();
    const DeltaEvaluator evaluator;
    const PatternSpace wide(merges, evaluator, {.top_k = 16, .combine = 8});
    const std::vector<Pattern> patterns = wide.all();
    if (patterns.size() > 16) continue;
    const double optimum = exhaustive_optimum(merges.dag(), patterns);
    const ExactChoice exact = choose_exactly(merges.dag(), patterns, 60);
    ASSERT_TRUE(exact.optimal) << g.name();
    EXPECT_NEAR(objective_of(patterns, exact.chosen), optimum, 1e-9 * (1 + optimum)) << g.name();
    // The beam searches the narrower space the `stitch` planner builds.
    const PatternSpace narrow(merges, evaluator);
    const double beam = objective(beam_search(merges.dag(), narrow, 3));
    EXPECT_LE(beam, optimum * (1 + 1e-9) + 1e-15) << g.name();
    if (optimum > 0) {
      worst = std::min(worst, beam / optimum);
      EXPECT_GE(beam, 0.98 * optimum) << g.name();
      ++nontrivial;
    }
    ++compared;
  }
  RecordProperty("compared", compared);
  RecordProperty("worst_beam_over_optimum", std::to_string(worst));
  EXPECT_GT(compared, 40);
  EXPECT_GT(nontrivial, 30);
}

TEST(SearchingPlanners, ReportTheirObjectives) {
  Graph g = canonical_graph(testing_fusion::kDiamond);
  PlanSearchReport dp, ilp;
  plan(g, PlannerKind::Stitch, {}, &dp);
  plan(g, PlannerKind::Ilp, {}, &ilp);
  EXPECT_GE(ilp.objective, 0);
  EXPECT_TRUE(ilp.optimal);
  EXPECT_NEAR(dp.objective, ilp.objective, 1e-12);
}

// The report lists each chosen pattern: xla's kernels by their first roots,
// its score; the merged ones' scores add up to no more than the objective's
// pattern part (the scored greedy step may add to it).
TEST(SearchingPlanners, ReportEachChosenPatternWithItsScore) {
  Graph g = canonical_graph(R"(graph softmax(x: f32[64, 256]) {
  y = softmax(x, axis=-1)
  return y
})");
  for (PlannerKind kind : {PlannerKind::Stitch, PlannerKind::Ilp}) {
    PlanSearchReport r;
    const FusionPlan p = plan(g, kind, {}, &r);
    ASSERT_EQ(r.chosen.size(), 1u);
    EXPECT_TRUE(r.chosen[0].merged);
    EXPECT_GT(r.chosen[0].score_seconds, 0);
    EXPECT_EQ(r.chosen[0].kernels.size(), plan(g, PlannerKind::Xla).groups.size());
    EXPECT_EQ(r.patterns, 1);
    EXPECT_NEAR(r.objective, r.chosen[0].score_seconds, 1e-12);
    EXPECT_EQ(p.groups.size(), 1u);
  }
}

TEST(RefusalCauses, SayWhetherAFusionIsIllegalOverABudgetOrUnprofitable) {
  Graph g = canonical_graph(R"(graph softmax(x: f32[8, 8]) {
  y = softmax(x, axis=-1)
  return y
})");
  auto cause_of = [&](const FusionPlan& p, const std::string& producer) {
    for (const FusionRefusal& r : p.refusals)
      if (g.value_name(g.nodes()[r.producer].output) == producer) return r.cause;
    ADD_FAILURE() << "no refusal from " << producer;
    return RefusalCause::Illegal;
  };
  const FusionPlan xla = plan(g, PlannerKind::Xla);
  EXPECT_EQ(cause_of(xla, "y_max"), RefusalCause::Illegal);       // a reduction's consumer
  EXPECT_EQ(cause_of(xla, "y_exp"), RefusalCause::Unprofitable);  // exp not duplicated
  PlanOptions capped;
  capped.max_fusions = 0;
  const FusionPlan none_allowed = plan(g, PlannerKind::Stitch, capped);
  bool budget = false;
  for (const FusionRefusal& r : none_allowed.refusals) budget |= r.cause == RefusalCause::Budget;
  EXPECT_TRUE(budget) << print_plan(g, none_allowed);
  EXPECT_EQ(refusal_cause_name(RefusalCause::Budget), "budget");
}

}  // namespace
}  // namespace stitch
