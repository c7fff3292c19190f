// Proving a user-kernel call's indices in range before it runs
// (interp/index_bounds.h): what is proven, what is left to run-time checks.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "interp/index_bounds.h"
#include "stitch/text.h"

namespace stitch::interp {
namespace {

constexpr const char* kKernels = R"(
kernel jacobi(a: f64[n], b: f64[n]) over i < n - 2 {
  b[i + 1] = 0.33333 * (a[i] + a[i + 1] + a[i + 2])
}
kernel shift(x: f64[n], y: f64[n]) over i < n {
  y[i] = x[i + 1]
}
kernel guarded(x: f64[n], y: f64[n]) over i < n {
  if i > 0 {
    y[i] = x[i - 1]
  }
  if i + 1 < n && 0 <= i {
    y[i] = y[i] + x[i + 1]
  }
}
kernel masked(k: i64, x: i64[m], t: i64[n]) over i < m {
  let j = and(i * 40503 + k, n - 1)
  t[j] = x[i]
}
kernel gather(idx: i64[n], x: f64[m], y: f64[n]) over i < n {
  y[i] = x[idx[i]]
}
kernel tri(c: f64[n, n]) over i < n {
  for j < i + 1 {
    c[i, j] = 1.0
  }
}
kernel best(x: f64[n, m], out: i64[n]) over i < n {
  let b: i64 = 0
  for j < m {
    if x[i, j] > x[i, b] {
      b = j
    }
  }
  out[i] = b
}
kernel correlated(x: f64[m]) over i < m {
  for t < m - i {
    let j = i + t
    x[j] = 0.0
  }
}
kernel drifting(x: f64[m]) over i < m {
  for t < m - i {
    x[i + t + 1] = 0.0
  }
}
kernel at(t: i64, x: f64[n], y: f64[n]) over i < n {
  y[i] = x[t]
}
kernel counter(x: f64[n]) over i < n {
  let j: i64 = 0
  for k < n {
    j = j + 1
  }
  x[i] = f64(j)
}
)";

class IndexBounds : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { module_ = new Module(parse_module(kKernels, "bounds.stitch")); }
  static void TearDownTestSuite() { delete module_; }

  static bool proven(const std::string& kernel, std::vector<KernelArg> args) {
    const UserKernel& k = *module_->find_kernel(kernel);
    return indices_proven_in_range(k, bind_kernel(k, args), args);
  }

  static Module* module_;
};

Module* IndexBounds::module_ = nullptr;

TEST_F(IndexBounds, OffsetsInsideTheArrayAreProven) {
  Tensor a(DType::f64, {100});
  Tensor b(DType::f64, {100});
  EXPECT_TRUE(proven("jacobi", {a, b}));
  EXPECT_FALSE(proven("shift", {a, b}));  // x[n] at the last index
}

TEST_F(IndexBounds, BranchConditionsNarrowTheIndices) {
  Tensor x(DType::f64, {50});
  Tensor y(DType::f64, {50});
  EXPECT_TRUE(proven("guarded", {x, y}));
}

TEST_F(IndexBounds, ABitwiseAndWithANonNegativeMaskIsBoundedByIt) {
  Tensor x(DType::i64, {1000});
  Tensor table(DType::i64, {64});
  EXPECT_TRUE(proven("masked", {int64_t{7}, x, table}));  // and(..., 63) <= 63
  // and(..., 99) <= 99: inside a table of 100 too.
  Tensor odd(DType::i64, {100});
  EXPECT_TRUE(proven("masked", {int64_t{7}, x, odd}));
}

TEST_F(IndexBounds, LoadedIndicesAreNotProven) {
  Tensor idx(DType::i64, {10});
  Tensor x(DType::f64, {20});
  Tensor y(DType::f64, {10});
  EXPECT_FALSE(proven("gather", {idx, x, y}));
}

TEST_F(IndexBounds, LoopVariablesAndLocalsAreBoundedByWhatIsAssigned) {
  Tensor c(DType::f64, {30, 30});
  EXPECT_TRUE(proven("tri", {c}));  // j < i + 1 <= n
  Tensor x(DType::f64, {8, 5});
  Tensor out(DType::i64, {8});
  EXPECT_TRUE(proven("best", {x, out}));  // b is 0 or a j < m
  Tensor v(DType::f64, {10});
  EXPECT_TRUE(proven("counter", {v}));  // j grows without bound, but indexes nothing
}

TEST_F(IndexBounds, ALoopBoundedByADifferenceKeepsItsRelation) {
  Tensor x(DType::f64, {40});
  EXPECT_TRUE(proven("correlated", {x}));   // i + t < m, from t < m - i
  EXPECT_FALSE(proven("drifting", {x}));    // i + t + 1 can reach m: not proven
}

TEST_F(IndexBounds, ScalarsAreTheCallsValues) {
  Tensor x(DType::f64, {10});
  Tensor y(DType::f64, {10});
  EXPECT_TRUE(proven("at", {int64_t{9}, x, y}));
  EXPECT_FALSE(proven("at", {int64_t{10}, x, y}));
  EXPECT_FALSE(proven("at", {int64_t{-1}, x, y}));
  EXPECT_TRUE(indices_read_scalars(*module_->find_kernel("at")));
  EXPECT_FALSE(indices_read_scalars(*module_->find_kernel("jacobi")));
}

TEST_F(IndexBounds, AnEmptyRangeTouchesNothing) {
  Tensor x(DType::f64, {0});
  Tensor y(DType::f64, {0});
  EXPECT_TRUE(proven("shift", {x, y}));
}

}  // namespace
}  // namespace stitch::interp
