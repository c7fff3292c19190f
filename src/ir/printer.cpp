#include <fmt/format.h>

#include "stitch/text.h"

namespace stitch {

namespace {

void print_node(std::string& out, const Graph& g, const Node& n) {
  out += fmt::format("  {} = {}(", g.value_name(n.output), op_name(n.op));
  bool first = true;
  for (ValueId in : n.inputs) {
    out += (first ? "" : ", ") + g.value_name(in);
    first = false;
  }
  for (const auto& [key, value] : n.attrs.items()) {
    out += fmt::format("{}{}={}", first ? "" : ", ", key, value.str());
    first = false;
  }
  out += ")\n";
}

}  // namespace

std::string print_graph(const Graph& g) {
  std::string out = fmt::format("graph {}(", g.name());
  for (size_t i = 0; i < g.params().size(); ++i) {
    ValueId p = g.params()[i];
    out += fmt::format("{}{}: {}", i ? ", " : "", g.value_name(p), g.type(p).str());
  }
  out += ") -> (";
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    out += (i ? ", " : "") + g.type(g.outputs()[i].value).str();
  }
  out += ") {\n";
  for (const Node& n : g.nodes()) print_node(out, g, n);
  out += "  return ";
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    out += (i ? ", " : "") + g.value_name(g.outputs()[i].value);
  }
  return out + "\n}\n";
}

std::string print_module(const Module& m) {
  std::string out;
  for (size_t i = 0; i < m.graphs.size(); ++i) {
    if (i) out += "\n";
    out += print_graph(m.graphs[i]);
  }
  for (size_t i = 0; i < m.kernels.size(); ++i) {
    if (i || !m.graphs.empty()) out += "\n";
    out += print_kernel(m.kernels[i]);
  }
  return out;
}

}  // namespace stitch
