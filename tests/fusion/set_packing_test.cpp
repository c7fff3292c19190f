// Exact weighted set packing (the `ilp` planner's integer program, FusionStitching
// 2019 §4.1): hand cases, then CBC against every subset of small random instances.
#include "fusion/set_packing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>

#include "stitch/error.h"

namespace stitch {
namespace {

// Pairwise disjoint, and no at_most_one_less set chosen whole.
bool is_packing(const SetPackingProblem& problem, const std::vector<int>& chosen) {
  std::vector<bool> taken(problem.candidates.size(), false);
  std::vector<bool> covered(problem.num_elements, false);
  for (int c : chosen) {
    taken[c] = true;
    for (int e : problem.candidates[c].elements) {
      if (covered[e]) return false;
      covered[e] = true;
    }
  }
  return std::none_of(problem.at_most_one_less.begin(), problem.at_most_one_less.end(),
                      [&](const std::vector<int>& set) {
                        return std::all_of(set.begin(), set.end(), [&](int c) { return taken[c]; });
                      });
}

double total_score(const SetPackingProblem& problem, const std::vector<int>& chosen) {
  double total = 0;
  for (int c : chosen) total += problem.candidates[c].score;
  return total;
}

// The oracle: the best objective over all 2^n subsets of candidates.
double brute_force_best(const SetPackingProblem& problem) {
  const int n = static_cast<int>(problem.candidates.size());
  double best = 0;  // the empty packing
  for (uint32_t mask = 1; mask < (1u << n); ++mask) {
    std::vector<int> chosen;
    for (int c = 0; c < n; ++c) {
      if (mask >> c & 1) chosen.push_back(c);
    }
    if (is_packing(problem, chosen)) best = std::max(best, total_score(problem, chosen));
  }
  return best;
}

SetPackingProblem make_problem(int num_elements, std::vector<SetPackingProblem::Candidate> candidates,
                               std::vector<std::vector<int>> at_most_one_less = {}) {
  SetPackingProblem problem;
  problem.num_elements = num_elements;
  problem.candidates = std::move(candidates);
  problem.at_most_one_less = std::move(at_most_one_less);
  return problem;
}

// `count` distinct values drawn from [lo, lo + range).
std::vector<int> distinct_sample(std::mt19937& rng, int lo, int range, int count) {
  std::vector<int> values(range);
  std::iota(values.begin(), values.end(), lo);
  std::shuffle(values.begin(), values.end(), rng);
  values.resize(count);
  return values;
}

TEST(SetPacking, DisjointCandidatesAreAllChosen) {
  SetPackingProblem problem = make_problem(5, {{{0, 1}, 1.0}, {{2}, 2.0}, {{3, 4}, 3.0}});
  SetPackingResult result = solve_set_packing(problem);
  EXPECT_EQ(result.chosen, (std::vector<int>{0, 1, 2}));
  EXPECT_DOUBLE_EQ(result.objective, 6.0);
  EXPECT_TRUE(result.optimal);
  EXPECT_EQ(result.status, "optimal");
}

TEST(SetPacking, ConflictPicksTheLarger) {
  SetPackingProblem problem = make_problem(3, {{{0, 1}, 2.0}, {{1, 2}, 3.0}});
  EXPECT_EQ(solve_set_packing(problem).chosen, (std::vector<int>{1}));
}

TEST(SetPacking, TwoSmallBeatOneLargeThatCoversThem) {
  // Greedy by score would take {0, 1, 2} alone.
  SetPackingProblem problem = make_problem(3, {{{0, 1, 2}, 5.0}, {{0}, 3.0}, {{2}, 3.0}});
  SetPackingResult result = solve_set_packing(problem);
  EXPECT_EQ(result.chosen, (std::vector<int>{1, 2}));
  EXPECT_DOUBLE_EQ(result.objective, 6.0);
}

TEST(SetPacking, AtMostOneLessForbidsTheBestPair) {
  // Unconstrained the best is {0, 1} (9); with it forbidden, {0, 2} (8).
  SetPackingProblem problem = make_problem(2, {{{0}, 5.0}, {{1}, 4.0}, {{1}, 3.0}});
  EXPECT_EQ(solve_set_packing(problem).chosen, (std::vector<int>{0, 1}));
  problem.at_most_one_less = {{1, 0}};
  SetPackingResult result = solve_set_packing(problem);
  EXPECT_EQ(result.chosen, (std::vector<int>{0, 2}));
  EXPECT_DOUBLE_EQ(result.objective, 8.0);
}

TEST(SetPacking, NoCandidatesIsTheEmptyPacking) {
  SetPackingResult result = solve_set_packing(make_problem(4, {}));
  EXPECT_TRUE(result.chosen.empty());
  EXPECT_EQ(result.objective, 0.0);
  EXPECT_TRUE(result.optimal);
}

TEST(SetPacking, MalformedProblemsAreInternalErrors) {
  EXPECT_THROW(solve_set_packing(make_problem(2, {{{2}, 1.0}})), InternalError);
  EXPECT_THROW(solve_set_packing(make_problem(2, {{{0, 0}, 1.0}})), InternalError);
  EXPECT_THROW(solve_set_packing(make_problem(2, {{{0}, std::nan("")}})), InternalError);
  EXPECT_THROW(solve_set_packing(make_problem(2, {{{0}, 1.0}}, {{1}})), InternalError);
  EXPECT_THROW(solve_set_packing(make_problem(2, {{{0}, 1.0}}, {std::vector<int>{}})), InternalError);
}

TEST(SetPacking, MatchesBruteForceOnRandomInstances) {
  for (uint32_t seed = 0; seed < 200; ++seed) {
    std::mt19937 rng(seed);
    auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    SetPackingProblem problem;
    problem.num_elements = uniform(1, 10);
    const int num_candidates = uniform(1, 12);
    for (int c = 0; c < num_candidates; ++c) {
      const int size = uniform(1, std::min(4, problem.num_elements));
      // Some negative scores: such a candidate is never worth choosing.
      const double score = std::uniform_real_distribution<double>(-1.0, 10.0)(rng);
      problem.candidates.push_back({distinct_sample(rng, 0, problem.num_elements, size), score});
    }
    for (int k = uniform(0, 3); k > 0; --k) {
      problem.at_most_one_less.push_back(
          distinct_sample(rng, 0, num_candidates, uniform(1, std::min(3, num_candidates))));
    }
    SCOPED_TRACE(testing::Message() << "seed " << seed);
    SetPackingResult result = solve_set_packing(problem);
    EXPECT_TRUE(result.optimal);
    EXPECT_TRUE(std::is_sorted(result.chosen.begin(), result.chosen.end()));
    EXPECT_TRUE(is_packing(problem, result.chosen));
    EXPECT_NEAR(result.objective, total_score(problem, result.chosen), 1e-9);
    EXPECT_NEAR(result.objective, brute_force_best(problem), 1e-9);
  }
}

// The best objective of candidates `first` .. `first + count - 1` alone, by
// every subset as bit masks (fast enough for 20 candidates).
double brute_force_range(const SetPackingProblem& problem, int first, int count) {
  std::vector<uint32_t> conflicts(count, 0);
  for (int i = 0; i < count; ++i)
    for (int j = 0; j < count; ++j) {
      const auto& a = problem.candidates[first + i].elements;
      const auto& b = problem.candidates[first + j].elements;
      if (i != j && std::find_first_of(a.begin(), a.end(), b.begin(), b.end()) != a.end()) conflicts[i] |= 1u << j;
    }
  std::vector<uint32_t> forbidden;
  for (const std::vector<int>& set : problem.at_most_one_less) {
    if (set.front() < first || set.front() >= first + count) continue;
    uint32_t mask = 0;
    for (int c : set) mask |= 1u << (c - first);
    forbidden.push_back(mask);
  }
  double best = 0;
  for (uint32_t mask = 1; mask < (1u << count); ++mask) {
    bool ok = std::none_of(forbidden.begin(), forbidden.end(), [&](uint32_t f) { return (mask & f) == f; });
    double total = 0;
    for (int i = 0; ok && i < count; ++i)
      if (mask >> i & 1) ok = (conflicts[i] & mask) == 0, total += problem.candidates[first + i].score;
    if (ok) best = std::max(best, total);
  }
  return best;
}

// `components` independent groups of 17 to 20 candidates (too many for the
// exhaustive search), each a chain over its own elements plus random ones,
// with a few forbidden sets inside each.
SetPackingProblem chained_components(uint32_t seed, int components, std::vector<int>* firsts) {
  std::mt19937 rng(seed);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  SetPackingProblem problem;
  for (int k = 0; k < components; ++k) {
    const int first = static_cast<int>(problem.candidates.size()), count = uniform(17, 20);
    const int base = problem.num_elements, range = count + 1;
    firsts->push_back(first);
    for (int i = 0; i < count; ++i) {
      std::vector<int> elements{base + i, base + i + 1};
      for (int e : distinct_sample(rng, base, range, uniform(0, 2)))
        if (std::find(elements.begin(), elements.end(), e) == elements.end()) elements.push_back(e);
      problem.candidates.push_back({elements, std::uniform_real_distribution<double>(-1.0, 10.0)(rng)});
    }
    for (int f = uniform(0, 2); f > 0; --f) problem.at_most_one_less.push_back(distinct_sample(rng, first, count, 2));
    problem.num_elements += range;
  }
  firsts->push_back(static_cast<int>(problem.candidates.size()));
  return problem;
}

TEST(SetPacking, LargeComponentsSolvedTogetherMatchBruteForce) {
  // 250 components of 17 to 20 candidates: several batches' worth.
  std::vector<int> firsts;
  const SetPackingProblem problem = chained_components(7, 250, &firsts);
  ASSERT_GT(problem.candidates.size(), 4096u);
  const SetPackingResult result = solve_set_packing(problem);
  EXPECT_TRUE(result.optimal) << result.status;
  EXPECT_TRUE(is_packing(problem, result.chosen));
  double best = 0;
  for (size_t k = 0; k + 1 < firsts.size(); ++k) best += brute_force_range(problem, firsts[k], firsts[k + 1] - firsts[k]);
  EXPECT_NEAR(result.objective, best, 1e-6);
}

TEST(SetPacking, AMemoSolvesOnlyWhatNewForbiddenSetsTouch) {
  std::vector<int> firsts;
  SetPackingProblem problem = chained_components(11, 40, &firsts);
  SetPackingMemo memo;
  const SetPackingResult first = solve_set_packing(problem, &memo);
  EXPECT_NEAR(first.objective, solve_set_packing(problem).objective, 1e-6);
  // Forbid two of what was chosen in component 3 together, as a cycle cut would.
  std::vector<int> in_three;
  for (int c : first.chosen)
    if (c >= firsts[3] && c < firsts[4]) in_three.push_back(c);
  ASSERT_GE(in_three.size(), 2u);
  problem.at_most_one_less.push_back({in_three[1], in_three[0]});
  const SetPackingResult again = solve_set_packing(problem, &memo);
  EXPECT_TRUE(is_packing(problem, again.chosen));
  EXPECT_NEAR(again.objective, solve_set_packing(problem).objective, 1e-6);
  EXPECT_LT(again.objective, first.objective + 1e-9);
  // Every other component kept its packing.
  for (int c : first.chosen) {
    if (c >= firsts[3] && c < firsts[4]) continue;
    EXPECT_TRUE(std::binary_search(again.chosen.begin(), again.chosen.end(), c)) << c;
  }
}

// 2000 candidates of 1 to 4 nearby elements, as fusion patterns over
// neighbouring ops are; how long it takes is in the test's time, not asserted.
SetPackingProblem large_instance() {
  std::mt19937 rng(2019);
  SetPackingProblem problem;
  problem.num_elements = 3000;
  for (int c = 0; c < 2000; ++c) {
    const int base = std::uniform_int_distribution<int>(0, problem.num_elements - 8)(rng);
    const int size = std::uniform_int_distribution<int>(1, 4)(rng);
    const double score = std::uniform_real_distribution<double>(0.1, 10.0)(rng);
    problem.candidates.push_back({distinct_sample(rng, base, 8, size), score});
  }
  return problem;
}

TEST(SetPacking, SolvesTwoThousandCandidates) {
  SetPackingProblem problem = large_instance();
  SetPackingResult result = solve_set_packing(problem);
  EXPECT_TRUE(result.optimal) << result.status;
  EXPECT_TRUE(is_packing(problem, result.chosen));
  EXPECT_GT(result.objective, 0.0);
  RecordProperty("solve_seconds", std::to_string(result.seconds));
}

TEST(SetPacking, TimeLimitStillReturnsAPacking) {
  // Optimal, best found or empty depending on the machine; a packing in any case.
  SetPackingProblem problem = large_instance();
  problem.time_limit_seconds = 0.01;
  SetPackingResult result = solve_set_packing(problem);
  EXPECT_TRUE(is_packing(problem, result.chosen)) << result.status;
  EXPECT_NEAR(result.objective, total_score(problem, result.chosen), 1e-9);
}

}  // namespace
}  // namespace stitch
