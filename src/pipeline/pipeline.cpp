#include "pipeline/pipeline.h"

#include <fmt/format.h>

#include <algorithm>

#include "ir/attention_pattern.h"
#include "ir/canonicalize.h"
#include "ir/channels_last.h"
#include "ir/conv_epilogue.h"
#include "ir/composites_nn.h"
#include "ir/conv_expand.h"
#include "ir/split_reductions.h"
#include "ir/widen_floats.h"
#include "pipeline/group_fallback.h"
#include "stitch/error.h"
#include "stitch/text.h"

namespace stitch::pipeline {

namespace {

void canonicalize_stage(Compilation& c, const Backend&) { c.canonical = canonicalize(c.input); }

SplitReductionOptions split_options(const Compilation& c) {
  return c.target.machine == schedule::RowScheduleTarget::Machine::Cpu ? cpu_split_options() : gpu_split_options();
}

// Full reductions split so that they use every core or SM, and column
// reductions with too few columns to fill them (src/ir/split_reductions.h).
void split_stage(Compilation& c, const Backend&) { c.graph = split_full_reductions(c.canonical, split_options(c)); }

// Scaled-dot-product attention as one library call on the CPU; elsewhere an
// attention op (written, or from an earlier stage) becomes its composite,
// since no other back end has the call yet (ir/attention_pattern.h).
void attention_stage(Compilation& c, const Backend&) {
  if (c.target.machine != schedule::RowScheduleTarget::Machine::Cpu) {
    c.graph = expand_attention(c.graph);
  } else if (resolve_attention(c.plan_options)) {
    c.graph = fuse_attention(c.graph);
  }
}

// On the CPU, an f32 convolution runs as one oneDNN call
// (runtime/cpu/conv_call.h), channels-last with its layout transposes moved
// until they cancel (ir/channels_last.h). Channels-first, a depthwise conv
// becomes its composite instead (a sum of taps that fuses with its
// neighbours: oneDNN's im2col + gemm is slow for one channel a group), as
// does every conv on other back ends. A residual add and a ReLU or clamp
// after a call join it as oneDNN post-ops (ir/conv_epilogue.h).
void conv_stage(Compilation& c, const Backend&) {
  const bool calls = c.target.machine == schedule::RowScheduleTarget::Machine::Cpu && resolve_conv_calls(c.plan_options);
  const bool channels_last = calls && resolve_channels_last(c.plan_options);
  c.graph = expand_convs(c.graph, [calls, channels_last](const Graph& g, const Node& n) {
    const TensorType& x = g.type(n.inputs[0]);
    const Dim& channels = n.attrs.get("channels_last").as_bool() ? x.shape.back() : x.shape[1];
    const bool depthwise = is_depthwise_conv(channels, g.type(n.inputs[1]).shape, n.attrs.get("groups").as_int());
    return calls && x.dtype == DType::f32 && x.shape.size() <= 5 && (channels_last || !depthwise);
  });
  if (channels_last) c.graph = channels_last_convs(c.graph);
  if (calls) c.graph = fuse_conv_epilogues(c.graph);
}

// f16 and bf16 intermediates in f32 where the caller asks (ir/widen_floats.h).
// A reduction of narrow floats, left whole by the split stage (its partial
// totals would round to its dtype), now sums f32 values: split like any other.
void widen_stage(Compilation& c, const Backend&) {
  if (c.plan_options.f32_intermediates) c.graph = split_full_reductions(widen_narrow_floats(c.graph), split_options(c));
}

void plan_stage(Compilation& c, const Backend&) {
  c.search = {};
  PlanOptions options = c.plan_options;
  // Only the CPU executable runs dot epilogues (fusion/dot_epilogues.h).
  if (c.target.machine != schedule::RowScheduleTarget::Machine::Cpu) options.dot_epilogues = false;
  c.plan = stitch::plan(c.graph, c.planner, options, &c.search);
  if (c.plan_tuner) c.plan = c.plan_tuner(c.graph, c.plan, c.target);
}

void schedule_stage(Compilation& c, const Backend&) {
  if (c.tuner) {
    const std::vector<std::optional<schedule::GroupSchedule>> tuned = c.tuner(c.graph, c.plan, c.target);
    c.schedules = pipeline::schedule_plan(
        c.graph, c.plan, c.target,
        [&tuned](int group, const std::vector<schedule::GroupSchedule>&) { return tuned.at(static_cast<size_t>(group)); });
    return;
  }
  c.schedules = pipeline::schedule_plan(c.graph, c.plan, c.target, c.schedule_override);
}

std::string prefix_of(const Compilation& c) {
  return c.kernel_prefix.empty() ? kernel_prefix(c.graph.name()) : c.kernel_prefix;
}

void lower_stage(Compilation& c, const Backend& backend) {
  c.lowered = lower_whole_plan(c.graph, c.plan, c.schedules, prefix_of(c), c.target);
  if (!c.lowered.unsupported.empty()) throw UserError(unsupported_message(backend.name, c.lowered.unsupported));
}

void emit_stage(Compilation& c, const Backend& backend) {
  STITCH_ASSERT(backend.emit != nullptr, "the " + backend.name + " back end has no emitter");
  c.source = backend.emit(c.lowered.kernels);
}

// The ladder's first rung (group_fallback.h): the groups that do not build
// alone run as one kernel per op, the rest keep their fused kernels. True when
// that plan built (and is c's now); false leaves c for the next rung (the
// unfused plan rebuilds every stage it needs).
bool unfuse_failing_groups(Compilation& c, const Backend& backend, const std::string& what, std::string& note) {
  if (c.planner == PlannerKind::None) return false;
  const FailingGroups failing = locate_failing_groups(c, backend);
  if (failing.groups.empty()) return false;
  std::string groups;
  for (int gi : failing.groups) {
    const FusionGroup& group = c.plan.groups[static_cast<size_t>(gi)];
    groups += fmt::format("{}group {} ({} ops; {}: {})", groups.empty() ? "" : ", ", gi, group.nodes.size(),
                          group_kind_name(group.kind), describe_node(c.graph, group.roots.front()));
  }
  const std::string reason = "its fused group did not compile (fallback)";
  const int kept = static_cast<int>(std::count_if(c.lowered.groups.begin(), c.lowered.groups.end(),
                                                  [](const lower::LoweredGroup& l) { return l.kernel.has_value(); }) -
                                    failing.groups.size());
  c.plan = unfuse_groups(c.graph, c.plan, failing.groups, reason);
  schedule_stage(c, backend);
  lower_stage(c, backend);
  emit_stage(c, backend);
  c.fallback = fmt::format(
      "compiling the fused {} of graph '{}' (planner {}) failed: {} did not compile alone ({} builds to find it):\n{}\n"
      "its ops run as one kernel each; fused kernels kept: {}",
      what, c.graph.name(), planner_name(c.planner), groups, failing.builds, failing.error, kept);
  std::string error;
  if (!backend.build(c.source, c.lowered, error)) {
    // The second rung: what still fails alone runs on the interpreter.
    const FailingGroups still = interpret_failing_groups(c, backend);
    if (still.groups.empty() || !backend.build(c.source, c.lowered, error)) {
      note += fmt::format("with {} unfused, it failed again:\n{}\n", groups, error);
      return false;
    }
    std::string ops;
    for (int gi : still.groups) {
      ops += fmt::format("{}{}", ops.empty() ? "" : ", ",
                         describe_node(c.graph, c.plan.groups[static_cast<size_t>(gi)].roots.front()));
    }
    c.fallback += fmt::format("; of its ops, {} did not compile even alone ({} builds to find it):\n{}\nthe reference "
                              "interpreter runs {} (slow)",
                              ops, still.builds, still.error, still.groups.size() == 1 ? "it" : "them");
  }
  report_warning(c.warn, c.fallback);
  return true;
}

// The ladder of docs/executable.md (When the compiler rejects a plan): the planner's kernels, else
// the groups that fail unfused alone, else one kernel per op, else the
// reference interpreter, so a Stitch bug costs speed, never the result.
void compile_stage(Compilation& c, const Backend& backend) {
  STITCH_ASSERT(backend.build != nullptr, "the " + backend.name + " back end has no compiler");
  c.fallback.clear();
  c.interpret = false;
  std::string error;
  if (backend.build(c.source, c.lowered, error)) return;
  const std::string what = backend.name == "cpu" ? "kernels" : "CUDA kernels";
  std::string note = fallback_note(c.graph, c.planner, what, error);
  if (unfuse_failing_groups(c, backend, what, note)) return;
  if (c.planner != PlannerKind::None) {
    c.plan = plan_none(c.graph);
    c.search = {};
    schedule_stage(c, backend);
    lower_stage(c, backend);
    emit_stage(c, backend);
    if (backend.build(c.source, c.lowered, error)) {
      c.fallback = note + "falling back to the unfused plan (planner none)";
      report_warning(c.warn, c.fallback);
      return;
    }
    note += "the unfused plan failed too:\n" + error + "\n";
  }
  c.plan = plan_none(c.graph);
  c.schedules.clear();
  c.lowered = {};
  c.interpret = true;
  c.fallback = interpreter_note(c.graph, note);
  report_warning(c.warn, c.fallback);
}

std::string print_canonical(const Compilation& c) { return print_graph(c.canonical); }
std::string print_split(const Compilation& c) { return print_graph(c.graph); }
std::string print_plan_stage(const Compilation& c) { return print_plan(c.graph, c.plan); }
std::string print_schedule_stage(const Compilation& c) { return pipeline::print_schedules(c.graph, c.plan, c.schedules); }
std::string print_lower_stage(const Compilation& c) { return print_kernels(c.lowered.kernels); }
std::string print_emit_stage(const Compilation& c) { return c.source; }
std::string print_compile_stage(const Compilation& c) {
  if (c.interpret) return "compile: nothing compiled; the reference interpreter runs the graph\n";
  std::string out = fmt::format("compile: {} kernels loaded ({} back end)\n", c.lowered.kernels.size(),
                                c.target.machine == schedule::RowScheduleTarget::Machine::Cpu ? "cpu" : "cuda");
  for (const lower::LoweredGroup& l : c.lowered.groups) {
    if (l.interpreted) out += fmt::format("group {} runs on the reference interpreter\n", l.group);
  }
  if (!c.fallback.empty()) out += "after a fallback: " + c.fallback + "\n";
  return out;
}

}  // namespace

const std::vector<Stage>& pipeline_stages() {
  static const std::vector<Stage> stages = {
      {"canonicalize", "the graph in canonical form (ir/canonicalize.h)", canonicalize_stage, print_canonical},
      {"split-reductions", "full reductions and narrow column reductions split in two stages (ir/split_reductions.h)", split_stage,
       print_split},
      {"attention", "scaled-dot-product attention as one op on the CPU, its composite elsewhere (ir/attention_pattern.h)",
       attention_stage, print_split},
      {"conv", "convolutions as one op each on the CPU, their composite elsewhere (ir/conv_expand.h)", conv_stage,
       print_split},
      {"widen-floats", "with f32_intermediates, f16 and bf16 values computed in f32 between ops (ir/widen_floats.h)",
       widen_stage, print_split},
      {"plan", "which ops share a kernel (fusion/planner.h)", plan_stage, print_plan_stage},
      {"schedule", "one schedule per group (pipeline/schedule_groups.h)", schedule_stage, print_schedule_stage},
      {"lower", "every group's kernel in Kernel IR (lower/lower_plan.h)", lower_stage, print_lower_stage},
      {"emit", "the back end's translation unit (codegen/)", emit_stage, print_emit_stage},
      {"compile", "the translation unit compiled and loaded, with the fallback ladder", compile_stage,
       print_compile_stage},
  };
  return stages;
}

std::optional<size_t> stage_index(std::string_view name) {
  const std::vector<Stage>& stages = pipeline_stages();
  for (size_t i = 0; i < stages.size(); ++i) {
    if (stages[i].name == name) return i;
  }
  return std::nullopt;
}

void run_pipeline(Compilation& c, const Backend& backend, std::string_view first, std::string_view last,
                  const StageDump& dump) {
  const std::optional<size_t> from = stage_index(first), to = stage_index(last);
  STITCH_ASSERT(from && to && *from <= *to, fmt::format("run_pipeline: no stages {} .. {}", first, last));
  const std::vector<Stage>& stages = pipeline_stages();
  for (size_t i = *from; i <= *to; ++i) {
    stages[i].run(c, backend);
    if (dump.wants && dump.print && dump.wants(stages[i].name)) dump.print(stages[i].name, stages[i].print(c));
  }
}

Compilation compilation_of(Graph canonical, PlannerKind planner, const PlanOptions& plan_options,
                           const schedule::RowScheduleTarget& target) {
  Compilation c;
  c.input = canonical;
  c.canonical = std::move(canonical);
  c.planner = planner;
  c.plan_options = plan_options;
  c.target = target;
  return c;
}

LoweredBatch lower_batch(const std::vector<Graph>& canonical_graphs, const Compilation& settings,
                         const Backend& backend) {
  LoweredBatch batch;
  for (size_t i = 0; i < canonical_graphs.size(); ++i) {
    Compilation c = compilation_of(canonical_graphs[i], settings.planner, settings.plan_options, settings.target);
    c.schedule_override = settings.schedule_override;
    c.tuner = settings.tuner;
    c.plan_tuner = settings.plan_tuner;
    c.kernel_prefix = kernel_prefix(canonical_graphs[i].name()) + "_b" + std::to_string(i);
    try {
      run_pipeline(c, backend, "split-reductions", "lower");
    } catch (const UserError& e) {
      throw UserError(fmt::format("graph {} ('{}'): {}", i, canonical_graphs[i].name(), e.what()));
    }
    batch.kernels.insert(batch.kernels.end(), c.lowered.kernels.begin(), c.lowered.kernels.end());
    batch.graphs.push_back(std::move(c));
  }
  return batch;
}

}  // namespace stitch::pipeline
