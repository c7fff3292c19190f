// The ONNX shape and layout ops (src/onnx/ops_shape.cpp) on small models built
// here with the protobuf API, checked through the interpreter against values
// computed in the test (numpy semantics), and for the gather-based forms
// (negative Slice steps, edge and reflect Pad) also on the CPU back end.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "onnx/importer.h"
#include "onnx_model_builder.h"
#include "stitch/interpreter.h"

namespace stitch::onnx_import {
namespace {

using ::onnx::AttributeProto;
using ::onnx::TensorProto;
using testing::bind;
using testing::expect_contains;
using testing::int_attr;
using testing::ints_attr;
using testing::string_attr;
using Ints = std::vector<int64_t>;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

class OnnxShapeOpsTest : public testing::OnnxModelTest {};

size_t count_ops(const Graph& g, OpKind kind) {
  size_t count = 0;
  for (const Node& n : g.nodes()) count += n.op == kind;
  return count;
}

// 0, 1, 2, ... in a tensor of `shape`.
Tensor iota(const Ints& shape, DType dtype = DType::f32) {
  Tensor t(dtype, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.set_f64(i, static_cast<double>(i));
  return t;
}

void expect_values(const Tensor& t, const Ints& shape, const std::vector<double>& want) {
  EXPECT_EQ(t.shape(), shape);
  ASSERT_EQ(t.numel(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(t.get_f64(static_cast<int64_t>(i)), want[i]) << i;
}

std::vector<double> range(int64_t n) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(static_cast<double>(i));
  return v;
}

TEST_F(OnnxShapeOpsTest, ReshapeCopiesZerosAndInfersMinusOne) {
  input("x", {"2", "3", "4"});
  int64_init("s1", {0, -1});
  int64_init("s2", {0, 3, -1});
  node("Reshape", {"x", "s1"}, "a");
  node("Reshape", {"a", "s2"}, "b");
  output("a");
  output("b");
  ImportedModel m = import();
  std::vector<Tensor> out = interpret(m.graph, bind(m, {{"x", iota({2, 3, 4})}}));
  expect_values(out[0], {2, 12}, range(24));
  expect_values(out[1], {2, 3, 4}, range(24));
}

TEST_F(OnnxShapeOpsTest, ReshapeAllowZeroKeepsAZeroDim) {
  input("x", {"0", "3"});
  int64_init("s", {3, 0});
  auto* r = node("Reshape", {"x", "s"}, "y");
  int_attr(r, "allowzero", 1);
  output("y");
  ImportedModel m = import();
  EXPECT_EQ(m.graph.type(m.graph.outputs()[0].value).shape, (Shape{3, 0}));
}

TEST_F(OnnxShapeOpsTest, ReshapeOnSymbolicDims) {
  input("x", {"B", "3", "4"});
  int64_init("copy_batch", {0, -1});
  int64_init("infer_batch", {-1, 2, 6});
  node("Reshape", {"x", "copy_batch"}, "a");
  node("Reshape", {"a", "infer_batch"}, "b");
  output("b");
  ImportedModel m = import();
  const Shape& s = m.graph.type(m.graph.outputs()[0].value).shape;
  EXPECT_EQ(s, (Shape{Dim::symbol("B"), 2, 6}));
  expect_values(interpret(m.graph, bind(m, {{"x", iota({2, 3, 4})}}))[0], {2, 2, 6}, range(24));
}

TEST_F(OnnxShapeOpsTest, ReshapeThatMergesASymbolIsAUserError) {
  input("x", {"B", "3"});
  int64_init("s", {-1});
  node("Reshape", {"x", "s"}, "y");
  output("y");
  expect_contains(import_error(), "cannot infer the -1");
}

TEST_F(OnnxShapeOpsTest, SqueezeUnsqueezeAndFlatten) {
  input("x", {"2", "1", "3", "1"});
  int64_init("sq_axes", {1, -1});
  int64_init("unsq_axes", {-1, 0});
  node("Squeeze", {"x", "sq_axes"}, "sq");             // [2, 3]
  node("Unsqueeze", {"sq", "unsq_axes"}, "unsq");      // [1, 2, 3, 1]
  node("Squeeze", {"x"}, "sq_all");                    // [2, 3]
  auto* f = node("Flatten", {"x"}, "flat");            // axis 1: [2, 3]
  int_attr(f, "axis", -2);                             // [2, 3]: dims 0..1 | 2..3
  auto* f0 = node("Flatten", {"x"}, "flat0");
  int_attr(f0, "axis", 0);                             // [1, 6]
  output("unsq");
  output("sq_all");
  output("flat");
  output("flat0");
  ImportedModel m = import();
  std::vector<Tensor> out = interpret(m.graph, bind(m, {{"x", iota({2, 1, 3, 1})}}));
  expect_values(out[0], {1, 2, 3, 1}, range(6));
  expect_values(out[1], {2, 3}, range(6));
  expect_values(out[2], {2, 3}, range(6));
  expect_values(out[3], {1, 6}, range(6));
}

TEST_F(OnnxShapeOpsTest, UnsqueezeTakesTheAxesAttributeToo) {
  input("x", {"B", "3"});
  ints_attr(node("Unsqueeze", {"x"}, "y"), "axes", {1});
  auto* f = node("Flatten", {"y"}, "z");
  int_attr(f, "axis", 1);
  output("z");
  ImportedModel m = import();
  EXPECT_EQ(m.graph.type(m.graph.outputs()[0].value).shape, (Shape{Dim::symbol("B"), 3}));
}

TEST_F(OnnxShapeOpsTest, ExpandBroadcastsBothWays) {
  input("x", {"3", "1"});
  int64_init("s", {2, 1, 4});
  node("Expand", {"x", "s"}, "y");
  output("y");
  ImportedModel m = import();
  std::vector<double> want;
  for (int b = 0; b < 2; ++b) {
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 4; ++j) want.push_back(i);
    }
  }
  expect_values(interpret(m.graph, bind(m, {{"x", iota({3, 1})}}))[0], {2, 3, 4}, want);
}

// x[4, 5] = 0..19; x[-1:INT64_MIN:-1, 0:INT64_MAX:2] and x[1:-1, 10:-10:-2].
TEST_F(OnnxShapeOpsTest, SliceWithNegativeStepsAndClamping) {
  input("x", {"4", "5"});
  int64_init("s1", {-1, 0});
  int64_init("e1", {kMin, kMax});
  int64_init("axes1", {0, 1});
  int64_init("st1", {-1, 2});
  node("Slice", {"x", "s1", "e1", "axes1", "st1"}, "a");
  int64_init("s2", {10, 1});
  int64_init("e2", {-10, -1});
  int64_init("axes2", {-1, 0});
  int64_init("st2", {-2, 1});
  node("Slice", {"x", "s2", "e2", "axes2", "st2"}, "b");
  output("a");
  output("b");
  ImportedModel m = import();
  std::vector<double> a, b;
  for (int r = 3; r >= 0; --r) {
    for (int c = 0; c < 5; c += 2) a.push_back(r * 5 + c);
  }
  for (int r = 1; r < 3; ++r) {
    for (int c = 4; c >= 0; c -= 2) b.push_back(r * 5 + c);
  }
  std::vector<Tensor> args = bind(m, {{"x", iota({4, 5})}});
  std::vector<Tensor> out = interpret(m.graph, args);
  expect_values(out[0], {4, 3}, a);
  expect_values(out[1], {2, 3}, b);
  std::vector<Tensor> cpu = run_cpu(m, args);
  expect_values(cpu[0], {4, 3}, a);
  expect_values(cpu[1], {2, 3}, b);
}

// Every input known: the importer folds the node, negative steps included.
TEST_F(OnnxShapeOpsTest, SliceOfAKnownTensorFolds) {
  float_init("w", {2, 3}, {0, 1, 2, 3, 4, 5});
  int64_init("s", {-1, -1});
  int64_init("e", {kMin, kMin});
  int64_init("st", {-1, -1});
  node("Slice", {"w", "s", "e", "", "st"}, "reversed");
  input("x", {"2", "3"});
  node("Add", {"x", "reversed"}, "y");
  output("y");
  ImportedModel m = import();
  EXPECT_EQ(count_ops(m.graph, OpKind::Gather), 0u);
  expect_values(interpret(m.graph, bind(m, {{"x", Tensor(DType::f32, {2, 3})}}))[0], {2, 3}, {5, 4, 3, 2, 1, 0});
}

TEST_F(OnnxShapeOpsTest, SliceTakesASymbolicAxisOnlyWhole) {
  input("x", {"B", "6"});
  int64_init("s", {0, 1});
  int64_init("e", {kMax, 5});
  node("Slice", {"x", "s", "e"}, "y");
  output("y");
  ImportedModel m = import();
  EXPECT_EQ(m.graph.type(m.graph.outputs()[0].value).shape, (Shape{Dim::symbol("B"), 4}));

  graph().Clear();
  input("x", {"B", "6"});
  int64_init("s", {1});
  int64_init("e", {kMax});
  node("Slice", {"x", "s", "e"}, "y");
  output("y");
  expect_contains(import_error(), "can only take it whole");
}

TEST_F(OnnxShapeOpsTest, GatherWithNegativeAndScalarIndices) {
  input("x", {"3", "4"});
  input("idx", {"2"}, TensorProto::INT64);
  int64_init("known", {-1, 0});
  int64_init("scalar", {-2}, /*scalar=*/true);
  auto* g1 = node("Gather", {"x", "known"}, "cols");
  int_attr(g1, "axis", -1);
  node("Gather", {"x", "idx"}, "rows");
  node("Gather", {"x", "scalar"}, "row");
  output("cols");
  output("rows");
  output("row");
  ImportedModel m = import();
  Tensor idx(DType::i64, {2});
  idx.set_i64(0, -3);
  idx.set_i64(1, 2);
  std::vector<Tensor> args = bind(m, {{"x", iota({3, 4})}, {"idx", idx}});
  for (const std::vector<Tensor>& out : {interpret(m.graph, args), run_cpu(m, args)}) {
    expect_values(out[0], {3, 2}, {3, 0, 7, 4, 11, 8});
    expect_values(out[1], {2, 4}, {0, 1, 2, 3, 8, 9, 10, 11});
    expect_values(out[2], {4}, {4, 5, 6, 7});
  }
}

TEST_F(OnnxShapeOpsTest, ConcatOnANegativeAxis) {
  input("x", {"2", "1"});
  input("y", {"2", "2"});
  auto* c = node("Concat", {"x", "y", "x"}, "z");
  int_attr(c, "axis", -1);
  output("z");
  ImportedModel m = import();
  Tensor y = iota({2, 2});
  for (int64_t i = 0; i < 4; ++i) y.set_f64(i, 10 + static_cast<double>(i));
  std::vector<Tensor> out = interpret(m.graph, bind(m, {{"x", iota({2, 1})}, {"y", y}}));
  expect_values(out[0], {2, 4}, {0, 10, 11, 0, 1, 12, 13, 1});
}

// x = [0, 1, 2, 3] padded by (2, 3) with each mode, and cropped by (-1, 1).
TEST_F(OnnxShapeOpsTest, PadConstantEdgeReflectWrapAndCropping) {
  input("x", {"1", "4"});
  int64_init("pads", {0, 2, 0, 3});
  int64_init("crop", {0, -1, 0, 1});
  float_init("fill", {}, {7});
  node("Pad", {"x", "pads", "fill"}, "constant");
  string_attr(node("Pad", {"x", "pads"}, "edge"), "mode", "edge");
  string_attr(node("Pad", {"x", "pads"}, "reflect"), "mode", "reflect");
  node("Pad", {"x", "crop"}, "cropped");
  int64_init("far", {0, 6, 0, 5});
  string_attr(node("Pad", {"x", "far"}, "wrap"), "mode", "wrap");
  output("constant");
  output("edge");
  output("reflect");
  output("cropped");
  output("wrap");
  ImportedModel m = import();
  std::vector<Tensor> args = bind(m, {{"x", iota({1, 4})}});
  for (const std::vector<Tensor>& out : {interpret(m.graph, args), run_cpu(m, args)}) {
    expect_values(out[0], {1, 9}, {7, 7, 0, 1, 2, 3, 7, 7, 7});
    expect_values(out[1], {1, 9}, {0, 0, 0, 1, 2, 3, 3, 3, 3});
    expect_values(out[2], {1, 9}, {2, 1, 0, 1, 2, 3, 2, 1, 0});
    expect_values(out[3], {1, 4}, {1, 2, 3, 0});
    // Wrapped more than once each side: numpy.pad(mode="wrap").
    expect_values(out[4], {1, 15}, {2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0});
  }
}

TEST_F(OnnxShapeOpsTest, PadValueFromTheGraph) {
  input("x", {"2"});
  input("v", {}, TensorProto::FLOAT);
  int64_init("pads", {1, 1});
  node("Pad", {"x", "pads", "v"}, "y");
  output("y");
  ImportedModel m = import();
  Tensor v(DType::f32, {});
  v.set_f64(0, -5);
  expect_values(interpret(m.graph, bind(m, {{"x", iota({2})}, {"v", v}}))[0], {4}, {-5, 0, 1, -5});
}

TEST_F(OnnxShapeOpsTest, ShapeHonoursStartAndEnd) {
  input("x", {"B", "3", "4"});
  auto* s = node("Shape", {"x"}, "tail");
  int_attr(s, "start", -2);
  node("ConstantOfShape", {"tail"}, "zeros");
  node("Add", {"zeros", "x"}, "y");
  output("y");
  ImportedModel m = import();
  EXPECT_EQ(m.graph.type(m.graph.outputs()[0].value).shape, (Shape{Dim::symbol("B"), 3, 4}));
  expect_values(interpret(m.graph, bind(m, {{"x", iota({1, 3, 4})}}))[0], {1, 3, 4}, range(12));
}

// A symbolic dim's value is known only at run time: Shape of it may feed shape
// arithmetic (below) but not be data.
TEST_F(OnnxShapeOpsTest, ShapeOfASymbolicDimAsDataIsAUserError) {
  input("x", {"B", "3"});
  node("Shape", {"x"}, "s");
  output("s");
  expect_contains(import_error(), "'s' is computed from symbolic dims ([B, 3]) and used as data");
}

// The TorchScript exporter's dynamic-batch shape arithmetic: Shape -> Gather ->
// Unsqueeze -> Concat -> Reshape with the batch symbolic and a head width
// divided out; a Slice of the shape; and its Expand of a mask to [B, 1, 6]
// through ConstantOfShape, Mul, Equal and Where (the exporter's -1 test).
TEST_F(OnnxShapeOpsTest, ShapeArithmeticKeepsASymbolicBatch) {
  input("x", {"B", "4", "6"});
  input("m", {"1", "1", "6"});
  int64_init("zero", {0}, /*scalar=*/true);
  int64_init("two", {2}, /*scalar=*/true);
  int64_init("heads", {2}, /*scalar=*/true);
  int64_init("axes", {0});
  int64_init("four_two", {4, 2});
  int64_init("one", {1});
  int64_init("three", {3});
  int64_init("minus_one", {-1});
  int64_init("one_six", {1, 6});
  node("Shape", {"x"}, "shape");
  node("Gather", {"shape", "zero"}, "batch");
  node("Gather", {"shape", "two"}, "width");
  node("Div", {"width", "heads"}, "per_head");
  node("Unsqueeze", {"batch", "axes"}, "batch1");
  node("Unsqueeze", {"per_head", "axes"}, "per_head1");
  int_attr(node("Concat", {"batch1", "four_two", "per_head1"}, "target"), "axis", 0);
  node("Reshape", {"x", "target"}, "y");  // [B, 4, 2, 3]
  node("Slice", {"shape", "one", "three"}, "rest");  // [4, 6], static
  int_attr(node("Concat", {"batch1", "rest"}, "rest_target"), "axis", 0);
  node("Reshape", {"x", "rest_target"}, "w");  // [B, 4, 6] again, its static part from the Slice
  int_attr(node("Concat", {"batch1", "minus_one"}, "flat"), "axis", 0);
  node("Reshape", {"x", "flat"}, "z");  // [B, 24]
  int_attr(node("Concat", {"batch1", "one_six"}, "wide"), "axis", 0);  // [B, 1, 6]
  node("Shape", {"wide"}, "wide_rank");
  node("ConstantOfShape", {"wide_rank"}, "ones")->add_attribute()->CopyFrom([] {
    AttributeProto a;
    a.set_name("value");
    a.set_type(AttributeProto::TENSOR);
    a.mutable_t()->set_data_type(TensorProto::INT64);
    a.mutable_t()->add_dims(1);
    a.mutable_t()->add_int64_data(1);
    return a;
  }());
  node("Mul", {"ones", "minus_one"}, "minus_ones");
  node("Equal", {"wide", "minus_ones"}, "is_minus");
  node("Where", {"is_minus", "ones", "wide"}, "expand_to");
  node("Expand", {"m", "expand_to"}, "e");
  for (const char* o : {"y", "z", "e", "w"}) output(o);
  ImportedModel m = import();
  EXPECT_EQ(m.graph.type(m.graph.outputs()[0].value).shape, (Shape{Dim::symbol("B"), Dim(4), Dim(2), Dim(3)}));
  EXPECT_EQ(m.graph.type(m.graph.outputs()[1].value).shape, (Shape{Dim::symbol("B"), Dim(24)}));
  EXPECT_EQ(m.graph.type(m.graph.outputs()[2].value).shape, (Shape{Dim::symbol("B"), Dim(1), Dim(6)}));
  for (int64_t batch : {2, 3}) {
    std::vector<Tensor> out = interpret(m.graph, bind(m, {{"x", iota({batch, 4, 6})}, {"m", iota({1, 1, 6})}}));
    expect_values(out[0], {batch, 4, 2, 3}, range(batch * 24));
    expect_values(out[1], {batch, 24}, range(batch * 24));
    std::vector<double> rows;
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t i = 0; i < 6; ++i) rows.push_back(static_cast<double>(i));
    }
    expect_values(out[2], {batch, 1, 6}, rows);
    expect_values(out[3], {batch, 4, 6}, range(batch * 24));
  }
}

// A product of the symbolic batch with another extent is no dim the IR has.
TEST_F(OnnxShapeOpsTest, ShapeArithmeticThatMultipliesASymbolIsAUserError) {
  input("x", {"B", "4"});
  int64_init("zero", {0}, /*scalar=*/true);
  int64_init("four", {4}, /*scalar=*/true);
  int64_init("axes", {0});
  node("Shape", {"x"}, "shape");
  node("Gather", {"shape", "zero"}, "batch");
  node("Mul", {"batch", "four"}, "all");
  node("Unsqueeze", {"all", "axes"}, "target");
  node("Reshape", {"x", "target"}, "y");
  output("y");
  expect_contains(import_error(), "holds a product of a symbolic dim and another extent");
}

// Size of a static shape is a known scalar, usable as data (here added to x).
TEST_F(OnnxShapeOpsTest, SizeOfAStaticShapeIsAKnownScalar) {
  input("x", {"2", "3"});
  node("Size", {"x"}, "n");
  node("Cast", {"n"}, "nf");
  int_attr(graph().mutable_node(1), "to", TensorProto::FLOAT);
  node("Add", {"x", "nf"}, "y");
  output("y");
  ImportedModel m = import();
  expect_values(interpret(m.graph, bind(m, {{"x", iota({2, 3})}}))[0], {2, 3}, {6, 7, 8, 9, 10, 11});
}

TEST_F(OnnxShapeOpsTest, SizeOfASymbolicShapeIsAUserError) {
  input("x", {"B", "3"});
  node("Size", {"x"}, "n");
  output("n");
  expect_contains(import_error(), "Size of a symbolic shape is not folded");
}

TEST_F(OnnxShapeOpsTest, ConstantOfShapeTakesTheValueAttribute) {
  int64_init("shape", {2, 3});
  auto* c = node("ConstantOfShape", {"shape"}, "y");
  auto* a = c->add_attribute();
  a->set_name("value");
  a->set_type(AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(TensorProto::INT64);
  a->mutable_t()->add_dims(1);
  a->mutable_t()->add_int64_data(5);
  input("x", {"2", "3"}, TensorProto::INT64);
  node("Add", {"x", "y"}, "z");
  output("z");
  ImportedModel m = import();
  std::vector<Tensor> out = interpret(m.graph, bind(m, {{"x", iota({2, 3}, DType::i64)}}));
  EXPECT_EQ(out[0].dtype(), DType::i64);
  expect_values(out[0], {2, 3}, {5, 6, 7, 8, 9, 10});
}

TEST_F(OnnxShapeOpsTest, RangeFoldsForIntegersAndFloats) {
  int64_init("start", {10}, true);
  int64_init("limit", {1}, true);
  int64_init("delta", {-4}, true);
  node("Range", {"start", "limit", "delta"}, "r");  // 10, 6, 2
  float_init("fstart", {}, {0.5});
  float_init("flimit", {}, {2});
  float_init("fdelta", {}, {0.5});
  node("Range", {"fstart", "flimit", "fdelta"}, "fr");  // 0.5, 1, 1.5
  input("x", {"3"}, TensorProto::INT64);
  input("y", {"3"});
  node("Add", {"x", "r"}, "a");
  node("Add", {"y", "fr"}, "b");
  output("a");
  output("b");
  ImportedModel m = import();
  std::vector<Tensor> out =
      interpret(m.graph, bind(m, {{"x", Tensor(DType::i64, {3})}, {"y", Tensor(DType::f32, {3})}}));
  expect_values(out[0], {3}, {10, 6, 2});
  expect_values(out[1], {3}, {0.5, 1, 1.5});
}

// Positions over a dynamic sequence, as exporters write arange(x.size(1)): an
// iota of the symbolic extent; another start is refused by name.
TEST_F(OnnxShapeOpsTest, RangeOfASymbolicLimit) {
  input("x", {"B", "T"}, TensorProto::INT64);
  node("Shape", {"x"}, "shape");
  int64_init("one", {1}, true);
  node("Gather", {"shape", "one"}, "t");
  int64_init("zero", {0}, true);
  node("Range", {"zero", "t", "one"}, "positions");
  node("Add", {"x", "positions"}, "y");
  output("y");
  ImportedModel m = import();
  EXPECT_EQ(m.graph.type(m.graph.outputs()[0].value).shape, (Shape{Dim::symbol("B"), Dim::symbol("T")}));
  for (const std::vector<Tensor>& out : both(m, {{"x", iota({2, 5}, DType::i64)}})) {
    expect_values(out[0], {2, 5}, {0, 2, 4, 6, 8, 5, 7, 9, 11, 13});
  }
  graph().mutable_node(2)->set_input(0, "one");
  expect_contains(import_error(), "Range of a symbolic limit needs start 0");
}

// The exporters' pattern: Shape -> Gather -> Unsqueeze -> Concat -> Reshape,
// all on static shapes, folds to one static reshape.
TEST_F(OnnxShapeOpsTest, ShapeArithmeticFoldsToAStaticReshape) {
  input("x", {"2", "3", "4"});
  int64_init("zero", {0}, /*scalar=*/true);
  int64_init("axes", {0});
  int64_init("minus_one", {-1});
  node("Shape", {"x"}, "shape");
  node("Gather", {"shape", "zero"}, "batch");
  node("Unsqueeze", {"batch", "axes"}, "batch1");
  auto* c = node("Concat", {"batch1", "minus_one"}, "target");
  int_attr(c, "axis", 0);
  node("Reshape", {"x", "target"}, "y");
  output("y");
  ImportedModel m = import();
  EXPECT_EQ(count_ops(m.graph, OpKind::Gather), 0u);
  EXPECT_EQ(count_ops(m.graph, OpKind::Concat), 0u);
  EXPECT_EQ(count_ops(m.graph, OpKind::Reshape), 1u);
  EXPECT_TRUE(m.bound.empty());
  expect_values(interpret(m.graph, bind(m, {{"x", iota({2, 3, 4})}}))[0], {2, 12}, range(24));
}

}  // namespace
}  // namespace stitch::onnx_import
