#include "ir/structural_key.h"

#include <fmt/format.h>

namespace stitch {

std::string structural_key(const Graph& g) {
  std::string out = fmt::format("values {}\n", g.num_values());
  for (ValueId p : g.params()) out += fmt::format("param %{} : {}\n", p.index, g.type(p).str());
  for (const Node& n : g.nodes()) {
    out += fmt::format("%{} = {}(", n.output.index, op_name(n.op));
    for (size_t i = 0; i < n.inputs.size(); ++i) out += fmt::format("{}%{}", i ? ", " : "", n.inputs[i].index);
    out += ") {";
    for (const auto& [name, value] : n.attrs.items()) out += fmt::format(" {}={}", name, value.str());
    out += fmt::format(" }} : {}\n", g.type(n.output).str());
  }
  // Output names are not structure, but returning a value twice is.
  out += "return";
  for (const GraphOutput& o : g.outputs()) out += fmt::format(" %{}", o.value.index);
  return out + "\n";
}

}  // namespace stitch
