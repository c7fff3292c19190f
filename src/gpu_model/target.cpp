#include "gpu_model/target.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "stitch/error.h"

namespace stitch::gpu_model {

namespace {

// Both are GH100 SXM parts: the schedule stage's sm_90 device (132 SMs,
// 1980 MHz, 50 MB L2, compute capability 9.0's limits) with the part's DRAM.
GpuTarget hopper_sxm(std::string name, std::string product, double dram_bytes_per_s) {
  GpuTarget t;
  t.name = std::move(name);
  t.device = schedule::sm90_target();
  t.device.product = std::move(product);
  t.device.memory_bytes_per_second = dram_bytes_per_s;
  // Not published; microbenchmarks put Hopper's L2 bandwidth at about 2.5x
  // the H100's DRAM (docs/gpu-model.md, Targets). Used only for traffic that
  // hits L2.
  t.l2_bytes_per_s = 2.5 * 3.35e12;
  // Of the order microbenchmarks report for Hopper; the fitted latency_scale scales it.
  t.dram_latency_s = 600e-9;
  // An L2 hit's round trip, about half a DRAM one on Hopper (same sources); scaled alike.
  t.l2_latency_s = 300e-9;
  return t;
}

}  // namespace

std::optional<GpuTarget> target_named(const std::string& name) {
  // H100 SXM5: HBM3 at 3.35 TB/s (H100 datasheet); H200 SXM: HBM3e at 4.8 TB/s (H200 datasheet).
  if (name == "h100") return hopper_sxm("h100", "H100-SXM5-80GB", 3.35e12);
  if (name == "h200") return hopper_sxm("h200", "H200-SXM-141GB", 4.8e12);
  return std::nullopt;
}

std::vector<std::string> target_names() { return {"h100", "h200"}; }

GpuTarget target_or_error(const std::string& name, const std::string& option) {
  if (std::optional<GpuTarget> t = target_named(name)) return *t;
  throw UserError(fmt::format("{} {}: unknown target (known: {})", option, name, fmt::join(target_names(), ", ")));
}

FittedConstants fitted_constants(const GpuTarget&) {
  // Fitted on run a of the H200 results only (bench/results/gpu-2026-11-26-h200-a-stitch.json,
  // 114 points; docs/gpu-model.md, Fitting): the smallest mean absolute error
  // of the predicted fraction of copy over a grid of the four. The round
  // trips come out near the unloaded latencies (latency_scale 1.10), and the
  // terms combine between a sum and a max (overlap_power 1.5): a kernel near
  // two bounds pays for both in part. The H100 shares them until a run on one
  // says otherwise.
  FittedConstants k;
  k.dram_efficiency = 0.50;
  k.launch_s = 6.0e-6;
  k.latency_scale = 1.10;
  k.overlap_power = 1.5;
  return k;
}

}  // namespace stitch::gpu_model
