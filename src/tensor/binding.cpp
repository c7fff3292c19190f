#include <cstdint>

#include <fmt/format.h>

#include "stitch/interpreter.h"

namespace stitch {

namespace {

// Static shapes were checked when the graph was built; a value with symbols
// is checked once they are bound, before anything is allocated for it
// (docs/limits.md). Messages are formatted only for a value over the limit.
void check_sizes_with(const Graph& g, const SymbolBindings& bindings) {
  if (bindings.empty()) return;
  std::vector<int64_t> extents;
  for (int i = 0; i < g.num_values(); ++i) {
    const TensorType& t = g.type(ValueId{i});
    if (is_static(t.shape)) continue;
    extents.clear();
    for (const Dim& d : t.shape) {
      auto it = d.is_static() ? bindings.end() : bindings.find(d.name());
      extents.push_back(d.is_static() ? d.extent() : it == bindings.end() ? 1 : it->second);
    }
    if (!tensor_span_bytes(t.dtype, extents)) {
      check_bound_size(fmt::format("value '{}' of graph '{}'", g.value_name(ValueId{i}), g.name()), t, bindings);
    }
  }
}

// A slice of a static axis up to a symbol (graph-ir.md, Symbolic dims) reads
// within the axis only while the symbol is at most its extent.
void check_symbolic_prefixes(const Graph& g, const SymbolBindings& bindings) {
  for (const Node& n : g.nodes()) {
    if (n.op != OpKind::Slice) continue;
    const Shape& in = g.type(n.inputs[0]).shape;
    const Shape& stop = n.attrs.find("stop")->as_shape();
    for (size_t i = 0; i < in.size(); ++i) {
      if (!in[i].is_static() || stop[i].is_static()) continue;
      auto it = bindings.find(stop[i].name());
      if (it != bindings.end() && it->second > in[i].extent()) {
        throw UserError(fmt::format("value '{}' of graph '{}': slice to {} = {} passes axis {} of extent {}",
                                    g.value_name(n.output), g.name(), stop[i].name(), it->second, i,
                                    in[i].extent()));
      }
    }
  }
}

}  // namespace

SymbolBindings bind_inputs(const Graph& g, const std::vector<Tensor>& inputs) {
  std::vector<InputType> types;
  types.reserve(inputs.size());
  for (const Tensor& t : inputs) types.push_back({t.dtype(), t.shape()});
  return bind_input_types(g, types);
}

SymbolBindings bind_input_types(const Graph& g, const std::vector<InputType>& inputs) {
  if (inputs.size() != g.params().size()) {
    throw UserError(fmt::format("graph '{}' takes {} input{}, got {}", g.name(), g.params().size(),
                                g.params().size() == 1 ? "" : "s", inputs.size()));
  }
  SymbolBindings bindings;
  std::map<std::string, std::string> bound_by;  // symbol -> parameter that bound it
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string& name = g.value_name(g.params()[i]);
    const TensorType& want = g.type(g.params()[i]);
    const InputType& got = inputs[i];
    const int rank = static_cast<int>(got.shape.size());
    std::string got_str = std::string(dtype_name(got.dtype)) + "[";
    for (int d = 0; d < rank; ++d) got_str += (d ? ", " : "") + std::to_string(got.shape[d]);
    got_str += "]";
    if (got.dtype != want.dtype || rank != want.rank()) {
      throw UserError(fmt::format("input '{}': expected {}, got {}", name, want.str(), got_str));
    }
    for (int d = 0; d < want.rank(); ++d) {
      const Dim& dim = want.shape[d];
      int64_t extent = got.shape[d];
      if (extent < 0 || extent > kMaxTensorBytes) {
        check_extent(fmt::format("input '{}': dim {}", name, d), extent);
      }
      if (dim.is_static()) {
        if (dim.extent() != extent) {
          throw UserError(fmt::format("input '{}': expected {}, got {} (dim {} is {}, not {})", name, want.str(),
                                      got_str, d, extent, dim.extent()));
        }
        continue;
      }
      auto [it, fresh] = bindings.emplace(dim.name(), extent);
      if (fresh) {
        bound_by[dim.name()] = name;
      } else if (it->second != extent) {
        throw UserError(fmt::format("input '{}': dim {} binds {} = {}, but input '{}' bound {} = {}", name, d,
                                    dim.name(), extent, bound_by[dim.name()], dim.name(), it->second));
      }
    }
  }
  check_sizes_with(g, bindings);
  if (!bindings.empty()) check_symbolic_prefixes(g, bindings);
  return bindings;
}

}  // namespace stitch
