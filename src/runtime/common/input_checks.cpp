#include "runtime/common/input_checks.h"

#include <fmt/format.h>

#include "stitch/error.h"
#include "stitch/text.h"

namespace stitch::runtime {

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

}  // namespace stitch::runtime
