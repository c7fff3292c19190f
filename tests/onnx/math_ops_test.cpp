// The ONNX math ops of the second piece (activations, Clip, Sum/Mean, the
// composed reductions, ArgMax/ArgMin, LogSoftmax, LayerNormalization, Gemm) on
// small models built with the protobuf API, checked against values computed
// here in double; a few run on the CPU back end too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>

#include "onnx/importer.h"
#include "onnx_model_builder.h"
#include "stitch/interpreter.h"

namespace stitch::onnx_import {
namespace {

using ::onnx::TensorProto;
using testing::bind;
using testing::expect_ints;
using testing::expect_near;
using testing::float_attr;
using testing::int_attr;
using testing::ints_attr;
using testing::string_attr;
using testing::tensor;

class OnnxMathOpsTest : public testing::OnnxModelTest {};

const std::vector<double> kX = {-2.5, -1, -0.25, 0, 0.5, 3};

TEST_F(OnnxMathOpsTest, LeakyReluGeluSumMeanAndCompareOrEqual) {
  input("x", {"2", "3"});
  input("y", {"3"});
  float_attr(node("LeakyRelu", {"x"}, "leaky"), "alpha", 0.1f);
  node("LeakyRelu", {"x"}, "leaky_default");
  node("Gelu", {"x"}, "gelu");
  string_attr(node("Gelu", {"x"}, "gelu_tanh"), "approximate", "tanh");
  node("Sum", {"x", "y", "x"}, "sum");
  node("Mean", {"x", "y"}, "mean");
  node("LessOrEqual", {"x", "y"}, "le");
  node("GreaterOrEqual", {"x", "y"}, "ge");
  node("CastLike", {"le", "x"}, "le_f");
  node("CastLike", {"ge", "x"}, "ge_f");
  for (const char* o : {"leaky", "leaky_default", "gelu", "gelu_tanh", "sum", "mean", "le_f", "ge_f"}) output(o);
  ImportedModel m = import();
  std::vector<double> y = {0, -1, 1};
  std::vector<Tensor> out = interpret(m.graph, {tensor({2, 3}, kX), tensor({3}, y)});
  std::vector<std::vector<double>> want(8);
  for (size_t i = 0; i < kX.size(); ++i) {
    double x = kX[i], yi = y[i % 3];
    want[0].push_back(x < 0 ? 0.1 * x : x);
    want[1].push_back(x < 0 ? 0.01 * x : x);
    want[2].push_back(0.5 * x * (1 + std::erf(x / std::sqrt(2.0))));
    want[3].push_back(0.5 * x * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (x + 0.044715 * x * x * x))));
    want[4].push_back(2 * x + yi);
    want[5].push_back((x + yi) / 2);
    want[6].push_back(x <= yi ? 1 : 0);
    want[7].push_back(x >= yi ? 1 : 0);
  }
  ASSERT_EQ(out.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    SCOPED_TRACE(k);
    EXPECT_EQ(out[k].dtype(), DType::f32);
    expect_near(out[k], want[k]);
  }
}

// Clip's bounds: a graph input, an initializer, omitted (""), the old
// attribute form, and lo > hi (everything becomes hi).
TEST_F(OnnxMathOpsTest, ClipBoundsInEveryForm) {
  input("x", {"6"});
  input("lo", {});
  float_init("hi", {}, {1.0f});
  float_init("lo_big", {}, {2.0f});
  node("Clip", {"x", "lo", "hi"}, "both");
  node("Clip", {"x", "", "hi"}, "only_hi");
  node("Clip", {"x", "lo"}, "only_lo");
  node("Clip", {"x"}, "none");
  auto* old = node("Clip", {"x"}, "attrs");
  float_attr(old, "min", -0.5f);
  float_attr(old, "max", 0.25f);
  node("Clip", {"x", "lo_big", "hi"}, "crossed");
  for (const char* o : {"both", "only_hi", "only_lo", "none", "attrs", "crossed"}) output(o);
  ImportedModel m = import();
  std::vector<Tensor> out = interpret(m.graph, bind(m, {{"x", tensor({6}, kX)}, {"lo", tensor({}, {-1.5})}}));
  std::vector<std::vector<double>> want(6);
  for (double x : kX) {
    want[0].push_back(std::clamp(x, -1.5, 1.0));
    want[1].push_back(std::min(x, 1.0));
    want[2].push_back(std::max(x, -1.5));
    want[3].push_back(x);
    want[4].push_back(std::clamp(x, -0.5, 0.25));
    want[5].push_back(1.0);
  }
  ASSERT_EQ(out.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    SCOPED_TRACE(k);
    expect_near(out[k], want[k]);
  }
}

TEST_F(OnnxMathOpsTest, ClipWithATensorBoundIsAUserError) {
  input("x", {"6"});
  input("lo", {"2"});
  node("Clip", {"x", "lo"}, "y");
  output("y");
  try {
    import();
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("must be a scalar"), std::string::npos) << e.what();
  }
}

// x[2,3] = {{1, -2, 3}, {-4, 5, 0.5}}; every reduction takes its axes from the
// attribute or from an input, whatever the op.
TEST_F(OnnxMathOpsTest, ReductionsTakeAxesFromAttributeOrInput) {
  input("x", {"2", "3"});
  int64_init("ax1", {1});
  int64_init("ax0", {0});
  int64_init("none", {});
  ints_attr(node("ReduceMin", {"x"}, "min"), "axes", {1});
  auto* prod = node("ReduceProd", {"x", "ax0"}, "prod");
  int_attr(prod, "keepdims", 0);
  node("ReduceL1", {"x", "ax1"}, "l1");
  ints_attr(node("ReduceL2", {"x"}, "l2"), "axes", {-1});
  int_attr(node("ReduceSumSquare", {"x"}, "ssq"), "keepdims", 0);
  auto* lse = node("ReduceLogSumExp", {"x", "ax1"}, "lse");
  int_attr(lse, "keepdims", 0);
  auto* noop = node("ReduceSumSquare", {"x", "none"}, "noop_sq");
  int_attr(noop, "noop_with_empty_axes", 1);
  auto* noop_max = node("ReduceMax", {"x"}, "noop_max");
  int_attr(noop_max, "noop_with_empty_axes", 1);
  node("ReduceLogSum", {"ssq"}, "logsum");
  for (const char* o : {"min", "prod", "l1", "l2", "ssq", "lse", "noop_sq", "noop_max", "logsum"}) output(o);
  ImportedModel m = import();
  std::vector<double> x = {1, -2, 3, -4, 5, 0.5};
  std::vector<Tensor> out = interpret(m.graph, bind(m, {{"x", tensor({2, 3}, x)}}));
  ASSERT_EQ(out.size(), 9u);
  auto row = [&](int r, auto f, double init) {
    double acc = init;
    for (int c = 0; c < 3; ++c) acc = f(acc, x[r * 3 + c]);
    return acc;
  };
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{2, 1}));
  expect_near(out[0], {-2, -4});
  EXPECT_EQ(out[1].shape(), (std::vector<int64_t>{3}));
  expect_near(out[1], {-4, -10, 1.5});
  expect_near(out[2], {6, 9.5});
  double sq0 = row(0, [](double a, double v) { return a + v * v; }, 0);
  double sq1 = row(1, [](double a, double v) { return a + v * v; }, 0);
  expect_near(out[3], {std::sqrt(sq0), std::sqrt(sq1)});
  EXPECT_EQ(out[4].rank(), 0);
  expect_near(out[4], {sq0 + sq1}, 1e-4);
  EXPECT_EQ(out[5].shape(), (std::vector<int64_t>{2}));
  expect_near(out[5], {std::log(row(0, [](double a, double v) { return a + std::exp(v); }, 0)),
                       std::log(row(1, [](double a, double v) { return a + std::exp(v); }, 0))});
  std::vector<double> squares;
  for (double v : x) squares.push_back(v * v);
  expect_near(out[6], squares);
  expect_near(out[7], x);
  expect_near(out[8], {std::log(sq0 + sq1)});
}

TEST_F(OnnxMathOpsTest, ReduceAxesFromAGraphInputIsAUserError) {
  input("x", {"2", "3"});
  input("axes", {"1"}, TensorProto::INT64);
  node("ReduceMin", {"x", "axes"}, "y");
  output("y");
  try {
    import();
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("the axes input"), std::string::npos) << e.what();
  }
}

// Ties: select_last_index picks the last of equal extrema.
TEST_F(OnnxMathOpsTest, ArgMaxArgMinFirstAndLastIndex) {
  input("x", {"2", "4"});
  node("ArgMax", {"x"}, "amax0");
  auto* last = node("ArgMax", {"x"}, "amax_last");
  int_attr(last, "axis", -1);
  int_attr(last, "select_last_index", 1);
  auto* first = node("ArgMin", {"x"}, "amin_first");
  int_attr(first, "axis", 1);
  int_attr(first, "keepdims", 0);
  auto* min_last = node("ArgMin", {"x"}, "amin_last");
  int_attr(min_last, "axis", 1);
  int_attr(min_last, "keepdims", 0);
  int_attr(min_last, "select_last_index", 1);
  for (const char* o : {"amax0", "amax_last", "amin_first", "amin_last"}) output(o);
  ImportedModel m = import();
  std::vector<Tensor> args = {tensor({2, 4}, {3, 1, 3, 1, 0, 7, 7, -2})};
  std::vector<Tensor> out = interpret(m.graph, args);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{1, 4}));
  expect_ints(out[0], {0, 1, 1, 0});
  EXPECT_EQ(out[1].shape(), (std::vector<int64_t>{2, 1}));
  expect_ints(out[1], {2, 2});
  expect_ints(out[2], {1, 3});
  expect_ints(out[3], {3, 3});
  std::vector<Tensor> cpu = run_cpu(m, args);
  expect_ints(cpu[1], {2, 2});
  expect_ints(cpu[3], {3, 3});
}

TEST_F(OnnxMathOpsTest, LogSoftmaxOverAxisZero) {
  input("x", {"2", "3"});
  int_attr(node("LogSoftmax", {"x"}, "y"), "axis", 0);
  output("y");
  ImportedModel m = import();
  std::vector<Tensor> out = interpret(m.graph, {tensor({2, 3}, kX)});
  std::vector<double> want(6);
  for (int c = 0; c < 3; ++c) {
    double lse = std::log(std::exp(kX[c]) + std::exp(kX[3 + c]));
    want[c] = kX[c] - lse;
    want[3 + c] = kX[3 + c] - lse;
  }
  expect_near(out[0], want);
}

// LayerNormalization over the last two axes of x[2,2,3] (axis=1), with all
// three outputs; a second node wants Y alone (the layer_norm composite).
TEST_F(OnnxMathOpsTest, LayerNormalizationGivesYMeanAndInvStdDev) {
  input("x", {"2", "2", "3"});
  float_init("scale", {2, 3}, {1, 2, 0.5, -1, 1, 3});
  float_init("bias", {3}, {0.25, 0, -1});
  auto* ln = multi_output_node("LayerNormalization", {"x", "scale", "bias"}, {"y", "mean", "inv_std"});
  int_attr(ln, "axis", 1);
  float_attr(ln, "epsilon", 1e-3f);
  auto* only_y = node("LayerNormalization", {"x", "scale", "bias"}, "y_only");
  int_attr(only_y, "axis", -2);
  float_attr(only_y, "epsilon", 1e-3f);
  auto* no_bias = multi_output_node("LayerNormalization", {"x", "scale"}, {"y_nb", "", "inv_std_nb"});
  int_attr(no_bias, "axis", 1);
  float_attr(no_bias, "epsilon", 1e-3f);
  for (const char* o : {"y", "mean", "inv_std", "y_only", "y_nb", "inv_std_nb"}) output(o);
  ImportedModel m = import();
  std::vector<double> x = {1, 2, 3, 4, 5, 6, -1, 0.5, 2, 8, -3, 0};
  std::vector<double> scale = {1, 2, 0.5, -1, 1, 3}, bias = {0.25, 0, -1};
  std::vector<double> want_y, want_mean, want_inv, want_y_nb;
  for (int b = 0; b < 2; ++b) {
    double mean = 0, var = 0;
    for (int i = 0; i < 6; ++i) mean += x[b * 6 + i] / 6;
    for (int i = 0; i < 6; ++i) var += (x[b * 6 + i] - mean) * (x[b * 6 + i] - mean) / 6;
    double inv = 1 / std::sqrt(var + 1e-3);
    want_mean.push_back(mean);
    want_inv.push_back(inv);
    for (int i = 0; i < 6; ++i) {
      double norm = (x[b * 6 + i] - mean) * inv;
      want_y.push_back(norm * scale[i] + bias[i % 3]);
      want_y_nb.push_back(norm * scale[i]);
    }
  }
  std::vector<Tensor> args = bind(m, {{"x", tensor({2, 2, 3}, x)}});
  for (bool cpu : {false, true}) {
    SCOPED_TRACE(cpu ? "cpu" : "interpreter");
    std::vector<Tensor> out = cpu ? run_cpu(m, args) : interpret(m.graph, args);
    ASSERT_EQ(out.size(), 6u);
    expect_near(out[0], want_y, 1e-4);
    EXPECT_EQ(out[1].shape(), (std::vector<int64_t>{2, 1, 1}));
    expect_near(out[1], want_mean, 1e-5);
    EXPECT_EQ(out[2].shape(), (std::vector<int64_t>{2, 1, 1}));
    expect_near(out[2], want_inv, 1e-5);
    expect_near(out[3], want_y, 1e-4);
    expect_near(out[4], want_y_nb, 1e-4);
    expect_near(out[5], want_inv, 1e-5);
  }
}

// An f16 X with the default stash_type: the statistics are computed and
// returned in f32, Y comes back in f16.
TEST_F(OnnxMathOpsTest, LayerNormalizationStashesInFloat) {
  input("x", {"2", "4"}, TensorProto::FLOAT16);
  input("scale", {"4"}, TensorProto::FLOAT16);
  multi_output_node("LayerNormalization", {"x", "scale"}, {"y", "mean", "inv_std"});
  for (const char* o : {"y", "mean", "inv_std"}) output(o);
  ImportedModel m = import();
  std::vector<double> x = {1, 2, 3, 4, -8, 0, 0, 4}, scale = {1, 0.5, 2, -1};
  Tensor xt(DType::f16, {2, 4}), st(DType::f16, {4});
  for (int i = 0; i < 8; ++i) xt.set_f64(i, x[i]);
  for (int i = 0; i < 4; ++i) st.set_f64(i, scale[i]);
  std::vector<Tensor> out = interpret(m.graph, {xt, st});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].dtype(), DType::f16);
  EXPECT_EQ(out[1].dtype(), DType::f32);
  EXPECT_EQ(out[2].dtype(), DType::f32);
  std::vector<double> want_y, want_mean, want_inv;
  for (int r = 0; r < 2; ++r) {
    double mean = 0, var = 0;
    for (int c = 0; c < 4; ++c) mean += x[r * 4 + c] / 4;
    for (int c = 0; c < 4; ++c) var += (x[r * 4 + c] - mean) * (x[r * 4 + c] - mean) / 4;
    double inv = 1 / std::sqrt(var + 1e-5);
    want_mean.push_back(mean);
    want_inv.push_back(inv);
    for (int c = 0; c < 4; ++c) want_y.push_back((x[r * 4 + c] - mean) * inv * scale[c]);
  }
  expect_near(out[0], want_y, 5e-3);
  expect_near(out[1], want_mean, 1e-6);
  expect_near(out[2], want_inv, 1e-6);
}

// Y = 0.5 * A^T B^T + 2 * C, A[3,2] (so M=2, K=3), B[4,3] (N=4), C[4].
TEST_F(OnnxMathOpsTest, GemmWithTransposesAlphaBetaAndBroadcastC) {
  input("a", {"3", "2"});
  float_init("b", {4, 3}, {1, 0, -1, 2, 1, 0, 0, 0, 3, -1, 2, 1});
  float_init("c", {4}, {1, -1, 0.5, 0});
  auto* g = node("Gemm", {"a", "b", "c"}, "y");
  int_attr(g, "transA", 1);
  int_attr(g, "transB", 1);
  float_attr(g, "alpha", 0.5f);
  float_attr(g, "beta", 2.0f);
  node("Gemm", {"y", "b"}, "plain");  // [2,4] x [4,3], no C
  output("y");
  output("plain");
  ImportedModel m = import();
  std::vector<double> a = {1, 2, -1, 0, 3, 1};  // [3,2]
  std::vector<double> b = {1, 0, -1, 2, 1, 0, 0, 0, 3, -1, 2, 1}, c = {1, -1, 0.5, 0};
  std::vector<double> want_y, want_plain;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 4; ++j) {
      double s = 0;
      for (int k = 0; k < 3; ++k) s += a[k * 2 + i] * b[j * 3 + k];
      want_y.push_back(0.5 * s + 2 * c[j]);
    }
  }
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) {
      double s = 0;
      for (int k = 0; k < 4; ++k) s += want_y[i * 4 + k] * b[k * 3 + j];
      want_plain.push_back(s);
    }
  }
  std::vector<Tensor> args = bind(m, {{"a", tensor({3, 2}, a)}});
  std::vector<Tensor> out = interpret(m.graph, args);
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{2, 4}));
  expect_near(out[0], want_y);
  expect_near(out[1], want_plain, 1e-4);
  std::vector<Tensor> cpu = run_cpu(m, args);
  expect_near(cpu[0], want_y, 1e-4);
  expect_near(cpu[1], want_plain, 1e-4);
}

}  // namespace
}  // namespace stitch::onnx_import
