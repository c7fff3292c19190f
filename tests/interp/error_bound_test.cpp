// stitch::interpret_with_error_bounds: the per-element bound beside the
// reference. Each test builds a result another correct back end could give
// (another summation order, a transcendental one ulp off) and checks that the
// bound admits it where the relative allowance does not, and that the bound
// still rejects a wrong result.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <vector>

#include "random_graph.h"
#include "stitch/interpreter.h"
#include "stitch/text.h"
#include "tensor/compare.h"
#include "tensor_compare.h"

namespace stitch {
namespace {

using testing::float_tensor;

Graph graph_of(const std::string& text) { return parse_module(text).graphs.at(0); }

double max_of(const Tensor& t) {
  double m = 0;
  for (int64_t i = 0; i < t.numel(); ++i) m = std::max(m, t.get_f64(i));
  return m;
}

const double kEps32 = std::ldexp(1.0, -23);

TEST(ErrorBound, ExactGraphsHaveAZeroBound) {
  Graph g = graph_of(R"(graph exact(x: f32[4], y: f32[4]) -> (f32[4], f32[2]) {
  a = mul(x, y)
  n = add(a, x)
  m = sub(y, 3.0)
  b = div(n, m)
  c = slice(b, start=[1], stop=[3])
  return b, c
})");
  BoundedReference r = interpret_with_error_bounds(
      g, {float_tensor(DType::f32, {4}, {1, -2, 0.5, 7}), float_tensor(DType::f32, {4}, {0.25, 1, -1, 2})});
  ASSERT_EQ(r.bounds.size(), 2u);
  EXPECT_EQ(r.bounds[0].dtype(), DType::f64);
  EXPECT_EQ(r.bounds[0].shape(), (std::vector<int64_t>{4}));
  EXPECT_EQ(max_of(r.bounds[0]), 0);
  EXPECT_EQ(max_of(r.bounds[1]), 0);
  std::vector<Tensor> plain = interpret(
      g, {float_tensor(DType::f32, {4}, {1, -2, 0.5, 7}), float_tensor(DType::f32, {4}, {0.25, 1, -1, 2})});
  for (size_t i = 0; i < plain.size(); ++i) {
    EXPECT_TRUE(compare_tensors(r.outputs[i], plain[i], Tolerance::exact()).ok);
  }
}

// d = sum(x) - sum(slice(x)): large terms cancel, as in soak seed 100800.
TEST(ErrorBound, FollowsCancellationThatTheRelativeAllowanceMisses) {
  Graph g = graph_of(R"(graph cancel(x: f32[15]) -> (f32[]) {
  s = reduce_sum(x, axes=[0])
  tail = slice(x, start=[1], stop=[15])
  t = reduce_sum(tail, axes=[0])
  d = sub(s, t)
  return d
})");
  std::vector<double> xs;
  for (int i = 0; i < 15; ++i) xs.push_back(i == 0 ? 0.1 : (i % 2 ? 200.3 : -187.7) + i * 0.013);
  Tensor x = float_tensor(DType::f32, {15}, xs);
  BoundedReference r = interpret_with_error_bounds(g, {x});
  // Another correct back end: both sums in f32, one left to right, one right to left.
  float s = 0, t = 0;
  for (int i = 0; i < 15; ++i) s += static_cast<float>(x.get_f64(i));
  for (int i = 14; i >= 1; --i) t += static_cast<float>(x.get_f64(i));
  Tensor other = float_tensor(DType::f32, {}, {static_cast<double>(s - t)});
  ASSERT_NE(other.get_f64(0), r.outputs[0].get_f64(0)) << "the two orders happen to agree; pick other terms";
  const ErrorAllowance relative{false, 29};
  EXPECT_FALSE(compare_with_interpreter(other, r.outputs[0], relative).ok);
  EXPECT_TRUE(compare_with_interpreter(other, r.outputs[0], relative, r.bounds[0]).ok)
      << compare_with_interpreter(other, r.outputs[0], relative, r.bounds[0]).describe();
  // The bound is the sums' accumulation over the terms' magnitudes, no more.
  double magnitude = 0;
  for (double v : xs) magnitude += std::fabs(static_cast<float>(v));
  const double tail = magnitude - std::fabs(static_cast<float>(xs[0]));
  const double want = accumulation_factor(15) * kEps32 * magnitude + accumulation_factor(14) * kEps32 * tail +
                      kEps32 * std::fabs(r.outputs[0].get_f64(0));
  EXPECT_NEAR(r.bounds[0].get_f64(0), want, want * 1e-9);
  // A result off by a dropped term (0.1) is still caught.
  Tensor wrong = float_tensor(DType::f32, {}, {r.outputs[0].get_f64(0) - 0.1});
  EXPECT_FALSE(compare_with_interpreter(wrong, r.outputs[0], relative, r.bounds[0]).ok);
}

// tan(tan(1)): a back end's tan(1) one ulp off becomes 74 ulps after the
// outer tan (soak seed 103106).
TEST(ErrorBound, FollowsConditioningThroughTan) {
  Graph g = graph_of(R"(graph tans(x: f32[]) -> (f32[]) {
  inner = tan(x)
  y = tan(inner)
  return y
})");
  BoundedReference r = interpret_with_error_bounds(g, {float_tensor(DType::f32, {}, {1.0})});
  const float inner = std::nextafter(static_cast<float>(std::tan(1.0)), 2.0f);
  Tensor other = float_tensor(DType::f32, {}, {static_cast<double>(static_cast<float>(std::tan(double(inner))))});
  const ErrorAllowance transcendental{true, 0};
  EXPECT_FALSE(compare_with_interpreter(other, r.outputs[0], transcendental).ok);
  EXPECT_TRUE(compare_with_interpreter(other, r.outputs[0], transcendental, r.bounds[0]).ok);
  // About tan'(1.557) = 5,580 times the inner tan's 32 ulps (of 1 + 1.557).
  EXPECT_GT(r.bounds[0].get_f64(0), 5000 * 32 * kEps32 * 2.5);
  EXPECT_LT(r.bounds[0].get_f64(0), 6500 * 32 * kEps32 * 2.6 + 32 * kEps32 * 80);
}

TEST(ErrorBound, APoleOrALogOfZeroInReachIsUnbounded) {
  Graph g = graph_of(R"(graph poles(x: f32[2]) -> (f32[2], f32[2]) {
  s = reduce_sum(x, axes=[0], keepdims=true)
  b = broadcast(s, shape=[2])
  z = sub(b, 3.0)
  l = log(z)
  r = reciprocal(z)
  return l, r
})");
  BoundedReference r = interpret_with_error_bounds(g, {float_tensor(DType::f32, {2}, {1.5, 1.5})});
  // s = 3 exactly, but a sum's order could leave it a little either side.
  EXPECT_TRUE(std::isinf(r.outputs[0].get_f64(0)));
  EXPECT_EQ(r.bounds[0].get_f64(0), 0) << "non-finite references are compared exactly";
  EXPECT_TRUE(std::isinf(r.outputs[1].get_f64(0)));
  Tensor near = float_tensor(DType::f32, {2}, {1.5, 1.5000005});
  BoundedReference n = interpret_with_error_bounds(g, {near});
  EXPECT_TRUE(std::isinf(n.bounds[0].get_f64(0))) << n.bounds[0].get_f64(0);
  EXPECT_TRUE(std::isinf(n.bounds[1].get_f64(0))) << n.bounds[1].get_f64(0);
}

TEST(ErrorBound, DataMovementCarriesTheBoundAndPadFillsExactly) {
  Graph g = graph_of(R"(graph moves(x: f32[2, 3], i: i32[2]) -> (f32[2, 5], f32[3, 2], f32[2, 3], f32[2, 3]) {
  e = exp(x)
  p = pad(e, low=[0, 1], high=[0, 1], value=4.0)
  t = transpose(e, perm=[1, 0])
  gathered = gather(e, i, axis=0)
  c = gt(x, 0.0)
  s = select(c, e, x)
  return p, t, gathered, s
})");
  Tensor x = float_tensor(DType::f32, {2, 3}, {0.5, -1, 2, 0, 1.5, -0.25});
  Tensor i(DType::i32, {2});
  i.set_i64(0, 1);
  i.set_i64(1, 1);
  BoundedReference r = interpret_with_error_bounds(g, {x, i});
  const Tensor& p = r.bounds[0];
  for (int row = 0; row < 2; ++row) {
    EXPECT_EQ(p.get_f64(row * 5 + 0), 0);
    EXPECT_EQ(p.get_f64(row * 5 + 4), 0);
    for (int col = 0; col < 3; ++col) {
      const double want = kTranscendentalUlps * kEps32 * (1 + std::exp(static_cast<float>(x.get_f64(row * 3 + col))));
      EXPECT_NEAR(p.get_f64(row * 5 + col + 1), want, want * 1e-6);
      EXPECT_EQ(r.bounds[1].get_f64(col * 2 + row), p.get_f64(row * 5 + col + 1));
      EXPECT_EQ(r.bounds[2].get_f64(row * 3 + col), p.get_f64(1 * 5 + col + 1));
      // select takes exp where x > 0, else x itself, which is exact.
      const bool positive = x.get_f64(row * 3 + col) > 0;
      EXPECT_EQ(r.bounds[3].get_f64(row * 3 + col), positive ? p.get_f64(row * 5 + col + 1) : 0.0);
    }
  }
}

TEST(ErrorBound, DotBoundsByTheProductsMagnitudes) {
  Graph g = graph_of(R"(graph d(a: f32[2, 3], b: f32[3, 1]) -> (f32[2, 1]) {
  c = dot(a, b)
  return c
})");
  Tensor a = float_tensor(DType::f32, {2, 3}, {100, -100, 1, 2, 3, 4});
  Tensor b = float_tensor(DType::f32, {3, 1}, {1, 1, 0.5});
  BoundedReference r = interpret_with_error_bounds(g, {a, b});
  const double k = accumulation_factor(3) * kEps32;
  EXPECT_DOUBLE_EQ(r.bounds[0].get_f64(0), k * 200.5);
  EXPECT_DOUBLE_EQ(r.bounds[0].get_f64(1), k * 7);
}

TEST(ErrorBound, NonFiniteReferencesCarryNoBoundDownstream) {
  Graph g = graph_of(R"(graph specials(x: f32[3]) -> (f32[3]) {
  e = exp(x)
  m = min(e, 2.0)
  return m
})");
  BoundedReference r = interpret_with_error_bounds(
      g, {float_tensor(DType::f32, {3}, {1000, -std::numeric_limits<double>::infinity(), 0.5})});
  EXPECT_EQ(r.bounds[0].get_f64(0), 0) << "min chose the exact 2.0 over exp's inf";
  EXPECT_FALSE(std::isnan(r.bounds[0].get_f64(1)));
  EXPECT_GT(r.bounds[0].get_f64(2), 0);
}

TEST(ErrorBound, TheAccumulationFactorIsTheSmallerOfTheTwoBounds) {
  EXPECT_EQ(accumulation_factor(1), 4);
  EXPECT_EQ(accumulation_factor(4), 16);
  EXPECT_EQ(accumulation_factor(100), 80);
  EXPECT_EQ(accumulation_factor(0), 0);
}

}  // namespace
}  // namespace stitch

namespace stitch {
namespace {

// How much the bound loosens the check on the random generator's graphs (the
// soak's, without special values): over every finite float output element
// that is not exact, the allowed error max(relative allowance, bound) over the
// relative allowance alone. Printed; docs/testing.md quotes it.
TEST(ErrorBound, OnRandomGraphsTheCheckStaysTight) {
  std::vector<double> loosening;
  for (uint64_t seed = 0; seed < 400; ++seed) {
    for (bool stitched : {false, true}) {
      testing::RandomGraphOptions opts = stitched ? testing::stitched_options(seed) : testing::varied_options(seed);
      Graph g = testing::random_graph(opts);
      SymbolBindings symbols = testing::random_symbol_bindings(g, seed, opts.max_symbol_extent);
      std::vector<Tensor> inputs = testing::random_inputs(g, seed, symbols, false);
      BoundedReference r;
      try {
        r = interpret_with_error_bounds(g, inputs);
      } catch (const UserError&) {
        continue;  // a data-dependent rejection: nothing to compare
      }
      for (size_t o = 0; o < r.outputs.size(); ++o) {
        const Tensor& want = r.outputs[o];
        if (!is_float(want.dtype())) continue;
        const ErrorAllowance a = output_allowance(g, g.outputs()[o].value, symbols);
        if (!a.transcendental && a.reduction_length == 0) {
          EXPECT_EQ(max_of(r.bounds[o]), 0) << "seed " << seed << ": an exact output has a bound";
          continue;
        }
        const double k = static_cast<double>(allowance_ulps(a));
        for (int64_t i = 0; i < want.numel(); ++i) {
          const double w = want.get_f64(i);
          if (!std::isfinite(w)) continue;
          const double relative = k * machine_epsilon(want.dtype()) * (1 + std::fabs(w));
          loosening.push_back(std::max(relative, r.bounds[o].get_f64(i)) / relative);
        }
      }
    }
  }
  ASSERT_GT(loosening.size(), 10000u);
  std::sort(loosening.begin(), loosening.end());
  auto quantile = [&](double q) { return loosening[static_cast<size_t>(q * (loosening.size() - 1))]; };
  const auto looser = std::count_if(loosening.begin(), loosening.end(), [](double x) { return x > 1; });
  const auto unbounded = std::count_if(loosening.begin(), loosening.end(), [](double x) { return std::isinf(x); });
  std::printf("error bound on random graphs: %zu elements, %lld allowed more than the relative allowance, %lld "
              "unbounded; allowed / relative allowance: median %.3g, 90%% %.3g, 99%% %.3g, 99.9%% %.3g\n",
              loosening.size(), static_cast<long long>(looser), static_cast<long long>(unbounded), quantile(0.5),
              quantile(0.9), quantile(0.99), quantile(0.999));
  EXPECT_LT(quantile(0.9), 4);
  EXPECT_LT(quantile(0.99), 64);
  EXPECT_LT(unbounded, static_cast<int64_t>(loosening.size() / 1000));
}

}  // namespace
}  // namespace stitch
