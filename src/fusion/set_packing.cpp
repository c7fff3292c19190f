#include "fusion/set_packing.h"

#include <Cbc_C_Interface.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>
#include <numeric>
#include <vector>

#include "stitch/error.h"

namespace stitch {
namespace {

using CbcModelPtr = std::unique_ptr<Cbc_Model, decltype(&Cbc_deleteModel)>;

// For each element, the candidates that contain it; checks the element ids and scores.
std::vector<std::vector<int>> candidates_by_element(const SetPackingProblem& problem) {
  std::vector<std::vector<int>> members(problem.num_elements);
  for (int c = 0; c < static_cast<int>(problem.candidates.size()); ++c) {
    STITCH_ASSERT(std::isfinite(problem.candidates[c].score),
                  fmt::format("set packing: candidate {} has a score that is not finite", c));
    for (int e : problem.candidates[c].elements) {
      STITCH_ASSERT(e >= 0 && e < problem.num_elements,
                    fmt::format("set packing: candidate {} has element {} outside [0, {})", c, e,
                                problem.num_elements));
      STITCH_ASSERT(members[e].empty() || members[e].back() != c,
                    fmt::format("set packing: candidate {} lists element {} twice", c, e));
      members[e].push_back(c);
    }
  }
  return members;
}

void check_forbidden_sets(const SetPackingProblem& problem) {
  const int n = static_cast<int>(problem.candidates.size());
  for (std::vector<int> set : problem.at_most_one_less) {
    STITCH_ASSERT(!set.empty(), "set packing: an empty at_most_one_less set");
    std::sort(set.begin(), set.end());
    STITCH_ASSERT(set.front() >= 0 && set.back() < n,
                  fmt::format("set packing: at_most_one_less names a candidate outside [0, {})", n));
    STITCH_ASSERT(std::adjacent_find(set.begin(), set.end()) == set.end(),
                  "set packing: at_most_one_less names a candidate twice");
  }
}

// Candidates that share an element or a forbidden set, transitively: the
// problem is a sum of independent ones, one per component. Ascending within
// each, components by their first candidate.
std::vector<std::vector<int>> components(const SetPackingProblem& problem,
                                         const std::vector<std::vector<int>>& members) {
  std::vector<int> parent(problem.candidates.size());
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&](int c) {
    while (parent[c] != c) c = parent[c] = parent[parent[c]];
    return c;
  };
  auto join = [&](const std::vector<int>& together) {
    for (size_t i = 1; i < together.size(); ++i) {
      const int a = find(together[0]), b = find(together[i]);
      if (a != b) parent[std::max(a, b)] = std::min(a, b);
    }
  };
  for (const std::vector<int>& containing : members) join(containing);
  for (const std::vector<int>& set : problem.at_most_one_less) join(set);
  std::vector<std::vector<int>> out;
  std::vector<int> index_of(problem.candidates.size(), -1);
  for (int c = 0; c < static_cast<int>(problem.candidates.size()); ++c) {
    const int root = find(c);
    if (index_of[root] < 0) {
      index_of[root] = static_cast<int>(out.size());
      out.emplace_back();
    }
    out[index_of[root]].push_back(c);
  }
  return out;
}

// Components this small are solved by a depth-first search over their
// subsets (pruned by conflicts and by the positive scores left), exactly and
// without CBC's setup, which costs more than the search below this size.
constexpr size_t kSearchAtMost = 16;

// The best packing of one small component: its candidates' indices.
std::vector<int> search_component(const SetPackingProblem& problem, const std::vector<std::vector<int>>& members,
                                  const std::vector<int>& component) {
  const int k = static_cast<int>(component.size());
  std::vector<uint32_t> conflicts(k, 0);
  std::vector<double> score(k);
  std::vector<int> local(problem.candidates.size(), -1);
  for (int i = 0; i < k; ++i) {
    local[component[i]] = i;
    score[i] = problem.candidates[component[i]].score;
  }
  for (int i = 0; i < k; ++i) {
    for (int e : problem.candidates[component[i]].elements)
      for (int other : members[e])
        if (other != component[i]) conflicts[i] |= 1u << local[other];
  }
  std::vector<uint32_t> forbidden;
  for (const std::vector<int>& set : problem.at_most_one_less) {
    if (local[set.front()] < 0) continue;
    uint32_t mask = 0;
    for (int c : set) mask |= 1u << local[c];
    forbidden.push_back(mask);
  }
  // What the candidates from i on could add at most.
  std::vector<double> left(k + 1, 0);
  for (int i = k - 1; i >= 0; --i) left[i] = left[i + 1] + std::max(0.0, score[i]);
  double best = 0;
  uint32_t best_mask = 0;
  auto allowed = [&](uint32_t mask) {
    return std::none_of(forbidden.begin(), forbidden.end(), [&](uint32_t f) { return (mask & f) == f; });
  };
  // Choosing fewer never breaks a constraint, so a candidate that does not
  // score above zero is never needed.
  auto dfs = [&](auto&& self, int i, uint32_t mask, double total) -> void {
    if (total > best) best = total, best_mask = mask;
    if (i == k || total + left[i] <= best) return;
    const uint32_t with = mask | (1u << i);
    if (score[i] > 0 && (conflicts[i] & mask) == 0 && allowed(with)) self(self, i + 1, with, total + score[i]);
    self(self, i + 1, mask, total);
  };
  dfs(dfs, 0, 0, 0.0);
  std::vector<int> chosen;
  for (int i = 0; i < k; ++i)
    if (best_mask >> i & 1) chosen.push_back(component[i]);
  return chosen;
}

SetPackingResult solve_with_cbc(const SetPackingProblem& problem, const std::vector<std::vector<int>>& members) {
  SetPackingResult result;

  // Cbc_solve runs CbcMain1, which keeps global state unless CBC is built with
  // CBC_THREAD_SAFE (coin-or/Cbc#332, #223): one solve at a time.
  static std::mutex cbc_mutex;
  std::lock_guard<std::mutex> lock(cbc_mutex);
  const auto start = std::chrono::steady_clock::now();
  CbcModelPtr model(Cbc_newModel(), &Cbc_deleteModel);
  Cbc_setLogLevel(model.get(), 0);
  Cbc_setMaximumSeconds(model.get(), problem.time_limit_seconds);
  // Wall time, like `seconds`; CBC's default clock is CPU time.
  Cbc_setParameter(model.get(), "timeMode", "elapsed");
  // No CglPreProcess: on the residual chain it took 2.5 of the 3.0 s a solve
  // took (10,004 nodes, 90,008 candidates), and the root LP's solution was
  // integral without it; every plan measured came out the same
  // (docs/fusion.md, The `ilp` planner). Still exact: B&B proves optimality.
  Cbc_setParameter(model.get(), "preprocess", "off");
  // Nor root heuristics (the feasibility pump) or cut generators: the root
  // LP of these set packings has been integral, and they took a third of the
  // solve (0.35 -> 0.23 s on the 10,004-node chain, the same optimum, proven).
  Cbc_setParameter(model.get(), "heuristicsOnOff", "off");
  Cbc_setParameter(model.get(), "cutsOnOff", "off");
  // The whole matrix in one call, column by column: CBC's row-at-a-time
  // calls took longer than the solve (1.9 s against 0.8 s for 90,000
  // candidates of the 10,004-node residual chain). One clique row per element
  // (§4.1's overlap constraint): far fewer and tighter rows than one per
  // conflicting pair; an element in one candidate only is bounded by x <= 1
  // already. Then the forbidden sets.
  const int n = static_cast<int>(problem.candidates.size());
  std::vector<std::vector<int>> rows_of(static_cast<size_t>(n));
  std::vector<double> row_upper;
  for (const std::vector<int>& containing : members) {
    if (containing.size() < 2) continue;
    for (int c : containing) rows_of[static_cast<size_t>(c)].push_back(static_cast<int>(row_upper.size()));
    row_upper.push_back(1);
  }
  for (const std::vector<int>& set : problem.at_most_one_less) {
    for (int c : set) rows_of[static_cast<size_t>(c)].push_back(static_cast<int>(row_upper.size()));
    row_upper.push_back(static_cast<double>(set.size()) - 1);
  }
  std::vector<CoinBigIndex> column_start{0};
  std::vector<int> index;
  std::vector<double> objective, lower(static_cast<size_t>(n), 0.0), upper(static_cast<size_t>(n), 1.0);
  for (int c = 0; c < n; ++c) {
    index.insert(index.end(), rows_of[static_cast<size_t>(c)].begin(), rows_of[static_cast<size_t>(c)].end());
    column_start.push_back(static_cast<CoinBigIndex>(index.size()));
    objective.push_back(problem.candidates[static_cast<size_t>(c)].score);
  }
  const std::vector<double> ones(index.size(), 1.0);
  const std::vector<double> row_lower(row_upper.size(), -std::numeric_limits<double>::max());
  Cbc_loadProblem(model.get(), n, static_cast<int>(row_upper.size()), column_start.data(), index.data(), ones.data(),
                  lower.data(), upper.data(), objective.data(), row_lower.data(), row_upper.data());
  for (int c = 0; c < n; ++c) Cbc_setInteger(model.get(), c);
  Cbc_setObjSense(model.get(), -1);  // maximise
  Cbc_solve(model.get());
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  // The best integer solution, or null where the time limit came first. CBC
  // 2.10 reports a time limit reached in preprocessing as an infeasible
  // problem (secondary status 1), so the clock decides too: the empty packing
  // is always feasible.
  const double* solution = Cbc_bestSolution(model.get());
  if (Cbc_isProvenOptimal(model.get()) && solution != nullptr) {
    result.optimal = true;
    result.status = "optimal";
  } else if (Cbc_isSecondsLimitReached(model.get()) || result.seconds >= problem.time_limit_seconds) {
    result.status = fmt::format("time limit of {} s reached: {}", problem.time_limit_seconds,
                                solution != nullptr ? "best packing found, not proven optimal"
                                                    : "no packing found yet, so the empty one");
  } else {
    fail_internal(fmt::format("set packing: CBC found no packing (status {}, secondary status {})",
                              Cbc_status(model.get()), Cbc_secondaryStatus(model.get())),
                  __FILE__, __LINE__);
  }
  for (int c = 0; solution != nullptr && c < static_cast<int>(problem.candidates.size()); ++c) {
    if (solution[c] > 0.5) {
      result.chosen.push_back(c);
      result.objective += problem.candidates[c].score;
    }
  }
  return result;
}

}  // namespace

SetPackingResult solve_set_packing(const SetPackingProblem& problem) {
  const std::vector<std::vector<int>> members = candidates_by_element(problem);
  check_forbidden_sets(problem);
  const auto start = std::chrono::steady_clock::now();
  SetPackingResult result;
  result.optimal = true;
  result.status = "optimal";
  // Each component apart: the small ones searched, the others one CBC model
  // each, under what is left of the time limit.
  for (const std::vector<int>& component : components(problem, members)) {
    if (component.size() <= kSearchAtMost) {
      for (int c : search_component(problem, members, component)) result.chosen.push_back(c);
      continue;
    }
    SetPackingProblem part;
    part.num_elements = problem.num_elements;
    std::vector<int> local(problem.candidates.size(), -1);
    for (int c : component) {
      local[c] = static_cast<int>(part.candidates.size());
      part.candidates.push_back(problem.candidates[c]);
    }
    for (const std::vector<int>& set : problem.at_most_one_less) {
      if (local[set.front()] < 0) continue;
      std::vector<int> renamed;
      for (int c : set) renamed.push_back(local[c]);
      part.at_most_one_less.push_back(std::move(renamed));
    }
    const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    part.time_limit_seconds = std::max(0.0, problem.time_limit_seconds - spent);
    const SetPackingResult solved = solve_with_cbc(part, candidates_by_element(part));
    for (int c : solved.chosen) result.chosen.push_back(component[c]);
    if (!solved.optimal) {
      result.optimal = false;
      result.status = solved.status;
    }
  }
  std::sort(result.chosen.begin(), result.chosen.end());
  for (int c : result.chosen) result.objective += problem.candidates[c].score;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace stitch
