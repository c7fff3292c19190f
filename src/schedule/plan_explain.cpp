#include "schedule/plan_explain.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>
#include <set>

#include "fusion/cost_model.h"
#include "stitch/dtype.h"
#include "stitch/ops.h"
#include "fusion/stitched_group.h"
#include "schedule/group_shared_memory.h"
#include "schedule/select.h"

namespace stitch::schedule {

namespace {

std::vector<int64_t> extents(const Shape& s, const SymbolBindings& bindings, int64_t default_extent) {
  std::vector<int64_t> out;
  for (const Dim& d : s) {
    if (d.is_static()) {
      out.push_back(d.extent());
    } else {
      auto it = bindings.find(d.name());
      out.push_back(it == bindings.end() ? default_extent : it->second);
    }
  }
  return out;
}

int64_t product(const std::vector<int64_t>& v, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= v[i];
  return p;
}

// Values the group reads from outside (parameters or other kernels' results).
int64_t external_inputs(const Graph& g, const FusionGroup& group) {
  std::set<int32_t> external;
  for (int n : group.nodes) {
    for (ValueId v : g.nodes()[static_cast<size_t>(n)].inputs) {
      const int producer = g.value(v).producer;
      if (producer < 0 || !group.contains(producer)) external.insert(v.index);
    }
  }
  return std::max<int64_t>(1, static_cast<int64_t>(external.size()));
}

// External inputs of `group` with `elements` elements: those a row kernel
// reads a whole row of per row.
int64_t full_row_inputs(const Graph& g, const FusionGroup& group, int64_t elements, const SymbolBindings& bindings,
                        int64_t default_extent) {
  std::set<int32_t> full;
  for (int n : group.nodes) {
    for (ValueId v : g.nodes()[static_cast<size_t>(n)].inputs) {
      const int producer = g.value(v).producer;
      if (producer >= 0 && group.contains(producer)) continue;
      const Shape& shape = g.type(v).shape;
      if (product(extents(shape, bindings, default_extent), 0, shape.size()) == elements) full.insert(v.index);
    }
  }
  return static_cast<int64_t>(full.size());
}

void count_ops(const Graph& g, const FusionGroup& group, GroupDescription& d) {
  for (int n : group.nodes) {
    switch (op_info(g.nodes()[static_cast<size_t>(n)].op).category) {
      case OpCategory::LightElementwise: d.alu_per_element += 1; break;
      case OpCategory::HeavyElementwise: d.sfu_per_element += 1; break;
      default: break;
    }
  }
}

}  // namespace

std::variant<GroupDescription, std::string> describe_group(const Graph& g, const FusionGroup& group,
                                                           const SymbolBindings& bindings, int64_t default_extent) {
  if (group.kind == GroupKind::Library) return std::string("a library call: no schedule to rank");
  if (group.roots.empty()) return std::string("no roots: the group writes nothing");
  if (group.kind == GroupKind::Tile) return std::string("a tile group: a block per tile, no strategy ranks it yet");
  GroupDescription d;
  d.inputs = external_inputs(g, group);
  d.outputs = static_cast<int64_t>(group.roots.size());
  d.bytes = FusionCostModel(bindings, default_extent).group_cost(g, group).bytes_moved();
  count_ops(g, group, d);
  if (group.kind == GroupKind::Loop) {
    const ValueId out = g.nodes()[static_cast<size_t>(group.roots.front())].output;
    d.pattern = GroupPattern::Elementwise;
    d.rows = product(extents(g.type(out).shape, bindings, default_extent), 0, g.type(out).shape.size());
    d.element_bytes = dtype_size(g.type(out).dtype);
    return d;
  }
  // A reduction root, or for a stitched group (whose roots are often
  // elementwise: softmax's division) its first reduction: all reduce one domain.
  const Node* reduction = nullptr;
  for (const std::vector<int>* nodes : {&group.roots, &group.nodes}) {
    for (int r : *nodes) {
      const Node& n = g.nodes()[static_cast<size_t>(r)];
      if (!reduction && is_reduction(n.op)) reduction = &n;
    }
  }
  if (!reduction || !reduction->attrs.has("axes") || reduction->inputs.empty())
    return std::string("no reduction root with axes");
  if (group.kind == GroupKind::Stitched) {
    int64_t reductions = 0;
    for (int n : group.nodes) reductions += is_reduction(g.nodes()[static_cast<size_t>(n)].op) ? 1 : 0;
    d.passes = reductions + 1;
  }
  const TensorType& in = g.type(reduction->inputs[0]);
  const std::vector<int64_t> shape = extents(in.shape, bindings, default_extent);
  std::vector<int64_t> axes = reduction->attrs.get("axes").as_ints();
  const int64_t rank = static_cast<int64_t>(shape.size());
  for (int64_t& a : axes) a = a < 0 ? a + rank : a;
  std::sort(axes.begin(), axes.end());
  const auto contiguous_from = [&](int64_t first) {
    for (size_t i = 0; i < axes.size(); ++i)
      if (axes[i] != first + static_cast<int64_t>(i)) return false;
    return true;
  };
  const size_t k = axes.size(), r = shape.size();
  d.element_bytes = dtype_size(in.dtype);
  if (contiguous_from(rank - static_cast<int64_t>(k))) {
    d.pattern = GroupPattern::RowReduction;
    d.rows = product(shape, 0, r - k);
    d.cols = product(shape, r - k, r);
    d.row_inputs = std::max<int64_t>(1, full_row_inputs(g, group, d.rows * d.cols, bindings, default_extent));
  } else if (contiguous_from(0)) {
    d.pattern = GroupPattern::ColumnReduction;
    d.rows = product(shape, 0, k);
    d.cols = product(shape, k, r);
  } else {
    return fmt::format("a reduction over middle axes ({}): no strategy ranks it yet", fmt::join(axes, ", "));
  }
  return d;
}

namespace {

// The shared-memory plan of a stitched group's row kernel under `schedule`,
// indented under its group; "" for other groups and symbolic rows.
std::string shared_memory_lines(const Graph& g, const FusionGroup& group, const RowSchedule& schedule,
                                int64_t budget_bytes) {
  const std::optional<GroupSharedMemory> m = plan_stitched_shared_memory(g, group, schedule, budget_bytes);
  if (!m) return "";
  std::string out;
  const std::string text = print_group_shared_memory(*m);
  for (size_t start = 0; start < text.size();) {
    const size_t end = text.find('\n', start);
    out += "  " + text.substr(start, end - start) + "\n";
    start = end == std::string::npos ? text.size() : end + 1;
  }
  return out;
}

// "  chosen: warp-per-row [GRID-WARP_8,CTA]; 256 threads (rank 1 of 15 on sm_90); the lowering uses it\n",
// or "" for a group without a row schedule.
std::string chosen_line(const Graph& g, const FusionGroup& group, const RowScheduleTarget& rows,
                        const SymbolBindings& bindings) {
  const std::optional<RowScheduleChoice> choice = choose_row_schedule(g, group, rows, bindings);
  if (!choice) return "";
  return fmt::format("  chosen: {} ({}); the lowering uses it\n", choice->schedule.describe(), choice->reason) +
         shared_memory_lines(g, group, choice->schedule, rows.shared_budget_bytes());
}

}  // namespace

std::string explain_plan(const Graph& g, const FusionPlan& plan, const GpuTarget& target,
                         const SymbolBindings& bindings, size_t top, std::optional<RowScheduleKind> forced) {
  RowScheduleTarget rows = RowScheduleTarget::gpu(target.arch);
  rows.forced = forced;
  return explain_plan(g, plan, target, bindings, top, rows);
}

std::string explain_plan(const Graph& g, const FusionPlan& plan, const GpuTarget& target,
                         const SymbolBindings& bindings, size_t top, const RowScheduleTarget& rows) {
  std::string out = fmt::format("schedule candidates on {} ({}), latency evaluator estimates{}:\n", target.arch,
                                target.product,
                                rows.model ? fmt::format(" and the {} model's (model_us)", rows.model_name) : "");
  for (size_t gi = 0; gi < plan.groups.size(); ++gi) {
    auto described = describe_group(g, plan.groups[gi], bindings);
    out += fmt::format("group {} [{}]: ", gi, group_kind_name(plan.groups[gi].kind));
    if (const std::string* reason = std::get_if<std::string>(&described)) {
      out += fmt::format("not ranked: {}\n", *reason);
      continue;
    }
    const GroupDescription& d = std::get<GroupDescription>(described);
    out += render_ranking(d, target, rank_candidates(d, target), top, rows.model);
    out += chosen_line(g, plan.groups[gi], rows, bindings);
  }
  return out;
}

std::string explain_row_schedules(const Graph& g, const FusionPlan& plan, const RowScheduleTarget& rows,
                                  const SymbolBindings& bindings) {
  std::string out = fmt::format("row schedules on {}:\n", rows.name());
  for (size_t gi = 0; gi < plan.groups.size(); ++gi) {
    const std::string line = chosen_line(g, plan.groups[gi], rows, bindings);
    out += fmt::format("group {} [{}]:{}", gi, group_kind_name(plan.groups[gi].kind),
                       line.empty() ? " no row schedule\n" : "\n" + line);
  }
  return out;
}

}  // namespace stitch::schedule
