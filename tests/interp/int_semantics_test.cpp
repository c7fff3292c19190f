// Integer and cast semantics that numpy leaves undefined or defines otherwise
// (division by zero, MIN / -1, negative exponents, saturating float -> int),
// with expected values worked out by hand from docs/semantics.md.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "single_op.h"
#include "tensor_compare.h"

namespace stitch {
namespace {

using testing::float_tensor;
using testing::int_tensor;
using testing::run_single_op;
using testing::tensors_match;
using testing::Tolerance;

constexpr int64_t kI32Min = std::numeric_limits<int32_t>::min();
constexpr int64_t kI32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor ints(DType t, const std::vector<int64_t>& v) { return int_tensor(t, {static_cast<int64_t>(v.size())}, v); }
Tensor floats(DType t, const std::vector<double>& v) {
  return float_tensor(t, {static_cast<int64_t>(v.size())}, v);
}
Attrs cast_to(DType t) { return {{"to", AttrValue(t)}}; }

TEST(IntSemantics, DivisionByZeroGivesZero) {
  Tensor a = ints(DType::i32, {7, -7, 0, kI32Min});
  Tensor b = ints(DType::i32, {0, 0, 0, 0});
  EXPECT_TRUE(tensors_match(run_single_op("div", {a, b}), ints(DType::i32, {0, 0, 0, 0}), Tolerance::exact()));
  EXPECT_TRUE(tensors_match(run_single_op("rem", {a, b}), ints(DType::i32, {0, 0, 0, 0}), Tolerance::exact()));
}

TEST(IntSemantics, MinDividedByMinusOneWraps) {
  EXPECT_TRUE(tensors_match(run_single_op("div", {ints(DType::i8, {-128, 100}), ints(DType::i8, {-1, -1})}),
                            ints(DType::i8, {-128, -100}), Tolerance::exact()));
  EXPECT_TRUE(tensors_match(run_single_op("div", {ints(DType::i32, {kI32Min}), ints(DType::i32, {-1})}),
                            ints(DType::i32, {kI32Min}), Tolerance::exact()));
  EXPECT_TRUE(tensors_match(run_single_op("div", {ints(DType::i64, {kI64Min, 9}), ints(DType::i64, {-1, 0})}),
                            ints(DType::i64, {kI64Min, 0}), Tolerance::exact()));
  EXPECT_TRUE(tensors_match(run_single_op("rem", {ints(DType::i64, {kI64Min, 7}), ints(DType::i64, {-1, -1})}),
                            ints(DType::i64, {0, 0}), Tolerance::exact()));
}

TEST(IntSemantics, DivisionTruncatesAndRemainderTakesDividendSign) {
  Tensor a = ints(DType::i32, {7, -7, 7, -7});
  Tensor b = ints(DType::i32, {2, 2, -2, -2});
  EXPECT_TRUE(tensors_match(run_single_op("div", {a, b}), ints(DType::i32, {3, -3, -3, 3}), Tolerance::exact()));
  EXPECT_TRUE(tensors_match(run_single_op("rem", {a, b}), ints(DType::i32, {1, -1, 1, -1}), Tolerance::exact()));
}

TEST(IntSemantics, NegativeExponents) {
  Tensor base = ints(DType::i32, {2, 1, -1, -1, 0, -2, 1});
  Tensor exponent = ints(DType::i32, {-1, -5, -3, -2, -1, -1, kI32Min});
  EXPECT_TRUE(tensors_match(run_single_op("pow", {base, exponent}), ints(DType::i32, {0, 1, -1, 1, 0, 0, 1}),
                            Tolerance::exact()));
}

TEST(IntSemantics, PowerWraps) {
  EXPECT_TRUE(tensors_match(run_single_op("pow", {ints(DType::i8, {2, 2, -2}), ints(DType::i8, {7, 8, 7})}),
                            ints(DType::i8, {-128, 0, -128}), Tolerance::exact()));
  EXPECT_TRUE(tensors_match(run_single_op("pow", {ints(DType::i32, {3, 7, 0}), ints(DType::i32, {21, 30, 0})}),
                            ints(DType::i32, {1870418611, 1878557649, 1}), Tolerance::exact()));
  EXPECT_TRUE(tensors_match(run_single_op("pow", {ints(DType::i64, {3, -3}), ints(DType::i64, {40, 41})}),
                            ints(DType::i64, {-6289078614652622815, 420491770248316829}), Tolerance::exact()));
}

TEST(IntSemantics, AbsAndNegOfMinWrap) {
  for (auto [dtype, min] : {std::pair{DType::i8, int64_t{-128}}, std::pair{DType::i32, kI32Min},
                            std::pair{DType::i64, kI64Min}}) {
    EXPECT_TRUE(tensors_match(run_single_op("abs", {ints(dtype, {min, -3})}), ints(dtype, {min, 3}),
                              Tolerance::exact()));
    EXPECT_TRUE(tensors_match(run_single_op("neg", {ints(dtype, {min, -3})}), ints(dtype, {min, 3}),
                              Tolerance::exact()));
  }
}

TEST(IntSemantics, ArithmeticWraps) {
  EXPECT_TRUE(tensors_match(run_single_op("add", {ints(DType::i8, {127, -128}), ints(DType::i8, {1, -1})}),
                            ints(DType::i8, {-128, 127}), Tolerance::exact()));
  EXPECT_TRUE(tensors_match(run_single_op("mul", {ints(DType::i8, {16, -64}), ints(DType::i8, {16, 2})}),
                            ints(DType::i8, {0, -128}), Tolerance::exact()));
  EXPECT_TRUE(tensors_match(run_single_op("add", {ints(DType::i32, {kI32Max}), ints(DType::i32, {1})}),
                            ints(DType::i32, {kI32Min}), Tolerance::exact()));
  EXPECT_TRUE(tensors_match(run_single_op("sub", {ints(DType::i64, {kI64Min}), ints(DType::i64, {1})}),
                            ints(DType::i64, {kI64Max}), Tolerance::exact()));
  EXPECT_TRUE(tensors_match(run_single_op("mul", {ints(DType::i64, {kI64Max}), ints(DType::i64, {2})}),
                            ints(DType::i64, {-2}), Tolerance::exact()));
}

TEST(IntSemantics, BitwiseOnIntsLogicalOnBool) {
  EXPECT_TRUE(tensors_match(run_single_op("not", {ints(DType::i8, {0, 127, -1})}), ints(DType::i8, {-1, -128, 0}),
                            Tolerance::exact()));
  EXPECT_TRUE(tensors_match(run_single_op("and", {ints(DType::i32, {-1, 12}), ints(DType::i32, {5, 10})}),
                            ints(DType::i32, {5, 8}), Tolerance::exact()));
  EXPECT_TRUE(tensors_match(run_single_op("not", {ints(DType::boolean, {0, 1})}), ints(DType::boolean, {1, 0}),
                            Tolerance::exact()));
}

TEST(IntSemantics, IntegerReductionsWrapAndEmptyGivesIdentity) {
  Tensor x = int_tensor(DType::i8, {2, 3}, {100, 100, 100, -128, -1, 0});
  Attrs axis1{{"axes", AttrValue(AttrValue::Ints{1})}};
  EXPECT_TRUE(tensors_match(run_single_op("reduce_sum", {x}, axis1), ints(DType::i8, {44, 127}), Tolerance::exact()));
  EXPECT_TRUE(tensors_match(run_single_op("reduce_prod", {x}, axis1), ints(DType::i8, {64, 0}), Tolerance::exact()));
  Tensor empty(DType::i8, {2, 0});
  EXPECT_TRUE(tensors_match(run_single_op("reduce_max", {empty}, axis1), ints(DType::i8, {-128, -128}),
                            Tolerance::exact()));
  EXPECT_TRUE(tensors_match(run_single_op("reduce_min", {empty}, axis1), ints(DType::i8, {127, 127}),
                            Tolerance::exact()));
  EXPECT_TRUE(tensors_match(run_single_op("reduce_prod", {empty}, axis1), ints(DType::i8, {1, 1}), Tolerance::exact()));
}

TEST(CastSemantics, FloatToIntTruncatesAndSaturates) {
  Tensor x = floats(DType::f32, {300.7, -1e10, kNaN, -0.9, kInf, -kInf, 127.9, -128.9, 2.5, -2.5});
  EXPECT_TRUE(tensors_match(run_single_op("cast", {x}, cast_to(DType::i8)),
                            ints(DType::i8, {127, -128, 0, 0, 127, -128, 127, -128, 2, -2}), Tolerance::exact()));
  Tensor big = floats(DType::f64, {1e19, -1e19, 9223372036854775808.0, -9223372036854775808.0, kNaN, 123456789012.9});
  EXPECT_TRUE(tensors_match(run_single_op("cast", {big}, cast_to(DType::i64)),
                            ints(DType::i64, {kI64Max, kI64Min, kI64Max, kI64Min, 0, 123456789012}),
                            Tolerance::exact()));
  Tensor edge = floats(DType::f64, {2147483647.5, -2147483648.9, 2147483648.0});
  EXPECT_TRUE(tensors_match(run_single_op("cast", {edge}, cast_to(DType::i32)), ints(DType::i32, {kI32Max, kI32Min, kI32Max}),
                            Tolerance::exact()));
}

TEST(CastSemantics, IntToIntWraps) {
  EXPECT_TRUE(tensors_match(run_single_op("cast", {ints(DType::i32, {300, -129, 128, 255, 256})}, cast_to(DType::i8)),
                            ints(DType::i8, {44, 127, -128, -1, 0}), Tolerance::exact()));
  EXPECT_TRUE(tensors_match(run_single_op("cast", {ints(DType::i64, {(int64_t{1} << 32) + 5, int64_t{1} << 31})},
                                          cast_to(DType::i32)),
                            ints(DType::i32, {5, kI32Min}), Tolerance::exact()));
}

TEST(CastSemantics, ToBoolIsNonzeroAndNaNIsTrue) {
  EXPECT_TRUE(tensors_match(run_single_op("cast", {floats(DType::f32, {kNaN, 0.0, -0.0, 1e-40, -kInf})},
                                          cast_to(DType::boolean)),
                            ints(DType::boolean, {1, 0, 0, 1, 1}), Tolerance::exact()));
  EXPECT_TRUE(tensors_match(run_single_op("cast", {ints(DType::i32, {0, 5, -1, kI32Min})}, cast_to(DType::boolean)),
                            ints(DType::boolean, {0, 1, 1, 1}), Tolerance::exact()));
  EXPECT_TRUE(tensors_match(run_single_op("cast", {ints(DType::boolean, {0, 1})}, cast_to(DType::f32)),
                            floats(DType::f32, {0.0, 1.0}), Tolerance::signed_exact()));
}

// Rounding an i64 to double first and then to the narrow type would round
// twice and land on the even neighbour; the result must be rounded once.
TEST(CastSemantics, LargeIntToFloatRoundsOnce) {
  const int64_t bf16_case = (int64_t{1} << 60) + (int64_t{1} << 52) + 1;
  EXPECT_EQ(run_single_op("cast", {ints(DType::i64, {bf16_case})}, cast_to(DType::bf16)).get_f64(0),
            std::ldexp(1.0, 60) + std::ldexp(1.0, 53));
  const int64_t f32_case = (int64_t{1} << 60) + (int64_t{1} << 36) + 1;
  EXPECT_EQ(run_single_op("cast", {ints(DType::i64, {f32_case})}, cast_to(DType::f32)).get_f64(0),
            std::ldexp(1.0, 60) + std::ldexp(1.0, 37));
  EXPECT_TRUE(tensors_match(run_single_op("cast", {ints(DType::i32, {65519, 65520, -65520})}, cast_to(DType::f16)),
                            floats(DType::f16, {65504.0, kInf, -kInf}), Tolerance::exact()));
}

}  // namespace
}  // namespace stitch
