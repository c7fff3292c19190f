// The `stitch` planner: FusionStitching 2021's approximate dynamic
// programming with beam search (docs/fusion.md, The `stitch` planner). xla's
// plan and the small dots first (StitchMerges); then the pattern space
// (patterns.h: per kernel, in post-order, the top-k patterns it heads); then
// a beam of kBeamWidth partial plans walks the kernels in topological order,
// each plan either leaving the kernel alone or taking one of its patterns
// whose other kernels no earlier choice took; the best plan's patterns are
// merged, then tile siblings, absorbed loops and packing as in every
// FusionStitching planner. Each kernel costs the beam width times its
// patterns, so planning is linear in the graph.
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>

#include "fusion/patterns.h"
#include "fusion/planner.h"

namespace stitch {
namespace {

struct Chosen {
  Pattern pattern;
  std::shared_ptr<const Chosen> earlier;
};

struct BeamPlan {
  double score = 0;
  std::vector<int> taken_ahead;  // kernels a chosen pattern holds, not yet walked past; ascending
  std::shared_ptr<const Chosen> chosen;
};

}  // namespace

std::vector<Pattern> beam_search(const GroupDag& dag, const PatternSpace& space, int width) {
  std::vector<BeamPlan> beam(1);
  for (int v : dag.order()) {
    // The best plan for each set of kernels taken ahead: plans that agree on
    // what lies ahead compete only on their scores (the DP's merge).
    std::map<std::vector<int>, BeamPlan> next;
    auto offer = [&](BeamPlan plan) {
      auto [it, inserted] = next.try_emplace(plan.taken_ahead, plan);
      if (!inserted && plan.score > it->second.score) it->second = std::move(plan);
    };
    for (const BeamPlan& plan : beam) {
      auto taken = std::lower_bound(plan.taken_ahead.begin(), plan.taken_ahead.end(), v);
      if (taken != plan.taken_ahead.end() && *taken == v) {
        BeamPlan walked = plan;
        walked.taken_ahead.erase(walked.taken_ahead.begin() + (taken - plan.taken_ahead.begin()));
        offer(std::move(walked));
        continue;
      }
      offer(plan);
      for (const Pattern& p : space.headed_by(v)) {
        bool free = true;
        for (size_t i = 1; i < p.members.size() && free; ++i)
          free = !std::binary_search(plan.taken_ahead.begin(), plan.taken_ahead.end(), p.members[i]);
        if (!free) continue;
        BeamPlan extended;
        extended.score = plan.score + p.score;
        extended.taken_ahead = plan.taken_ahead;
        extended.taken_ahead.insert(extended.taken_ahead.end(), p.members.begin() + 1, p.members.end());
        std::sort(extended.taken_ahead.begin(), extended.taken_ahead.end());
        extended.chosen = std::make_shared<const Chosen>(Chosen{p, plan.chosen});
        offer(std::move(extended));
      }
    }
    beam.clear();
    for (auto& [ahead, plan] : next) beam.push_back(std::move(plan));
    std::stable_sort(beam.begin(), beam.end(), [](const BeamPlan& a, const BeamPlan& b) { return a.score > b.score; });
    if (static_cast<int>(beam.size()) > width) beam.resize(width);
  }
  std::vector<Pattern> out;
  for (const Chosen* c = beam.front().chosen.get(); c != nullptr; c = c->earlier.get()) out.push_back(c->pattern);
  std::reverse(out.begin(), out.end());
  // Release the chains link by link: destroying a chain of thousands of
  // patterns through its owners' destructors would recurse that deep.
  for (BeamPlan& plan : beam) {
    std::shared_ptr<const Chosen> link = std::move(plan.chosen);
    while (link && link.use_count() == 1) link = link->earlier;
  }
  return out;
}

FusionPlan plan_stitch(const Graph& g, int max_fusions, int64_t row_hold_bytes, PlanSearchReport* report, const TargetModel& target) {
  StitchMerges merges = StitchMerges::from_xla(g, max_fusions, row_hold_bytes);
  const DeltaEvaluator evaluator(target);
  const double before = merges.plan_seconds(evaluator);
  const PatternSpace space(merges, evaluator);
  const std::vector<Pattern> chosen = beam_search(merges.dag(), space, kBeamWidth);
  PlanSearchReport found;
  found.evaluations = space.evaluations();
  FusionPlan plan = finish_search(merges, space, chosen, evaluator, before, "stitch", &found);
  if (report) *report = found;
  return plan;
}

}  // namespace stitch
