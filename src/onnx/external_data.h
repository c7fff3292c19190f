// Tensors whose data lives in a file beside the model (ONNX's external data:
// data_location EXTERNAL with location, offset and length entries), as the
// dynamo exporter writes them (docs/onnx.md, External data).
#pragma once

#include <onnx/onnx_pb.h>

#include <string>

namespace stitch::onnx_import {

// Reads the data of every external initializer of `graph` (and of its
// Constant nodes' value tensors) from its file into raw_data, in place.
// `model_path` is the model file's path; each location is taken relative to
// its folder and must stay inside it (no absolute path, no ".."). UserError
// naming the tensor for a missing file, a bad key, or a range past the file's
// end; the byte count is checked against the shape later (tensor_from_proto).
void load_external_data(::onnx::GraphProto& graph, const std::string& model_path);

}  // namespace stitch::onnx_import
