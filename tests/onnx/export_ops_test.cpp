// The ops PyTorch's exporters write that the importer learned for them (Split,
// GatherElements, Trilu, CumSum, Einsum, SoftmaxCrossEntropyLoss, IsInf, the
// opset-18 to 22 forms) and external data, on small models built here, checked
// through the interpreter and the CPU back end against values computed in the
// test.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <map>
#include <string>

#include "onnx/importer.h"
#include "onnx_model_builder.h"
#include "stitch/interpreter.h"

namespace stitch::onnx_import {
namespace {

using ::onnx::TensorProto;
using testing::bind;
using testing::expect_contains;
using testing::int_attr;
using testing::string_attr;
using Ints = std::vector<int64_t>;

class OnnxExportOpsTest : public testing::OnnxModelTest {
 protected:
  void set_opset(int64_t v) { model().mutable_opset_import(0)->set_version(v); }
};

Tensor counting(const Ints& shape, DType dtype = DType::f32, double from = 0) {
  Tensor t(dtype, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.set_f64(i, from + static_cast<double>(i));
  return t;
}

Tensor longs(const Ints& shape, const Ints& values) {
  Tensor t(DType::i64, shape);
  for (size_t i = 0; i < values.size(); ++i) t.set_i64(static_cast<int64_t>(i), values[i]);
  return t;
}

void expect_tensor(const Tensor& t, const Ints& shape, const std::vector<double>& want, double tol = 0) {
  EXPECT_EQ(t.shape(), shape);
  ASSERT_EQ(t.numel(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(t.get_f64(static_cast<int64_t>(i)), want[i], tol) << i;
}

TEST_F(OnnxExportOpsTest, SplitBySizesAndIntoEqualParts) {
  set_opset(20);
  input("x", {"2", "7"});
  int64_init("sizes", {3, 4});
  auto* by_sizes = multi_output_node("Split", {"x", "sizes"}, {"a", "b"});
  int_attr(by_sizes, "axis", -1);
  auto* parts = multi_output_node("Split", {"x"}, {"p", "", "r"});  // 3, 3 and 1 columns; the middle unwanted
  int_attr(parts, "axis", 1);
  int_attr(parts, "num_outputs", 3);
  for (const char* o : {"a", "b", "p", "r"}) output(o);
  ImportedModel m = import();
  for (const auto& out : both(m, {{"x", counting({2, 7})}})) {
    expect_tensor(out[0], {2, 3}, {0, 1, 2, 7, 8, 9});
    expect_tensor(out[1], {2, 4}, {3, 4, 5, 6, 10, 11, 12, 13});
    expect_tensor(out[2], {2, 3}, {0, 1, 2, 7, 8, 9});
    expect_tensor(out[3], {2, 1}, {6, 13});
  }
}

TEST_F(OnnxExportOpsTest, SplitSizesThatDoNotAddUpAreAUserError) {
  input("x", {"5"});
  int64_init("sizes", {3, 3});
  multi_output_node("Split", {"x", "sizes"}, {"a", "b"});
  output("a");
  expect_contains(import_error(), "do not add up to the axis' extent 5");
}

TEST_F(OnnxExportOpsTest, GatherElementsAlongEitherAxisWithNegativeIndices) {
  input("x", {"2", "3"});  // 0 1 2 / 3 4 5
  input("i", {"2", "2"}, TensorProto::INT64);
  auto* rows = node("GatherElements", {"x", "i"}, "cols");
  int_attr(rows, "axis", 1);
  input("j", {"1", "3"}, TensorProto::INT32);
  node("GatherElements", {"x", "j"}, "down");  // axis 0
  output("cols");
  output("down");
  ImportedModel m = import();
  Tensor j(DType::i32, {1, 3});
  j.set_i64(0, 1);
  j.set_i64(1, 0);
  j.set_i64(2, -1);
  for (const auto& out : both(m, {{"x", counting({2, 3})}, {"i", longs({2, 2}, {2, -3, 0, 1})}, {"j", j}})) {
    expect_tensor(out[0], {2, 2}, {2, 0, 3, 4});
    expect_tensor(out[1], {1, 3}, {3, 1, 5});
  }
}

TEST_F(OnnxExportOpsTest, TriluKeepsAnUpperOrLowerTriangle) {
  input("x", {"2", "3", "4"});
  int64_init("k", {1}, /*scalar=*/true);
  node("Trilu", {"x", "k"}, "up");  // j - i >= 1
  int64_init("minus", {-1}, /*scalar=*/true);
  auto* low = node("Trilu", {"x", "minus"}, "low");  // j - i <= -1
  int_attr(low, "upper", 0);
  output("up");
  output("low");
  ImportedModel m = import();
  for (const auto& out : both(m, {{"x", counting({2, 3, 4}, DType::f32, 1)}})) {
    expect_tensor(out[0], {2, 3, 4}, {0, 2, 3, 4, 0, 0, 7, 8, 0, 0, 0, 12,  //
                                      0, 14, 15, 16, 0, 0, 19, 20, 0, 0, 0, 24});
    expect_tensor(out[1], {2, 3, 4}, {0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0,  //
                                      0, 0, 0, 0, 17, 0, 0, 0, 21, 22, 0, 0});
  }
}

TEST_F(OnnxExportOpsTest, CumSumEveryWayAlongEitherAxis) {
  input("x", {"2", "4"});  // 1 2 3 4 / 5 6 7 8
  int64_init("last", {-1}, /*scalar=*/true);
  int64_init("first", {0});
  node("CumSum", {"x", "last"}, "plain");
  int_attr(node("CumSum", {"x", "last"}, "excl"), "exclusive", 1);
  int_attr(node("CumSum", {"x", "last"}, "rev"), "reverse", 1);
  auto* both_ways = node("CumSum", {"x", "last"}, "rev_excl");
  int_attr(both_ways, "reverse", 1);
  int_attr(both_ways, "exclusive", 1);
  node("CumSum", {"x", "first"}, "down");
  for (const char* o : {"plain", "excl", "rev", "rev_excl", "down"}) output(o);
  ImportedModel m = import();
  for (const auto& out : both(m, {{"x", counting({2, 4}, DType::f32, 1)}})) {
    expect_tensor(out[0], {2, 4}, {1, 3, 6, 10, 5, 11, 18, 26});
    expect_tensor(out[1], {2, 4}, {0, 1, 3, 6, 0, 5, 11, 18});
    expect_tensor(out[2], {2, 4}, {10, 9, 7, 4, 26, 21, 15, 8});
    expect_tensor(out[3], {2, 4}, {9, 7, 4, 0, 21, 15, 8, 0});
    expect_tensor(out[4], {2, 4}, {1, 2, 3, 4, 6, 8, 10, 12});
  }
}

// Einsum by its definition: every assignment of the labels, summed.
Tensor naive_einsum(const std::string& in_a, const std::string& in_b, const std::string& out, const Tensor& a,
                    const Tensor& b) {
  std::map<char, int64_t> extent;
  for (size_t d = 0; d < in_a.size(); ++d) extent[in_a[d]] = a.shape()[d];
  for (size_t d = 0; d < in_b.size(); ++d) extent[in_b[d]] = b.shape()[d];
  Ints out_shape;
  for (char c : out) out_shape.push_back(extent[c]);
  Tensor y(DType::f32, out_shape);
  std::vector<char> labels;
  for (auto [c, e] : extent) labels.push_back(c);
  std::map<char, int64_t> at;
  auto flat = [&](const std::string& ls, const Tensor& t) {
    int64_t f = 0;
    for (size_t d = 0; d < ls.size(); ++d) f = f * t.shape()[d] + at[ls[d]];
    return f;
  };
  auto visit = [&](auto&& self, size_t k) -> void {
    if (k == labels.size()) {
      int64_t o = flat(out, y);
      y.set_f64(o, y.get_f64(o) + a.get_f64(flat(in_a, a)) * b.get_f64(flat(in_b, b)));
      return;
    }
    for (at[labels[k]] = 0; at[labels[k]] < extent[labels[k]]; ++at[labels[k]]) self(self, k + 1);
  };
  visit(visit, 0);
  return y;
}

struct EinsumCase {
  std::string a, b, out;
  Ints a_shape, b_shape;
};

TEST_F(OnnxExportOpsTest, EinsumProductsAgainstTheirDefinition) {
  const EinsumCase cases[] = {
      {"bij", "bjk", "bik", {2, 3, 4}, {2, 4, 5}},        // batched matmul
      {"bhqd", "bhkd", "bhqk", {2, 2, 3, 4}, {2, 2, 5, 4}},  // attention scores
      {"bhqk", "bhkd", "bqhd", {1, 2, 3, 5}, {1, 2, 5, 4}},  // context, heads moved
      {"i", "i", "", {6}, {6}},                          // a dot product
      {"ij", "k", "ikj", {2, 3}, {4}},                   // an outer product
      {"ijk", "jl", "li", {2, 3, 4}, {3, 2}},            // k summed alone
  };
  int index = 0;
  std::map<std::string, Tensor> real;
  for (const EinsumCase& c : cases) {
    std::string a = "a" + std::to_string(index), b = "b" + std::to_string(index), y = "y" + std::to_string(index);
    std::vector<std::string> a_dims, b_dims;
    for (int64_t d : c.a_shape) a_dims.push_back(std::to_string(d));
    for (int64_t d : c.b_shape) b_dims.push_back(std::to_string(d));
    input(a, a_dims);
    input(b, b_dims);
    string_attr(node("Einsum", {a, b}, y), "equation", c.a + "," + c.b + "->" + c.out);
    output(y);
    real[a] = counting(c.a_shape, DType::f32, 0.5);
    real[b] = counting(c.b_shape, DType::f32, -3);
    ++index;
  }
  // Implicit output (labels used once, in order) and a lone operand's transpose.
  input("m", {"2", "3"});
  input("v", {"3", "4"});
  string_attr(node("Einsum", {"m", "v"}, "implicit"), "equation", "ij, jk");
  string_attr(node("Einsum", {"m"}, "swapped"), "equation", "ij->ji");
  output("implicit");
  output("swapped");
  real["m"] = counting({2, 3}, DType::f32, 1);
  real["v"] = counting({3, 4}, DType::f32, 2);
  ImportedModel m = import();
  for (const auto& out : both(m, real)) {
    for (size_t k = 0; k < std::size(cases); ++k) {
      const EinsumCase& c = cases[k];
      Tensor want = naive_einsum(c.a, c.b, c.out, real["a" + std::to_string(k)], real["b" + std::to_string(k)]);
      std::vector<double> values;
      for (int64_t i = 0; i < want.numel(); ++i) values.push_back(want.get_f64(i));
      SCOPED_TRACE(c.a + "," + c.b + "->" + c.out);
      expect_tensor(out[k], want.shape(), values, 1e-3);
    }
    Tensor mv = naive_einsum("ij", "jk", "ik", real["m"], real["v"]);
    std::vector<double> values;
    for (int64_t i = 0; i < mv.numel(); ++i) values.push_back(mv.get_f64(i));
    expect_tensor(out[std::size(cases)], {2, 4}, values, 1e-4);
    expect_tensor(out[std::size(cases) + 1], {3, 2}, {1, 4, 2, 5, 3, 6});
  }
}

TEST_F(OnnxExportOpsTest, EinsumDiagonalIsAUserError) {
  input("x", {"3", "3"});
  string_attr(node("Einsum", {"x"}, "d"), "equation", "ii->i");
  output("d");
  expect_contains(import_error(), "label 'i' repeats within one term");
}

TEST_F(OnnxExportOpsTest, SoftmaxCrossEntropyLossWithWeightsAndAnIgnoredLabel) {
  input("scores", {"3", "4"});
  input("labels", {"3"}, TensorProto::INT64);
  float_init("w", {4}, {1, 2, 0.5, 3});
  auto* mean = multi_output_node("SoftmaxCrossEntropyLoss", {"scores", "labels", "w"}, {"loss", "log_prob"});
  int_attr(mean, "ignore_index", -100);
  auto* none = node("SoftmaxCrossEntropyLoss", {"scores", "labels"}, "each");
  string_attr(none, "reduction", "none");
  int_attr(none, "ignore_index", -100);
  output("loss");
  output("log_prob");
  output("each");
  ImportedModel m = import();
  Tensor scores = counting({3, 4}, DType::f32);
  for (int64_t i = 0; i < 12; ++i) scores.set_f64(i, std::sin(static_cast<double>(i)));
  const Ints labels{2, -100, 3};
  const double w[] = {1, 2, 0.5, 3};
  std::vector<double> log_prob, each;
  double total = 0, weights = 0;
  for (int64_t r = 0; r < 3; ++r) {
    double sum = 0;
    for (int64_t c = 0; c < 4; ++c) sum += std::exp(scores.get_f64(r * 4 + c));
    for (int64_t c = 0; c < 4; ++c) log_prob.push_back(scores.get_f64(r * 4 + c) - std::log(sum));
    const int64_t label = labels[static_cast<size_t>(r)];
    double loss = label < 0 ? 0 : -log_prob[static_cast<size_t>(r * 4 + label)];
    each.push_back(loss);
    if (label >= 0) {
      total += loss * w[label];
      weights += w[label];
    }
  }
  for (const auto& out : both(m, {{"scores", scores}, {"labels", longs({3}, labels)}})) {
    expect_tensor(out[0], {}, {total / weights}, 1e-5);
    expect_tensor(out[1], {3, 4}, log_prob, 1e-5);
    expect_tensor(out[2], {3}, each, 1e-5);
  }
}

TEST_F(OnnxExportOpsTest, IsInfDetectsEitherSide) {
  input("x", {"4"});
  node("IsInf", {"x"}, "any");
  int_attr(node("IsInf", {"x"}, "pos"), "detect_negative", 0);
  int_attr(node("IsInf", {"x"}, "neg"), "detect_positive", 0);
  output("any");
  output("pos");
  output("neg");
  ImportedModel m = import();
  const double inf = std::numeric_limits<double>::infinity();
  Tensor x(DType::f32, {4});
  for (int64_t i = 0; i < 4; ++i) x.set_f64(i, std::vector<double>{inf, -inf, 1, std::nan("")}[i]);
  for (const auto& out : both(m, {{"x", x}})) {
    expect_tensor(out[0], {4}, {1, 1, 0, 0});
    expect_tensor(out[1], {4}, {1, 0, 0, 0});
    expect_tensor(out[2], {4}, {0, 1, 0, 0});
  }
}

TEST_F(OnnxExportOpsTest, Opset20ReducesBoolsAndTakesAxesAsAnInput) {
  set_opset(20);
  input("x", {"2", "3"});
  float_init("half", {}, {2.5});
  node("Greater", {"x", "half"}, "big");
  int64_init("axes", {1});
  node("ReduceMax", {"big", "axes"}, "any");
  node("ReduceMin", {"big", "axes"}, "all");
  node("ReduceMean", {"x", "axes"}, "mean");
  output("any");
  output("all");
  output("mean");
  ImportedModel m = import();
  for (const auto& out : both(m, {{"x", counting({2, 3})}})) {  // 0 1 2 / 3 4 5
    EXPECT_EQ(out[0].dtype(), DType::boolean);
    expect_tensor(out[0], {2, 1}, {0, 1});
    expect_tensor(out[1], {2, 1}, {0, 1});
    expect_tensor(out[2], {2, 1}, {1, 4});
  }
}

// The dynamo exporter's form: initializers in a file beside the model.
TEST_F(OnnxExportOpsTest, ExternalDataIsReadFromBesideTheModel) {
  input("x", {"3"});
  auto* w = graph().add_initializer();
  w->set_name("w");
  w->set_data_type(TensorProto::FLOAT);
  w->add_dims(3);
  w->set_data_location(TensorProto::EXTERNAL);
  auto entry = [&](const std::string& key, const std::string& value) {
    auto* e = w->add_external_data();
    e->set_key(key);
    e->set_value(value);
  };
  entry("location", "model.onnx.data");
  entry("offset", "8");
  entry("length", "12");
  node("Mul", {"x", "w"}, "y");
  output("y");
  const float bytes[] = {-1, -1, 2, 3, 4};
  std::ofstream(dir() / "model.onnx.data", std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes), sizeof(bytes));
  ImportedModel m = import();
  for (const auto& out : both(m, {{"x", counting({3}, DType::f32, 1)}})) expect_tensor(out[0], {3}, {2, 6, 12});

  w->mutable_external_data(1)->set_value("12");  // 12 + 12 bytes past a 20-byte file
  expect_contains(import_error(), "lie past the end of");
  w->mutable_external_data(0)->set_value("../model.onnx.data");
  expect_contains(import_error(), "is not a path inside the model's folder");
  w->mutable_external_data(0)->set_value("missing.data");
  expect_contains(import_error(), "cannot open its external data file");
}

}  // namespace
}  // namespace stitch::onnx_import
