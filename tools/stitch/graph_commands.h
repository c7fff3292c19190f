// The subcommands over graphs (docs/cli.md): run, print, plan, report, emit,
// check and bench, their options declared on the CLI11 app, and the command
// the parsed line selects.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace stitch::cli {

class GraphCommands {
 public:
  // Adds the seven subcommands to `app`; the object must outlive its parse.
  explicit GraphCommands(CLI::App& app);
  GraphCommands(const GraphCommands&) = delete;
  GraphCommands& operator=(const GraphCommands&) = delete;

  // After the parse: the selected command's exit status, nullopt when the
  // line chose none of them; UserError (status 2) for options that
  // contradict each other.
  std::optional<int> run();

 private:
  void add_run(CLI::App& app);
  void add_print(CLI::App& app);
  void add_plan(CLI::App& app);
  void add_report(CLI::App& app);
  void add_emit(CLI::App& app);
  void add_check(CLI::App& app);
  void add_bench(CLI::App& app);
  int run_plan();

  CLI::App *run_ = nullptr, *print_ = nullptr, *plan_ = nullptr, *report_ = nullptr, *emit_ = nullptr,
           *check_ = nullptr, *bench_ = nullptr;
  // Shared by several commands.
  std::string file_, graph_name_;
  bool weave_ = false;
  // run
  std::string backend_ = "cpu", planner_, output_dir_, run_kernel_;
  bool print_values_ = false, run_tune_ = false;
  InputSpec inputs_;
  std::vector<std::string> run_scalars_;
  // print
  bool raw_ = false;
  // plan
  std::string plan_planner_ = "xla", format_ = "text", output_, plan_target_ = "sm_90", plan_backend_, plan_rows_;
  std::vector<std::string> plan_dims_;
  bool plan_explain_ = false;
  CLI::Option* plan_target_option_ = nullptr;
  // report
  ReportOptions report_options_;
  std::string report_output_;
  // emit
  std::string emit_backend_ = "cpu", emit_planner_ = "xla", emit_rows_;
  // check, bench
  std::vector<std::string> files_;
  CheckOptions check_options_;
  BenchOptions bench_options_;
};

}  // namespace stitch::cli
