// Contested fusion decisions settled by measurement (docs/tuning.md, Fusion
// decisions; FusionStitching 2019 scores complex patterns by running them):
// a kernel of a FusionStitching plan that merges several of xla's kernels is
// timed against those kernels run apart, and split back into them when apart
// is faster. Decisions are cached on disk beside the schedule choices.
#pragma once

#include <filesystem>
#include <string>

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
  runtime::cpu::KernelCache& kernels_;
  TuneOptions options_;
  std::filesystem::path directory_;
  FusionTuneStats stats_;
  std::string report_;
};

}  // namespace stitch::tune
