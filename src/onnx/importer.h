// The ONNX importer (issue 4, docs/onnx.md): a ModelProto becomes one Graph
// built through GraphBuilder, plus the tensors of the initializers that became
// parameters ("bound parameters"), which callers pass like inputs.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "stitch/graph.h"
#include "stitch/tensor.h"

namespace stitch::onnx_import {

// Opsets 18 to 22 changed, among the ops imported here: the reductions (axes
// as an input, 18; ReduceMax/ReduceMin on bool, 20), Split (num_outputs, 18),
// Pad (axes, 18; "wrap", 19, refused by name), Gelu (new in 20) and Cast
// (saturate, 19: only float8 targets, which Stitch lacks); the rest of the
// changes add element types (float8, int4, bf16), refused by type. Every
// converter takes both forms (docs/onnx.md, Opsets).
inline constexpr int64_t kMinOpset = 13;
inline constexpr int64_t kMaxOpset = 22;

struct ImportedModel {
  Graph graph;
  // Parameter name -> its initializer's tensor; every other parameter is a
  // real input the caller must supply.
  std::map<std::string, Tensor> bound;
  // ONNX graph input name -> parameter name, for inputs whose names were not
  // already identifiers ("input:0" -> "input_0").
  std::map<std::string, std::string> input_names;
};

struct ImportOptions {
  // Graph inputs fed as known values: the model is specialised on them and
  // they are not parameters. For inputs that decide shapes (a ReduceSum's
  // axes, a Reshape's shape given as a graph input), which a compiled graph
  // must know.
  std::map<std::string, Tensor> known_inputs;
};

// Thrown when a value that must be known at import time (axes, a shape) is a
// graph input; input() names it, so a caller holding its value can import
// again with it in ImportOptions::known_inputs.
class NeedsKnownInput : public UserError {
 public:
  NeedsKnownInput(std::string message, std::string input) : UserError(std::move(message)), input_(std::move(input)) {}
  const std::string& input() const { return input_; }

 private:
  std::string input_;
};

// UserError for a file that is not a ModelProto, an opset above kMaxOpset,
// an opset below kMinOpset in which one of the model's ops had another
// definition than in kMinOpset, an unsupported element type or unnamed unknown dim,
// a known input that does not match its declaration, and (all listed
// together) every op this importer does not handle.
ImportedModel import_onnx(const std::string& path, const ImportOptions& options = {});

// Reads one serialized TensorProto (the node tests' input_N.pb/output_N.pb).
// UserError for an unreadable file or an unsupported element type.
Tensor load_tensor_pb(const std::string& path);

}  // namespace stitch::onnx_import
