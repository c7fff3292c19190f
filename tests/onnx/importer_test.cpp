// The ONNX importer on small models built here with the protobuf API, checked
// against values computed in the test through the interpreter (and once the CPU).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>

#include "onnx/importer.h"
#include "onnx_model_builder.h"
#include "stitch/interpreter.h"

namespace stitch::onnx_import {
namespace {

namespace fs = std::filesystem;
using testing::bind;
using testing::expect_contains;
using testing::expect_near;
using testing::int_attr;
using testing::ints_attr;
using testing::tensor;

class OnnxImportTest : public testing::OnnxModelTest {};

TEST_F(OnnxImportTest, CorruptFileIsAUserError) {
  input("x", {"2"});
  node("Relu", {"x"}, "y");
  output("y");
  std::string path = save();
  fs::resize_file(path, 7);
  std::ofstream(path, std::ios::binary | std::ios::app) << "\xff\xff\xff garbage";
  try {
    import_onnx(path);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("not a valid ONNX model"), std::string::npos) << e.what();
  }
}

TEST_F(OnnxImportTest, UnsupportedOpsAreListedTogether) {
  input("x", {"2", "3"});
  node("GridSample", {"x"}, "a", "grid1");
  node("Relu", {"a"}, "b");
  node("LSTM", {"b"}, "c", "lstm7");
  output("c");
  try {
    import_onnx(save());
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("op GridSample (node grid1, opset 17)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("op LSTM (node lstm7, opset 17)"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("Relu"), std::string::npos) << msg;
  }
}

TEST_F(OnnxImportTest, OpsetAboveTheLibraryIsAUserError) {
  model().mutable_opset_import(0)->set_version(kMaxOpset + 1);
  input("x", {"2"});
  node("Relu", {"x"}, "y");
  output("y");
  expect_contains(import_error(), fmt::format("opset {} is not supported", kMaxOpset + 1));
}

// Relu gained bfloat16 in opset 13: its opset-11 definition is another one.
TEST_F(OnnxImportTest, OldOpsetWithAChangedOpIsAUserError) {
  model().mutable_opset_import(0)->set_version(11);
  input("x", {"2"});
  node("Relu", {"x"}, "y");
  output("y");
  std::string error = import_error();
  expect_contains(error, "op Relu");
  expect_contains(error, "since opset 6");
}

// And has kept its opset-7 definition through opset 17: an opset-7 model imports.
TEST_F(OnnxImportTest, OldOpsetWhoseOpsAreUnchangedImports) {
  model().mutable_opset_import(0)->set_version(7);
  input("a", {"2"}, ::onnx::TensorProto::BOOL);
  input("b", {"2"}, ::onnx::TensorProto::BOOL);
  node("And", {"a", "b"}, "y");
  output("y");
  ImportedModel m = import();
  Tensor a(DType::boolean, {2}), b(DType::boolean, {2});
  a.set_i64(0, 1);
  a.set_i64(1, 1);
  b.set_i64(1, 1);
  Tensor y = interpret(m.graph, {a, b})[0];
  EXPECT_EQ(y.get_i64(0), 0);
  EXPECT_EQ(y.get_i64(1), 1);
}

TEST_F(OnnxImportTest, DimParamBecomesASymbolicDim) {
  input("x", {"batch", "4"});
  node("Exp", {"x"}, "y");
  output("y");
  ImportedModel m = import_onnx(save());
  ASSERT_EQ(m.graph.params().size(), 1u);
  const Shape& s = m.graph.type(m.graph.params()[0]).shape;
  ASSERT_EQ(s.size(), 2u);
  EXPECT_TRUE(s[0].is_symbolic());
  EXPECT_EQ(s[0].name(), "batch");
  EXPECT_EQ(s[1], Dim(4));
  std::vector<Tensor> out = interpret(m.graph, {tensor({3, 4}, std::vector<double>(12, 1.0))});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{3, 4}));
  expect_near(out[0], std::vector<double>(12, std::exp(1.0)));
}

TEST_F(OnnxImportTest, UnnamedUnknownDimIsAUserError) {
  input("x", {"", "4"});
  node("Exp", {"x"}, "y");
  output("y");
  EXPECT_THROW(import_onnx(save()), UserError);
}

TEST_F(OnnxImportTest, InitializerBecomesABoundParameterAndSplatsAConstant) {
  input("x", {"3"});
  float_init("w", {3}, {1, 2, 3}, /*raw=*/true);
  float_init("half", {3}, {0.5, 0.5, 0.5}, /*raw=*/false);
  node("Mul", {"x", "w"}, "a");
  node("Add", {"a", "half"}, "y");
  output("y");
  ImportedModel m = import_onnx(save());
  ASSERT_EQ(m.bound.size(), 1u);
  ASSERT_TRUE(m.bound.count("w"));
  EXPECT_EQ(m.graph.params().size(), 2u);  // x and w; half is a splat constant
  std::vector<Tensor> out = interpret(m.graph, bind(m, {{"x", tensor({3}, {10, 20, 30})}}));
  expect_near(out[0], {10.5, 40.5, 90.5});
}

// x[2,3] @ W[3,2] + b[2], then relu; W and b are initializers.
TEST_F(OnnxImportTest, MatMulAddReluOnInterpreterAndCpu) {
  input("x", {"N", "3"});
  float_init("W", {3, 2}, {1, -1, 2, 0, -3, 1}, /*raw=*/false);
  float_init("b", {2}, {0.5, -4}, /*raw=*/true);
  node("MatMul", {"x", "W"}, "xw");
  node("Add", {"xw", "b"}, "pre");
  node("Relu", {"pre"}, "out/relu:0");
  output("out/relu:0");
  ImportedModel m = import_onnx(save());
  ASSERT_EQ(m.graph.outputs().size(), 1u);
  EXPECT_EQ(m.graph.outputs()[0].name, "out_relu_0");
  std::vector<double> x = {1, 2, 3, -1, 0, 2};
  std::vector<double> want;
  double w[3][2] = {{1, -1}, {2, 0}, {-3, 1}};
  double bias[2] = {0.5, -4};
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      double s = bias[j];
      for (int k = 0; k < 3; ++k) s += x[i * 3 + k] * w[k][j];
      want.push_back(std::max(s, 0.0));
    }
  }
  std::vector<Tensor> args = bind(m, {{"x", tensor({2, 3}, x)}});
  expect_near(interpret(m.graph, args)[0], want);
  expect_near(run_cpu(m, args)[0], want, 1e-4);
}

TEST_F(OnnxImportTest, SoftmaxOverTheLastAxis) {
  input("x", {"2", "3"});
  node("Softmax", {"x"}, "y");
  output("y");
  ImportedModel m = import_onnx(save());
  std::vector<double> x = {1, 2, 3, 0, 0, -1};
  std::vector<double> want;
  for (int r = 0; r < 2; ++r) {
    double sum = 0;
    for (int c = 0; c < 3; ++c) sum += std::exp(x[r * 3 + c]);
    for (int c = 0; c < 3; ++c) want.push_back(std::exp(x[r * 3 + c]) / sum);
  }
  expect_near(interpret(m.graph, {tensor({2, 3}, x)})[0], want);
}

TEST_F(OnnxImportTest, ReduceSumTakesAxesFromAConstantInput) {
  input("x", {"2", "3"});
  int64_init("axes", {1});
  node("ReduceSum", {"x", "axes"}, "s");
  auto* mean = node("ReduceMean", {"x"}, "m");
  ints_attr(mean, "axes", {0});
  int_attr(mean, "keepdims", 0);
  output("s");
  output("m");
  ImportedModel m = import_onnx(save());
  std::vector<Tensor> out = interpret(m.graph, bind(m, {{"x", tensor({2, 3}, {1, 2, 3, 4, 5, 6})}}));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{2, 1}));
  expect_near(out[0], {6, 15});
  EXPECT_EQ(out[1].shape(), (std::vector<int64_t>{3}));
  expect_near(out[1], {2.5, 3.5, 4.5});
}

TEST_F(OnnxImportTest, WhereCastAndComparisons) {
  input("x", {"4"});
  input("y", {"4"});
  node("Greater", {"x", "y"}, "gt");
  node("Where", {"gt", "x", "y"}, "mx");
  int_attr(node("Cast", {"gt"}, "gtf"), "to", ::onnx::TensorProto::FLOAT);
  node("Sub", {"mx", "gtf"}, "r");
  output("r");
  ImportedModel m = import_onnx(save());
  std::vector<Tensor> out = interpret(m.graph, {tensor({4}, {1, 5, -2, 3}), tensor({4}, {2, 4, -3, 3})});
  expect_near(out[0], {2, 4, -3, 3});
}

// ReduceSum's axes as a graph input: the import names the input it needs, and
// succeeds once given its value, which is then no parameter.
TEST_F(OnnxImportTest, AxesFromAGraphInputNeedsAKnownInput) {
  input("x", {"2", "3"});
  input("axes", {"1"}, ::onnx::TensorProto::INT64);
  node("ReduceSum", {"x", "axes"}, "s");
  output("s");
  std::string path = save();
  try {
    import_onnx(path);
    FAIL() << "expected NeedsKnownInput";
  } catch (const NeedsKnownInput& e) {
    EXPECT_EQ(e.input(), "axes");
    expect_contains(e.what(), "must be known at import time");
  }

  ImportOptions options;
  Tensor axes(DType::i64, {1});
  axes.set_i64(0, 1);
  options.known_inputs.emplace("axes", axes);
  ImportedModel m = import_onnx(path, options);
  ASSERT_EQ(m.graph.params().size(), 1u);
  EXPECT_EQ(m.graph.value_name(m.graph.params()[0]), "x");
  EXPECT_FALSE(m.bound.count("axes"));
  std::vector<Tensor> out = interpret(m.graph, bind(m, {{"x", tensor({2, 3}, {1, 2, 3, 4, 5, 6})}}));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{2, 1}));
  expect_near(out[0], {6, 15});
}

TEST_F(OnnxImportTest, KnownInputNotMatchingItsDeclarationIsAUserError) {
  input("x", {"2", "3"});
  input("axes", {"1"}, ::onnx::TensorProto::INT64);
  node("ReduceSum", {"x", "axes"}, "s");
  output("s");
  Tensor two_axes(DType::i64, {2});
  two_axes.set_i64(0, 0);
  two_axes.set_i64(1, 1);
  Tensor rank0(DType::i64, {});
  rank0.set_i64(0, 1);
  Tensor float_axes(DType::f32, {1});
  float_axes.set_f64(0, 1);
  for (const Tensor& wrong : {two_axes, rank0, float_axes}) {
    SCOPED_TRACE(wrong.str(4));
    ImportOptions options;
    options.known_inputs.emplace("axes", wrong);
    std::string msg = import_error(options);
    expect_contains(msg, "input 'axes'");
    expect_contains(msg, "does not match the declared type");
  }
}

}  // namespace
}  // namespace stitch::onnx_import
