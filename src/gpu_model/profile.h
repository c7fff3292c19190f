// One kernel launch profiled on the PTX interpreter (docs/gpu-model.md): its
// resources from ptxas, its occupancy on the target, counters from a sampled
// run, and the time model's prediction.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "gpu_model/counters.h"
#include "gpu_model/resources.h"
#include "gpu_model/target.h"
#include "gpu_model/time_model.h"
#include "ptx/sim/interpreter.h"
#include "schedule/latency.h"

namespace stitch::gpu_model {

// CTAs the interpreter runs per launch at most (sample_ctas).
inline constexpr uint64_t kDefaultCtaBudget = 192;
// Registers per thread assumed where ptxas could not say.
inline constexpr int kAssumedRegisters = 32;

struct KernelProfile {
  std::string kernel;
  std::string target;
  ptx::LaunchConfig config;
  KernelResources resources;
  int registers_used = 0;    // resources.registers, or kAssumedRegisters
  int shared_bytes = 0;      // static + dynamic, per CTA
  schedule::Occupancy occupancy;
  KernelCounters counters;
  Prediction prediction;
  double footprint_bytes = 0;  // what the copy reference moves (profile.cpp)
  double copy_s = 0;           // copy_seconds of that footprint
  double interpreted_s = 0;    // host seconds the sampled run took
};

// Runs one launch under `options` (the observer and CTA sample set): the
// caller's interpreter call, on buffers or on the simulated driver's memory.
using RunLaunch = std::function<void(const ptx::InterpreterOptions& options)>;

// Profiles kernel `kernel` of `ptx_text` launched as `config` on `target`.
// UserError when the CTA does not fit on an SM of the target.
KernelProfile profile_launch(const std::string& ptx_text, const std::string& kernel, const ptx::LaunchConfig& config,
                             int static_shared_bytes, const GpuTarget& target, const RunLaunch& run,
                             uint64_t cta_budget = kDefaultCtaBudget);

}  // namespace stitch::gpu_model
