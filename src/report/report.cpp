#include "report/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <map>
#include <thread>
#include <vector>

#include "fusion/cost_model.h"
#include "fusion/delta_evaluator.h"
#include "schedule/group_shared_memory.h"
#include "stitch/error.h"
#include "stitch/text.h"

namespace stitch::report {

namespace {

std::string value_of(const Graph& g, int node) { return g.value_name(g.nodes()[node].output); }

std::string shared_memory_text(const Graph& g, const schedule::GroupSchedule& s) {
  if (s.shared_memory) return schedule::print_group_shared_memory(*s.shared_memory);
  if (s.shared_bytes == 0) return "";
  std::string cached;
  for (int n : s.cached) cached += (cached.empty() ? "" : ", ") + value_of(g, n);
  return fmt::format("{} bytes; rows cached: {}", s.shared_bytes, cached.empty() ? "none" : cached);
}

// The launch-list label of a library group: "<op> <result>", as the CPU
// executable's step times name it.
std::string library_label(const Graph& g, const FusionGroup& grp) {
  const Node& n = g.nodes()[grp.roots.front()];
  return fmt::format("{} {}", op_name(n.op), g.value_name(n.output));
}

KernelEntry kernel_entry(const pipeline::Compilation& c, size_t gi, const DeltaEvaluator& evaluator,
                         const FusionCostModel& bytes) {
  const Graph& g = c.graph;
  const FusionGroup& grp = c.plan.groups[gi];
  KernelEntry e;
  e.group = static_cast<int>(gi);
  e.kind = std::string(group_kind_name(grp.kind));
  for (int n : grp.nodes) e.ops.push_back(describe_node(g, n));
  for (int r : grp.roots) e.roots.push_back(value_of(g, r));
  if (grp.epilogue_of >= 0) e.epilogue_of = value_of(g, grp.epilogue_of);
  const PlanCost cost = bytes.group_cost(g, grp);
  e.bytes_read = cost.bytes_read;
  e.bytes_written = cost.bytes_written;
  e.predicted_s = evaluator.group_seconds(g, grp);
  if (grp.kind == GroupKind::Library) {
    e.name = library_label(g, grp);
    return e;
  }
  if (gi < c.schedules.size()) {
    const schedule::GroupSchedule& s = c.schedules[gi];
    e.schedule = s.key();
    e.schedule_reason = s.reason;
    e.shared_memory = shared_memory_text(g, s);
  }
  // One lowered entry per group, in plan order (lower::lower_plan).
  const lower::LoweredGroup& l = c.lowered.groups.at(gi);
  STITCH_ASSERT(l.group == e.group, "the lowered groups follow the plan's order");
  if (l.kernel) {
    e.name = l.kernel->name;
  } else {
    e.not_lowered = l.not_lowered_reason;
  }
  return e;
}

// The group that writes `node`, else the first that computes it (a
// consumer left apart need not be written: broadcast inside its reader).
int group_computing(const FusionPlan& plan, int node) {
  const int home = plan.home_group(node);
  if (home >= 0) return home;
  const std::vector<int> groups = plan.groups_containing(node);
  return groups.empty() ? -1 : groups.front();
}

// Each lowered kernel's source in its entry, generated on every core (a
// 500-node graph's 62 stitched kernels took 1.3 s on one).
void add_sources(Report& r, const pipeline::Compilation& c, const std::string& backend) {
  std::vector<std::pair<KernelEntry*, const kir::Kernel*>> work;
  for (const lower::LoweredGroup& l : c.lowered.groups) {
    if (l.kernel) work.emplace_back(&r.kernels.at(static_cast<size_t>(l.group)), &*l.kernel);
  }
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < work.size(); i = next++) work[i].first->source = pipeline::kernel_source(*work[i].second, backend);
  };
  const size_t threads = std::min<size_t>(std::max(1u, std::thread::hardware_concurrency()), work.size());
  std::vector<std::future<void>> running;
  for (size_t t = 1; t < threads; ++t) running.push_back(std::async(std::launch::async, worker));
  worker();
  for (std::future<void>& f : running) f.get();
}

// On a GPU target with the GPU model (gpu_model::with_row_model), each row
// group's time by the model's analytical form for the schedule it takes.
void add_model_times(Report& r, const pipeline::Compilation& c, const SymbolBindings& bindings) {
  if (!c.target.model) return;
  for (KernelEntry& e : r.kernels) {
    const FusionGroup& grp = c.plan.groups[static_cast<size_t>(e.group)];
    if (grp.kind != GroupKind::Reduction && grp.kind != GroupKind::Stitched) continue;
    const std::optional<schedule::RowScheduleChoice> choice =
        schedule::choose_row_schedule(c.graph, grp, c.target, bindings);
    if (!choice || choice->model_seconds <= 0) continue;
    e.predicted_s = choice->model_seconds;
    e.predicted_by_model = true;
    r.model_name = c.target.model_name;
  }
  if (!r.model_name.empty()) {
    r.predicted_by += fmt::format("; row groups marked ᵐ by the {} GPU model's analytical form for their schedule "
                                  "(docs/gpu-model.md)", r.model_name);
  }
}

}  // namespace

Report collect_report(const Graph& canonical, PlannerKind planner, const std::string& backend,
                      const SymbolBindings& bindings, std::optional<schedule::RowScheduleKind> forced,
                      const std::string& anchor, const std::string& model_target) {
  const std::string plans_as = backend == "cuda-sim" ? "cuda" : backend;
  pipeline::Compilation c = pipeline::emitted_compilation(canonical, planner, plans_as, forced, model_target, {}, "lower");
  Report r;
  r.graph_name = canonical.name();
  r.planner = std::string(planner_name(planner));
  r.backend = backend;
  r.anchor = anchor;
  const FusionCostModel bytes(bindings);
  const DeltaEvaluator evaluator(plans_as == "cuda" ? gpu_target_model() : cpu_target_model(), bytes);
  r.predicted_by = fmt::format("the delta evaluator's latency model ({})", evaluator.target().name);
  r.graph_text = print_graph(c.graph);
  r.dot = plan_drawing(c.graph, c.plan, anchor);
  // `dot` runs in its own process; the kernels' sources are generated meanwhile.
  r.drawing = std::async(std::launch::async, draw_svg, r.dot).share();
  for (size_t gi = 0; gi < c.plan.groups.size(); ++gi) {
    r.kernels.push_back(kernel_entry(c, gi, evaluator, bytes));
  }
  add_sources(r, c, plans_as);
  add_model_times(r, c, bindings);
  for (const FusionRefusal& f : c.plan.refusals) {
    const bool siblings = f.relation == FusionRefusal::Relation::Siblings;
    r.refusals.push_back({siblings ? "siblings" : "producer-consumer", value_of(c.graph, f.producer),
                          value_of(c.graph, f.consumer), c.plan.home_group(f.producer), group_computing(c.plan, f.consumer),
                          std::string(refusal_cause_name(f.cause)), f.reason});
  }
  if (!c.lowered.unsupported.empty()) {
    r.notes.push_back(fmt::format("The {} back end cannot lower every group, so this plan does not run fused: {}",
                                  plans_as, c.lowered.unsupported));
  }
  if (planner == PlannerKind::Stitch || planner == PlannerKind::Ilp) {
    r.search = fmt::format("{:.4g} us saved by the delta evaluator's estimate; {} patterns merged, {} scored",
                           c.search.objective * 1e6, c.search.patterns, c.search.evaluations);
  }
  return r;
}

void add_run(Report& report, const std::vector<TimedStep>& steps, const std::string& source, double total_s,
             double copy_gbps) {
  std::map<std::string, int> by_name;
  for (size_t i = 0; i < report.kernels.size(); ++i) by_name[report.kernels[i].name] = static_cast<int>(i);
  auto credit = [&](int entry, double seconds) {
    KernelEntry& e = report.kernels[static_cast<size_t>(entry)];
    e.measured_s = e.measured_s.value_or(0) + seconds;
    const double rate = static_cast<double>(e.bytes_read + e.bytes_written) / *e.measured_s / 1e9;
    if (copy_gbps > 0 && *e.measured_s > 0) e.of_copy = rate / copy_gbps;
  };
  report.timeline.clear();
  for (const TimedStep& s : steps) {
    // A dot with an epilogue is one step, "dot y + k_g_g3": the dot and its kernel.
    const size_t plus = s.label.find(" + ");
    const std::string head = plus == std::string::npos ? s.label : s.label.substr(0, plus);
    auto it = by_name.find(head);
    const int entry = it == by_name.end() ? -1 : it->second;
    report.timeline.push_back({s.label, entry, s.seconds});
    if (entry >= 0) credit(entry, s.seconds - s.epilogue_seconds);
    if (plus != std::string::npos) {
      auto epilogue = by_name.find(s.label.substr(plus + 3));
      if (epilogue != by_name.end()) credit(epilogue->second, s.epilogue_seconds);
    }
  }
  report.timeline_source = source;
  report.measured_total_s = total_s;
  if (copy_gbps > 0) report.copy_gbps = copy_gbps;
}

}  // namespace stitch::report
