// The convolution-network ops (src/onnx/ops_cnn.cpp and the IR's conv, max_pool
// and avg_pool composites, src/ir/composites_nn.cpp) on small models built here,
// through the interpreter and the CPU back end, against direct loops written in
// the test from ONNX's definitions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
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
using testing::expect_close;
using testing::expect_contains;
using testing::int_attr;
using testing::ints_attr;
using testing::string_attr;
using Ints = std::vector<int64_t>;

class OnnxCnnOpsTest : public testing::OnnxModelTest {};

// Deterministic values of both signs.
Tensor wavy(const Ints& shape, double phase) {
  Tensor t(DType::f32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.set_f64(i, std::sin(0.37 * static_cast<double>(i) + phase));
  return t;
}

struct Geometry {
  Ints kernel, strides, pads, dilations;  // pads: begins, then ends
  int64_t groups = 1;
};

// out[n, o, y, x] by ONNX's definition, for 2-D windows over [N, C, H, W].
Tensor naive_conv(const Tensor& x, const Tensor& w, const Tensor* bias, const Geometry& g) {
  const int64_t n = x.shape()[0], c = x.shape()[1], h = x.shape()[2], wd = x.shape()[3];
  const int64_t o = w.shape()[0], cg = w.shape()[1], kh = w.shape()[2], kw = w.shape()[3];
  const int64_t oh = (h + g.pads[0] + g.pads[2] - g.dilations[0] * (kh - 1) - 1) / g.strides[0] + 1;
  const int64_t ow = (wd + g.pads[1] + g.pads[3] - g.dilations[1] * (kw - 1) - 1) / g.strides[1] + 1;
  Tensor y(DType::f32, {n, o, oh, ow});
  const int64_t og = o / g.groups;
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t oc = 0; oc < o; ++oc) {
      for (int64_t i = 0; i < oh; ++i) {
        for (int64_t j = 0; j < ow; ++j) {
          double sum = bias ? bias->get_f64(oc) : 0.0;
          for (int64_t ic = 0; ic < cg; ++ic) {
            const int64_t channel = oc / og * cg + ic;
            for (int64_t p = 0; p < kh; ++p) {
              for (int64_t q = 0; q < kw; ++q) {
                const int64_t r = i * g.strides[0] - g.pads[0] + p * g.dilations[0];
                const int64_t s = j * g.strides[1] - g.pads[1] + q * g.dilations[1];
                if (r < 0 || r >= h || s < 0 || s >= wd) continue;
                sum += x.get_f64(((b * c + channel) * h + r) * wd + s) * w.get_f64(((oc * cg + ic) * kh + p) * kw + q);
              }
            }
          }
          y.set_f64(((b * o + oc) * oh + i) * ow + j, sum);
        }
      }
    }
  }
  return y;
}

TEST_F(OnnxCnnOpsTest, ConvWithStridesPadsDilationsGroupsAndBias) {
  const Geometry cases[] = {
      {{3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1},  // ResNet's 3 x 3
      {{3, 3}, {2, 2}, {1, 0, 0, 1}, {1, 1}, 1},  // strided, uneven pads
      {{3, 2}, {1, 2}, {2, 1, 2, 0}, {2, 1}, 2},  // dilated, two groups
      {{1, 1}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 1},  // a strided 1 x 1 shortcut
      {{3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 4},  // depthwise
  };
  std::map<std::string, Tensor> real{{"x", wavy({2, 4, 7, 6}, 0.1)}};
  dims_input("x", {2, 4, 7, 6});
  std::vector<Tensor> want;
  for (size_t k = 0; k < std::size(cases); ++k) {
    const Geometry& g = cases[k];
    const int64_t out = g.groups == 4 ? 4 : 6;
    Tensor w = wavy({out, 4 / g.groups, g.kernel[0], g.kernel[1]}, 0.3 * static_cast<double>(k));
    Tensor bias = wavy({out}, 2.0 + static_cast<double>(k));
    const std::string s = std::to_string(k);
    dims_input("w" + s, w.shape());
    dims_input("b" + s, bias.shape());
    auto* n = node("Conv", {"x", "w" + s, "b" + s}, "y" + s);
    ints_attr(n, "strides", g.strides);
    ints_attr(n, "pads", g.pads);
    ints_attr(n, "dilations", g.dilations);
    int_attr(n, "group", g.groups);
    output("y" + s);
    want.push_back(naive_conv(real["x"], w, &bias, g));
    real["w" + s] = w;
    real["b" + s] = bias;
  }
  ImportedModel m = import();
  for (const auto& out : both(m, real)) {
    for (size_t k = 0; k < std::size(cases); ++k) {
      SCOPED_TRACE(k);
      expect_close(out[k], want[k]);
    }
  }
}

TEST_F(OnnxCnnOpsTest, ConvAutoPadSameUpperKeepsTheSpatialSize) {
  dims_input("x", {1, 2, 5, 5});
  dims_input("w", {3, 2, 3, 3});
  string_attr(node("Conv", {"x", "w"}, "y"), "auto_pad", "SAME_UPPER");
  output("y");
  ImportedModel m = import();
  Tensor x = wavy({1, 2, 5, 5}, 0), w = wavy({3, 2, 3, 3}, 1);
  Tensor want = naive_conv(x, w, nullptr, {{3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1});
  for (const auto& out : both(m, {{"x", x}, {"w", w}})) expect_close(out[0], want);
}

// Pooling by its definition; counted: the taps inside the input, or also those in
// the explicit pads (count_include_pad), never what ceil mode adds.
Tensor naive_pool(const Tensor& x, const Ints& kernel, const Ints& strides, const Ints& pads, bool ceil_mode,
                  bool is_max, bool include_pad) {
  const int64_t n = x.shape()[0], c = x.shape()[1], h = x.shape()[2], wd = x.shape()[3];
  auto extent = [&](int64_t in, int64_t k, int64_t s, int64_t lo, int64_t hi) {
    const int64_t room = in + lo + hi - k;
    int64_t out = (ceil_mode ? (room + s - 1) / s : room / s) + 1;
    if (ceil_mode && (out - 1) * s >= in + lo) --out;
    return out;
  };
  const int64_t oh = extent(h, kernel[0], strides[0], pads[0], pads[2]);
  const int64_t ow = extent(wd, kernel[1], strides[1], pads[1], pads[3]);
  Tensor y(DType::f32, {n, c, oh, ow});
  for (int64_t b = 0; b < n * c; ++b) {
    for (int64_t i = 0; i < oh; ++i) {
      for (int64_t j = 0; j < ow; ++j) {
        double acc = is_max ? -std::numeric_limits<double>::infinity() : 0.0;
        int64_t count = 0;
        for (int64_t p = 0; p < kernel[0]; ++p) {
          for (int64_t q = 0; q < kernel[1]; ++q) {
            const int64_t r = i * strides[0] - pads[0] + p, s = j * strides[1] - pads[1] + q;
            const bool inside = r >= 0 && r < h && s >= 0 && s < wd;
            const bool in_pads = r >= -pads[0] && r < h + pads[2] && s >= -pads[1] && s < wd + pads[3];
            if (inside || (include_pad && in_pads)) ++count;
            if (!inside) continue;
            const double v = x.get_f64((b * h + r) * wd + s);
            acc = is_max ? std::max(acc, v) : acc + v;
          }
        }
        y.set_f64((b * oh + i) * ow + j, is_max ? acc : acc / static_cast<double>(count));
      }
    }
  }
  return y;
}

TEST_F(OnnxCnnOpsTest, MaxAndAveragePoolWithPadsAndCeilMode) {
  struct Pool {
    const char* op;
    Ints kernel, strides, pads;
    bool ceil_mode, include_pad;
  };
  const Pool cases[] = {
      {"MaxPool", {3, 3}, {2, 2}, {1, 1, 1, 1}, false, false},  // ResNet's stem
      {"MaxPool", {2, 3}, {2, 2}, {0, 1, 0, 1}, true, false},
      {"AveragePool", {3, 3}, {2, 2}, {1, 1, 1, 1}, false, false},
      {"AveragePool", {3, 3}, {2, 2}, {1, 1, 1, 1}, true, true},
      {"AveragePool", {2, 2}, {2, 2}, {0, 0, 0, 0}, true, false},
  };
  dims_input("x", {2, 3, 7, 8});
  Tensor x = wavy({2, 3, 7, 8}, 0.5);
  std::vector<Tensor> want;
  for (size_t k = 0; k < std::size(cases); ++k) {
    const Pool& p = cases[k];
    auto* n = node(p.op, {"x"}, "y" + std::to_string(k));
    ints_attr(n, "kernel_shape", p.kernel);
    ints_attr(n, "strides", p.strides);
    ints_attr(n, "pads", p.pads);
    int_attr(n, "ceil_mode", p.ceil_mode);
    if (std::string(p.op) == "AveragePool") int_attr(n, "count_include_pad", p.include_pad);
    output("y" + std::to_string(k));
    want.push_back(naive_pool(x, p.kernel, p.strides, p.pads, p.ceil_mode, std::string(p.op) == "MaxPool",
                              p.include_pad));
  }
  ImportedModel m = import();
  for (const auto& out : both(m, {{"x", x}})) {
    for (size_t k = 0; k < std::size(cases); ++k) {
      SCOPED_TRACE(k);
      expect_close(out[k], want[k], 1e-5);
    }
  }
}

TEST_F(OnnxCnnOpsTest, BatchNormalizationAndGlobalPools) {
  dims_input("x", {2, 3, 4, 5});
  float_init("scale", {3}, {1.5, -0.5, 2});
  float_init("shift", {3}, {0.1, 0.2, -0.3});
  float_init("mean", {3}, {0.05, -0.1, 0.2});
  float_init("var", {3}, {0.5, 2, 1});
  testing::float_attr(node("BatchNormalization", {"x", "scale", "shift", "mean", "var"}, "bn"), "epsilon", 1e-3f);
  node("GlobalAveragePool", {"bn"}, "avg");
  node("GlobalMaxPool", {"x"}, "max");
  output("bn");
  output("avg");
  output("max");
  ImportedModel m = import();
  Tensor x = wavy({2, 3, 4, 5}, 0.2);
  const double scale[] = {1.5, -0.5, 2}, shift[] = {0.1, 0.2, -0.3}, mean[] = {0.05, -0.1, 0.2}, var[] = {0.5, 2, 1};
  Tensor bn(DType::f32, {2, 3, 4, 5}), avg(DType::f32, {2, 3, 1, 1}), mx(DType::f32, {2, 3, 1, 1});
  for (int64_t b = 0; b < 6; ++b) {
    const int64_t c = b % 3;
    double sum = 0, top = -std::numeric_limits<double>::infinity();
    for (int64_t i = 0; i < 20; ++i) {
      const double v = x.get_f64(b * 20 + i);
      const double y = (v - mean[c]) / std::sqrt(var[c] + 1e-3) * scale[c] + shift[c];
      bn.set_f64(b * 20 + i, y);
      sum += y;
      top = std::max(top, v);
    }
    avg.set_f64(b, sum / 20);
    mx.set_f64(b, top);
  }
  for (const auto& out : both(m, {{"x", x}})) {
    expect_close(out[0], bn, 1e-5);
    expect_close(out[1], avg, 1e-5);
    expect_close(out[2], mx, 0);
  }
}

TEST_F(OnnxCnnOpsTest, BatchNormalizationInTrainingModeIsAUserError) {
  dims_input("x", {2, 3, 4});
  for (const char* p : {"s", "b", "m", "v"}) float_init(p, {3}, {1, 1, 1});
  int_attr(node("BatchNormalization", {"x", "s", "b", "m", "v"}, "y"), "training_mode", 1);
  output("y");
  expect_contains(import_error(), "training mode");
}

}  // namespace
}  // namespace stitch::onnx_import
