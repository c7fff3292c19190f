// What the CPU and CUDA executables share between planning and running
// (DESIGN.md, Runtime): a plan lowered group by group into kernels and
// library calls, and the run-time checks both back ends make before a launch
// so that they reject exactly the input the interpreter rejects.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fusion/fusion_plan.h"
#include "fusion/planner.h"
#include "kir/kernel.h"
#include "lower/lower_plan.h"
#include "schedule/select.h"
#include "stitch/error.h"
#include "stitch/graph.h"
#include "stitch/shape.h"

namespace stitch::runtime {

// Kernel names are C identifiers and must be unique within a translation
// unit: "k_" + the graph's name with other characters as '_'.
std::string kernel_prefix(const std::string& graph_name);

// Bytes of `v` once its symbols are bound.
int64_t value_bytes(const Graph& g, ValueId v, const SymbolBindings& bindings);

// A plan lowered group by group: a kernel for every loop, reduction,
// stitched and tile group, a signature for every library group (a dot), or
// the reason the first group does not lower.
struct LoweredPlan {
  FusionPlan plan;
  std::vector<lower::LoweredGroup> groups;
  std::vector<kir::Kernel> kernels;  // in launch order
  std::string unsupported;           // "" when every group lowers
};

LoweredPlan lower_whole_plan(const Graph& g, FusionPlan plan, const std::string& prefix,
                             const schedule::RowScheduleTarget& rows);

// One entry of a launch list, before a back end binds its entry point: a
// dot (a library call on `node`) or the kernel of its group.
struct LaunchStep {
  bool dot = false;
  int node = -1;                       // dot: the dot node
  const kir::Kernel* kernel = nullptr;  // otherwise, in the LoweredPlan
  lower::GroupSignature signature;     // values read and written
  // argmax/argmin nodes whose run-time extents are checked before the launch.
  std::vector<int> arg_reductions;
};
std::vector<LaunchStep> launch_steps(const Graph& g, const LoweredPlan& lowered);

// "--backend BACKEND cannot run this graph yet: REASON; use --backend interp".
std::string unsupported_message(const std::string& backend, const std::string& reason);

// The nodes of `group` whose run-time extents the caller checks before the
// launch (argmax/argmin over an axis that may be empty).
std::vector<int> arg_reduction_nodes(const Graph& g, const FusionGroup& group);

// A kernel met input the interpreter rejects (GroupSignature::status, which
// holds 1 + the node): the interpreter's UserError, naming the node.
[[noreturn]] void throw_rejected_input(const Graph& g, int node, const SymbolBindings& bindings);

// argmax/argmin over an axis that is empty at run time has no answer: the
// interpreter's UserError, word for word.
void check_arg_reduction_extent(const Graph& g, int node, const SymbolBindings& bindings);

// The texts of the fallback reports (build_with_fallback).
std::string fallback_note(const Graph& g, PlannerKind planner, const std::string& what, const std::string& error);
std::string interpreter_note(const Graph& g, const std::string& error);

// Every kernel's Kernel IR text, for STITCH_DUMP=kir.
std::string print_kernels(const std::vector<kir::Kernel>& kernels);

// Many graphs lowered for one translation unit (compile_batch): each graph
// after split_full_reductions, its plan under `planner` and its kernels
// (prefixed "<graph>_b<i>" so names stay unique), all kernels in order.
// Throws UserError naming the first graph that does not lower.
struct LoweredBatch {
  std::vector<Graph> graphs;
  std::vector<LoweredPlan> plans;
  std::vector<kir::Kernel> kernels;
};
LoweredBatch lower_batch(const std::vector<Graph>& canonical_graphs, PlannerKind planner,
                         const PlanOptions& plan_options, const schedule::RowScheduleTarget& rows,
                         const std::string& backend);

// `warn` with the message, or "stitch: warning: MESSAGE" on stderr without one.
void report_warning(const std::function<void(const std::string&)>& warn, const std::string& message);

// The ladder both executables climb down when generated code does not
// compile (docs/executable.md, Fallback): the planner's kernels, else one
// kernel per op, else the reference interpreter, so a Stitch bug costs speed,
// never the result. `build` returns nullptr and sets its error string when
// the compiler rejects a plan; `what` names the kernels in the report
// ("kernels", "CUDA kernels"). Compiled needs `plan`, `fallback` and
// `interpret` members.
template <class Compiled>
std::shared_ptr<Compiled> build_with_fallback(
    const Graph& g, PlannerKind planner, const LoweredPlan& lowered, const schedule::RowScheduleTarget& rows,
    const std::string& what, const std::function<std::shared_ptr<Compiled>(const LoweredPlan&, std::string&)>& build,
    const std::function<void(const std::string&)>& warn) {
  std::string error;
  std::shared_ptr<Compiled> compiled = build(lowered, error);
  if (!compiled && planner != PlannerKind::None) {
    std::string note = fallback_note(g, planner, what, error);
    LoweredPlan unfused = lower_whole_plan(g, plan_none(g), kernel_prefix(g.name()), rows);
    STITCH_ASSERT(unfused.unsupported.empty(), "the unfused plan lowers whenever the fused one does");
    compiled = build(unfused, error);
    if (compiled) {
      compiled->fallback = note + "falling back to the unfused plan (planner none)";
      report_warning(warn, compiled->fallback);
    } else {
      note += "the unfused plan failed too:\n" + error + "\n";
    }
    error = note;
  }
  if (!compiled) {
    compiled = std::make_shared<Compiled>();
    compiled->plan = plan_none(g);
    compiled->interpret = true;
    compiled->fallback = interpreter_note(g, error);
    report_warning(warn, compiled->fallback);
  }
  return compiled;
}

}  // namespace stitch::runtime
