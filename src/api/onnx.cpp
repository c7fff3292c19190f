// The public ONNX import (include/stitch/onnx.h) over the importer stage.
#include "stitch/onnx.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "onnx/importer.h"
#include "stitch/error.h"

namespace stitch {

std::vector<std::string> OnnxModel::inputs() const {
  std::vector<std::string> out;
  for (ValueId v : graph.params()) {
    const std::string& name = graph.value(v).name;
    if (!bound.count(name)) out.push_back(name);
  }
  return out;
}

std::vector<Tensor> OnnxModel::arguments(const std::vector<Tensor>& inputs) const {
  const std::vector<std::string> wanted = this->inputs();
  if (inputs.size() != wanted.size()) {
    throw UserError(fmt::format("model '{}' takes {} input{} ({}), got {}", graph.name(), wanted.size(),
                                wanted.size() == 1 ? "" : "s", fmt::join(wanted, ", "), inputs.size()));
  }
  std::vector<Tensor> out;
  size_t next = 0;
  for (ValueId v : graph.params()) {
    auto it = bound.find(graph.value(v).name);
    out.push_back(it != bound.end() ? it->second : inputs[next++]);
  }
  return out;
}

OnnxModel load_onnx(const std::string& path, const std::map<std::string, Tensor>& known_inputs) {
  onnx_import::ImportOptions options;
  options.known_inputs = known_inputs;
  onnx_import::ImportedModel m = onnx_import::import_onnx(path, options);
  return OnnxModel{std::move(m.graph), std::move(m.bound), std::move(m.input_names)};
}

}  // namespace stitch
