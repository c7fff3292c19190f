// Static bounds of graph values (lower/value_range.h) and what the lowering
// does with them: float -> int casts that cannot saturate become plain
// conversions, gathers whose index stays inside the axis are not checked.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "fusion/planner.h"
#include "ir/canonicalize.h"
#include "kir/printer.h"
#include "lower/lower_plan.h"
#include "lower/value_range.h"
#include "stitch/text.h"
#include "lower_scheduled.h"

namespace stitch::lower {
namespace {

Graph from_text(const std::string& text) { return canonicalize(parse_module(text).graphs.front()); }

std::optional<Interval> range_of(const Graph& g, const std::string& name) {
  ValueRanges ranges(g);
  const ValueId v = g.find_value(name);
  EXPECT_TRUE(v.valid()) << name;
  return ranges.of(v);
}

void expect_range(const Graph& g, const std::string& name, double lo, double hi) {
  const std::optional<Interval> r = range_of(g, name);
  ASSERT_TRUE(r) << name << " has no known range";
  EXPECT_EQ(r->lo, lo) << name;
  EXPECT_EQ(r->hi, hi) << name;
}

// The resize composite's source positions: exact in f64, from the iota up.
TEST(ValueRanges, AffineF64ArithmeticOfAnIotaIsExact) {
  const Graph g = from_text(R"(graph positions(x: f32[8, 56]) {
  p = iota(shape=[224], axis=0, dtype=f64)
  s = sub(mul(add(p, 0.5), 0.25), 0.5)
  f = floor(s)
  i = cast(f, to=i64)
  c = clamp(add(i, 1), 0, 55)
  n = neg(f)
  q = div(s, -2.0)
  m = max(abs(n), 3.0)
  r = relu(n)
  return c, m, q, r
})");
  expect_range(g, "p", 0, 223);
  expect_range(g, "s", -0.375, 55.375);
  expect_range(g, "f", -1, 55);
  expect_range(g, "i", -1, 55);
  expect_range(g, "c", 0, 55);
  expect_range(g, "n", -55, 1);
  expect_range(g, "q", -27.6875, 0.1875);
  expect_range(g, "m", 3, 55);
  expect_range(g, "r", 0, 1);
}

// Parameters have no known range; an integer clamp bounds whatever it clamps,
// a float one does not (NaN passes through it).
TEST(ValueRanges, ClampsBoundUnknownIntegersButNotFloats) {
  const Graph g = from_text(R"(graph clamps(i: i64[4], x: f32[4]) {
  a = clamp(i, 2, 9)
  b = clamp(x, 0.0, 1.0)
  s = select(gt(x, 0.0), a, 20)
  return a, b, s
})");
  EXPECT_FALSE(range_of(g, "i"));
  expect_range(g, "a", 2, 9);
  EXPECT_FALSE(range_of(g, "b"));
  expect_range(g, "s", 2, 20);
}

// Integer results that would wrap, and quotients by a divisor that can be 0,
// have no range; f32 results are widened past their rounding.
TEST(ValueRanges, WrappingDivisionByZeroAndRounding) {
  const Graph g = from_text(R"(graph edges(x: f32[4]) {
  p = iota(shape=[70000], axis=0, dtype=i32)
  w = mul(p, p)
  d = div(cast(p, to=f64), sub(cast(p, to=f64), 5.0))
  f = mul(cast(p, to=f32), 0.1)
  return w, d, f
})");
  EXPECT_FALSE(range_of(g, "w"));  // 69999^2 > 2^31
  EXPECT_FALSE(range_of(g, "d"));
  const std::optional<Interval> f = range_of(g, "f");
  ASSERT_TRUE(f);
  EXPECT_LE(f->lo, 0.0);
  EXPECT_GE(f->hi, 6999.9);
  EXPECT_LT(f->hi, 7300.0);  // 1/128 wider at each of the three f32 roundings
}

TEST(ValueRanges, CastsThatCouldSaturateAreTold) {
  const Graph g = from_text(R"(graph casts(x: f64[4]) {
  p = iota(shape=[300], axis=0, dtype=f64)
  big = mul(p, 1e7)
  return big
})");
  ValueRanges ranges(g);
  EXPECT_FALSE(ranges.cast_never_saturates(g.find_value("p"), DType::i8));  // up to 299
  EXPECT_TRUE(ranges.cast_never_saturates(g.find_value("p"), DType::i32));
  EXPECT_FALSE(ranges.cast_never_saturates(g.find_value("big"), DType::i32));  // 2.99e9
  EXPECT_TRUE(ranges.cast_never_saturates(g.find_value("big"), DType::i64));
  EXPECT_FALSE(ranges.cast_never_saturates(g.find_value("x"), DType::i64));
}

std::string lowered_text(const Graph& g) {
  const FusionPlan p = plan(g, PlannerKind::Xla);
  std::string text;
  for (const LoweredGroup& l : stitch::testing::lower_with_default_schedules(g, p, "k")) {
    EXPECT_TRUE(l.kernel) << l.not_lowered_reason;
    if (l.kernel) text += kir::print_kernel(*l.kernel);
  }
  return text;
}

// A cast of iota arithmetic is a plain conversion; a cast of a parameter keeps
// the saturating one; a gather by an index computed inside the axis is not
// checked.
TEST(ValueRanges, LoweringUsesTheRanges) {
  const std::string text = lowered_text(from_text(R"(graph k(x: f32[8, 16], y: f64[8]) {
  p = iota(shape=[8], axis=0, dtype=f64)
  i = cast(floor(mul(p, 2.0)), to=i64)
  g = gather(x, i, axis=1)
  j = cast(y, to=i64)
  return g, j
})"));
  auto count = [&](const std::string& s) {
    int n = 0;
    for (size_t at = text.find(s); at != std::string::npos; at = text.find(s, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("to=i64, in_range)"), 1) << text;
  EXPECT_EQ(count("to=i64)"), 1) << text;  // y's
  EXPECT_EQ(count("status["), 0) << text;
}

}  // namespace
}  // namespace stitch::lower
