#include "graph_commands.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdlib>

#include "stitch/error.h"

namespace stitch::cli {

namespace {

const char* const kWeaveHelp =
    "cuda, cuda-sim: weave adjacent independent kernels into one launch at the PTX level (GoPTX; "
    "docs/goptx.md; the same as STITCH_WEAVE=1)";

// FILE and --graph, as every command over one file takes them.
void add_file_and_graph(CLI::App& command, std::string& file, std::string& graph, const char* graph_help) {
  command.add_option("FILE", file, "a .stitch file or an .onnx model")->required();
  command.add_option("--graph", graph, graph_help);
}

// FILE... and --graph, as the commands over many files take them.
void add_files_and_graph(CLI::App& command, std::vector<std::string>& files, std::string& graph,
                         const char* graph_help) {
  command.add_option("FILE", files, "one or more .stitch files or .onnx models")->required();
  command.add_option("--graph", graph, graph_help);
}

}  // namespace

GraphCommands::GraphCommands(CLI::App& app) {
  add_run(app);
  add_print(app);
  add_plan(app);
  add_report(app);
  add_emit(app);
  add_check(app);
  add_bench(app);
}

void GraphCommands::add_run(CLI::App& app) {
  CLI::App* run = run_ = app.add_subcommand("run", "Run a graph and write or print its results");
  add_file_and_graph(*run, file_, graph_name_, "graph to run (default: the first in the file)");
  run->add_option("--backend", backend_, "where to run it (default cpu; cuda-sim: CUDA on the PTX interpreter)")
      ->check(CLI::IsMember({"interp", "cpu", "cuda", "cuda-sim"}));
  run->add_option("--planner", planner_, "fusion planner (ignored by the interpreter; default xla)")
      ->check(CLI::IsMember({"none", "xla", "stitch", "ilp", "greedy"}));
  run->add_option("--input", inputs_.bindings, "bind a parameter: NAME=FILE.npy (repeatable)");
  run->add_option("--random-inputs", inputs_.seed, "fill unbound parameters with seeded random values")
      ->each([&](const std::string&) { inputs_.random = true; });
  run->add_option("--dim", inputs_.dims, "bind a symbolic dim for random inputs: SYMBOL=N (repeatable)");
  run->add_option("--output-dir", output_dir_, "write each result to DIR/<name>.npy");
  run->add_flag("--print", print_values_, "print the results");
  run->add_option("--kernel", run_kernel_, "run one call of this user kernel instead of a graph (docs/kernel-language.md)");
  run->add_option("--scalar", run_scalars_, "--kernel: bind a scalar parameter: NAME=VALUE (repeatable)");
  run->add_flag("--weave", weave_, kWeaveHelp);
  run->add_flag("--tune", run_tune_, "measure each group's candidate schedules on the back end's device, keep the fastest (cached on disk; cpu: also contested fusions)");
}

void GraphCommands::add_print(CLI::App& app) {
  CLI::App* print = print_ = app.add_subcommand("print", "Print a file's graphs in canonical text form");
  add_file_and_graph(*print, file_, graph_name_, "print only this graph");
  print->add_flag("--raw", raw_, "print as parsed, before canonicalisation");
}

void GraphCommands::add_plan(CLI::App& app) {
  CLI::App* plan = plan_ = app.add_subcommand("plan", "Print a graph's fusion plan and why unfused neighbours stay apart");
  add_file_and_graph(*plan, file_, graph_name_, "graph to plan (default: the first in the file)");
  plan->add_option("--planner", plan_planner_, "fusion planner (default xla)");
  plan->add_option("--format", format_, "text, dot, json or html (the fusion report: stitch report)");
  plan->add_option("--dim", plan_dims_, "bind a symbolic dim for the byte counts: SYMBOL=N (repeatable)");
  plan->add_option("-o,--output", output_, "write to this file instead of stdout");
  plan->add_flag("--explain", plan_explain_, "rank each group's schedule candidates by estimated latency");
  plan_target_option_ = plan->add_option(
      "--target", plan_target_, "what --explain is for: sm_80, sm_90 (default; the CUDA back end's plan) or cpu");
  plan->add_option("--backend", plan_backend_, "what --explain is for: cuda (--target sm_90) or cpu (--target cpu)");
  plan->add_option("--row-schedule", plan_rows_, "force the row schedule --explain reports (default auto)")
      ->check(CLI::IsMember(row_schedule_option_values()));
}

void GraphCommands::add_report(CLI::App& app) {
  CLI::App* report = report_ = app.add_subcommand("report", "Write the fusion report of a graph as one HTML page (docs/report.md)");
  add_file_and_graph(*report, file_, report_options_.graph_name, "graph to report (default: the first in the file)");
  report->add_option("--backend", report_options_.backend, "cpu (default), cuda or cuda-sim")
      ->check(CLI::IsMember({"cpu", "cuda", "cuda-sim"}));
  report->add_option("--planner", report_options_.planner, "fusion planner (default xla)")
      ->check(CLI::IsMember({"none", "xla", "stitch", "ilp", "greedy"}));
  report->add_flag("--run", report_options_.run,
                   "run the graph and put each launch's time in the report (cuda-sim: the GPU model's predictions)");
  report->add_option("--input", report_options_.inputs.bindings, "--run: bind a parameter: NAME=FILE.npy (repeatable)");
  report->add_option("--random-inputs", report_options_.inputs.seed, "--run: fill unbound parameters with seeded random values")
      ->each([&](const std::string&) { report_options_.inputs.random = true; });
  report->add_option("--dim", report_options_.inputs.dims, "bind a symbolic dim: SYMBOL=N (repeatable)");
  report->add_option("--repeat", report_options_.repeat, "--run: timed runs (default 10)");
  report->add_option("--profile", report_options_.profile, "--run --backend cuda-sim: the GPU model's target (default h200)")
      ->check(CLI::IsMember({"h100", "h200"}));
  report->add_option("--row-schedule", report_options_.row_schedule, "force the row schedule (default auto)")
      ->check(CLI::IsMember(row_schedule_option_values()));
  report->add_option("-o,--output", report_output_, "write the page to this file instead of stdout");
}

void GraphCommands::add_emit(CLI::App& app) {
  CLI::App* emit = emit_ = app.add_subcommand("emit", "Print the generated source of a graph's kernels");
  add_file_and_graph(*emit, file_, graph_name_, "graph to compile (default: the first in the file)");
  emit->add_option("--backend", emit_backend_, "cpu (default) or cuda (CUDA C, printed only)");
  emit->add_option("--planner", emit_planner_, "fusion planner (default xla)");
  emit->add_option("--row-schedule", emit_rows_, "force the row-reduction schedule (default auto)")
      ->check(CLI::IsMember(row_schedule_option_values()));
}

void GraphCommands::add_check(CLI::App& app) {
  CLI::App* check = check_ = app.add_subcommand("check", "Compare every planner x back end with the interpreter");
  add_files_and_graph(*check, files_, check_options_.graph_name, "check only this graph of each file (default: all)");
  check->add_option("--dim", check_options_.dims,
                    fmt::format("bind a symbolic dim: SYMBOL=N (repeatable; default {})", kDefaultCheckDim));
  check->add_option("--seed", check_options_.seed, "seed of the random inputs (default 1)");
  check->add_option("--planners", check_options_.planners,
                    "comma-separated planners to check (default none,xla,stitch,greedy,ilp)")
      ->delimiter(',');
  check->add_option("--backend", check_options_.backend, "cpu (default), cuda or cuda-sim")
      ->check(CLI::IsMember({"cpu", "cuda", "cuda-sim"}));
  check->add_flag("--allow-unsupported", check_options_.allow_unsupported,
                  "do not fail when a back end cannot run a graph yet");
  check->add_flag("--weave", weave_, kWeaveHelp);
}

void GraphCommands::add_bench(CLI::App& app) {
  CLI::App* bench = bench_ = app.add_subcommand("bench", "Time workloads per planner against copy bandwidth");
  add_files_and_graph(*bench, files_, bench_options_.graph_name, "graph to time in every file (default: the first)");
  bench->add_option("--backend", bench_options_.backend,
                    "cpu (default), cuda, or cuda-sim (the GPU model's predictions; needs --profile)")
      ->check(CLI::IsMember({"cpu", "cuda", "cuda-sim"}));
  bench->add_option("--profile", bench_options_.profile,
                    "with --backend cuda-sim: predict each run on this GPU (h100, h200) with the GPU model "
                    "(docs/gpu-model.md)");
  bench->add_option("--cta-budget", bench_options_.cta_budget,
                    "with --profile: CTAs interpreted per launch at most (default 192)");
  bench->add_flag("--weave", weave_, kWeaveHelp);
  bench->add_option("--planners", bench_options_.planners, "comma-separated planners (default none,xla)")
      ->delimiter(',');
  bench->add_option("--repeat", bench_options_.repeat, "timed runs per measurement (default 10)");
  bench->add_option("--warmup", bench_options_.warmup, "untimed runs first (default 2)");
  bench->add_option("--json", bench_options_.json_path, "write the results as JSON (docs/benchmarks.md)");
  bench->add_option("--dim", bench_options_.dims, "bind a symbolic dim: SYMBOL=N (repeatable)");
  bench->add_option("--row-schedule", bench_options_.row_schedule, "force the row-reduction schedule (default auto)")
      ->check(CLI::IsMember(row_schedule_option_values()));
  bench->add_flag("--fresh-outputs", bench_options_.fresh_outputs,
                  "allocate the outputs in every timed run, as a framework does (default: reuse them)");
  bench->add_flag("--steps", bench_options_.steps,
                  "cpu: also time each step of the launch list (kernels and library calls) over --repeat runs");
  bench->add_flag("--tune", bench_options_.tune,
                  "also time each planner tuned: candidate schedules measured on the back end's device (cpu: and contested fusions)");
}

std::optional<int> GraphCommands::run() {
  if (weave_) {
    const std::string& chosen = *run_ ? backend_ : *check_ ? check_options_.backend : bench_options_.backend;
    if (chosen != "cuda" && chosen != "cuda-sim") {
      throw UserError(fmt::format("--weave weaves CUDA kernels; it needs --backend cuda or cuda-sim, not {}", chosen));
    }
    ::setenv("STITCH_WEAVE", "1", 1);
  }
  // cuda-sim is the CUDA back end with the simulated driver (docs/cuda-sim.md).
  if (*run_ && backend_ == "cuda-sim") backend_ = use_simulated_cuda_driver();
  if (*check_ && check_options_.backend == "cuda-sim") check_options_.backend = use_simulated_cuda_driver();
  if (*run_ && !run_kernel_.empty()) {
    if (!graph_name_.empty()) throw UserError("run: give --graph or --kernel, not both");
    if (run_tune_) throw UserError("run --kernel: --tune tunes graphs' schedules, not user kernels");
    return run_kernel_command(file_, run_kernel_, backend_, inputs_, run_scalars_, output_dir_, print_values_);
  }
  if (!run_scalars_.empty()) throw UserError("run: --scalar binds a user kernel's scalar; give --kernel NAME");
  if (*run_) return run_command(file_, graph_name_, backend_, planner_, inputs_, output_dir_, print_values_, run_tune_);
  if (*print_) return print_command(file_, graph_name_, !raw_);
  if (*plan_) return run_plan();
  if (*report_) {
    if (!report_options_.run && (!report_options_.inputs.bindings.empty() || report_options_.inputs.random)) {
      throw UserError("report: --input and --random-inputs give the inputs of --run; add --run");
    }
    return report_command(file_, report_options_, report_output_);
  }
  if (*emit_) return emit_command(file_, graph_name_, emit_backend_, emit_planner_, emit_rows_);
  if (*check_) return check_command(files_, check_options_);
  if (*bench_) return bench_command(files_, bench_options_);
  return std::nullopt;
}

int GraphCommands::run_plan() {
  if (!plan_backend_.empty()) {
    if (plan_backend_ != "cpu" && plan_backend_ != "cuda") {
      throw UserError(fmt::format("plan --backend {}: use cpu or cuda", plan_backend_));
    }
    if (plan_target_option_->count() > 0 && (plan_target_ == "cpu") != (plan_backend_ == "cpu")) {
      throw UserError(fmt::format("plan: --backend {} and --target {} disagree; give one", plan_backend_, plan_target_));
    }
    if (plan_backend_ == "cpu") plan_target_ = "cpu";
  }
  if (format_ == "html") {
    if (plan_explain_) throw UserError("--explain prints text; use it with --format text");
    ReportOptions o;
    o.graph_name = graph_name_;
    o.planner = plan_planner_;
    o.backend = plan_backend_.empty() ? "cpu" : plan_backend_;
    o.inputs.dims = plan_dims_;
    o.row_schedule = plan_rows_;
    return report_command(file_, o, output_);
  }
  return plan_command(file_, graph_name_, plan_planner_, format_, plan_dims_, output_, plan_explain_, plan_target_, plan_rows_);
}

}  // namespace stitch::cli
