// Contested fusion decisions settled by measurement (docs/tuning.md, Fusion
// decisions; FusionStitching 2019 scores complex patterns by running them):
// a kernel of a FusionStitching plan that merges several of xla's kernels is
// timed against those kernels run apart, and split back into them when apart
// is faster. Decisions are cached on disk beside the schedule choices.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "fusion/fusion_plan.h"
#include "runtime/cpu/kernel_cache.h"
#include "schedule/select.h"
#include "tune/schedule_tuner.h"

namespace stitch::tune {

struct FusionTuneStats {
  int contested = 0;  // kernels that merge several of xla's kernels
  int hits = 0;       // answered from the cache
  int measured = 0;
  int stale = 0;
  int corrupt = 0;
  int untunable = 0;  // symbolic shapes, unmeasurable, or no valid split
  int split = 0;      // kernels split back into xla's
};

class FusionTuner {
 public:
  explicit FusionTuner(runtime::cpu::KernelCache& kernels, TuneOptions options = {});

  // `plan` of `g` with every contested kernel that runs slower than its xla
  // kernels apart replaced by them; the edges between them are refused with
  // the measured times as the reason. Other plans come back as they are.
  FusionPlan refine(const Graph& g, const FusionPlan& plan, const schedule::RowScheduleTarget& target);

  const FusionTuneStats& stats() const { return stats_; }
  const std::string& report() const { return report_; }

 private:
  struct Contest;
  // The plan's contested kernels to measure; those whose choice the cache
  // holds go straight into `decided` (group -> split).
  std::vector<Contest> contests_of(const Graph& g, const FusionPlan& plan, const FusionPlan& xla,
                                   const schedule::RowScheduleTarget& target, std::map<int, bool>& decided);
  // Every contested kernel and its parts timed in one translation unit; the
  // choices into `decided`, the times (fused, apart) into `times`, the cache.
  void measure_contests(const std::vector<Contest>& contests, const schedule::RowScheduleTarget& target,
                        std::map<int, bool>& decided, std::map<int, std::pair<double, double>>& times);
  // `plan` with the kernels `decided` splits replaced by their xla kernels,
  // where the result is a valid plan.
  FusionPlan split_kernels(const Graph& g, const FusionPlan& plan, const FusionPlan& xla,
                           const std::map<int, bool>& decided, const std::map<int, std::pair<double, double>>& times);

  runtime::cpu::KernelCache& kernels_;
  TuneOptions options_;
  std::filesystem::path directory_;
  FusionTuneStats stats_;
  std::string report_;
};

}  // namespace stitch::tune
