// `stitch plan` and `stitch emit` (docs/cli.md): the fusion plan and the
// generated source, the two artefacts a user inspects before running.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <cctype>
#include <fstream>
#include <iostream>

#include "cli.h"
#include "fusion/cost_model.h"
#include "fusion/delta_evaluator.h"
#include "fusion/planner.h"
#include "gpu_model/analytic.h"
#include "pipeline/pipeline.h"
#include "pipeline/emit_route.h"
#include "report/report.h"
#include "schedule/plan_explain.h"
#include "stitch/text.h"

namespace stitch::cli {

namespace {

// Every value under the --dim bindings, the rest of the symbols at the cost
// model's default extent, must be within the limit on one tensor
// (docs/limits.md): the byte counts below then cannot wrap (cost_model.cpp).
void check_plan_sizes(const Graph& g, const SymbolBindings& given) {
  SymbolBindings bindings = given;
  std::string defaulted;
  for (int i = 0; i < g.num_values(); ++i) {
    for (const Dim& d : g.type(ValueId{i}).shape) {
      if (d.is_symbolic() && bindings.emplace(d.name(), FusionCostModel().default_extent()).second) {
        defaulted += (defaulted.empty() ? "" : ", ") + d.name();
      }
    }
  }
  for (int i = 0; i < g.num_values(); ++i) {
    const TensorType& t = g.type(ValueId{i});
    if (is_static(t.shape)) continue;  // checked when the graph was built
    try {
      check_bound_size(fmt::format("value '{}'", g.value_name(ValueId{i})), t, bindings);
    } catch (const UserError& e) {
      if (defaulted.empty()) throw;
      throw UserError(fmt::format("{} ({} not bound by --dim, counted as {})", e.what(), defaulted,
                                  FusionCostModel().default_extent()));
    }
  }
}

// print_plan's listing followed by what each kernel moves: the groups' kinds,
// nodes and roots come from the plan printer, the bytes from the cost model
// (symbols not bound by --dim take the model's default extent).
std::string plan_text(const Graph& g, const FusionPlan& plan, const FusionCostModel& model) {
  std::string out = print_plan(g, plan);
  for (size_t gi = 0; gi < plan.groups.size(); ++gi) {
    PlanCost c = model.group_cost(g, plan.groups[gi]);
    out += fmt::format("bytes group {}: {} read, {} written\n", gi, c.bytes_read, c.bytes_written);
  }
  PlanCost total = model.plan_cost(g, plan);
  if (total.bytes_moved() == INT64_MAX) {
    throw UserError(fmt::format("graph '{}': the plan's byte total does not fit in 64 bits (each value is within "
                                "the limit, but together they pass 2^63 bytes)", g.name()));
  }
  out += fmt::format("bytes total: {} read, {} written, {} kernels\n", total.bytes_read, total.bytes_written,
                     total.launches);
  return out;
}

// The plan as JSON (docs/cli.md, `stitch plan --format json`): the planner,
// every group with its kind, roots, ops, bytes, the cost model's predicted
// seconds and its schedule, the kernel count, the plan's predicted seconds,
// and what a searching planner found.
std::string plan_json(const Graph& g, const FusionPlan& plan, const SymbolBindings& bindings, PlannerKind kind,
                      const PlanSearchReport& search, const std::vector<schedule::GroupSchedule>& schedules,
                      const schedule::RowScheduleTarget& rows) {
  using nlohmann::json;
  const FusionCostModel bytes(bindings);
  const DeltaEvaluator evaluator(cpu_target_model(), bytes);
  json groups = json::array();
  double total = 0;
  for (size_t gi = 0; gi < plan.groups.size(); ++gi) {
    const FusionGroup& grp = plan.groups[gi];
    json ops = json::array();
    for (int n : grp.nodes) {
      ops.push_back({{"name", g.value_name(g.nodes()[n].output)}, {"op", op_name(g.nodes()[n].op)}});
    }
    json roots = json::array();
    for (int r : grp.roots) roots.push_back(g.value_name(g.nodes()[r].output));
    const schedule::GroupSchedule& s = schedules.at(gi);
    json sched = {{"kind", std::string(schedule::schedule_kind_name(s.kind))},
                  {"schedule", s.key()},
                  {"reason", s.reason}};
    if (s.kind == schedule::ScheduleKind::Row) sched["row"] = s.row.describe();
    if (s.kind == schedule::ScheduleKind::Column) sched["column"] = s.column.describe();
    if (s.shared_bytes > 0) {
      json cached = json::array();
      for (int n : s.cached) cached.push_back(g.value_name(g.nodes()[n].output));
      sched["shared_bytes"] = s.shared_bytes;
      sched["cached"] = cached;
    }
    const PlanCost cost = bytes.group_cost(g, grp);
    const double seconds = evaluator.group_seconds(g, grp);
    total += seconds;
    json entry = {{"index", gi},
                      {"kind", std::string(group_kind_name(grp.kind))},
                      {"roots", roots},
                      {"ops", ops},
                      {"bytes_read", cost.bytes_read},
                      {"bytes_written", cost.bytes_written},
                      {"predicted_seconds", seconds},
                      {"schedule", sched}};
    if (grp.epilogue_of >= 0) entry["epilogue_of"] = g.value_name(g.nodes()[grp.epilogue_of].output);
    groups.push_back(std::move(entry));
  }
  json unfused = json::array();
  for (const FusionRefusal& r : plan.refusals) {
    const bool siblings = r.relation == FusionRefusal::Relation::Siblings;
    unfused.push_back({{"relation", siblings ? "siblings" : "producer-consumer"},
                       {"producer", g.value_name(g.nodes()[r.producer].output)},
                       {"consumer", g.value_name(g.nodes()[r.consumer].output)},
                       {"cause", std::string(refusal_cause_name(r.cause))},
                       {"reason", r.reason}});
  }
  json doc = {{"graph", plan.graph_name},
              {"planner", plan.planner},
              {"kernels", plan.kernel_count()},
              {"predicted_seconds", total},
              {"cost_model", evaluator.target().name},
              {"schedule_target", rows.name()},
              {"groups", groups},
              {"unfused", unfused}};
  if (kind == PlannerKind::Stitch || kind == PlannerKind::Ilp) {
    json chosen = json::array();
    for (const ChosenPattern& p : search.chosen) {
      chosen.push_back({{"kernels", p.kernels}, {"score_seconds", p.score_seconds}, {"merged", p.merged}});
    }
    json s = {{"objective_seconds", search.objective},
              {"patterns_merged", search.patterns},
              {"patterns_scored", search.evaluations},
              {"patterns", chosen}};
    if (kind == PlannerKind::Ilp) {
      s["optimal"] = search.optimal;
      s["cycle_cuts"] = search.cycle_cuts;
      s["beam_fallback"] = search.beam_fallback;
      s["solve_seconds"] = search.solve_seconds;
    }
    doc["search"] = s;
  }
  return doc.dump(1) + "\n";
}

// What the search found (PlanSearchReport), one line; with `patterns`, then
// each chosen pattern's score and xla's kernels it joins.
std::string search_text(const PlanSearchReport& r, PlannerKind kind, bool patterns) {
  std::string out = fmt::format("search: {:.4g} us saved by the delta evaluator's estimate, {} patterns merged, {} scored",
                                r.objective * 1e6, r.patterns, r.evaluations);
  if (kind == PlannerKind::Ilp) {
    out += fmt::format("; CBC {} in {:.3g} s, {} cycle cuts", r.optimal ? "optimal" : "not proven optimal",
                       r.solve_seconds, r.cycle_cuts);
    if (r.beam_fallback) out += "; the DP + beam search's patterns scored higher and were used";
  }
  out += "\n";
  if (!patterns) return out;
  for (const ChosenPattern& p : r.chosen) {
    out += fmt::format("  pattern {:+.4g} us{}: {} of xla's kernels: {}\n", p.score_seconds * 1e6,
                       p.merged ? "" : " (left apart: it would close a cycle through another)", p.kernels.size(),
                       fmt::join(p.kernels, ", "));
  }
  return out;
}

}  // namespace

std::vector<std::string> row_schedule_option_values() {
  std::vector<std::string> values = schedule::row_schedule_kind_names();
  values.insert(values.begin(), "auto");
  return values;
}

std::optional<schedule::RowScheduleKind> forced_row_schedule(const std::string& name) {
  if (name.empty() || name == "auto") return std::nullopt;
  std::optional<schedule::RowScheduleKind> kind = schedule::parse_row_schedule_kind(name);
  if (!kind) {
    throw UserError(fmt::format("--row-schedule {}: use auto, block-per-row, warp-per-row or multi-row-per-warp", name));
  }
  return kind;
}

int plan_command(const std::string& file, const std::string& graph_name, const std::string& planner,
                 const std::string& format, const std::vector<std::string>& dims, const std::string& output,
                 bool explain, const std::string& target, const std::string& row_schedule) {
  if (format != "text" && format != "dot" && format != "json") {
    throw UserError(fmt::format("--format {}: use --format text, dot, json or html", format));
  }
  std::optional<schedule::GpuTarget> gpu = schedule::gpu_target(target);
  if (explain && format != "text") throw UserError("--explain prints text; use it with --format text");
  if (explain && !gpu && target != "cpu") {
    throw UserError(fmt::format("--target {}: no GPU table entry; use sm_80 or sm_90 (or cpu)", target));
  }
  const std::optional<schedule::RowScheduleKind> forced = forced_row_schedule(row_schedule);
  PlannerKind kind = implemented_planner(planner);
  SymbolBindings bindings = parse_dims(dims);
  Module m = load_module(file, nullptr);
  // The plan of the graph the CPU back end runs: the pipeline through its
  // schedule stage (full reductions split, src/ir/split_reductions.h), so this
  // is the plan `stitch run` executes; explained for a GPU --target, the plan
  // the CUDA back end makes (a block holds less of a row between phases,
  // PlanOptions), though with the CPU's target rewrite (a GPU's also splits
  // narrow column reductions: STITCH_DUMP=split-reductions on `stitch run
  // --backend cuda-sim` shows them).
  schedule::RowScheduleTarget rows = schedule::RowScheduleTarget::cpu();
  rows.forced = forced;
  const Graph& selected = select_graph(m, graph_name, file);
  check_plan_sizes(selected, bindings);
  pipeline::Compilation c = pipeline::compilation_of(canonicalize_with_dumps(selected), kind,
                                                   explain && gpu ? PlanOptions::for_gpu(gpu->arch) : PlanOptions{}, rows);
  // The JSON form gives each group's schedule; the others stop after planning.
  run_pipeline(c, pipeline::Backend{}, "split-reductions", format == "json" ? "schedule" : "plan", stage_dumps());
  const Graph& canonical = c.graph;
  const FusionPlan& fusion_plan = c.plan;
  const PlanSearchReport& search = c.search;
  std::string text;
  if (format == "json") {
    // The CPU's plan, as the text form prints it, with the CPU's schedules.
    text = plan_json(canonical, fusion_plan, bindings, kind, search, c.schedules, rows);
  } else if (format == "dot") {
    text = print_plan_dot(canonical, fusion_plan);
  } else {
    text = plan_text(canonical, fusion_plan, FusionCostModel(bindings));
    if (kind == PlannerKind::Stitch || kind == PlannerKind::Ilp) text += search_text(search, kind, explain);
  }
  if (explain && gpu) {
    schedule::RowScheduleTarget gpu_rows = gpu_model::with_row_model(schedule::RowScheduleTarget::gpu(gpu->arch));
    gpu_rows.forced = forced;
    text += schedule::explain_plan(canonical, fusion_plan, *gpu, bindings, 5, gpu_rows);
  }
  if (explain && !gpu) {
    text += schedule::explain_row_schedules(canonical, fusion_plan, rows, bindings);
  }
  return write_output(text, output);
}

int write_output(const std::string& text, const std::string& output) {
  if (output.empty()) {
    std::cout << text;
    return kExitOk;
  }
  std::ofstream out(output);
  out << text;
  out.close();
  if (!out) throw UserError(fmt::format("-o {}: cannot write the file", output));
  return kExitOk;
}

int emit_command(const std::string& file, const std::string& graph_name, const std::string& backend,
                 const std::string& planner, const std::string& row_schedule) {
  const std::optional<schedule::RowScheduleKind> forced = forced_row_schedule(row_schedule);
  if (backend != "cpu" && backend != "cuda") {
    throw UserError(fmt::format("--backend {}: that back end is not built yet; use --backend cpu or cuda", backend));
  }
  PlannerKind kind = implemented_planner(planner);
  Module m = load_module(file, nullptr);
  // The same pipeline `stitch run` compiles through, stopped after its emit stage.
  // The translation unit of the plan `stitch run` would execute on `backend`
  // (docs/cli.md, stitch emit): the pipeline through its emit stage, on the
  // CPU's target or a GPU's table entry (sm_90); dots are library calls, so
  // they have no kernel here.
  std::cout << pipeline::emitted_compilation(canonicalize_with_dumps(select_graph(m, graph_name, file)), kind, backend,
                                           forced, "", stage_dumps())
                   .source;
  return kExitOk;
}

}  // namespace stitch::cli
