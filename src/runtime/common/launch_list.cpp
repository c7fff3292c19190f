#include "runtime/common/launch_list.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <iostream>
#include <numeric>

#include "kir/printer.h"
#include "stitch/error.h"
#include "stitch/text.h"

namespace stitch::runtime {

std::string kernel_prefix(const std::string& graph_name) {
  std::string out = "k_";
  for (char c : graph_name) out += (std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  return out;
}

int64_t value_bytes(const Graph& g, ValueId v, const SymbolBindings& bindings) {
  int64_t n = dtype_size(g.type(v).dtype);
  for (int64_t d : concrete_shape(g.type(v).shape, bindings)) n *= d;
  return n;
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

std::vector<LaunchStep> launch_steps(const Graph& g, const LoweredPlan& lowered) {
  std::vector<LaunchStep> steps;
  for (const lower::LoweredGroup& l : lowered.groups) {
    LaunchStep step;
    step.signature = l.signature;
    const FusionGroup& group = lowered.plan.groups[l.group];
    if (group.epilogue_of >= 0) {
      STITCH_ASSERT(!steps.empty() && steps.back().dot && steps.back().node == group.epilogue_of && !steps.back().epilogue,
                    "a dot epilogue does not follow its dot's step");
      steps.back().epilogue = &*l.kernel;
      steps.back().epilogue_signature = l.signature;
      const std::vector<int> arg = arg_reduction_nodes(g, group);
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
    step.arg_reductions = arg_reduction_nodes(g, group);
    steps.push_back(std::move(step));
  }
  return steps;
}

StepValues signature_values(const lower::GroupSignature& signature) {
  StepValues values;
  for (ValueId v : signature.inputs) values.reads.push_back(v.index);
  for (ValueId v : signature.outputs) values.writes.push_back(v.index);
  return values;
}

StepValues signature_values(const lower::GroupSignature& dot, const lower::GroupSignature& epilogue) {
  StepValues values = signature_values(dot);
  std::set<int> written(values.writes.begin(), values.writes.end());
  for (ValueId v : epilogue.inputs) {
    if (!written.count(v.index)) values.reads.push_back(v.index);
  }
  for (ValueId v : epilogue.outputs) values.writes.push_back(v.index);
  return values;
}

std::vector<DotPanel> dot_panels(int64_t rows, int64_t row_length, int64_t panel_elements, int64_t element_bytes,
                                 int64_t panel_bytes, int64_t min_panels) {
  STITCH_ASSERT(rows > 0 && row_length > 0 && panel_elements > 0 && element_bytes > 0, "dot_panels: empty problem");
  const int64_t elements = rows * row_length;
  const int64_t blocks = (elements + panel_elements - 1) / panel_elements;
  // Block boundaries that are row boundaries: every `aligned` blocks.
  const int64_t aligned = row_length / std::gcd(row_length, panel_elements);
  const int64_t by_bytes = std::max<int64_t>(1, panel_bytes / (panel_elements * element_bytes));
  const int64_t wanted = std::min(by_bytes, std::max<int64_t>(1, blocks / std::max<int64_t>(1, min_panels)));
  const int64_t per_panel = (wanted + aligned - 1) / aligned * aligned;
  std::vector<DotPanel> panels;
  for (int64_t first = 0; first < blocks; first += per_panel) {
    DotPanel p;
    p.first_block = first;
    p.end_block = std::min(blocks, first + per_panel);
    p.first_row = first * panel_elements / row_length;
    p.end_row = p.end_block == blocks ? rows : p.end_block * panel_elements / row_length;
    panels.push_back(p);
  }
  return panels;
}

std::string unsupported_message(const std::string& backend, const std::string& reason) {
  return fmt::format("--backend {} cannot run this graph yet: {}; use --backend interp", backend, reason);
}

std::vector<int> arg_reduction_nodes(const Graph& g, const FusionGroup& group) {
  std::vector<int> nodes;
  for (int n : group.nodes) {
    const OpKind op = g.nodes()[n].op;
    if (op == OpKind::ArgMax || op == OpKind::ArgMin) nodes.push_back(n);
  }
  return nodes;
}

void throw_rejected_input(const Graph& g, int node, const SymbolBindings& bindings) {
  STITCH_ASSERT(node >= 0 && node < static_cast<int>(g.nodes().size()), "kernel status names no node");
  const Node& n = g.nodes()[node];
  if (n.op == OpKind::Gather) {
    const int64_t axis = n.attrs.get("axis").as_int();
    const int64_t extent = concrete_shape(g.type(n.inputs[0]).shape, bindings)[axis];
    throw UserError(fmt::format("{}: gather: an index is out of range for axis {} of extent {} (valid: [{}, {}))",
                                describe_node(g, node), axis, extent, -extent, extent));
  }
  throw UserError(fmt::format("{}: the kernel rejected its input", describe_node(g, node)));
}

void check_arg_reduction_extent(const Graph& g, int node, const SymbolBindings& bindings) {
  const Node& n = g.nodes()[node];
  const std::vector<int64_t> shape = concrete_shape(g.type(n.inputs[0]).shape, bindings);
  for (int64_t axis : n.attrs.get("axes").as_ints()) {
    if (shape[axis] != 0) continue;
    throw UserError(fmt::format("{} '{}': axis {} has extent 0, and an empty axis has no {}", op_name(n.op),
                                g.value_name(n.output), axis, n.op == OpKind::ArgMax ? "maximum" : "minimum"));
  }
}

std::string print_kernels(const std::vector<kir::Kernel>& kernels) {
  std::string text;
  for (const kir::Kernel& k : kernels) text += kir::print_kernel(k);
  return text;
}

void report_warning(const std::function<void(const std::string&)>& warn, const std::string& message) {
  if (warn) {
    warn(message);
  } else {
    std::cerr << "stitch: warning: " << message << "\n";
  }
}

std::string fallback_note(const Graph& g, PlannerKind planner, const std::string& what, const std::string& error) {
  return fmt::format("compiling the fused {} of graph '{}' (planner {}) failed:\n{}\n", what, g.name(),
                     planner_name(planner), error);
}

std::string interpreter_note(const Graph& g, const std::string& error) {
  return fmt::format("{}\nrunning graph '{}' on the reference interpreter instead (slow)", error, g.name());
}

}  // namespace stitch::runtime
