// The compile pipeline (docs/pipeline.md): one ordered table of named stages
// over one compilation state, from a graph to loaded kernels:
//
//   canonicalize -> split-reductions -> attention -> conv -> widen-floats -> plan -> schedule -> lower
//   -> emit -> compile
//
// Every caller that turns a graph into kernels runs it: both executables,
// `stitch plan` (through schedule), `stitch emit` (through emit), `check` and
// `bench` (through the executables). STITCH_DUMP=<stage> prints the state
// each stage leaves. A back end plugs in what differs (Backend): its emitter,
// its compiler, and the target the schedules are chosen for.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fusion/fusion_plan.h"
#include "fusion/planner.h"
#include "kir/kernel.h"
#include "pipeline/schedule_groups.h"
#include "options/options.h"
#include "pipeline/compile_notes.h"
#include "pipeline/lowered_plan.h"
#include "schedule/group_schedule.h"
#include "schedule/select.h"
#include "stitch/graph.h"

namespace stitch::pipeline {

// What a back end gives the pipeline.
struct Backend {
  std::string name = "cpu";  // "cpu" | "cuda": in messages and the "unsupported" report
  // The emit stage: one translation unit of the kernels, in launch order.
  std::function<std::string(const std::vector<kir::Kernel>&)> emit;
  // The compile stage: compiles and loads `source` for the plan `lowered`;
  // false and a message in `error` when the compiler rejects it. Null: the
  // pipeline stops after emit.
  std::function<bool(const std::string& source, const LoweredPlan& lowered, std::string& error)> build;
};

// The state the stages read and write, in stage order.
struct Compilation {
  // Inputs.
  Graph input;  // as parsed or built
  PlannerKind planner = PlannerKind::Xla;
  PlanOptions plan_options;
  schedule::RowScheduleTarget target = schedule::RowScheduleTarget::cpu();
  std::string kernel_prefix;  // "" : pipeline::kernel_prefix(graph name)
  // Replaces a group's default schedule (tests force candidates with it).
  pipeline::ScheduleOverride schedule_override;
  // Per group, a measured schedule or nullopt for the default
  // (tune/schedule_tuner.h); the schedule stage asks it once for the whole
  // plan, so all its measurements share one compile. Takes precedence over
  // schedule_override.
  using Tuner = std::function<std::vector<std::optional<schedule::GroupSchedule>>(
      const Graph&, const FusionPlan&, const schedule::RowScheduleTarget&)>;
  Tuner tuner;
  // Settles contested fusion decisions by measurement (tune/fusion_tuner.h):
  // the plan stage's plan, refined; unset: the planner's plan as it is.
  using PlanTuner = std::function<FusionPlan(const Graph&, const FusionPlan&, const schedule::RowScheduleTarget&)>;
  PlanTuner plan_tuner;
  // Where the compile stage's fallback report goes (report_warning).
  std::function<void(const std::string&)> warn;

  // canonicalize, split-reductions, attention, conv
  Graph canonical;
  Graph graph;  // the graph that runs; plan and every later stage index its nodes
  // plan
  FusionPlan plan;
  PlanSearchReport search;  // the stitch and ilp planners' search
  // schedule
  std::vector<schedule::GroupSchedule> schedules;
  // lower
  LoweredPlan lowered;
  // emit
  std::string source;
  // compile: what runs. Set when the fused kernels did not compile: the
  // fallback report; `interpret` when nothing compiled and the reference
  // interpreter runs the graph (docs/executable.md, When the compiler rejects a plan).
  std::string fallback;
  bool interpret = false;
};

// After each stage that `wants` names, `print` gets the stage's name and the
// state's text for it (STITCH_DUMP); the text is made only when wanted.
struct StageDump {
  std::function<bool(std::string_view stage)> wants;
  std::function<void(std::string_view stage, const std::string& text)> print;
};

struct Stage {
  std::string_view name;
  std::string_view summary;  // one line for docs and --help
  void (*run)(Compilation& c, const Backend& backend);
  std::string (*print)(const Compilation& c);  // what STITCH_DUMP=<name> prints
};

// The table, in order.
const std::vector<Stage>& pipeline_stages();
// Index of `name` in the table; nullopt for an unknown stage.
std::optional<size_t> stage_index(std::string_view name);

// Runs the stages from `first` through `last` (inclusive, by name) on `c`,
// dumping each stage `dump` wants. A stage that cannot go on throws: the lower stage a
// UserError naming the first group the back end cannot lower.
void run_pipeline(Compilation& c, const Backend& backend, std::string_view first, std::string_view last,
                  const StageDump& dump = {});

// A fresh state for `canonical`, a graph already in canonical form, so a
// caller starts at "split-reductions" (a temporary is moved in: one copy).
Compilation compilation_of(Graph canonical, PlannerKind planner, const PlanOptions& plan_options,
                           const schedule::RowScheduleTarget& target);

// Many canonical graphs through the lower stage for one translation unit
// (compile_batch): `settings` gives planner, options and target; each
// graph's kernels are named "<graph prefix>_b<i>" so names stay unique.
// Throws UserError naming the first graph that does not lower.
struct LoweredBatch {
  std::vector<Compilation> graphs;
  std::vector<kir::Kernel> kernels;  // every graph's, in order
};
LoweredBatch lower_batch(const std::vector<Graph>& canonical_graphs, const Compilation& settings,
                         const Backend& backend);

// What a back end's compiled form takes from a state the compile stage has
// finished: the source, the fallback report, whether the interpreter runs,
// the plan that runs, and (unless interpreting) the launch list
// `make_steps(graph, lowered)` builds. Compiled needs `source`, `fallback`,
// `interpret`, `plan` and `steps`.
template <class Compiled, class MakeSteps>
void take_compiled(Compiled& compiled, const Compilation& c, MakeSteps&& make_steps) {
  compiled.source = c.source;
  compiled.fallback = c.fallback;
  compiled.interpret = c.interpret;
  if (c.interpret) {
    compiled.plan = c.plan;
    return;
  }
  compiled.steps = make_steps(c.graph, c.lowered);
  compiled.plan = c.lowered.plan;
}

// STITCH_DUMP's names and lists (options/options.h).
using stitch::dump_list_matches;
using stitch::dump_stage_matches;

}  // namespace stitch::pipeline
