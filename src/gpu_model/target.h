// The GPUs the performance model knows (docs/gpu-model.md, Targets): the
// device as the schedule stage describes it (src/schedule/target.h: SMs,
// clock, DRAM bandwidth, L2, per-SM limits, with their sources) and what the
// model adds: the L2's bandwidth, a DRAM round trip in seconds and issue
// rates per instruction class. Adding a target is a row in target.cpp.
#pragma once

#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "schedule/target.h"

namespace stitch::gpu_model {

// Issue rates per SM and clock, in warp instructions, by the class the
// interpreter's counters use (counters.h, InstructionClass): CUDA C++
// Programming Guide, "Arithmetic Instructions", compute capability 9.0.
struct IssueRates {
  double fp32 = 4;     // 128 FP32 lanes per SM
  double fp64 = 2;     // 64 FP64 lanes per SM
  double sfu = 0.5;    // 16 MUFU lanes per SM (ex2, lg2, rcp, rsqrt, sqrt, sin, cos)
  double integer = 2;  // 64 INT32 lanes per SM
  double convert = 0.5;
  double memory = 1;   // load/store units: one warp request per clock
  double shuffle = 1;
  double control = 2;
  double other = 2;
};

struct GpuTarget {
  std::string name;  // "h200": what --profile takes
  schedule::GpuTarget device;
  double l2_bytes_per_s = 0;
  double dram_latency_s = 0;  // a load's round trip to DRAM, unloaded
  double l2_latency_s = 0;    // a load's round trip to an L2 hit
  IssueRates issue;
};

// The model's fitted constants (docs/gpu-model.md, Fitting): at most six,
// fitted on run a of the committed H200 results only.
// The defaults are the unfitted starting values; fitted_constants gives the fit.
struct FittedConstants {
  double dram_efficiency = 0.85;  // the fraction of peak DRAM bandwidth the DRAM term runs at
  double launch_s = 3.0e-6;       // a launch's fixed cost on the device (back-to-back launches)
  double latency_scale = 1.0;     // scales the round trips (dram_latency_s, l2_latency_s)
  // How the terms combine: (sum of term^p)^(1/p). Infinity is the roofline's
  // max; a finite p charges a kernel near two bounds for both, as real ones are.
  double overlap_power = std::numeric_limits<double>::infinity();
};

// The known targets, by name; nullopt for another name.
std::optional<GpuTarget> target_named(const std::string& name);
// Every known target's name, for messages ("h100, h200").
std::vector<std::string> target_names();
// The target `name` given to `option` (--profile); UserError naming the known ones.
GpuTarget target_or_error(const std::string& name, const std::string& option);
// The fitted constants the model uses for `target`.
FittedConstants fitted_constants(const GpuTarget& target);

}  // namespace stitch::gpu_model
