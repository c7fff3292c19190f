// The GPU time model (docs/gpu-model.md, Time model): a launch's time from its
// counters, its occupancy and the target, as the largest of what could bound
// it, plus the launch's fixed cost:
//   dram     bytes to and from DRAM at the bandwidth a streaming copy sustains
//   l2       sectors requested at the L2's bandwidth
//   issue    warp instructions at the SMs' issue rates, per class and in all
//   latency  waves of CTAs, each warp waiting a DRAM round trip per batch of
//            loads it issues before using one (Little's law: too few bytes in
//            flight and DRAM idles)
#pragma once

#include <string>

#include "gpu_model/counters.h"
#include "gpu_model/target.h"
#include "schedule/latency.h"

namespace stitch::gpu_model {

// Four schedulers per SM each issue one warp instruction a clock.
inline constexpr double kIssuePerSmClock = 4;

// The terms before the fitted constants: DRAM bytes at the peak bandwidth,
// and the DRAM round trips at the target's unloaded latency. A prediction is
// finish(terms, constants), so a fit re-prices recorded terms without
// interpreting the kernels again.
struct Terms {
  double dram_at_peak_s = 0;
  double l2_s = 0;
  double issue_s = 0;
  double latency_unscaled_s = 0;
};

struct Prediction {
  double seconds = 0;
  std::string bound;  // the largest term of the body: "dram", "l2", "issue" or "latency"
  double dram_s = 0, l2_s = 0, issue_s = 0, latency_s = 0, launch_s = 0;
  double dram_read_bytes = 0, dram_write_bytes = 0;
  double waves = 0;                  // CTAs over what the target holds at once
  double batches_per_warp = 0;       // round trips to DRAM a warp waits for
  double bytes_in_flight_per_warp = 0;
  std::string issue_class;           // the class whose rate set issue_s ("all": the schedulers)
  Terms terms;
};

// The launch's time from its terms: launch_s plus the largest of the DRAM
// term over dram_efficiency, the L2 and issue terms and the latency term
// times latency_scale; `bound` names the largest.
Prediction finish(const Terms& terms, const FittedConstants& constants);

Prediction predict(const KernelCounters& counters, const schedule::Occupancy& occupancy, const GpuTarget& target,
                   const FittedConstants& constants);

// The model's time for a copy of `footprint_bytes` (half read, half written)
// on the target: 16-byte accesses, 256 threads per CTA, one element a thread.
double copy_seconds(const GpuTarget& target, const FittedConstants& constants, double footprint_bytes);

}  // namespace stitch::gpu_model
