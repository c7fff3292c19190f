// `stitch bench --backend cuda-sim --profile h100|h200` (docs/gpu-model.md,
// CLI): each workload under each planner compiled for the CUDA back end and
// run once on the simulated driver, which profiles every launch with the GPU
// model. Nothing is timed: the measured fields are null and each row gains
// the model's predicted time, its ratio to the model's copy of the same
// footprint, and a per-launch breakdown. The profiled run interprets a
// sample of each launch's CTAs, so its outputs are not checked here; the
// cuda-sim test suites check the same kernels whole at small sizes.
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "bench_common.h"
#include "sim_profiler.h"
#include "cli.h"
#include "progress.h"
#include "fusion/cost_model.h"
#include "gpu_model/time_model.h"
#include "stitch/error.h"
#include "stitch/interpreter.h"
#ifdef STITCH_HAVE_CUDA
#include "runtime/cuda/context.h"
#include "runtime/cuda/cubin_cache.h"
#include "pipeline/cuda/cuda_route.h"
#include "runtime/cuda/cuda_executable.h"
#endif

namespace stitch::cli {

#ifdef STITCH_HAVE_CUDA
namespace {

using nlohmann::json;
using runtime::cuda::DeviceTensor;

// What a row keeps of each launch's profile.
json launch_summary(const json& p) {
  json out;
  for (const char* key : {"kernel", "grid", "block", "predicted_s", "bound", "dram_read_bytes", "dram_write_bytes",
                          "sectors_per_request", "registers", "occupancy", "ctas_per_sm", "times_s", "issue_class",
                          "batches_per_warp", "bytes_in_flight_per_warp"}) {
    out[key] = p.at(key);
  }
  out["ctas_run"] = p.at("sampling").at("ctas_run");
  return out;
}

}  // namespace

int bench_cuda_sim_command(const std::vector<std::string>& files, const BenchOptions& options) {
  if (options.profile.empty()) {
    throw UserError("--backend cuda-sim: stitch bench times nothing on the PTX interpreter; give --profile h100|h200 "
                    "for the GPU model's predictions (docs/gpu-model.md)");
  }
  if (options.fresh_outputs || options.tune) throw UserError("--fresh-outputs and --tune need a device to time on");
  if (options.cta_budget == 0) throw UserError("--cta-budget: at least 1");
  const gpu_model::GpuTarget target = gpu_model::target_or_error(options.profile, "--profile");
  const gpu_model::FittedConstants constants = gpu_model::fitted_constants(target);
  check_bench_options(options);
  const std::optional<schedule::RowScheduleKind> forced = forced_row_schedule(options.row_schedule);
  std::vector<PlannerKind> planners = bench_planners(options);
  std::vector<Workload> workloads = load_bench_workloads(files, options);
  use_simulated_cuda_driver();
  std::shared_ptr<runtime::cuda::CudaContext> context = opened_cuda_context();
  const SimProfiler profiler = SimProfiler::find();
  runtime::cuda::CubinCache cubins;
  std::cout << fmt::format("target: {} ({}), the GPU model's predictions; nothing is timed\n", target.name,
                           target.device.product);
  std::cout << fmt::format("{:<28} {:<7} {:>7} {:>12} {:>12} {:>9} {:>10}  {}\n", "workload", "planner", "kernels",
                           "bytes_min", "predicted_s", "of_copy", "profile_s", "bounds");
  json results = json::array();
  json unsupported = json::array();
  Progress progress("stitch bench", workloads.size() * planners.size());
  for (Workload& w : workloads) {
    w.inputs = bench_inputs(w, options);
    const SymbolBindings bindings = bind_inputs(w.canonical, w.inputs);
    std::vector<DeviceTensor> device_inputs;
    for (const Tensor& t : w.inputs) device_inputs.push_back(runtime::cuda::upload(context, t));
    std::vector<const DeviceTensor*> inputs;
    for (const DeviceTensor& t : device_inputs) inputs.push_back(&t);
    const int64_t bytes_min = minimal_bytes(w.canonical, w.inputs);
    for (PlannerKind planner : planners) {
      const std::string planner_text(planner_name(planner));
      progress.step(w.name + " " + planner_text);
      pipeline::CudaCompileOptions compile_options;
      compile_options.forced_rows = forced;
      compile_options.model_target = target.name;
      std::optional<runtime::cuda::CudaExecutable> exe;
      try {
        exe.emplace(pipeline::compile_cuda(w.canonical, planner, context, cubins, compile_options));
      } catch (const UserError& e) {
        Progress::clear_for_output();
        std::cout << fmt::format("{:<28} {:<7} unsupported: {}\n", w.name, planner_text, e.what());
        unsupported.push_back({{"workload", w.name}, {"planner", planner_text}, {"reason", e.what()}});
        continue;
      }
      std::vector<DeviceTensor> outputs;
      profiler.taken();  // clears what earlier launches left, so the row holds only its own
      STITCH_ASSERT(profiler.start(target.name.c_str(), options.cta_budget) == 0, "the simulated driver refused " + target.name);
      const auto start = std::chrono::steady_clock::now();
      try {
        exe->run_on_device(inputs, outputs);
        context->synchronize();
      } catch (...) {
        profiler.start(nullptr, 0);
        throw;
      }
      const double profile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      profiler.start(nullptr, 0);
      const json launches = profiler.taken();
      double predicted = 0;
      std::string bounds;
      json breakdown = json::array();
      for (const json& p : launches) {
        predicted += p.at("predicted_s").get<double>();
        bounds += (bounds.empty() ? "" : ",") + p.at("bound").get<std::string>();
        breakdown.push_back(launch_summary(p));
      }
      const double copy_s = gpu_model::copy_seconds(target, constants, static_cast<double>(bytes_min));
      const double of_copy = predicted > 0 ? copy_s / predicted : 0;
      const int64_t plan_bytes = FusionCostModel(bindings).plan_cost(exe->graph(), exe->plan()).bytes_moved();
      Progress::clear_for_output();
      std::cout << fmt::format("{:<28} {:<7} {:>7} {:>12} {:>12.4g} {:>9.3f} {:>10.2f}  {}\n", w.name, planner_text,
                               exe->kernel_count(), bytes_min, predicted, of_copy, profile_s, bounds)
                << std::flush;
      results.push_back({{"workload", w.name},
                         {"planner", planner_text},
                         {"kernels", exe->kernel_count()},
                         {"bytes_min", bytes_min},
                         {"plan_bytes", plan_bytes},
                         {"median_s", nullptr},
                         {"gbps", nullptr},
                         {"copy_gbps", nullptr},
                         {"fraction_of_copy", nullptr},
                         {"predicted_s", predicted},
                         {"copy_predicted_s", copy_s},
                         {"predicted_of_copy", of_copy},
                         {"profile_s", profile_s},
                         {"fallback", exe->fallback()},
                         {"launches", breakdown}});
    }
    w.inputs.clear();
  }
  progress.finish();
  if (!options.json_path.empty()) {
    json doc = {{"machine", {{"date", utc_timestamp()}}},
                {"backend", "cuda-sim"},
                {"profile", {{"target", target.name},
                             {"product", target.device.product},
                             {"cta_budget", options.cta_budget},
                             {"constants", {{"dram_efficiency", constants.dram_efficiency},
                                            {"launch_s", constants.launch_s},
                                            {"latency_scale", constants.latency_scale}}}}},
                {"timer", "none: the GPU model's predictions (docs/gpu-model.md)"},
                {"results", results},
                {"unsupported", unsupported}};
    write_bench_json(options.json_path, doc);
  }
  return kExitOk;
}

#else

int bench_cuda_sim_command(const std::vector<std::string>&, const BenchOptions&) {
  throw UserError("--backend cuda-sim: this stitch was built without the CUDA toolkit");
}

#endif

}  // namespace stitch::cli
