// What the CPU and CUDA executables share between planning and running
// (DESIGN.md, Runtime): a plan lowered group by group into kernels and
// library calls, and the run-time checks both back ends make before a launch
// so that they reject exactly the input the interpreter rejects.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "fusion/fusion_plan.h"
#include "fusion/planner.h"
#include "kir/kernel.h"
#include "lower/lower_plan.h"
#include "runtime/common/buffer_plan.h"
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

// `plan` lowered as `schedules` say (lower::lower_plan).
LoweredPlan lower_whole_plan(const Graph& g, FusionPlan plan, const std::vector<schedule::GroupSchedule>& schedules,
                             const std::string& prefix, const schedule::RowScheduleTarget& rows);

// One entry of a launch list, before a back end binds its entry point: a
// dot (a library call on `node`) or the kernel of its group.
// A dot with an epilogue (fusion/dot_epilogues.h) is one step: the dot's
// call runs `epilogue` a range of its blocks after each panel of rows.
struct LaunchStep {
  bool dot = false;
  int node = -1;                       // dot: the dot node
  const kir::Kernel* kernel = nullptr;  // otherwise, in the LoweredPlan
  lower::GroupSignature signature;     // values read and written
  // argmax/argmin nodes whose run-time extents are checked before the launch.
  std::vector<int> arg_reductions;
  // dot: its epilogue's kernel and signature, or nullptr.
  const kir::Kernel* epilogue = nullptr;
  lower::GroupSignature epilogue_signature;
};
std::vector<LaunchStep> launch_steps(const Graph& g, const LoweredPlan& lowered);

// The values a launch step reads and writes, for the buffer plan.
StepValues signature_values(const lower::GroupSignature& signature);
// A dot step with its epilogue: what the two read (less the dot's result,
// which the step writes) and write.
StepValues signature_values(const lower::GroupSignature& dot, const lower::GroupSignature& epilogue);

// The values a step reads and writes: a `Step` has `signature` and
// `epilogue_signature` (empty unless a dot has an epilogue).
template <class Step>
StepValues step_values(const Step& step) {
  if (step.epilogue_signature.outputs.empty()) return signature_values(step.signature);
  return signature_values(step.signature, step.epilogue_signature);
}

// Where a dot epilogue's block ranges stop (fusion/dot_epilogues.h): panels
// of about `panel_bytes` of the dot's result, each a whole number of blocks
// of `panel_elements` that starts and ends on a row of the dot (of
// `row_length` elements, `rows` in all), so that panels are independent: a
// panel computes its rows and runs its blocks, which read only those rows.
// Panels shrink below `panel_bytes` where that gives at least `min_panels`
// (so every thread has work); when blocks and rows only meet at the end, one
// panel. Pure, so tests pin it.
struct DotPanel {
  int64_t first_block = 0, end_block = 0;  // the epilogue's blocks [first, end)
  int64_t first_row = 0, end_row = 0;      // the dot's rows [first, end) they read
};
std::vector<DotPanel> dot_panels(int64_t rows, int64_t row_length, int64_t panel_elements, int64_t element_bytes,
                                 int64_t panel_bytes, int64_t min_panels = 1);

// When each intermediate of a launch list lives (buffer_plan.h): every value
// a step writes, except the graph's parameters and the values `output_slot`
// (value index -> result slot) sends to the result tensors. `Step` needs a
// `signature`.
template <class Step>
Lifetimes launch_lifetimes(const Graph& g, const std::vector<Step>& steps, const std::map<int, size_t>& output_slot) {
  std::set<int> external;
  for (const auto& [value, slot] : output_slot) external.insert(value);
  for (ValueId p : g.params()) external.insert(p.index);
  std::vector<StepValues> values;
  for (const Step& step : steps) values.push_back(step_values(step));
  return plan_lifetimes(values, external);
}

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

// The texts of the fallback reports (the compile stage, pipeline.h).
std::string fallback_note(const Graph& g, PlannerKind planner, const std::string& what, const std::string& error);
std::string interpreter_note(const Graph& g, const std::string& error);

// Every kernel's Kernel IR text, for STITCH_DUMP=kir.
std::string print_kernels(const std::vector<kir::Kernel>& kernels);

// `warn` with the message, or "stitch: warning: MESSAGE" on stderr without one.
void report_warning(const std::function<void(const std::string&)>& warn, const std::string& message);

}  // namespace stitch::runtime
