// The benchmark's results and how they are written (docs/goptx-bench.md,
// Reports): `<results>.json` and `<results>.md` under the output folder.
#pragma once

#include <string>
#include <vector>

#include "goptx_bench.h"
#include "runtime/cuda/device.h"

namespace stitch::bench::goptx {

struct MeasuredVariant {
  Variant variant = Variant::Sequential;
  std::vector<double> seconds;  // one per timed run
  bool matches_sequential = true;
};

struct MeasuredPair {
  std::string pair, source;
  std::vector<std::string> kernels;  // A's and B's, with their kind
  std::vector<MeasuredVariant> variants;
};

struct MeasuredRun {
  runtime::cuda::DeviceProperties device;
  bool simulated = false;  // the simulated driver: times are the interpreter's, not a GPU's
  Scale scale = Scale::Full;
  int warmup = 0, repeats = 0;
  std::vector<MeasuredPair> pairs;
};

// ptxas -v's figures for one kernel, and its H100 occupancy.
struct StaticFigures {
  int registers = 0;
  int spill_store_bytes = 0, spill_load_bytes = 0;
  int static_shared_bytes = 0;
  int dynamic_shared_bytes = 0;  // what the launch adds
  int ctas_per_sm = 0;
  int warps_per_sm = 0;
  std::string limited_by;  // "registers", "shared memory", "warps", "CTAs"
};

struct EstimatedVariant {
  std::string variant;  // "A alone", "B alone", "packed", "woven-concat", "woven-latency"
  std::string kernel;
  StaticFigures figures;
  double model_cycles = 0;  // latency model x interpreter block counts
};

struct EstimatedPair {
  std::string pair, source;
  std::vector<std::string> kernels;
  std::vector<EstimatedVariant> variants;
  double sequential_cycles = 0;  // A alone + B alone
};

struct EstimatedRun {
  std::string ptxas_version;
  std::string occupancy_rules;
  std::vector<EstimatedPair> pairs;
};

void write_measured(const MeasuredRun& run, const std::string& out_dir, const std::string& results);
void write_estimates(const EstimatedRun& run, const std::string& out_dir, const std::string& results);

}  // namespace stitch::bench::goptx
