// `stitch`: the command-line front end (DESIGN.md, CLI; docs/cli.md).
#include <CLI/CLI.hpp>

#include <cstdlib>
#include <fmt/format.h>

#include <iostream>
#include <new>

#include "cache_command.h"
#include "doctor_command.h"
#include "cli.h"
#include "ptx_commands.h"
#include "ptx_run_command.h"
#include "ptx_weave_command.h"
#include "stitch/error.h"
#include "stitch/tensor.h"

namespace {

using namespace stitch;
using namespace stitch::cli;

int dispatch(int argc, char** argv) {
  CLI::App app{"Stitch: a kernel-fusion compiler and runtime for memory-bound tensor programs", "stitch"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "stitch 0.1");

  std::string file, graph_name, backend = "cpu", planner, output_dir;
  bool print_values = false;
  InputSpec inputs;

  CLI::App* run = app.add_subcommand("run", "Run a graph and write or print its results");
  run->add_option("FILE", file, "a .stitch file or an .onnx model")->required();
  run->add_option("--graph", graph_name, "graph to run (default: the first in the file)");
  run->add_option("--backend", backend, "where to run it (default cpu; cuda-sim: CUDA on the PTX interpreter)")
      ->check(CLI::IsMember({"interp", "cpu", "cuda", "cuda-sim"}));
  run->add_option("--planner", planner, "fusion planner (ignored by the interpreter; default xla)")
      ->check(CLI::IsMember({"none", "xla", "stitch", "ilp", "greedy"}));
  run->add_option("--input", inputs.bindings, "bind a parameter: NAME=FILE.npy (repeatable)");
  run->add_option("--random-inputs", inputs.seed, "fill unbound parameters with seeded random values")
      ->each([&](const std::string&) { inputs.random = true; });
  run->add_option("--dim", inputs.dims, "bind a symbolic dim for random inputs: SYMBOL=N (repeatable)");
  run->add_option("--output-dir", output_dir, "write each result to DIR/<name>.npy");
  run->add_flag("--print", print_values, "print the results");
  std::string run_kernel;
  std::vector<std::string> run_scalars;
  run->add_option("--kernel", run_kernel, "run one call of this user kernel instead of a graph (docs/kernel-language.md)");
  run->add_option("--scalar", run_scalars, "--kernel: bind a scalar parameter: NAME=VALUE (repeatable)");
  bool weave = false;
  const char* const weave_help =
      "cuda, cuda-sim: weave adjacent independent kernels into one launch at the PTX level (GoPTX; "
      "docs/goptx.md; the same as STITCH_WEAVE=1)";
  run->add_flag("--weave", weave, weave_help);
  bool run_tune = false;
  run->add_flag("--tune", run_tune, "measure each group's candidate schedules on the back end's device, keep the fastest (cached on disk; cpu: also contested fusions)");

  bool raw = false;
  CLI::App* print = app.add_subcommand("print", "Print a file's graphs in canonical text form");
  print->add_option("FILE", file, "a .stitch file or an .onnx model")->required();
  print->add_option("--graph", graph_name, "print only this graph");
  print->add_flag("--raw", raw, "print as parsed, before canonicalisation");

  std::string plan_planner = "xla", format = "text", output;
  std::vector<std::string> plan_dims;
  CLI::App* plan = app.add_subcommand("plan", "Print a graph's fusion plan and why unfused neighbours stay apart");
  plan->add_option("FILE", file, "a .stitch file or an .onnx model")->required();
  plan->add_option("--graph", graph_name, "graph to plan (default: the first in the file)");
  plan->add_option("--planner", plan_planner, "fusion planner (default xla)");
  plan->add_option("--format", format, "text, dot, json or html (the fusion report: stitch report)");
  plan->add_option("--dim", plan_dims, "bind a symbolic dim for the byte counts: SYMBOL=N (repeatable)");
  plan->add_option("-o,--output", output, "write to this file instead of stdout");
  bool plan_explain = false;
  std::string plan_target = "sm_90";
  plan->add_flag("--explain", plan_explain, "rank each group's schedule candidates by estimated latency");
  CLI::Option* plan_target_option = plan->add_option(
      "--target", plan_target, "what --explain is for: sm_80, sm_90 (default; the CUDA back end's plan) or cpu");
  std::string plan_backend;
  plan->add_option("--backend", plan_backend, "what --explain is for: cuda (--target sm_90) or cpu (--target cpu)");
  std::string plan_rows, emit_rows;
  plan->add_option("--row-schedule", plan_rows, "force the row schedule --explain reports (default auto)")
      ->check(CLI::IsMember(row_schedule_option_values()));

  ReportOptions report_options;
  std::string report_output;
  CLI::App* report = app.add_subcommand("report", "Write the fusion report of a graph as one HTML page (docs/report.md)");
  report->add_option("FILE", file, "a .stitch file or an .onnx model")->required();
  report->add_option("--graph", report_options.graph_name, "graph to report (default: the first in the file)");
  report->add_option("--backend", report_options.backend, "cpu (default), cuda or cuda-sim")
      ->check(CLI::IsMember({"cpu", "cuda", "cuda-sim"}));
  report->add_option("--planner", report_options.planner, "fusion planner (default xla)")
      ->check(CLI::IsMember({"none", "xla", "stitch", "ilp", "greedy"}));
  report->add_flag("--run", report_options.run,
                   "run the graph and put each launch's time in the report (cuda-sim: the GPU model's predictions)");
  report->add_option("--input", report_options.inputs.bindings, "--run: bind a parameter: NAME=FILE.npy (repeatable)");
  report->add_option("--random-inputs", report_options.inputs.seed, "--run: fill unbound parameters with seeded random values")
      ->each([&](const std::string&) { report_options.inputs.random = true; });
  report->add_option("--dim", report_options.inputs.dims, "bind a symbolic dim: SYMBOL=N (repeatable)");
  report->add_option("--repeat", report_options.repeat, "--run: timed runs (default 10)");
  report->add_option("--profile", report_options.profile, "--run --backend cuda-sim: the GPU model's target (default h200)")
      ->check(CLI::IsMember({"h100", "h200"}));
  report->add_option("--row-schedule", report_options.row_schedule, "force the row schedule (default auto)")
      ->check(CLI::IsMember(row_schedule_option_values()));
  report->add_option("-o,--output", report_output, "write the page to this file instead of stdout");

  std::string emit_backend = "cpu", emit_planner = "xla";
  CLI::App* emit = app.add_subcommand("emit", "Print the generated source of a graph's kernels");
  emit->add_option("FILE", file, "a .stitch file or an .onnx model")->required();
  emit->add_option("--graph", graph_name, "graph to compile (default: the first in the file)");
  emit->add_option("--backend", emit_backend, "cpu (default) or cuda (CUDA C, printed only)");
  emit->add_option("--planner", emit_planner, "fusion planner (default xla)");
  emit->add_option("--row-schedule", emit_rows, "force the row-reduction schedule (default auto)")
      ->check(CLI::IsMember(row_schedule_option_values()));

  std::vector<std::string> files;
  CheckOptions check_options;
  CLI::App* check = app.add_subcommand("check", "Compare every planner x back end with the interpreter");
  check->add_option("FILE", files, "one or more .stitch files or .onnx models")->required();
  check->add_option("--graph", check_options.graph_name, "check only this graph of each file (default: all)");
  check->add_option("--dim", check_options.dims,
                    fmt::format("bind a symbolic dim: SYMBOL=N (repeatable; default {})", kDefaultCheckDim));
  check->add_option("--seed", check_options.seed, "seed of the random inputs (default 1)");
  check->add_option("--planners", check_options.planners,
                    "comma-separated planners to check (default none,xla,stitch,greedy,ilp)")
      ->delimiter(',');
  check->add_option("--backend", check_options.backend, "cpu (default), cuda or cuda-sim")
      ->check(CLI::IsMember({"cpu", "cuda", "cuda-sim"}));
  check->add_flag("--allow-unsupported", check_options.allow_unsupported,
                  "do not fail when a back end cannot run a graph yet");
  check->add_flag("--weave", weave, weave_help);

  BenchOptions bench_options;
  CLI::App* bench = app.add_subcommand("bench", "Time workloads per planner against copy bandwidth");
  bench->add_option("FILE", files, "one or more .stitch files or .onnx models")->required();
  bench->add_option("--graph", bench_options.graph_name, "graph to time in every file (default: the first)");
  bench->add_option("--backend", bench_options.backend,
                    "cpu (default), cuda, or cuda-sim (the GPU model's predictions; needs --profile)")
      ->check(CLI::IsMember({"cpu", "cuda", "cuda-sim"}));
  bench->add_option("--profile", bench_options.profile,
                    "with --backend cuda-sim: predict each run on this GPU (h100, h200) with the GPU model "
                    "(docs/gpu-model.md)");
  bench->add_option("--cta-budget", bench_options.cta_budget,
                    "with --profile: CTAs interpreted per launch at most (default 192)");
  bench->add_flag("--weave", weave, weave_help);
  bench->add_option("--planners", bench_options.planners, "comma-separated planners (default none,xla)")
      ->delimiter(',');
  bench->add_option("--repeat", bench_options.repeat, "timed runs per measurement (default 10)");
  bench->add_option("--warmup", bench_options.warmup, "untimed runs first (default 2)");
  bench->add_option("--json", bench_options.json_path, "write the results as JSON (docs/benchmarks.md)");
  bench->add_option("--dim", bench_options.dims, "bind a symbolic dim: SYMBOL=N (repeatable)");
  bench->add_option("--row-schedule", bench_options.row_schedule, "force the row-reduction schedule (default auto)")
      ->check(CLI::IsMember(row_schedule_option_values()));
  bench->add_flag("--fresh-outputs", bench_options.fresh_outputs,
                  "allocate the outputs in every timed run, as a framework does (default: reuse them)");
  bench->add_flag("--steps", bench_options.steps,
                  "cpu: also time each step of the launch list (kernels and library calls) over --repeat runs");
  bench->add_flag("--tune", bench_options.tune,
                  "also time each planner tuned: candidate schedules measured on the back end's device (cpu: and contested fusions)");

  PtxCommands ptx(app);
  PtxRunCommand ptx_run(*app.get_subcommand("ptx"));
  PtxWeaveCommand ptx_weave(*app.get_subcommand("ptx"));
  CacheCommand cache(app);
  DoctorCommand doctor(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitBadInput;
  }
  if (weave) {
    const std::string& chosen = *run ? backend : *check ? check_options.backend : bench_options.backend;
    if (chosen != "cuda" && chosen != "cuda-sim") {
      throw UserError(fmt::format("--weave weaves CUDA kernels; it needs --backend cuda or cuda-sim, not {}", chosen));
    }
    ::setenv("STITCH_WEAVE", "1", 1);
  }
  // cuda-sim is the CUDA back end with the simulated driver (docs/cuda-sim.md).
  if (*run && backend == "cuda-sim") backend = use_simulated_cuda_driver();
  if (*check && check_options.backend == "cuda-sim") check_options.backend = use_simulated_cuda_driver();
  if (*run && !run_kernel.empty()) {
    if (!graph_name.empty()) throw UserError("run: give --graph or --kernel, not both");
    if (run_tune) throw UserError("run --kernel: --tune tunes graphs' schedules, not user kernels");
    return run_kernel_command(file, run_kernel, backend, inputs, run_scalars, output_dir, print_values);
  }
  if (!run_scalars.empty()) throw UserError("run: --scalar binds a user kernel's scalar; give --kernel NAME");
  if (*run) return run_command(file, graph_name, backend, planner, inputs, output_dir, print_values, run_tune);
  if (*print) return print_command(file, graph_name, !raw);
  if (*plan) {
    if (!plan_backend.empty()) {
      if (plan_backend != "cpu" && plan_backend != "cuda") {
        throw UserError(fmt::format("plan --backend {}: use cpu or cuda", plan_backend));
      }
      if (plan_target_option->count() > 0 && (plan_target == "cpu") != (plan_backend == "cpu")) {
        throw UserError(fmt::format("plan: --backend {} and --target {} disagree; give one", plan_backend, plan_target));
      }
      if (plan_backend == "cpu") plan_target = "cpu";
    }
    if (format == "html") {
      if (plan_explain) throw UserError("--explain prints text; use it with --format text");
      ReportOptions o;
      o.graph_name = graph_name;
      o.planner = plan_planner;
      o.backend = plan_backend.empty() ? "cpu" : plan_backend;
      o.inputs.dims = plan_dims;
      o.row_schedule = plan_rows;
      return report_command(file, o, output);
    }
    return plan_command(file, graph_name, plan_planner, format, plan_dims, output, plan_explain, plan_target, plan_rows);
  }
  if (*report) {
    if (!report_options.run && (!report_options.inputs.bindings.empty() || report_options.inputs.random)) {
      throw UserError("report: --input and --random-inputs give the inputs of --run; add --run");
    }
    return report_command(file, report_options, report_output);
  }
  if (*emit) return emit_command(file, graph_name, emit_backend, emit_planner, emit_rows);
  if (*check) return check_command(files, check_options);
  if (*bench) return bench_command(files, bench_options);
  if (ptx_run.selected()) return ptx_run.run();
  if (ptx_weave.selected()) return ptx_weave.run();
  if (ptx.selected()) return ptx.run();
  if (cache.selected()) return cache.run();
  if (doctor.selected()) return doctor.run();
  return kExitBadInput;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    // Read at the first large allocation; checked here so that a bad value
    // is reported on every run, large or not.
    stitch::detail::huge_pages_enabled();
    return dispatch(argc, argv);
  } catch (const stitch::UserError& e) {
    std::cerr << e.formatted() << "\n";
    return kExitBadInput;
  } catch (const stitch::InternalError& e) {
    std::cerr << "stitch: " << e.what() << "\nThis is a bug in Stitch; please report it with the input.\n";
    return kExitInternal;
  } catch (const std::bad_alloc&) {
    // Memory is the environment's limit, not a bug; every tensor allocation
    // names its bytes (docs/limits.md), this catches the rest.
    std::cerr << "error: out of memory (an allocation other than a tensor's failed)\n";
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "stitch: internal error: " << e.what() << "\n";
    return kExitInternal;
  }
}
