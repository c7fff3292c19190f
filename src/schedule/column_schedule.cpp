#include "schedule/column_schedule.h"

#include <cstdio>

#include <fmt/format.h>

#include "fusion/index_tags.h"
#include "schedule/candidates.h"
#include "schedule/plan_explain.h"
#include "schedule/template.h"

namespace stitch::schedule {
namespace {

bool has_arg_root(const Graph& g, const FusionGroup& group) {
  for (int r : group.roots) {
    const OpKind op = g.nodes()[static_cast<size_t>(r)].op;
    if (op == OpKind::ArgMax || op == OpKind::ArgMin) return true;
  }
  return false;
}

// The schedule a ranked candidate stands for, when the lowering implements it.
std::optional<ColumnSchedule> lowered_schedule(const KernelCandidate& k) {
  ColumnSchedule s;
  const std::string text = print_template(k.schedule);
  if (k.strategy == "thread-per-column") {
    // A GPU's thread per column keeps blocks of 256 (the ranking's block
    // size for it is not taken yet).
    return s;
  }
  long long groups = 0, width = 0;
  if (k.strategy == "block-tile-column" &&
      std::sscanf(text.c_str(), "[THREAD-CTA_%lld,GRID-CTA_%lld];", &groups, &width) == 2) {
    s.groups = groups;
    s.width = width;
    return s;
  }
  return std::nullopt;
}

// The CPU's block width: every kept column after the last reduced axis (C of
// an [L, C] column reduction, or of [A, L, C] over L) when C is static and at
// most kCpuMaxColumnWidth, so that a block's thread loop reads whole rows of C
// contiguous elements with no clamp and no remainder by C; else 256. With the
// row split of split_reductions.h, a block is then one part's rows.
int64_t cpu_column_width(const Graph& g, const FusionGroup& group) {
  constexpr int64_t kCpuMaxColumnWidth = 2048;
  const Node& root = g.nodes()[static_cast<size_t>(group.roots.front())];
  const std::vector<size_t> axes = reduced_axes(g, root);
  const Shape& in = g.type(root.inputs[0]).shape;
  if (axes.empty()) return kColumnWidth;
  int64_t c = 1;
  for (size_t d = axes.back() + 1; d < in.size(); ++d) {
    if (in[d].is_symbolic()) return kColumnWidth;
    c *= in[d].extent();
  }
  return c >= 8 && c <= kCpuMaxColumnWidth && c % kColumnWidth != 0 ? c : kColumnWidth;
}

}  // namespace

std::string ColumnSchedule::template_text() const {
  return tiled() ? fmt::format("[THREAD-CTA_{},GRID-CTA_{}];", groups, width) : fmt::format("[THREAD,GRID-CTA_{}];", width);
}

std::string ColumnSchedule::describe() const {
  return fmt::format("{} {} {} threads", tiled() ? "block-tile-column" : "thread-per-column", template_text(), threads());
}

std::optional<ColumnScheduleChoice> choose_column_schedule(const Graph& g, const FusionGroup& group,
                                                           const RowScheduleTarget& target,
                                                           const SymbolBindings& bindings) {
  if (group.kind != GroupKind::Reduction) return std::nullopt;
  // Reductions over middle axes are not ranked (describe_group says why) but
  // take the column path all the same.
  auto described = describe_group(g, group, bindings);
  const GroupDescription* d = std::get_if<GroupDescription>(&described);
  if (d && d->pattern != GroupPattern::ColumnReduction) return std::nullopt;
  ColumnScheduleChoice choice;
  if (has_arg_root(g, group)) {
    choice.reason = "argmax/argmin keep a thread per column";
    return choice;
  }
  if (target.forced_column_groups > 0) {
    choice.schedule = {target.forced_column_groups, 32};
    choice.reason = "forced";
    return choice;
  }
  if (target.machine == RowScheduleTarget::Machine::Cpu) {
    choice.schedule.width = cpu_column_width(g, group);
    choice.reason = choice.schedule.width == kColumnWidth
                        ? "the CPU's choice: its thread loop is vectorised across columns"
                        : "the CPU's choice: a block of every kept column, its thread loop along rows";
    return choice;
  }
  if (!d) {
    choice.reason = std::get<std::string>(described);
    return choice;
  }
  const std::optional<GpuTarget> gpu = target.ranking_target();
  const std::vector<RankedCandidate> ranking = gpu ? rank_candidates(*d, *gpu) : std::vector<RankedCandidate>{};
  for (size_t i = 0; i < ranking.size(); ++i) {
    if (std::optional<ColumnSchedule> s = lowered_schedule(ranking[i].kernel)) {
      choice.schedule = *s;
      choice.reason = fmt::format("rank {} of {} on {}", i + 1, ranking.size(), target.gpu_arch);
      return choice;
    }
  }
  choice.reason = "no ranked candidate is lowered: a thread per column";
  return choice;
}

}  // namespace stitch::schedule
