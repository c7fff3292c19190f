#include "pipeline/lowered_plan.h"

#include <cctype>
#include <map>
#include <memory>
#include <utility>

#include <fmt/format.h>

#include "runtime/common/input_checks.h"
#include "stitch/error.h"
#include "stitch/text.h"

namespace stitch::pipeline {

std::string kernel_prefix(const std::string& graph_name) {
  std::string out = "k_";
  for (char c : graph_name) out += (std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  return out;
}

LoweredPlan lower_whole_plan(const Graph& g, FusionPlan plan, const std::vector<schedule::GroupSchedule>& schedules,
                             const std::string& prefix, const schedule::RowScheduleTarget& rows) {
  LoweredPlan out;
  out.groups = lower::lower_plan(g, plan, schedules, prefix, rows);
  for (lower::LoweredGroup& l : out.groups) {
    const FusionGroup& group = plan.groups[l.group];
    if (group.kind == GroupKind::Library) {
      l.signature = lower::loop_group_signature(g, group);
      continue;
    }
    if (l.kernel) {
      out.kernels.push_back(*l.kernel);
      continue;
    }
    if (out.unsupported.empty()) {
      std::string what = fmt::format("{}: {}", group_kind_name(group.kind),
                                     group.roots.empty() ? std::string("no roots") : describe_node(g, group.roots.front()));
      out.unsupported = fmt::format("group {} ({}): {}", l.group, what, l.not_lowered_reason);
    }
  }
  out.plan = std::move(plan);
  return out;
}

InterpretedGroup interpreted_group(const Graph& g, const FusionGroup& group, const std::string& name) {
  InterpretedGroup out{Graph(name), {}, {}};
  std::map<int, ValueId> mapped;  // value index in g -> value in out.graph
  // Parameters first (a graph's parameters precede its nodes).
  for (int n : group.nodes) {
    for (ValueId v : g.nodes()[static_cast<size_t>(n)].inputs) {
      const int producer = g.value(v).producer;
      if ((producer >= 0 && group.contains(producer)) || mapped.count(v.index)) continue;
      mapped.emplace(v.index, out.graph.add_param(g.value_name(v), g.type(v)));
      out.inputs.push_back(v);
    }
  }
  for (int n : group.nodes) {
    const Node& node = g.nodes()[static_cast<size_t>(n)];
    std::vector<ValueId> inputs;
    for (ValueId v : node.inputs) inputs.push_back(mapped.at(v.index));
    mapped.emplace(node.output.index, out.graph.add_node(node.op, std::move(inputs), node.attrs, g.type(node.output),
                                                         g.value_name(node.output), node.loc));
  }
  for (int r : group.roots) {
    const ValueId v = g.nodes()[static_cast<size_t>(r)].output;
    out.graph.add_output(g.value_name(v), mapped.at(v.index));
    out.outputs.push_back(v);
  }
  return out;
}

std::vector<LaunchStep> launch_steps(const Graph& g, const LoweredPlan& lowered) {
  std::vector<LaunchStep> steps;
  for (const lower::LoweredGroup& l : lowered.groups) {
    LaunchStep step;
    step.signature = l.signature;
    const FusionGroup& group = lowered.plan.groups[l.group];
    if (l.interpreted) {
      STITCH_ASSERT(group.epilogue_of < 0 && group.kind != GroupKind::Library,
                    "only a kernel of its own can be left to the interpreter");
      auto interpreted = std::make_shared<InterpretedGroup>(
          interpreted_group(g, group, fmt::format("{}_group{}", g.name(), l.group)));
      step.signature = {interpreted->inputs, interpreted->outputs, {}, false};
      step.interpreted = std::move(interpreted);
      steps.push_back(std::move(step));
      continue;
    }
    if (group.epilogue_of >= 0) {
      STITCH_ASSERT(!steps.empty() && steps.back().dot && steps.back().node == group.epilogue_of && !steps.back().epilogue,
                    "a dot epilogue does not follow its dot's step");
      steps.back().epilogue = &*l.kernel;
      steps.back().epilogue_signature = l.signature;
      const std::vector<int> arg = runtime::arg_reduction_nodes(g, group);
      steps.back().arg_reductions.insert(steps.back().arg_reductions.end(), arg.begin(), arg.end());
      continue;
    }
    if (group.kind == GroupKind::Library) {
      STITCH_ASSERT(group.nodes.size() == 1, "a library group holds exactly one dot");
      step.dot = true;
      step.node = group.nodes.front();
    } else {
      step.kernel = &*l.kernel;
    }
    step.arg_reductions = runtime::arg_reduction_nodes(g, group);
    steps.push_back(std::move(step));
  }
  return steps;
}

std::string seam_rejection(const LoweredPlan& lowered, const std::function<bool(const FusionPlan&)>& reject_plan,
                           const std::function<bool(const FusionGroup&)>& reject_group, std::string_view options) {
  if (reject_plan && reject_plan(lowered.plan)) {
    return fmt::format("the translation unit was rejected by {}::reject_plan (test seam)", options);
  }
  for (const lower::LoweredGroup& l : lowered.groups) {
    if (l.kernel && reject_group && reject_group(lowered.plan.groups[static_cast<size_t>(l.group)])) {
      return fmt::format("the kernel of group {} was rejected by {}::reject_group (test seam)", l.group, options);
    }
  }
  return "";
}

}  // namespace stitch::pipeline
