// `stitch bench --backend cuda` (docs/benchmarks.md, GPU): each workload under
// each planner on the GPU, timed with CUDA events around every run on
// device-resident inputs, next to a device-to-device copy of the same byte
// footprint measured in the same run. Every planner's first run is checked
// against the reference interpreter before it is timed.
#include <fmt/format.h>

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include <nlohmann/json.hpp>

#include "bench_common.h"
#include "cli.h"
#include "progress.h"
#include "fusion/cost_model.h"
#include "stitch/error.h"
#include "stitch/interpreter.h"
#include "tensor/compare.h"
#ifdef STITCH_HAVE_CUDA
#include "runtime/cuda/context.h"
#include "runtime/cuda/cubin_cache.h"
#include "pipeline/cuda/cuda_route.h"
#include "runtime/cuda/cuda_executable.h"
#include "runtime/cuda/event_timer.h"
#endif

namespace stitch::cli {

#ifdef STITCH_HAVE_CUDA
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using runtime::cuda::CudaContext;
using runtime::cuda::DeviceTensor;

json device_description(const CudaContext& context) {
  const runtime::cuda::DeviceProperties& d = context.device();
  return json{{"name", d.name},
              {"arch", d.arch()},
              {"sm_count", d.sm_count},
              {"memory_bytes", d.total_memory_bytes},
              {"l2_bytes", d.l2_bytes},
              {"peak_memory_gbps", d.memory_bytes_per_second() / 1e9},
              {"driver_version", fmt::format("{}.{}", d.driver_version / 1000, d.driver_version % 1000 / 10)},
              {"cuda_toolkit", fmt::format("{}.{}", CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10)},
              {"nvrtc", runtime::cuda::nvrtc_version()},
              {"summary", d.summary()}};
}

}  // namespace

// GB/s of a device-to-device copy moving `bytes` in all: bytes/2 read plus
// bytes/2 written.
double cuda_copy_gbps(const std::shared_ptr<CudaContext>& context, int64_t bytes, int warmup, int repeat) {
  const size_t half = static_cast<size_t>(std::max<int64_t>(bytes / 2, 4));
  runtime::cuda::DeviceBuffer src(context, half), dst(context, half);
  const auto& api = context->api();
  runtime::cuda::check(api, api.cuMemsetD8Async(src.get(), 1, half, context->stream()), "cuMemsetD8Async");
  runtime::cuda::EventTimer timer(*context, repeat);
  const double s = median(timer.seconds_each(warmup, [&] {
    runtime::cuda::check(api, api.cuMemcpyDtoDAsync(dst.get(), src.get(), half, context->stream()), "cuMemcpyDtoDAsync");
  }));
  return static_cast<double>(2 * half) / s / 1e9;
}

int bench_cuda_command(const std::vector<std::string>& files, const BenchOptions& options) {
  check_bench_options(options);
  const std::optional<schedule::RowScheduleKind> forced = forced_row_schedule(options.row_schedule);
  std::vector<PlannerKind> planners = bench_planners(options);
  std::vector<Workload> workloads = load_bench_workloads(files, options);
  std::string why;
  std::shared_ptr<CudaContext> context = CudaContext::open(&why);
  if (!context) throw UserError("--backend cuda needs an NVIDIA GPU and its driver: " + why);
  std::cout << "device: " << context->device().summary() << "\n";
  std::cout << fmt::format("{:<28} {:<7} {:>7} {:>12} {:>11} {:>8} {:>9} {:>8} {:>8} {:>9} {:>10}\n", "workload",
                           "planner", "kernels", "bytes_min", "median_s", "gbps", "copy_gbps", "of_copy", "plan_of",
                           "compile_s", "max_rel_err");
  json results = json::array();
  json unsupported = json::array();
  std::vector<double> copy_rates;
  int failures = 0;
  Progress progress("stitch bench", workloads.size() * planners.size() * (options.tune ? 2 : 1));
  for (Workload& w : workloads) {
    w.inputs = bench_inputs(w, options);
    const std::vector<Tensor> want = interpret(w.canonical, w.inputs);
    const int64_t bytes_min = minimal_bytes(w.canonical, w.inputs, want);
    const double copy = cuda_copy_gbps(context, bytes_min, options.warmup, options.repeat);
    copy_rates.push_back(copy);
    const SymbolBindings bindings = bind_inputs(w.canonical, w.inputs);
    std::vector<DeviceTensor> device_inputs;
    for (const Tensor& t : w.inputs) device_inputs.push_back(runtime::cuda::upload(context, t));
    std::vector<const DeviceTensor*> inputs;
    for (const DeviceTensor& t : device_inputs) inputs.push_back(&t);
    // --tune: each planner untuned, then tuned on this device, side by side ("stitch+tune").
    std::vector<std::pair<PlannerKind, bool>> variants;
    for (PlannerKind planner : planners) {
      variants.emplace_back(planner, false);
      if (options.tune) variants.emplace_back(planner, true);
    }
    for (const auto& [planner, tuned] : variants) {
      const std::string planner_text = std::string(planner_name(planner)) + (tuned ? "+tune" : "");
      progress.step(w.name + " " + planner_text);
      pipeline::CudaCompileOptions compile_options;
      compile_options.forced_rows = forced;
      std::optional<runtime::cuda::CudaExecutable> exe;
      double compile_s = 0, load_s = 0;
      try {
        ScratchDirectory scratch;
        runtime::cuda::CubinCache cold(scratch.path());
        // The cold compile measures the schedules; the warm one reads them back.
        std::unique_ptr<tune::ScheduleTuner> tuner = tuned ? cuda_tuner(true, context, cold, compile_options) : nullptr;
        Clock::time_point start = Clock::now();
        pipeline::compile_cuda(w.canonical, planner, context, cold, compile_options);
        compile_s = seconds_since(start);
        if (tuner) report_schedule_tuning(*tuner);
        runtime::cuda::CubinCache warm(scratch.path());
        std::unique_ptr<tune::ScheduleTuner> warm_tuner = tuned ? cuda_tuner(true, context, warm, compile_options) : nullptr;
        start = Clock::now();
        exe.emplace(pipeline::compile_cuda(w.canonical, planner, context, warm, compile_options));
        load_s = seconds_since(start);
      } catch (const UserError& e) {
        Progress::clear_for_output();
        std::cout << fmt::format("{:<28} {:<7} unsupported: {}\n", w.name, planner_text, e.what());
        unsupported.push_back({{"workload", w.name}, {"planner", planner_text}, {"reason", e.what()}});
        continue;
      }
      if (!exe->fallback().empty()) {
        Progress::clear_for_output();
        std::cout << fmt::format("{:<28} {:<7} fell back (timed anyway): {}\n", w.name, planner_text, exe->fallback());
      }
      std::vector<DeviceTensor> outputs;
      exe->run_on_device(inputs, outputs);
      // The first run is checked before any timing: a fast wrong kernel is no result.
      double max_rel = 0;
      bool ok = true;
      for (size_t i = 0; i < want.size(); ++i) {
        const Tensor got = runtime::cuda::download(*context, outputs[i]);
        const ErrorAllowance allowance = output_allowance(w.canonical, w.canonical.outputs()[i].value, bindings);
        const TensorComparison c = compare_with_interpreter(got, want[i], allowance);
        max_rel = std::max(max_rel, c.max_rel_error);
        if (!c.ok) {
          ok = false;
          Progress::clear_for_output();
          std::cout << fmt::format("{:<28} {:<7} MISMATCH against the interpreter: {}\n", w.name, planner_text,
                                   c.describe());
        }
      }
      if (!ok) ++failures;
      runtime::cuda::EventTimer timer(*context, options.repeat);
      const double median_s = median(timer.seconds_each(options.warmup, [&] { exe->run_on_device(inputs, outputs); }));
      const double gbps = static_cast<double>(bytes_min) / median_s / 1e9;
      const int64_t plan_bytes =
          FusionCostModel(bindings).plan_cost(exe->graph(), exe->plan()).bytes_moved();
      const double plan_gbps = static_cast<double>(plan_bytes) / median_s / 1e9;
      Progress::clear_for_output();
      std::cout << fmt::format("{:<28} {:<7} {:>7} {:>12} {:>11.7f} {:>8.1f} {:>9.1f} {:>8.3f} {:>8.3f} {:>9.3f} {:>10.3g}\n",
                               w.name, planner_text, exe->kernel_count(), bytes_min, median_s, gbps, copy, gbps / copy,
                               plan_gbps / copy, compile_s, max_rel)
                << std::flush;
      json row = timed_row({w.name, planner_text, exe->kernel_count(), bytes_min, plan_bytes, median_s, copy,
                            compile_s, load_s});
      row.update({{"max_rel_err", max_rel}, {"matches_interpreter", ok}, {"fallback", exe->fallback()}, {"tuned", tuned}});
      results.push_back(std::move(row));
    }
    w.inputs.clear();
  }
  progress.finish();
  const double copy = copy_rates.empty() ? 0 : median(copy_rates);
  std::cout << fmt::format("copy_gbps (device-to-device, median over workloads): {:.1f}\n", copy);
  if (!options.json_path.empty()) {
    json doc = {{"machine", {{"date", utc_timestamp()}}},
                {"device", device_description(*context)},
                {"backend", "cuda"},
                {"timer", "CUDA events around each run, inputs resident on the device"},
                {"copy_gbps", copy},
                {"repeat", options.repeat},
                {"warmup", options.warmup},
                {"results", results},
                {"unsupported", unsupported}};
    write_bench_json(options.json_path, doc);
  }
  if (failures > 0) {
    std::cout << fmt::format("{} planner run(s) did not match the interpreter\n", failures);
    return kExitCheckFailed;
  }
  return kExitOk;
}

#else

int bench_cuda_command(const std::vector<std::string>&, const BenchOptions&) {
  throw UserError("--backend cuda: this stitch was built without the CUDA toolkit");
}

#endif

}  // namespace stitch::cli
