// A plan lowered group by group (docs/pipeline.md, The lower stage): its
// kernels in launch order, the signatures of its library calls, and the
// launch list the back ends bind (runtime/common/launch_list.h).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "fusion/fusion_plan.h"
#include "kir/kernel.h"
#include "lower/lower_plan.h"
#include "runtime/common/launch_list.h"
#include "schedule/group_schedule.h"
#include "schedule/select.h"
#include "stitch/graph.h"

namespace stitch::pipeline {

using runtime::InterpretedGroup;
using runtime::LaunchStep;

// Kernel names are C identifiers and must be unique within a translation
// unit: "k_" + the graph's name with other characters as '_'.
std::string kernel_prefix(const std::string& graph_name);

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

// The ops of `group` as a graph of their own, for the interpreter (a group
// no compiler took: LoweredGroup::interpreted).
InterpretedGroup interpreted_group(const Graph& g, const FusionGroup& group, const std::string& name);

// The launch list of `lowered`: a step per kernel, library call or
// interpreted group, a dot's epilogue folded into the dot's step.
std::vector<LaunchStep> launch_steps(const Graph& g, const LoweredPlan& lowered);

// The test seams of a back end's compile options (reject_plan, reject_group
// of CpuCompileOptions and CudaCompileOptions, named by `options`): why the
// translation unit of `lowered` counts as rejected by its compiler, or ""
// when it does not.
std::string seam_rejection(const LoweredPlan& lowered, const std::function<bool(const FusionPlan&)>& reject_plan,
                           const std::function<bool(const FusionGroup&)>& reject_group, std::string_view options);

}  // namespace stitch::pipeline
