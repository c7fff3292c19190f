#include <cstdint>

#include <fmt/format.h>

#include "stitch/interpreter.h"

namespace stitch {

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
  return bindings;
}

}  // namespace stitch
