// argmax/argmin as reduction roots (docs/lowering.md, Arg reductions): row,
// column and middle-axis schedules, f32/f16/i32/f64 inputs, keepdims, a
// producer absorbed, a sibling reduce_max and a symbolic batch, each compiled
// through CpuExecutable and compared exactly with the interpreter on inputs
// salted with ties, -0/+0, NaNs (the first one wins), infinities and rows
// where every element is equal.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <memory>

#include "fusion/planner.h"
#include "ir/canonicalize.h"
#include "lower/lower_plan.h"
#include "pipeline/cpu_route.h"
#include "runtime/cpu/executable.h"
#include "stitch/interpreter.h"
#include "stitch/text.h"
#include "tensor_compare.h"
#include "lower_scheduled.h"

namespace stitch::lower {
namespace {

namespace fs = std::filesystem;
using runtime::cpu::CpuExecutable;
using runtime::cpu::KernelCache;

const char* const kGraphs[] = {
    R"(graph row_argmax(x: f32[37, 100]) -> (i64[37]) {
  y = argmax(x, axes=[1])
  return y
})",
    R"(graph row_argmin_long(x: f32[5, 3000]) -> (i64[5, 1]) {
  y = argmin(x, axes=[-1], keepdims=true)
  return y
})",
    R"(graph column_argmin(x: f32[50, 33]) -> (i64[33]) {
  y = argmin(x, axes=[0])
  return y
})",
    R"(graph middle_axis(x: f32[4, 30, 5]) -> (i64[4, 1, 5]) {
  y = argmax(x, axes=[1], keepdims=true)
  return y
})",
    R"(graph absorbed_producer(x: f32[10, 4]) -> (i64[10]) {
  y = argmax(exp(x), axes=[1])
  return y
})",
    R"(graph with_max(x: f32[12, 64]) -> (i64[12], f32[12]) {
  i = argmax(x, axes=[1])
  m = reduce_max(x, axes=[1])
  return i, m
})",
    R"(graph narrow_and_int(h: f16[9, 70], n: i32[9, 70], d: f64[70, 9]) -> (i64[9], i64[9], i64[9]) {
  a = argmax(h, axes=[1])
  b = argmin(n, axes=[1])
  c = argmax(d, axes=[0])
  return a, b, c
})",
    R"(graph symbolic_rows(x: f32[B, 40]) -> (i64[B]) {
  y = argmin(x, axes=[1])
  return y
})",
};

// Random values, then per row of the last axis a pattern that decides the
// answer: ties of the maximum and minimum, -0 beside +0, NaNs, infinities,
// all-equal rows. Integer inputs get ties from their small random range.
Tensor salted_input(DType dtype, const std::vector<int64_t>& shape, uint64_t seed) {
  Tensor t(dtype, shape);
  fill_random(t, seed);
  if (!is_float(dtype)) return t;
  const int64_t cols = shape.back();
  const int64_t rows = t.numel() / std::max<int64_t>(cols, 1);
  const double inf = std::numeric_limits<double>::infinity();
  for (int64_t r = 0; r < rows; ++r) {
    auto at = [&](int64_t c) { return r * cols + (c % cols); };
    switch (r % 7) {
      case 0: t.set_f64(at(3), 5.0), t.set_f64(at(cols / 2), 5.0), t.set_f64(at(1), -5.0), t.set_f64(at(cols - 1), -5.0); break;
      case 1: t.set_f64(at(2), std::nan("")), t.set_f64(at(cols - 2), std::nan("")); break;
      case 2:
        for (int64_t c = 0; c < cols; ++c) t.set_f64(at(c), 1.25);
        break;
      case 3:
        for (int64_t c = 0; c < cols; ++c) t.set_f64(at(c), -1.0 - static_cast<double>(c % 3));
        t.set_f64(at(4), -0.0), t.set_f64(at(6), 0.0), t.set_f64(at(5), -0.0);
        break;
      case 4: t.set_f64(at(7), inf), t.set_f64(at(1), -inf); break;
      case 5:
        for (int64_t c = 0; c < cols; ++c) t.set_f64(at(c), -inf);
        break;
      default: break;
    }
  }
  return t;
}

class ArgReduction : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("stitch_arg_reduction_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    cache_ = std::make_unique<KernelCache>(dir_);
  }
  static void TearDownTestSuite() {
    cache_.reset();
    fs::remove_all(dir_);
  }
  static fs::path dir_;
  static std::unique_ptr<KernelCache> cache_;
};

fs::path ArgReduction::dir_;
std::unique_ptr<KernelCache> ArgReduction::cache_;

TEST_F(ArgReduction, EveryGroupLowersAndMatchesTheInterpreterExactly) {
  for (const char* text : kGraphs) {
    const Graph source = parse_module(text).graphs.front();
    SCOPED_TRACE(source.name());
    const Graph g = canonicalize(source);
    for (const LoweredGroup& l : stitch::testing::lower_with_default_schedules(g, plan(g, PlannerKind::Xla), "arg")) {
      EXPECT_TRUE(l.kernel.has_value()) << l.not_lowered_reason;
    }
    CpuExecutable exe = pipeline::compile_cpu(g, PlannerKind::Xla, *cache_);
    for (int64_t batch : {3, 64}) {
      std::vector<Tensor> inputs;
      uint64_t seed = 11;
      for (ValueId p : source.params()) {
        inputs.push_back(salted_input(source.type(p).dtype, concrete_shape(source.type(p).shape, {{"B", batch}}), seed++));
      }
      const std::vector<Tensor> want = interpret(source, inputs);
      const std::vector<Tensor> got = exe.run(inputs);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_TRUE(testing::tensors_match(got[i], want[i], Tolerance::exact())) << "output " << i;
      }
    }
  }
}

TEST(ArgReductionLowering, EmptyStaticAxisIsNotLowered) {
  const Graph g = canonicalize(parse_module(R"(graph empty(x: f32[4, 0]) -> (i64[4]) {
  y = argmax(x, axes=[1])
  return y
})").graphs.front());
  std::vector<LoweredGroup> lowered = stitch::testing::lower_with_default_schedules(g, plan(g, PlannerKind::Xla), "empty");
  ASSERT_EQ(lowered.size(), 1u);
  EXPECT_FALSE(lowered[0].kernel);
  EXPECT_EQ(lowered[0].not_lowered_reason, "not lowered yet: argmax over an empty axis");
}

}  // namespace
}  // namespace stitch::lower
