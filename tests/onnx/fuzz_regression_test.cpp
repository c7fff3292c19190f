// Models found by fuzz/onnx_fuzzer.cpp (docs/fuzzing.md, The ONNX importer):
// each once crashed the importer or made it misbehave; now each imports or is
// a clean UserError.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "onnx_model_builder.h"
#include "stitch/text.h"

namespace stitch::onnx_import::testing {
namespace {

using OnnxFuzzRegressionTest = OnnxModelTest;

// A node that lists no outputs defines nothing. Shape of a static input
// becomes a known tensor without a graph op, and defining it read output 0
// of a node that had none (UBSan: member access within null pointer in
// RepeatedPtrField::Get).
TEST_F(OnnxFuzzRegressionTest, ShapeNodeWithoutOutputsDefinesNothing) {
  input("x", {"3", "4"});
  multi_output_node("Shape", {"x"}, {}, "shape_node");
  node("Relu", {"x"}, "y");
  output("y");
  const ImportedModel m = import();
  EXPECT_EQ(m.graph.outputs().size(), 1u);
  EXPECT_NE(print_graph(m.graph).find("relu"), std::string::npos);
}

// The same for a Constant, which the importer reads itself.
TEST_F(OnnxFuzzRegressionTest, ConstantNodeWithoutOutputsDefinesNothing) {
  input("x", {"2"});
  auto* c = multi_output_node("Constant", {}, {}, "const_node");
  auto* a = c->add_attribute();
  a->set_name("value_float");
  a->set_type(::onnx::AttributeProto::FLOAT);
  a->set_f(1.5f);
  node("Neg", {"x"}, "y");
  output("y");
  EXPECT_EQ(import().graph.outputs().size(), 1u);
}

// Folding a node whose inputs are all known runs it at import time; without
// outputs there is nothing to keep.
TEST_F(OnnxFuzzRegressionTest, FoldedShapeNodeWithoutOutputsDefinesNothing) {
  input("x", {"2"});
  float_init("W", {2, 3}, {1, 2, 3, 4, 5, 6});
  multi_output_node("Shape", {"W"}, {}, "shape_node");
  node("Abs", {"x"}, "y");
  output("y");
  EXPECT_EQ(import().graph.outputs().size(), 1u);
}

// A pad of INT64_MIN was negated to find how much it crops (UBSan: negation
// of -9223372036854775808), on either side.
TEST_F(OnnxFuzzRegressionTest, PadOfInt64MinIsAUserError) {
  for (int side = 0; side < 2; ++side) {
    SCOPED_TRACE(side);
    graph().Clear();
    input("x", {"3"});
    std::vector<int64_t> pads = {0, 0};
    pads[side] = std::numeric_limits<int64_t>::min();
    int64_init("pads", pads);
    node("Pad", {"x", "pads"}, "y");
    output("y");
    expect_contains(import_error(), "remove more than its extent");
  }
}

// GatherElements from data with a zero extent divided by it to find the
// strides (UBSan: division by zero); any index into no elements is out of
// range, so with indices it is a clean error, and without them it imports.
TEST_F(OnnxFuzzRegressionTest, GatherElementsFromEmptyData) {
  input("data", {"0", "2"});
  input("indices", {"2", "2"}, ::onnx::TensorProto::INT64);
  int_attr(node("GatherElements", {"data", "indices"}, "y"), "axis", 1);
  output("y");
  expect_contains(import_error(), "no elements");

  graph().Clear();
  input("data", {"0", "2"});
  input("indices", {"0", "2"}, ::onnx::TensorProto::INT64);
  int_attr(node("GatherElements", {"data", "indices"}, "y"), "axis", 1);
  output("y");
  EXPECT_EQ(import().graph.outputs().size(), 1u);
}

}  // namespace
}  // namespace stitch::onnx_import::testing
