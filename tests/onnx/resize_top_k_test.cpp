// Resize and TopK (src/onnx/ops_cnn.cpp, ops_index.cpp, and the IR's resize
// and top_k composites) on small models built here, through the interpreter
// and the CPU back end, against direct loops written in the test from ONNX's
// definitions: n-linear interpolation summed over the corners (not axis by
// axis, as the composite does), and a stable sort for TopK. The ONNX node
// tests check the other modes against ONNX's own reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "onnx/importer.h"
#include "onnx_model_builder.h"
#include "stitch/interpreter.h"

namespace stitch::onnx_import {
namespace {

using ::onnx::TensorProto;
using testing::expect_close;
using testing::expect_contains;
using testing::int_attr;
using testing::string_attr;
using Ints = std::vector<int64_t>;

class OnnxResizeTopKTest : public testing::OnnxModelTest {};

Tensor eighths(DType t, const Ints& shape, double phase) {
  Tensor x(t, shape);
  for (int64_t i = 0; i < x.numel(); ++i) x.set_f64(i, std::round(40 * std::sin(0.37 * static_cast<double>(i) + phase)) / 8);
  return x;
}

// The source coordinate of output position y by ONNX's formulas.
double source(const std::string& mode, int64_t y, int64_t in, int64_t out) {
  const double scale = static_cast<double>(out) / static_cast<double>(in);
  const double yd = static_cast<double>(y);
  if (mode == "align_corners") return out == 1 ? 0.0 : yd * static_cast<double>(in - 1) / static_cast<double>(out - 1);
  if (mode == "pytorch_half_pixel" && out == 1) return -0.5;
  return (yd + 0.5) / scale - 0.5;  // half_pixel, pytorch_half_pixel
}

// Bilinear resize of the last two axes of [N, C, H, W] to [oh, ow]: the sum
// over the four corners, each weighted by the product of its axis weights,
// neighbours clamped into the input.
Tensor naive_bilinear(const Tensor& x, int64_t oh, int64_t ow, const std::string& mode) {
  const int64_t nc = x.shape()[0] * x.shape()[1], h = x.shape()[2], w = x.shape()[3];
  Tensor y(x.dtype(), {x.shape()[0], x.shape()[1], oh, ow});
  for (int64_t b = 0; b < nc; ++b) {
    for (int64_t i = 0; i < oh; ++i) {
      for (int64_t j = 0; j < ow; ++j) {
        const double si = source(mode, i, h, oh), sj = source(mode, j, w, ow);
        const double fi = std::floor(si), fj = std::floor(sj);
        double sum = 0;
        for (int di = 0; di < 2; ++di) {
          for (int dj = 0; dj < 2; ++dj) {
            const double wi = di ? si - fi : 1 - (si - fi), wj = dj ? sj - fj : 1 - (sj - fj);
            const int64_t r = std::clamp<int64_t>(static_cast<int64_t>(fi) + di, 0, h - 1);
            const int64_t c = std::clamp<int64_t>(static_cast<int64_t>(fj) + dj, 0, w - 1);
            sum += wi * wj * x.get_f64((b * h + r) * w + c);
          }
        }
        y.set_f64((b * oh + i) * ow + j, sum);
      }
    }
  }
  return y;
}

// PyTorch's nearest upsampling as its exporter writes it: scales [1, 1, 2, 2],
// asymmetric coordinates, floor; the batch a symbol bound at run time.
TEST_F(OnnxResizeTopKTest, NearestUpsampleAsPyTorchExportsIt) {
  input("x", {"batch", "2", "3", "4"});
  float_init("scales", {4}, {1, 1, 2, 2});
  auto* n = node("Resize", {"x", "", "scales"}, "y");
  string_attr(n, "mode", "nearest");
  string_attr(n, "coordinate_transformation_mode", "asymmetric");
  string_attr(n, "nearest_mode", "floor");
  output("y");
  ImportedModel m = import();
  ASSERT_EQ(m.graph.type(m.graph.outputs()[0].value).shape, (Shape{Dim::symbol("batch"), 2, 6, 8}));
  const Tensor x = eighths(DType::f32, {3, 2, 3, 4}, 0.4);
  Tensor want(DType::f32, {3, 2, 6, 8});
  for (int64_t b = 0; b < 6; ++b) {
    for (int64_t i = 0; i < 6; ++i) {
      for (int64_t j = 0; j < 8; ++j) want.set_f64((b * 6 + i) * 8 + j, x.get_f64((b * 3 + i / 2) * 4 + j / 2));
    }
  }
  for (const auto& out : both(m, {{"x", x}})) expect_close(out[0], want, 0);
}

TEST_F(OnnxResizeTopKTest, BilinearBySizesInEachCoordinateMode) {
  struct Case {
    const char* mode;
    int64_t oh, ow;
  };
  const Case cases[] = {{"half_pixel", 3, 3}, {"half_pixel", 9, 7}, {"pytorch_half_pixel", 1, 8},
                        {"align_corners", 7, 2}, {"align_corners", 2, 11}};
  dims_input("x", {2, 2, 4, 5});
  const Tensor x = eighths(DType::f32, {2, 2, 4, 5}, 1.1);
  std::vector<Tensor> want;
  for (size_t k = 0; k < std::size(cases); ++k) {
    const std::string s = std::to_string(k);
    int64_init("sizes" + s, {2, 2, cases[k].oh, cases[k].ow});
    auto* n = node("Resize", {"x", "", "", "sizes" + s}, "y" + s);
    string_attr(n, "mode", "linear");
    string_attr(n, "coordinate_transformation_mode", cases[k].mode);
    output("y" + s);
    want.push_back(naive_bilinear(x, cases[k].oh, cases[k].ow, cases[k].mode));
  }
  ImportedModel m = import();
  for (const auto& out : both(m, {{"x", x}})) {
    for (size_t k = 0; k < std::size(cases); ++k) {
      SCOPED_TRACE(cases[k].mode);
      expect_close(out[k], want[k], 1e-5);
    }
  }
}

TEST_F(OnnxResizeTopKTest, NearestResizesIntegers) {
  dims_input("x", {2, 5}, TensorProto::INT32);
  int64_init("sizes", {2, 3});
  node("Resize", {"x", "", "", "sizes"}, "y");  // nearest, half_pixel, round_prefer_floor
  output("y");
  ImportedModel m = import();
  Tensor x(DType::i32, {2, 5});
  for (int64_t i = 0; i < 10; ++i) x.set_f64(i, static_cast<double>(i * 7 - 20));
  // half_pixel sources (j + 0.5) * 5 / 3 - 0.5 = 0.33, 2, 3.67 round to 0, 2, 4.
  Tensor want(DType::i32, {2, 3});
  const int64_t picks[] = {0, 2, 4};
  for (int64_t r = 0; r < 2; ++r) {
    for (int64_t j = 0; j < 3; ++j) want.set_f64(r * 3 + j, x.get_f64(r * 5 + picks[j]));
  }
  for (const auto& out : both(m, {{"x", x}})) expect_close(out[0], want, 0);
}

TEST_F(OnnxResizeTopKTest, ResizeRefusesAntialiasAndSymbolicResizedAxes) {
  input("x", {"n", "4"});
  float_init("scales", {2}, {2, 2});
  node("Resize", {"x", "", "scales"}, "y");
  output("y");
  expect_contains(import_error(), "resized axes must be static");
  graph().mutable_node(0)->mutable_input()->Mutable(2)->assign("");
  int64_init("sizes", {3, 8});
  graph().mutable_node(0)->add_input("sizes");
  expect_contains(import_error(), "resized axes must be static");
  int_attr(graph().mutable_node(0), "antialias", 1);
  expect_contains(import_error(), "antialias");
}

// The k largest or smallest of each row with their indices, ties to the
// lower index: a stable sort.
std::pair<Tensor, Tensor> naive_top_k(const Tensor& x, int64_t k, bool largest) {
  const int64_t rows = x.shape()[0], n = x.shape()[1];
  Tensor v(x.dtype(), {rows, k}), idx(DType::i64, {rows, k});
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      const double va = x.get_f64(r * n + a), vb = x.get_f64(r * n + b);
      return largest ? va > vb : va < vb;
    });
    for (int64_t t = 0; t < k; ++t) {
      v.set_f64(r * k + t, x.get_f64(r * n + order[t]));
      idx.set_i64(r * k + t, order[t]);
    }
  }
  return {v, idx};
}

TEST_F(OnnxResizeTopKTest, TopKWithTiesAndInfinities) {
  const double inf = std::numeric_limits<double>::infinity();
  const double rows[][7] = {{1, 3, 3, -inf, 2, 3, 0},
                            {-inf, -inf, -inf, 0, -inf, 5, -inf},
                            {inf, 2, inf, -1, -1, -1, 7},
                            {4, 4, 4, 4, 4, 4, 4}};
  dims_input("x", {4, 7});
  int64_init("k5", {5});
  int64_init("k3", {3});
  multi_output_node("TopK", {"x", "k5"}, {"big", "big_i"});
  int_attr(multi_output_node("TopK", {"x", "k3"}, {"small", "small_i"}), "largest", 0);
  for (const char* o : {"big", "big_i", "small", "small_i"}) output(o);
  ImportedModel m = import();
  Tensor x(DType::f32, {4, 7});
  for (int64_t i = 0; i < 28; ++i) x.set_f64(i, rows[i / 7][i % 7]);
  const auto [big, big_i] = naive_top_k(x, 5, true);
  const auto [small, small_i] = naive_top_k(x, 3, false);
  for (const auto& out : both(m, {{"x", x}})) {
    expect_close(out[0], big, 0);
    expect_close(out[1], big_i, 0);
    expect_close(out[2], small, 0);
    expect_close(out[3], small_i, 0);
  }
}

TEST_F(OnnxResizeTopKTest, TopKOfIntegersAlongTheFirstAxisWithOneOutput) {
  dims_input("x", {6, 3}, TensorProto::INT32);
  int64_init("k", {2});
  int_attr(multi_output_node("TopK", {"x", "k"}, {"", "i"}), "axis", 0);
  output("i");
  ImportedModel m = import();
  Tensor x(DType::i32, {6, 3});
  const int values[] = {5, -2147483647 - 1, 0, 5, 9, 0, -1, -2147483647 - 1, 3, 7, 9, 3, 5, 1, 3, 7, 2, 0};
  for (int64_t i = 0; i < 18; ++i) x.set_f64(i, values[i]);
  // Column by column: {5, 5, -1, 7, 5, 7} -> 3, 5; {min, 9, min, 9, 1, 2} -> 1, 3; {0, 0, 3, 3, 3, 0} -> 2, 3.
  Tensor want(DType::i64, {2, 3});
  const int64_t picks[] = {3, 1, 2, 5, 3, 3};
  for (int64_t i = 0; i < 6; ++i) want.set_i64(i, picks[i]);
  for (const auto& out : both(m, {{"x", x}})) expect_close(out[0], want, 0);
}

}  // namespace
}  // namespace stitch::onnx_import
