#include "fusion/set_packing.h"

#include <Cbc_C_Interface.h>
#include <Clp_C_Interface.h>
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

// The integer program's matrix, column by column (one column a candidate).
struct PackingMatrix {
  std::vector<CoinBigIndex> column_start{0};
  std::vector<int> index;
  std::vector<double> ones, lower, upper, objective, row_lower, row_upper;
};

PackingMatrix packing_matrix(const SetPackingProblem& problem, const std::vector<std::vector<int>>& members) {
  // The whole matrix in one call, column by column: CBC's row-at-a-time
  // calls took longer than the solve (1.9 s against 0.8 s for 90,000
  // candidates of the 10,004-node residual chain). One clique row per element
  // (§4.1's overlap constraint): far fewer and tighter rows than one per
  // conflicting pair; an element in one candidate only is bounded by x <= 1
  // already. Then the forbidden sets.
  PackingMatrix m;
  const int n = static_cast<int>(problem.candidates.size());
  std::vector<std::vector<int>> rows_of(static_cast<size_t>(n));
  for (const std::vector<int>& containing : members) {
    if (containing.size() < 2) continue;
    for (int c : containing) rows_of[static_cast<size_t>(c)].push_back(static_cast<int>(m.row_upper.size()));
    m.row_upper.push_back(1);
  }
  for (const std::vector<int>& set : problem.at_most_one_less) {
    for (int c : set) rows_of[static_cast<size_t>(c)].push_back(static_cast<int>(m.row_upper.size()));
    m.row_upper.push_back(static_cast<double>(set.size()) - 1);
  }
  for (int c = 0; c < n; ++c) {
    m.index.insert(m.index.end(), rows_of[static_cast<size_t>(c)].begin(), rows_of[static_cast<size_t>(c)].end());
    m.column_start.push_back(static_cast<CoinBigIndex>(m.index.size()));
    m.objective.push_back(problem.candidates[static_cast<size_t>(c)].score);
  }
  m.ones.assign(m.index.size(), 1.0);
  m.lower.assign(static_cast<size_t>(n), 0.0);
  m.upper.assign(static_cast<size_t>(n), 1.0);
  m.row_lower.assign(m.row_upper.size(), -std::numeric_limits<double>::max());
  return m;
}

// The LP relaxation's optimal vertex (Clp's simplex), or nothing where Clp
// proved none in the time given.
std::vector<double> solve_relaxation(const SetPackingProblem& problem, const std::vector<std::vector<int>>& members) {
  const PackingMatrix m = packing_matrix(problem, members);
  const int n = static_cast<int>(problem.candidates.size());
  std::unique_ptr<Clp_Simplex, decltype(&Clp_deleteModel)> model(Clp_newModel(), &Clp_deleteModel);
  Clp_setLogLevel(model.get(), 0);
  Clp_setMaximumSeconds(model.get(), problem.time_limit_seconds);
  Clp_loadProblem(model.get(), n, static_cast<int>(m.row_upper.size()), m.column_start.data(), m.index.data(),
                  m.ones.data(), m.lower.data(), m.upper.data(), m.objective.data(), m.row_lower.data(),
                  m.row_upper.data());
  Clp_setObjSense(model.get(), -1);  // maximise
  Clp_initialSolve(model.get());
  if (!Clp_isProvenOptimal(model.get())) return {};
  const double* x = Clp_getColSolution(model.get());
  return std::vector<double>(x, x + n);
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
  const PackingMatrix m = packing_matrix(problem, members);
  const int n = static_cast<int>(problem.candidates.size());
  Cbc_loadProblem(model.get(), n, static_cast<int>(m.row_upper.size()), m.column_start.data(), m.index.data(),
                  m.ones.data(), m.lower.data(), m.upper.data(), m.objective.data(), m.row_lower.data(),
                  m.row_upper.data());
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

// Components too large to search share LP relaxations of about this many
// candidates: a CBC model costs about a millisecond to set up whatever its
// size, and the 100,000-node model graphs have thousands of components of 17
// to 100 candidates, nearly all with integral relaxations (docs/fusion.md,
// At model scale). Clp's simplex grows faster than the size: on the 100,000-
// node model graph of seed 3, batches of 4,096 took 0.70 s, of 1,024 0.17 s,
// of 256 0.20 s.
constexpr size_t kCandidatesPerModel = 1024;
// How far from 0 or 1 an LP value may be and still count as integral.
constexpr double kIntegral = 1e-9;

// The candidates in `batch` (indices into `problem`) as a problem of their
// own: candidates and elements renumbered densely, with the forbidden sets
// that lie among them (`sets_of` lists each candidate's forbidden sets).
SetPackingProblem subproblem(const SetPackingProblem& problem, const std::vector<int>& batch,
                             const std::vector<std::vector<int>>& sets_of, std::vector<int>& local,
                             std::vector<int>& element_id) {
  SetPackingProblem part;
  for (int c : batch) local[c] = static_cast<int>(part.candidates.size()), part.candidates.emplace_back();
  for (size_t i = 0; i < batch.size(); ++i) {
    const SetPackingProblem::Candidate& from = problem.candidates[batch[i]];
    SetPackingProblem::Candidate& to = part.candidates[i];
    to.score = from.score;
    for (int e : from.elements) {
      if (element_id[e] < 0) element_id[e] = part.num_elements++;
      to.elements.push_back(element_id[e]);
    }
    // Each set once: where its first candidate is.
    for (int set : sets_of[batch[i]]) {
      if (problem.at_most_one_less[set].front() != batch[i]) continue;
      std::vector<int> renamed;
      for (int c : problem.at_most_one_less[set]) renamed.push_back(local[c]);
      part.at_most_one_less.push_back(std::move(renamed));
    }
  }
  for (int c : batch) {
    for (int e : problem.candidates[c].elements) element_id[e] = -1;
    local[c] = -1;
  }
  return part;
}

}  // namespace

SetPackingResult solve_set_packing(const SetPackingProblem& problem, SetPackingMemo* memo) {
  const std::vector<std::vector<int>> members = candidates_by_element(problem);
  check_forbidden_sets(problem);
  const auto start = std::chrono::steady_clock::now();
  SetPackingResult result;
  result.optimal = true;
  result.status = "optimal";
  std::vector<std::vector<int>> sets_of(problem.candidates.size());
  for (int set = 0; set < static_cast<int>(problem.at_most_one_less.size()); ++set)
    for (int c : problem.at_most_one_less[set]) sets_of[c].push_back(set);
  const std::vector<std::vector<int>> parts = components(problem, members);
  // A component's key: its candidates, then the forbidden sets among them.
  auto key_of = [&](const std::vector<int>& component) {
    std::vector<int> key = component;
    key.push_back(-1);
    for (int c : component)
      for (int set : sets_of[c])
        if (problem.at_most_one_less[set].front() == c) key.push_back(set);
    return key;
  };
  auto remember = [&](std::vector<int> key, std::vector<int> chosen) {
    if (memo) memo->chosen_by_component.insert_or_assign(std::move(key), std::move(chosen));
  };
  std::vector<int> local(problem.candidates.size(), -1), element_id(static_cast<size_t>(problem.num_elements), -1);
  std::vector<int> batch, batch_parts;
  std::vector<std::vector<int>> keys(parts.size());
  // The small components searched; the others gathered into batches for
  // solve_batch, each under what is left of the time limit.
  auto left = [&] {
    return std::max(0.0, problem.time_limit_seconds -
                             std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  };
  auto take = [&](int p, std::vector<int> chosen) {
    result.chosen.insert(result.chosen.end(), chosen.begin(), chosen.end());
    remember(std::move(keys[p]), std::move(chosen));
  };
  // One component alone in its own CBC model.
  auto solve_alone = [&](int p) {
    SetPackingProblem part = subproblem(problem, parts[p], sets_of, local, element_id);
    part.time_limit_seconds = left();
    const SetPackingResult solved = solve_with_cbc(part, candidates_by_element(part));
    std::vector<int> chosen;
    for (int c : solved.chosen) chosen.push_back(parts[p][c]);
    if (solved.optimal) return take(p, std::move(chosen));
    result.chosen.insert(result.chosen.end(), chosen.begin(), chosen.end());
    result.optimal = false;
    result.status = solved.status;
  };
  // A batch's LP relaxation at once: the components its optimal vertex
  // gives integral values are solved (the LP bounds the integer program,
  // and the components are independent). CBC takes the others one by one:
  // in one model their branchings would multiply.
  auto solve_batch = [&] {
    if (batch.empty()) return;
    std::sort(batch.begin(), batch.end());
    SetPackingProblem part = subproblem(problem, batch, sets_of, local, element_id);
    part.time_limit_seconds = left();
    const std::vector<double> x = solve_relaxation(part, candidates_by_element(part));
    auto value = [&](int c) { return x[std::lower_bound(batch.begin(), batch.end(), c) - batch.begin()]; };
    for (int p : batch_parts) {
      const bool integral = !x.empty() && std::all_of(parts[p].begin(), parts[p].end(), [&](int c) {
        return std::abs(value(c)) < kIntegral || std::abs(value(c) - 1) < kIntegral;
      });
      if (!integral) {
        solve_alone(p);
        continue;
      }
      std::vector<int> chosen;
      for (int c : parts[p])
        if (value(c) > 0.5) chosen.push_back(c);
      take(p, std::move(chosen));
    }
    batch.clear();
    batch_parts.clear();
  };
  for (int p = 0; p < static_cast<int>(parts.size()); ++p) {
    const std::vector<int>& component = parts[p];
    if (memo) {
      keys[p] = key_of(component);
      if (auto found = memo->chosen_by_component.find(keys[p]); found != memo->chosen_by_component.end()) {
        result.chosen.insert(result.chosen.end(), found->second.begin(), found->second.end());
        continue;
      }
    }
    if (component.size() <= kSearchAtMost) {
      take(p, search_component(problem, members, component));
      continue;
    }
    if (!batch.empty() && batch.size() + component.size() > kCandidatesPerModel) solve_batch();
    batch.insert(batch.end(), component.begin(), component.end());
    batch_parts.push_back(p);
  }
  solve_batch();
  std::sort(result.chosen.begin(), result.chosen.end());
  for (int c : result.chosen) result.objective += problem.candidates[c].score;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace stitch
