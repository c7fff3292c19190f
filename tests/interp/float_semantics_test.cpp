// Floating-point semantics pinned by hand: one rounding per op, wide
// accumulation, signed zeros and NaN rules that docs/semantics.md fixes where
// IEEE or numpy leave a choice.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "single_op.h"
#include "stitch/builder.h"
#include "stitch/interpreter.h"
#include "tensor_compare.h"

namespace stitch {
namespace {

using testing::float_tensor;
using testing::run_single_op;
using testing::tensors_match;
using testing::Tolerance;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor floats(DType t, const std::vector<double>& v) {
  return float_tensor(t, {static_cast<int64_t>(v.size())}, v);
}

// (1 + 2^-30) - 1 is 2^-30 in double but 0 in f32: the sum must be rounded
// to f32 before the subtraction sees it.
TEST(FloatSemantics, EveryOpRoundsToItsDtype) {
  GraphBuilder b("chain");
  ValueId x = b.param("x", DType::f32, {1});
  ValueId y = b.param("y", DType::f32, {1});
  b.output(b.sub(b.add(x, y), x), "z");
  std::vector<Tensor> out = interpret(b.finish(), {floats(DType::f32, {1.0}), floats(DType::f32, {std::ldexp(1.0, -30)})});
  EXPECT_EQ(out.at(0).get_f64(0), 0.0);
}

TEST(FloatSemantics, NarrowFloatsOverflowAndRoundPerOp) {
  EXPECT_TRUE(tensors_match(run_single_op("add", {floats(DType::f16, {60000.0}), floats(DType::f16, {10000.0})}),
                            floats(DType::f16, {kInf}), Tolerance::exact()));
  EXPECT_EQ(run_single_op("div", {floats(DType::f32, {1.0}), floats(DType::f32, {3.0})}).get_f64(0),
            static_cast<double>(1.0f / 3.0f));
  EXPECT_EQ(run_single_op("add", {floats(DType::bf16, {256.0}), floats(DType::bf16, {1.0})}).get_f64(0), 256.0);
}

TEST(FloatSemantics, SignedZeroChoices) {
  Tensor relu = run_single_op("relu", {floats(DType::f32, {-0.0, kNaN, -3.0})});
  EXPECT_FALSE(std::signbit(relu.get_f64(0)));
  EXPECT_TRUE(std::isnan(relu.get_f64(1)));
  EXPECT_EQ(relu.get_f64(2), 0.0);
  Tensor sign = run_single_op("sign", {floats(DType::f64, {-0.0, 0.0, kNaN, -kInf})});
  EXPECT_FALSE(std::signbit(sign.get_f64(0)));
  EXPECT_FALSE(std::signbit(sign.get_f64(1)));
  EXPECT_TRUE(std::isnan(sign.get_f64(2)));
  EXPECT_EQ(sign.get_f64(3), -1.0);
  EXPECT_TRUE(tensors_match(run_single_op("rsqrt", {floats(DType::f32, {-0.0, 0.0, -1.0, kInf})}),
                            floats(DType::f32, {-kInf, kInf, kNaN, 0.0}), Tolerance::signed_exact()));
  // max/min return their first operand when the operands compare equal.
  Tensor mx = run_single_op("max", {floats(DType::f32, {-0.0, 0.0}), floats(DType::f32, {0.0, -0.0})});
  EXPECT_TRUE(std::signbit(mx.get_f64(0)));
  EXPECT_FALSE(std::signbit(mx.get_f64(1)));
}

TEST(FloatSemantics, MaxMinPropagateNaN) {
  Tensor a = floats(DType::f32, {kNaN, 1.0, kNaN});
  Tensor b = floats(DType::f32, {1.0, kNaN, kNaN});
  EXPECT_TRUE(tensors_match(run_single_op("max", {a, b}), floats(DType::f32, {kNaN, kNaN, kNaN}), Tolerance::exact()));
  EXPECT_TRUE(tensors_match(run_single_op("min", {a, b}), floats(DType::f32, {kNaN, kNaN, kNaN}), Tolerance::exact()));
  Tensor c = float_tensor(DType::f32, {2, 3}, {1.0, kNaN, 5.0, -kInf, 2.0, kInf});
  Attrs axis1{{"axes", AttrValue(AttrValue::Ints{1})}};
  EXPECT_TRUE(tensors_match(run_single_op("reduce_max", {c}, axis1), floats(DType::f32, {kNaN, kInf}), Tolerance::exact()));
  EXPECT_TRUE(tensors_match(run_single_op("reduce_min", {c}, axis1), floats(DType::f32, {kNaN, -kInf}), Tolerance::exact()));
}

TEST(FloatSemantics, RemainderFollowsFmodAndPowFollowsC) {
  EXPECT_TRUE(tensors_match(run_single_op("rem", {floats(DType::f64, {-5.5, 5.5, 1.0, kInf, -0.0}),
                                                  floats(DType::f64, {2.0, -2.0, 0.0, 1.0, 3.0})}),
                            floats(DType::f64, {-1.5, 1.5, kNaN, kNaN, -0.0}), Tolerance::signed_exact()));
  EXPECT_TRUE(tensors_match(run_single_op("pow", {floats(DType::f32, {kNaN, 1.0, -8.0, 0.0}),
                                                  floats(DType::f32, {0.0, kNaN, 1.0 / 3.0, -1.0})}),
                            floats(DType::f32, {1.0, 1.0, kNaN, kInf}), Tolerance::exact()));
}

TEST(FloatSemantics, RoundIsHalfToEven) {
  EXPECT_TRUE(tensors_match(run_single_op("round", {floats(DType::f32, {0.5, 1.5, 2.5, -0.5, -2.5, 3.4999998})}),
                            floats(DType::f32, {0.0, 2.0, 2.0, -0.0, -2.0, 3.0}), Tolerance::signed_exact()));
}

TEST(FloatSemantics, SigmoidIsStableAtTheExtremes) {
  EXPECT_TRUE(tensors_match(run_single_op("sigmoid", {floats(DType::f64, {-800.0, 800.0, 0.0, -kInf, kInf})}),
                            floats(DType::f64, {0.0, 1.0, 0.5, 0.0, 1.0}), Tolerance::exact()));
}

TEST(FloatSemantics, ReductionsAccumulateInDouble) {
  const double big = std::ldexp(1.0, 24);
  Tensor x = floats(DType::f32, {big, 1.0, 1.0, -big});
  EXPECT_EQ(run_single_op("reduce_sum", {x}).get_f64(0), 2.0);
  EXPECT_EQ(run_single_op("reduce_mean", {x}).get_f64(0), 0.5);
  Tensor ones = floats(DType::f32, {1.0, 1.0, 1.0});
  EXPECT_EQ(run_single_op("dot", {floats(DType::f32, {big, 1.0, -big}), ones}).get_f64(0), 1.0);
}

TEST(FloatSemantics, EmptyReductionsGiveTheIdentity) {
  Tensor empty(DType::f32, {2, 0});
  Attrs axis1{{"axes", AttrValue(AttrValue::Ints{1})}};
  EXPECT_TRUE(tensors_match(run_single_op("reduce_sum", {empty}, axis1), floats(DType::f32, {0.0, 0.0}),
                            Tolerance::signed_exact()));
  EXPECT_TRUE(tensors_match(run_single_op("reduce_prod", {empty}, axis1), floats(DType::f32, {1.0, 1.0}),
                            Tolerance::exact()));
  EXPECT_TRUE(tensors_match(run_single_op("reduce_max", {empty}, axis1), floats(DType::f32, {-kInf, -kInf}),
                            Tolerance::exact()));
  EXPECT_TRUE(tensors_match(run_single_op("reduce_min", {empty}, axis1), floats(DType::f32, {kInf, kInf}),
                            Tolerance::exact()));
  EXPECT_TRUE(tensors_match(run_single_op("reduce_mean", {empty}, axis1), floats(DType::f32, {kNaN, kNaN}),
                            Tolerance::exact()));
  Tensor no_bools(DType::boolean, {0});
  EXPECT_EQ(run_single_op("reduce_any", {no_bools}).get_i64(0), 0);
  EXPECT_EQ(run_single_op("reduce_all", {no_bools}).get_i64(0), 1);
}

TEST(FloatSemantics, SumOfNegativeZerosIsNegativeZero) {
  EXPECT_TRUE(std::signbit(run_single_op("reduce_sum", {floats(DType::f64, {-0.0, -0.0})}).get_f64(0)));
  EXPECT_FALSE(std::signbit(run_single_op("reduce_sum", {floats(DType::f64, {-0.0, 0.0})}).get_f64(0)));
}

TEST(FloatSemantics, ConstantsAndPadValuesRoundToTheDtype) {
  GraphBuilder b("constants");
  b.output(b.constant(0.1, DType::f32, {2}), "c");
  Tensor c = interpret(b.finish(), {}).at(0);
  EXPECT_EQ(c.get_f64(1), static_cast<double>(0.1f));
  Tensor padded = run_single_op("pad", {floats(DType::bf16, {1.0})},
                                {{"low", AttrValue(AttrValue::Ints{1})}, {"high", AttrValue(AttrValue::Ints{0})},
                                 {"value", AttrValue(0.1)}});
  EXPECT_EQ(padded.get_f64(0), 0.10009765625);  // the bf16 nearest to 0.1
}

}  // namespace
}  // namespace stitch
