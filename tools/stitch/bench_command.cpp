// `stitch bench` (DESIGN.md, Benchmarks; docs/benchmarks.md): time each
// workload under each planner and put the result next to a copy of the same
// byte footprint, measured in the same run with the same compiler and flags.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "bench_common.h"
#include "cli.h"
#include "progress.h"
#include "fusion/cost_model.h"
#include "pipeline/cpu_route.h"
#include "runtime/cpu/executable.h"
#include "runtime/cpu/kernel_cache.h"
#include "stitch/interpreter.h"
#include "stitch/text.h"

namespace stitch::cli {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

json machine_description() {
  std::string model = "unknown";
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  }
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  runtime::cpu::CompilerOptions options;
  std::string flags;
  for (const std::string& f : options.flags) flags += (flags.empty() ? "" : " ") + f;
  return json{{"cpu", model},
              {"cores", std::thread::hardware_concurrency()},
              {"hostname", host},
              {"compiler", first_line(runtime::cpu::compiler_version(options.compiler))},
              {"compiler_flags", flags},
              {"date", utc_timestamp()}};
}

// --steps: each step's mean over `repeat` more runs, longest first, and the
// time in library calls (dots, convolutions, attention) against the rest.
json time_steps(runtime::cpu::CpuExecutable& exe, const Workload& w, int repeat, std::vector<Tensor>& outputs) {
  exe.set_step_profiling(true);
  for (int i = 0; i < repeat; ++i) exe.run(w.inputs, outputs);
  std::vector<runtime::cpu::CpuExecutable::StepTime> steps = exe.step_times();
  const int64_t profiled = exe.profiled_runs();
  const double runs = static_cast<double>(std::max<int64_t>(profiled, 1));
  exe.set_step_profiling(false);
  double library = 0, kernels = 0;
  json rows = json::array();
  for (size_t i = 0; i < steps.size(); ++i) {
    const double s = steps[i].seconds / runs;
    (steps[i].kind == "kernel" ? kernels : library) += s;
    rows.push_back({{"step", i},
                    {"kind", steps[i].kind},
                    {"label", steps[i].label},
                    {"seconds", s},
                    {"epilogue_seconds", steps[i].epilogue_seconds / runs}});
  }
  return {{"runs", profiled}, {"library_s", library}, {"kernels_s", kernels}, {"steps", rows}};
}

void print_steps(const json& t) {
  std::vector<json> rows(t["steps"].begin(), t["steps"].end());
  std::stable_sort(rows.begin(), rows.end(),
                   [](const json& a, const json& b) { return a["seconds"].get<double>() > b["seconds"].get<double>(); });
  const double library = t["library_s"], kernels = t["kernels_s"];
  std::cout << fmt::format("  steps (mean of {} runs): library calls {:.6f} s, kernels {:.6f} s\n", t["runs"].get<int64_t>(),
                           library, kernels);
  for (const json& r : rows) {
    const double s = r["seconds"];
    std::cout << fmt::format("  {:>5} {:<10} {:>11.6f} {:>6.1f}%  {}\n", r["step"].get<size_t>(),
                             r["kind"].get<std::string>(), s, 100 * s / std::max(library + kernels, 1e-12),
                             r["label"].get<std::string>());
  }
}

void print_header() {
  std::cout << fmt::format("{:<28} {:<7} {:>7} {:>12} {:>11} {:>8} {:>9} {:>8} {:>8} {:>9} {:>9}\n", "workload",
                           "planner", "kernels", "bytes_min", "median_s", "gbps", "copy_gbps", "of_copy", "plan_of",
                           "compile_s", "load_s");
}

}  // namespace

int bench_command(const std::vector<std::string>& files, const BenchOptions& options) {
  if (options.backend == "cuda-sim") return bench_cuda_sim_command(files, options);
  if (!options.profile.empty()) {
    throw UserError(fmt::format("--profile predicts runs on the PTX interpreter; it needs --backend cuda-sim, not {}",
                                options.backend));
  }
  if (options.backend == "cuda") {
    if (options.fresh_outputs) throw UserError("--fresh-outputs: only --backend cpu times fresh outputs");
    return bench_cuda_command(files, options);
  }
  if (options.backend != "cpu") {
    throw UserError(fmt::format("--backend {}: not a back end of stitch bench; use --backend cpu or cuda", options.backend));
  }
  check_bench_options(options);
  const std::optional<schedule::RowScheduleKind> forced = forced_row_schedule(options.row_schedule);
  std::vector<PlannerKind> planners = bench_planners(options);

  std::vector<Workload> workloads = load_bench_workloads(files, options);

  runtime::cpu::KernelCache cache;
  CopyBenchmark copy(cache);
  json results = json::array();
  json unsupported = json::array();
  std::vector<double> copy_rates;
  const char* outputs_policy = options.fresh_outputs ? "fresh" : "reused";
  std::cout << fmt::format("outputs {} in every timed run\n", options.fresh_outputs ? "allocated" : "reused");
  print_header();
  Progress progress("stitch bench", workloads.size() * planners.size() * (options.tune ? 2 : 1));
  for (Workload& w : workloads) {
    // Inputs one workload at a time: the corpus's inputs together would take gigabytes.
    w.inputs = bench_inputs(w, options);
    double copy_gbps = -1;
    int64_t bytes_min = -1;
    // --tune: each planner untuned, then tuned, side by side ("stitch+tune").
    std::vector<std::pair<PlannerKind, bool>> variants;
    for (PlannerKind planner : planners) {
      variants.emplace_back(planner, false);
      if (options.tune) variants.emplace_back(planner, true);
    }
    for (const auto& [planner, tuned] : variants) {
      const std::string planner_text = std::string(planner_name(planner)) + (tuned ? "+tune" : "");
      progress.step(w.name + " " + planner_text);
      ScratchDirectory cold_directory;
      double compile_s = 0, load_s = 0, memory_hit_s = 0;
      std::optional<runtime::cpu::CpuExecutable> exe;
      pipeline::CpuCompileOptions compile_options;
      compile_options.rows.forced = forced;
      try {
        runtime::cpu::KernelCache cold(cold_directory.path());
        // --tune: the cold compile measures the schedules, the warm ones read them back.
        std::unique_ptr<Tuners> tuners = tuned ? cpu_tuners(true, cold, compile_options) : nullptr;
        Clock::time_point start = Clock::now();
        pipeline::compile_cpu(w.canonical, planner, cold, compile_options);
        compile_s = seconds_since(start);
        if (tuners) report_tuning(*tuners);
        runtime::cpu::KernelCache warm(cold_directory.path());
        start = Clock::now();
        pipeline::compile_cpu(w.canonical, planner, warm, compile_options);
        load_s = seconds_since(start);
        // Same KernelCache object again: its in-memory level answers.
        start = Clock::now();
        exe.emplace(pipeline::compile_cpu(w.canonical, planner, warm, compile_options));
        memory_hit_s = seconds_since(start);
        // An ONNX model's initializers are the same tensors in every run.
        std::vector<std::string> constants;
        for (const auto& [name, tensor] : w.model.bound) constants.push_back(name);
        if (!constants.empty()) exe->set_constant_params(constants);
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
      std::vector<Tensor> outputs = exe->run(w.inputs);
      if (bytes_min < 0) {
        bytes_min = minimal_bytes(w.canonical, w.inputs, outputs);
        copy_gbps = copy.gbps(bytes_min, options.warmup, options.repeat);
        copy_rates.push_back(copy_gbps);
      }
      // Timed runs reuse the executable's workspace (docs/executable.md) and,
      // by default, write into the same outputs, as a framework's caching
      // allocator would. With --fresh-outputs each run allocates its outputs
      // and frees them before the clock stops, as a framework's call does
      // when its result is dropped (docs/benchmarks.md, Peers).
      double median_s = 0;
      if (options.fresh_outputs) {
        outputs.clear();
        median_s = median_seconds(options.warmup, options.repeat, [&] { exe->run(w.inputs); });
      } else {
        median_s = median_seconds(options.warmup, options.repeat, [&] { exe->run(w.inputs, outputs); });
      }
      json steps;
      if (options.steps) {
        std::vector<Tensor> kept = exe->run(w.inputs);
        steps = time_steps(*exe, w, options.repeat, kept);
      }
      outputs.clear();
      double gbps = static_cast<double>(bytes_min) / median_s / 1e9;
      // The traffic the plan really moves (each kernel reads its inputs and
      // writes its roots once): how close the kernels themselves run to copy.
      const int64_t plan_bytes =
          FusionCostModel(bind_inputs(w.canonical, w.inputs)).plan_cost(exe->graph(), exe->plan()).bytes_moved();
      const double plan_gbps = static_cast<double>(plan_bytes) / median_s / 1e9;
      Progress::clear_for_output();
      std::cout << fmt::format(
                       "{:<28} {:<7} {:>7} {:>12} {:>11.6f} {:>8.2f} {:>9.2f} {:>8.3f} {:>8.3f} {:>9.3f} {:>9.4f}\n",
                       w.name, planner_text, exe->kernel_count(), bytes_min, median_s, gbps, copy_gbps,
                       gbps / copy_gbps, plan_gbps / copy_gbps, compile_s, load_s)
                << std::flush;  // progress, when the output goes to a file
      json row = timed_row({w.name, planner_text, exe->kernel_count(), bytes_min, plan_bytes, median_s, copy_gbps,
                            compile_s, load_s});
      row.update({{"memory_hit_s", memory_hit_s},
                  {"peak_intermediate_bytes", exe->peak_intermediate_bytes()},
                  {"fallback", exe->fallback()},
                  {"outputs", outputs_policy},
                  {"tuned", tuned}});
      if (options.steps) {
        Progress::clear_for_output();
        print_steps(steps);
        row["steps"] = std::move(steps);
      }
      results.push_back(std::move(row));
    }
    w.inputs.clear();
  }
  // One figure for the whole run: the median of the per-workload copies.
  progress.finish();
  double copy_gbps = copy_rates.empty() ? 0 : median(copy_rates);
  std::cout << fmt::format("copy_gbps (median over workloads): {:.2f}\n", copy_gbps);
  if (!options.json_path.empty()) {
    json doc = {{"machine", machine_description()},
                {"backend", options.backend},
                {"copy_gbps", copy_gbps},
                {"repeat", options.repeat},
                {"warmup", options.warmup},
                {"results", results},
                {"unsupported", unsupported}};
    write_bench_json(options.json_path, doc);
  }
  return kExitOk;
}

}  // namespace stitch::cli
