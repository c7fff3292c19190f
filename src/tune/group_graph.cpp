#include "tune/group_graph.h"

#include <map>

#include "stitch/error.h"

namespace stitch::tune {

GroupGraph group_graph(const Graph& g, const FusionGroup& group, const std::string& name) {
  GroupGraph out{Graph(name), {}};
  Graph& sub = out.graph;
  std::map<int, ValueId> mapped;  // value index in g -> value in sub
  // Parameters first (a graph's parameters precede its nodes), in the order
  // the group first reads them.
  for (int n : group.nodes) {
    for (ValueId v : g.nodes()[static_cast<size_t>(n)].inputs) {
      const int producer = g.value(v).producer;
      if ((producer >= 0 && group.contains(producer)) || mapped.count(v.index)) continue;
      mapped.emplace(v.index, sub.add_param(g.value_name(v), g.type(v)));
    }
  }
  std::map<int, int> node_of;  // node index in g -> node index in sub
  for (int n : group.nodes) {
    const Node& node = g.nodes()[static_cast<size_t>(n)];
    std::vector<ValueId> inputs;
    for (ValueId v : node.inputs) inputs.push_back(mapped.at(v.index));
    const ValueId out_value = sub.add_node(node.op, std::move(inputs), node.attrs, g.type(node.output),
                                           g.value_name(node.output), node.loc);
    mapped.emplace(node.output.index, out_value);
    node_of.emplace(n, static_cast<int>(sub.nodes().size()) - 1);
  }
  FusionGroup one{group.kind, {}, {}};
  for (int n : group.nodes) one.nodes.push_back(node_of.at(n));
  for (int r : group.roots) {
    one.roots.push_back(node_of.at(r));
    const ValueId v = g.nodes()[static_cast<size_t>(r)].output;
    sub.add_output(g.value_name(v), mapped.at(v.index));
  }
  out.plan.groups.push_back(std::move(one));
  out.plan.planner = "tune";
  finalize_plan(sub, out.plan);
  STITCH_ASSERT(out.plan.groups.size() == 1 && out.plan.groups[0].kind == group.kind,
                "a group taken out of its plan keeps its kind");
  return out;
}

}  // namespace stitch::tune
