// ONNX models as graphs (docs/onnx.md): what `stitch run model.onnx` imports,
// for programs linking the library.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "stitch/graph.h"
#include "stitch/tensor.h"

namespace stitch {

struct OnnxModel {
  Graph graph;
  // Parameter name -> the initializer's tensor: parameters the model binds
  // itself, passed like inputs.
  std::map<std::string, Tensor> bound;
  // ONNX input name -> parameter name, for names that were not identifiers
  // ("input:0" -> "input_0").
  std::map<std::string, std::string> input_names;

  // The parameters a caller supplies (those not bound), in parameter order.
  std::vector<std::string> inputs() const;
  // Every parameter's tensor in order: `inputs` (one per inputs() entry) with
  // the bound ones in their places. UserError for a wrong count.
  std::vector<Tensor> arguments(const std::vector<Tensor>& inputs) const;
};

// Imports an ONNX file (opsets 13 to 17). `known_inputs` (by ONNX input name)
// specialises the model on inputs that decide shapes (a Reshape's shape, a
// ReduceSum's axes given as graph inputs). UserError for a file that is not a
// model, an unsupported opset or element type, and every op not handled.
OnnxModel load_onnx(const std::string& path, const std::map<std::string, Tensor>& known_inputs = {});

}  // namespace stitch
