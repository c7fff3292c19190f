#include "ir/fusion_plan.h"

#include <algorithm>

#include <fmt/format.h>

#include "stitch/error.h"

namespace stitch {

std::string_view group_kind_name(GroupKind k) {
  switch (k) {
    case GroupKind::Loop: return "loop";
    case GroupKind::Reduction: return "reduction";
    case GroupKind::Stitched: return "stitched";
    case GroupKind::Tile: return "tile";
    case GroupKind::Library: return "library";
  }
  fail_internal("unknown GroupKind", __FILE__, __LINE__);
}

std::string_view refusal_cause_name(RefusalCause c) {
  switch (c) {
    case RefusalCause::Illegal: return "illegal";
    case RefusalCause::Budget: return "budget";
    case RefusalCause::Unprofitable: return "unprofitable";
  }
  fail_internal("unknown RefusalCause", __FILE__, __LINE__);
}

bool FusionGroup::contains(int node) const {
  return std::binary_search(nodes.begin(), nodes.end(), node);
}

std::vector<int> FusionPlan::groups_containing(int node) const {
  std::vector<int> out;
  for (int i = 0; i < static_cast<int>(groups.size()); ++i) {
    if (groups[i].contains(node)) out.push_back(i);
  }
  return out;
}

int FusionPlan::kernel_count() const {
  return static_cast<int>(std::count_if(groups.begin(), groups.end(), [](const FusionGroup& g) { return g.epilogue_of < 0; }));
}

int FusionPlan::home_group(int node) const {
  for (int i = 0; i < static_cast<int>(groups.size()); ++i) {
    const auto& roots = groups[i].roots;
    if (std::binary_search(roots.begin(), roots.end(), node)) return i;
  }
  return -1;
}

std::string describe_node(const Graph& g, int index) {
  const Node& node = g.nodes()[index];
  std::string args;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (i) args += ", ";
    args += g.value_name(node.inputs[i]);
  }
  return fmt::format("{} = {}({})", g.value_name(node.output), op_name(node.op), args);
}

}  // namespace stitch
