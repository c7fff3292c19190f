// One case of the ONNX backend node tests (docs/onnx-conformance.md) as the
// generator writes it: CASE/model.onnx and CASE/test_data_set_K/{input,output}_N.pb.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "stitch/tensor.h"

namespace stitch::onnx_node {

struct NodeCase {
  std::string name;  // the folder's name, e.g. test_softmax_axis_0_expanded
  std::filesystem::path dir;
  // A function op spelled out as primitive ops; must run fused (see runner.h).
  bool expanded() const;
};

// Every folder holding a model.onnx directly under `root` or under `root/node`,
// sorted by name. Throws UserError when there are none.
std::vector<NodeCase> discover_cases(const std::filesystem::path& root);

// Case i goes to shard i % count: neighbours in name order (the variants of
// one op) spread over the shards, so they take about equally long.
std::vector<NodeCase> shard_of(const std::vector<NodeCase>& cases, int index, int count);

struct DataSet {
  std::string name;             // test_data_set_K
  std::vector<Tensor> inputs;   // input_0.pb, input_1.pb, ... in ONNX graph input order
  std::vector<Tensor> outputs;  // output_0.pb, ... in ONNX graph output order
};

// The case's data sets in name order, read with onnx_import::load_tensor_pb.
std::vector<DataSet> load_data_sets(const NodeCase& c);

// model.onnx's graph inputs that are not initializers, in order (input_N.pb
// feeds the N-th), with their declared extents (-1: not a static extent; no
// shape at all: `ranked` false). Read from the ModelProto, not the importer.
struct DeclaredInput {
  std::string name;
  bool ranked = false;
  std::vector<int64_t> extents;
};
std::vector<DeclaredInput> declared_inputs(const NodeCase& c);

// "" when every data set gives as many inputs as `declared`, each of the
// declared static extents; else how the case contradicts itself: onnx 1.12's
// bfloat16 CastLike cases declare `like` as [3, 4] and give [1].
std::string data_contradicts_model(const std::vector<DeclaredInput>& declared, const std::vector<DataSet>& sets);

}  // namespace stitch::onnx_node
