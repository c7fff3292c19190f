// Exact weighted set packing, the integer program under the `ilp` fusion
// planner (FusionStitching 2019, §4.1): one binary variable per candidate
// fusion pattern, maximise the summed scores, no element (op) in two chosen
// candidates. Cycle elimination forbids a combination of candidates and solves
// again. Solved by COIN-OR CBC (docs/dependencies.md).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace stitch {

struct SetPackingProblem {
  struct Candidate {
    std::vector<int> elements;  // distinct ids in [0, num_elements)
    double score = 0;
  };

  int num_elements = 0;
  std::vector<Candidate> candidates;
  // Each entry is a set S of distinct candidate indices not all of which may
  // be chosen together: sum over S of x_i <= |S| - 1.
  std::vector<std::vector<int>> at_most_one_less;
  double time_limit_seconds = 60;
};

struct SetPackingResult {
  std::vector<int> chosen;  // candidate indices, ascending
  double objective = 0;     // the summed score of `chosen`
  bool optimal = false;     // false: the time limit stopped CBC first
  double seconds = 0;       // wall time of the solve
  std::string status;       // "optimal", or why not
};

// What earlier solves of one problem found, component by component: the
// `ilp` planner solves its problem again after each round of cycle cuts, and
// only the components a new forbidden set touches change. Valid while the
// candidates stay the same and forbidden sets are only appended.
struct SetPackingMemo {
  // Key: a component's candidates, ascending, then -1, then the indices of
  // the forbidden sets among them. Value: the candidates chosen there.
  std::map<std::vector<int>, std::vector<int>> chosen_by_component;
};

// The problem splits into independent components (candidates linked by a
// shared element or a forbidden set); each of at most 16 candidates is solved
// by an exhaustive pruned search. The larger ones go in batches of about
// 1,024 candidates whose LP relaxation Clp solves at once: a component whose
// part of the optimal vertex is integral is solved by it, each other one by
// its own CBC model, under what is left of the time limit. Where the time
// limit stops the LP, its components go to CBC; where it stops CBC before its
// first packing, that component gets the empty packing, and the result is not
// optimal. With a memo, components solved before (optimally) are not solved
// again. Throws InternalError where CBC fails otherwise (the empty packing is
// always feasible, so "none found" is a bug).
SetPackingResult solve_set_packing(const SetPackingProblem& problem, SetPackingMemo* memo = nullptr);

}  // namespace stitch
