// The fusion report (docs/report.md): what the pipeline decided for one graph
// on one back end, gathered into plain values that the HTML page renders
// (html_report.h): each kernel with its ops, schedule, shared-memory plan,
// bytes, predicted time and source; each unfused neighbour with its reason;
// and, when the graph was run, the measured (or, on the simulated GPU, the
// GPU model's) time of every launch.
#pragma once

#include <cstdint>
#include <future>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fusion/planner.h"
#include "report/graph_drawing.h"
#include "pipeline/emit_route.h"
#include "pipeline/pipeline.h"
#include "schedule/select.h"
#include "stitch/graph.h"

namespace stitch::report {

// One group of the plan: a kernel, a library call, or a dot's epilogue.
struct KernelEntry {
  int group = -1;
  // The kernel's name ("k_softmax_g1"); a library call's launch-list label
  // ("dot logits"). Timed steps are matched to entries by it.
  std::string name;
  std::string kind;               // group_kind_name
  std::vector<std::string> ops;   // "y = exp(x)", in node order
  std::vector<std::string> roots; // values the kernel writes
  std::string epilogue_of;        // the dot whose call runs this kernel, or ""
  std::string schedule;           // GroupSchedule::key(), "" for a library call
  std::string schedule_reason;
  std::string shared_memory;      // the stitched kernel's shared-memory plan, "" for none
  std::string not_lowered;        // why the group has no kernel (then it cannot run fused)
  int64_t bytes_read = 0, bytes_written = 0;
  double predicted_s = 0;         // the report's prediction (Report::predicted_by)
  // On a GPU back end, a row group's time by the GPU model's analytical form
  // for its schedule (Report::model_name), which then is predicted_s too.
  bool predicted_by_model = false;
  std::string source;             // the generated kernel, "" for a library call
  // With --run: the launch's time, and its bytes' rate against a copy's.
  std::optional<double> measured_s;
  std::optional<double> of_copy;
};

struct RefusalEntry {
  std::string relation;  // "producer-consumer" or "siblings"
  std::string producer, consumer;
  // The producer's home group; the group that writes the consumer, else the first that computes it.
  int producer_group = -1, consumer_group = -1;
  std::string cause;  // illegal, budget, unprofitable
  std::string reason;
};

// One launch in the order the back end ran (or would run) them.
struct TimelineStep {
  std::string label;
  int entry = -1;  // index into Report::kernels, -1 when unmatched
  double seconds = 0;
};

struct Report {
  std::string file, graph_name, planner, backend;
  std::string anchor;        // prefix of the page's ids for this graph ("" alone on a page)
  std::string predicted_by;  // whose predictions KernelEntry::predicted_s holds
  std::string model_name;    // the GPU model's target, when row groups have its times ("h200")
  std::string graph_text;    // the graph that runs, in the text format
  std::string dot;           // the drawing's Graphviz source (graph_drawing.h)
  // Graphviz's layout of `dot`, started by collect_report on its own thread
  // while the kernels' sources are generated; invalid: not started.
  std::shared_future<Drawing> drawing;
  std::vector<KernelEntry> kernels;  // in plan order
  std::vector<RefusalEntry> refusals;
  std::string search;        // what a searching planner found, "" for others
  std::vector<std::string> notes;  // what the reader must know first: a fallback, an op left out
  // With --run: every launch in order, what the times are ("measured: mean
  // of 10 runs on ..."), the run's own time and the copy it is compared with.
  std::vector<TimelineStep> timeline;
  std::string timeline_source;
  bool run_predicted = false;  // the run's times are the GPU model's (cuda-sim), not measured
  std::optional<double> measured_total_s;
  std::optional<double> copy_gbps;
};

// The report of `canonical` (a canonical graph) under `planner` on `backend`
// ("cpu", "cuda" or "cuda-sim", which plans as "cuda" with its rows ranked
// for `model_target`, pipeline::emitted_compilation): nothing is run; the
// times are the delta evaluator's for the back end's target, symbols not in
// `bindings` at the cost model's default extent. A group the back end cannot
// lower is reported with its reason and no source. `anchor` prefixes the
// page's ids (render_body).
Report collect_report(const Graph& canonical, PlannerKind planner, const std::string& backend,
                      const SymbolBindings& bindings = {},
                      std::optional<schedule::RowScheduleKind> forced = std::nullopt, const std::string& anchor = "",
                      const std::string& model_target = "");

// Puts the timed launches of a run in `report`: the timeline in launch
// order, each entry's time (a dot's epilogue gets its share of the dot's
// step) and, given `copy_gbps` > 0, its fraction of a copy's rate.
struct TimedStep {
  std::string label;  // the kernel's name, or a library call's label ("dot y + k_g_g3")
  double seconds = 0;
  double epilogue_seconds = 0;  // a dot step's epilogue kernel, part of `seconds`
};
void add_run(Report& report, const std::vector<TimedStep>& steps, const std::string& source, double total_s,
             double copy_gbps);

}  // namespace stitch::report
