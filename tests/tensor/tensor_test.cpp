#include "stitch/tensor.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <set>

namespace stitch {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool is_f16_nan(uint16_t h) { return (h & 0x7C00u) == 0x7C00u && (h & 0x03FFu) != 0; }
bool is_bf16_nan(uint16_t h) { return (h & 0x7F80u) == 0x7F80u && (h & 0x007Fu) != 0; }

// Every f16 case is checked through both entry points: from float and from double.
void expect_f16(double d, uint16_t bits) {
  EXPECT_EQ(f64_to_f16_bits(d), bits) << "f64 " << d;
  if (static_cast<double>(static_cast<float>(d)) == d) {
    EXPECT_EQ(f32_to_f16_bits(static_cast<float>(d)), bits) << "f32 " << d;
  }
}

void expect_bf16(double d, uint16_t bits) {
  EXPECT_EQ(f64_to_bf16_bits(d), bits) << "f64 " << d;
  if (static_cast<double>(static_cast<float>(d)) == d) {
    EXPECT_EQ(f32_to_bf16_bits(static_cast<float>(d)), bits) << "f32 " << d;
  }
}

TEST(F16Conversion, NormalValues) {
  expect_f16(1.0, 0x3C00);
  expect_f16(-2.0, 0xC000);
  expect_f16(0.5, 0x3800);
  expect_f16(65504.0, 0x7BFF);
  expect_f16(std::ldexp(1.0, -14), 0x0400);  // smallest normal
  expect_f16(0.333251953125, 0x3555);
}

TEST(F16Conversion, ZerosAndInfinities) {
  expect_f16(0.0, 0x0000);
  expect_f16(-0.0, 0x8000);
  expect_f16(kInf, 0x7C00);
  expect_f16(-kInf, 0xFC00);
  expect_f16(1e10, 0x7C00);
  expect_f16(-1e10, 0xFC00);
  expect_f16(1e300, 0x7C00);
}

TEST(F16Conversion, OverflowThreshold) {
  // 65520 is halfway between 65504 (odd significand) and 2^16, which overflows.
  expect_f16(65520.0, 0x7C00);
  expect_f16(std::nextafter(65520.0, 0.0), 0x7BFF);
  expect_f16(65519.0, 0x7BFF);
  expect_f16(-65520.0, 0xFC00);
}

TEST(F16Conversion, Subnormals) {
  expect_f16(std::ldexp(1.0, -24), 0x0001);
  expect_f16(std::ldexp(1023.0, -24), 0x03FF);  // largest subnormal
  expect_f16(-std::ldexp(1.0, -24), 0x8001);
  // Half the smallest subnormal ties to the even zero; a hair more rounds up.
  expect_f16(std::ldexp(1.0, -25), 0x0000);
  expect_f16(-std::ldexp(1.0, -25), 0x8000);
  expect_f16(std::nextafter(std::ldexp(1.0, -25), 1.0), 0x0001);
  expect_f16(std::ldexp(3.0, -25), 0x0002);
  // Halfway between the largest subnormal and the smallest normal goes to the even normal.
  expect_f16(std::ldexp(2047.0, -25), 0x0400);
  expect_f16(1e-10, 0x0000);
  expect_f16(std::numeric_limits<double>::denorm_min(), 0x0000);
}

TEST(F16Conversion, TiesToEven) {
  expect_f16(1.0 + std::ldexp(1.0, -11), 0x3C00);
  expect_f16(1.0 + std::ldexp(3.0, -11), 0x3C02);
  expect_f16(2049.0, 0x6800);
  expect_f16(2051.0, 0x6802);
  expect_f16(-2049.0, 0xE800);
}

TEST(F16Conversion, FromDoubleRoundsOnce) {
  // Through float the 2^-40 would be lost and the tie would go down to 1.0.
  const double just_above_tie = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  EXPECT_EQ(f64_to_f16_bits(just_above_tie), 0x3C01);
  EXPECT_EQ(f32_to_f16_bits(static_cast<float>(just_above_tie)), 0x3C00);
}

TEST(F16Conversion, NaNStaysNaN) {
  EXPECT_TRUE(is_f16_nan(f64_to_f16_bits(kNaN)));
  EXPECT_TRUE(is_f16_nan(f32_to_f16_bits(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(f64_to_f16_bits(-kNaN) & 0x8000u, 0x8000u);
  // A payload only in the low bits would vanish if not forced quiet.
  EXPECT_TRUE(is_f16_nan(f64_to_f16_bits(std::bit_cast<double>(0x7FF0'0000'0000'0001ull))));
  EXPECT_TRUE(std::isnan(f16_bits_to_f32(0x7E00)));
  EXPECT_TRUE(std::isnan(f16_bits_to_f32(0x7C01)));
  EXPECT_TRUE(std::isnan(f16_bits_to_f32(0xFE00)));
}

TEST(F16Conversion, Decode) {
  EXPECT_EQ(f16_bits_to_f32(0x3C00), 1.0f);
  EXPECT_EQ(f16_bits_to_f32(0xC000), -2.0f);
  EXPECT_EQ(f16_bits_to_f32(0x7BFF), 65504.0f);
  EXPECT_EQ(f16_bits_to_f32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f16_bits_to_f32(0x03FF), std::ldexp(1023.0f, -24));
  EXPECT_EQ(f16_bits_to_f32(0x0400), std::ldexp(1.0f, -14));
  EXPECT_EQ(f16_bits_to_f32(0x3555), 0.333251953125f);
  EXPECT_EQ(f16_bits_to_f32(0x7C00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(f16_bits_to_f32(0xFC00), -std::numeric_limits<float>::infinity());
  const float negative_zero = f16_bits_to_f32(0x8000);
  EXPECT_EQ(negative_zero, 0.0f);
  EXPECT_TRUE(std::signbit(negative_zero));
}

TEST(F16Conversion, EveryValueRoundTrips) {
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    const uint16_t bits = static_cast<uint16_t>(h);
    const float f = f16_bits_to_f32(bits);
    if (is_f16_nan(bits)) {
      EXPECT_TRUE(std::isnan(f));
      EXPECT_TRUE(is_f16_nan(f32_to_f16_bits(f)));
      continue;
    }
    ASSERT_EQ(f32_to_f16_bits(f), bits) << std::hex << h;
    ASSERT_EQ(f64_to_f16_bits(f), bits) << std::hex << h;
  }
}

TEST(F16Conversion, EveryMidpointTiesToEven) {
  // Between adjacent positive finite values a < b: the midpoint goes to the
  // even one, anything nearer to a or b goes there.
  for (uint16_t a = 0; a < 0x7BFF; ++a) {
    const uint16_t b = a + 1;
    const double low = f16_bits_to_f32(a);
    const double high = f16_bits_to_f32(b);
    const double mid = (low + high) / 2;
    ASSERT_EQ(f64_to_f16_bits(mid), (a & 1) ? b : a) << std::hex << a;
    ASSERT_EQ(f64_to_f16_bits(std::nextafter(mid, 0.0)), a) << std::hex << a;
    ASSERT_EQ(f64_to_f16_bits(std::nextafter(mid, kInf)), b) << std::hex << a;
    ASSERT_EQ(f64_to_f16_bits(-mid), static_cast<uint16_t>(((a & 1) ? b : a) | 0x8000)) << std::hex << a;
  }
}

#ifdef __FLT16_MAX__
// The compiler's _Float16 conversion is an independent, correctly rounded oracle.
TEST(F16Conversion, AgreesWithCompilerFloat16) {
  for (uint32_t high = 0; high <= 0xFFFF; ++high) {
    for (uint32_t low : {0x0000u, 0x0001u, 0x0FFFu, 0x1000u, 0x1001u, 0x7FFFu, 0x8000u, 0xFFFFu}) {
      const float f = std::bit_cast<float>((high << 16) | low);
      if (std::isnan(f)) continue;
      const uint16_t expected = std::bit_cast<uint16_t>(static_cast<_Float16>(f));
      ASSERT_EQ(f32_to_f16_bits(f), expected) << std::hex << ((high << 16) | low);
      const double d = static_cast<double>(f) * (1.0 + std::ldexp(1.0, -40));
      ASSERT_EQ(f64_to_f16_bits(d), std::bit_cast<uint16_t>(static_cast<_Float16>(d)))
          << std::hex << ((high << 16) | low);
    }
  }
}
#endif

TEST(BF16Conversion, NormalValues) {
  expect_bf16(1.0, 0x3F80);
  expect_bf16(-2.0, 0xC000);
  expect_bf16(0.5, 0x3F00);
  expect_bf16(std::ldexp(255.0, 120), 0x7F7F);  // largest finite
  expect_bf16(std::ldexp(1.0, -126), 0x0080);   // smallest normal
}

TEST(BF16Conversion, TiesToEven) {
  expect_bf16(1.0 + std::ldexp(1.0, -8), 0x3F80);
  expect_bf16(1.0 + std::ldexp(3.0, -8), 0x3F82);
  expect_bf16(257.0, 0x4380);
  expect_bf16(259.0, 0x4382);
  expect_bf16(-257.0, 0xC380);
}

TEST(BF16Conversion, OverflowAndSpecials) {
  expect_bf16(std::numeric_limits<float>::max(), 0x7F80);
  expect_bf16(std::ldexp(511.0, 119), 0x7F80);  // halfway above the largest finite
  expect_bf16(std::nextafter(std::ldexp(511.0, 119), 0.0), 0x7F7F);
  expect_bf16(1e300, 0x7F80);
  expect_bf16(kInf, 0x7F80);
  expect_bf16(-kInf, 0xFF80);
  expect_bf16(0.0, 0x0000);
  expect_bf16(-0.0, 0x8000);
}

TEST(BF16Conversion, Subnormals) {
  expect_bf16(std::ldexp(1.0, -133), 0x0001);
  expect_bf16(std::ldexp(1.0, -134), 0x0000);
  expect_bf16(std::ldexp(3.0, -134), 0x0002);
  expect_bf16(std::ldexp(1.0, -149), 0x0000);
  expect_bf16(-std::ldexp(1.0, -133), 0x8001);
}

TEST(BF16Conversion, FromDoubleRoundsOnce) {
  const double just_above_tie = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -30);
  EXPECT_EQ(f64_to_bf16_bits(just_above_tie), 0x3F81);
  EXPECT_EQ(f32_to_bf16_bits(static_cast<float>(just_above_tie)), 0x3F80);
}

TEST(BF16Conversion, NaNStaysNaN) {
  EXPECT_TRUE(is_bf16_nan(f64_to_bf16_bits(kNaN)));
  EXPECT_TRUE(is_bf16_nan(f32_to_bf16_bits(std::numeric_limits<float>::quiet_NaN())));
  // Payload only in the low 16 bits: truncation alone would make it infinity.
  EXPECT_TRUE(is_bf16_nan(f32_to_bf16_bits(std::bit_cast<float>(0x7F80'0001u))));
  EXPECT_TRUE(is_bf16_nan(f32_to_bf16_bits(std::bit_cast<float>(0xFFFF'FFFFu))));
  EXPECT_TRUE(std::isnan(bf16_bits_to_f32(0x7FC0)));
  EXPECT_EQ(bf16_bits_to_f32(0x3F80), 1.0f);
  EXPECT_EQ(bf16_bits_to_f32(0xC000), -2.0f);
}

TEST(BF16Conversion, EveryValueRoundTrips) {
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    const uint16_t bits = static_cast<uint16_t>(h);
    const float f = bf16_bits_to_f32(bits);
    if (is_bf16_nan(bits)) {
      EXPECT_TRUE(is_bf16_nan(f32_to_bf16_bits(f)));
      EXPECT_TRUE(is_bf16_nan(f64_to_bf16_bits(f)));
      continue;
    }
    ASSERT_EQ(f32_to_bf16_bits(f), bits) << std::hex << h;
    ASSERT_EQ(f64_to_bf16_bits(f), bits) << std::hex << h;
  }
}

TEST(BF16Conversion, FloatAndDoublePathsAgree) {
  for (uint32_t high = 0; high <= 0xFFFF; ++high) {
    for (uint32_t low : {0x0000u, 0x0001u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu}) {
      const float f = std::bit_cast<float>((high << 16) | low);
      if (std::isnan(f)) continue;
      ASSERT_EQ(f32_to_bf16_bits(f), f64_to_bf16_bits(f)) << std::hex << ((high << 16) | low);
    }
  }
}

TEST(Tensor, ConstructorZeroFills) {
  Tensor t(DType::f64, {2, 3});
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.nbytes(), 48u);
  EXPECT_EQ(t.rank(), 2);
  for (int64_t i = 0; i < t.numel(); ++i) EXPECT_EQ(t.get_f64(i), 0.0);

  Tensor scalar(DType::i32, {});
  EXPECT_EQ(scalar.numel(), 1);
  EXPECT_EQ(scalar.nbytes(), 4u);
  EXPECT_EQ(scalar.get_i64(0), 0);

  Tensor empty(DType::bf16, {2, 0, 3});
  EXPECT_EQ(empty.numel(), 0);
  EXPECT_EQ(empty.nbytes(), 0u);
}

TEST(Tensor, SetF64RoundsFloats) {
  Tensor f32(DType::f32, {2});
  f32.set_f64(0, 0.1);
  EXPECT_EQ(f32.get_f64(0), static_cast<double>(0.1f));
  f32.set_f64(1, 1e300);
  EXPECT_EQ(f32.get_f64(1), kInf);

  Tensor f16(DType::f16, {3});
  f16.set_f64(0, 65520.0);
  f16.set_f64(1, 0.1);
  f16.set_f64(2, -0.0);
  EXPECT_EQ(f16.get_f64(0), kInf);
  EXPECT_EQ(f16.data<uint16_t>()[1], 0x2E66);
  EXPECT_EQ(f16.get_f64(1), 0.0999755859375);
  EXPECT_TRUE(std::signbit(f16.get_f64(2)));

  Tensor bf16(DType::bf16, {1});
  bf16.set_f64(0, 1.0 + std::ldexp(3.0, -8));
  EXPECT_EQ(bf16.data<uint16_t>()[0], 0x3F82);
  EXPECT_EQ(bf16.get_f64(0), 1.015625);
}

TEST(Tensor, SetF64TruncatesAndSaturatesIntegers) {
  Tensor i8(DType::i8, {8});
  const double in[] = {127.9, 200.0, -200.0, -1.9, kNaN, kInf, -kInf, -128.5};
  const int64_t expected[] = {127, 127, -128, -1, 0, 127, -128, -128};
  for (int i = 0; i < 8; ++i) i8.set_f64(i, in[i]);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(i8.get_i64(i), expected[i]) << in[i];

  Tensor i32(DType::i32, {4});
  i32.set_f64(0, 3e9);
  i32.set_f64(1, -3e9);
  i32.set_f64(2, 2147483647.5);
  i32.set_f64(3, -2147483648.9);
  EXPECT_EQ(i32.get_i64(0), 2147483647);
  EXPECT_EQ(i32.get_i64(1), -2147483648LL);
  EXPECT_EQ(i32.get_i64(2), 2147483647);
  EXPECT_EQ(i32.get_i64(3), -2147483648LL);

  Tensor i64(DType::i64, {5});
  i64.set_f64(0, 1e19);
  i64.set_f64(1, -1e19);
  i64.set_f64(2, 9223372036854775808.0);
  i64.set_f64(3, -9223372036854775808.0);
  i64.set_f64(4, 9223372036854774784.0);  // largest double below 2^63
  EXPECT_EQ(i64.get_i64(0), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(i64.get_i64(1), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(i64.get_i64(2), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(i64.get_i64(3), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(i64.get_i64(4), 9223372036854774784LL);
}

TEST(Tensor, SetF64Bool) {
  Tensor b(DType::boolean, {5});
  const double in[] = {0.5, kNaN, -0.0, 0.0, -3.0};
  const int64_t expected[] = {1, 1, 0, 0, 1};
  for (int i = 0; i < 5; ++i) b.set_f64(i, in[i]);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(b.get_i64(i), expected[i]);
    EXPECT_EQ(b.data<uint8_t>()[i], expected[i]);
  }
  EXPECT_EQ(b.get_f64(0), 1.0);
}

TEST(Tensor, SetI64WrapsIntegers) {
  Tensor i8(DType::i8, {3});
  i8.set_i64(0, 300);
  i8.set_i64(1, -129);
  i8.set_i64(2, -1);
  EXPECT_EQ(i8.get_i64(0), 44);
  EXPECT_EQ(i8.get_i64(1), 127);
  EXPECT_EQ(i8.get_i64(2), -1);

  Tensor i32(DType::i32, {1});
  i32.set_i64(0, (int64_t{1} << 32) + 5);
  EXPECT_EQ(i32.get_i64(0), 5);

  Tensor i64(DType::i64, {1});
  i64.set_i64(0, -(int64_t{1} << 53) - 1);
  EXPECT_EQ(i64.get_i64(0), -(int64_t{1} << 53) - 1);

  Tensor b(DType::boolean, {3});
  b.set_i64(0, 2);
  b.set_i64(1, -1);
  b.set_i64(2, 0);
  EXPECT_EQ(b.get_i64(0), 1);
  EXPECT_EQ(b.get_i64(1), 1);
  EXPECT_EQ(b.get_i64(2), 0);
}

TEST(Tensor, SetI64RoundsFloatsOnce) {
  Tensor f16(DType::f16, {3});
  f16.set_i64(0, 2049);
  f16.set_i64(1, 2051);
  f16.set_i64(2, 70000);
  EXPECT_EQ(f16.get_f64(0), 2048.0);
  EXPECT_EQ(f16.get_f64(1), 2052.0);
  EXPECT_EQ(f16.get_f64(2), kInf);

  Tensor bf16(DType::bf16, {3});
  bf16.set_i64(0, 257);
  bf16.set_i64(1, 259);
  // 2^62 + 2^54 is a bf16 tie; one more must round up, though double would round it onto the tie.
  bf16.set_i64(2, (int64_t{1} << 62) + (int64_t{1} << 54) + 1);
  EXPECT_EQ(bf16.get_f64(0), 256.0);
  EXPECT_EQ(bf16.get_f64(1), 260.0);
  EXPECT_EQ(bf16.get_f64(2), std::ldexp(1.0, 62) + std::ldexp(1.0, 55));

  Tensor f32(DType::f32, {1});
  f32.set_i64(0, (int64_t{1} << 24) + 1);
  EXPECT_EQ(f32.get_f64(0), 16777216.0);

  Tensor f64(DType::f64, {2});
  f64.set_i64(0, (int64_t{1} << 53) + 1);
  f64.set_i64(1, std::numeric_limits<int64_t>::min());
  EXPECT_EQ(f64.get_f64(0), 9007199254740992.0);
  EXPECT_EQ(f64.get_f64(1), -9223372036854775808.0);
}

TEST(Tensor, GetI64OnFloatsTruncates) {
  Tensor f(DType::f32, {4});
  f.set_f64(0, 2.7);
  f.set_f64(1, -2.7);
  f.set_f64(2, kNaN);
  f.set_f64(3, 1e30);
  EXPECT_EQ(f.get_i64(0), 2);
  EXPECT_EQ(f.get_i64(1), -2);
  EXPECT_EQ(f.get_i64(2), 0);
  EXPECT_EQ(f.get_i64(3), std::numeric_limits<int64_t>::max());
}

TEST(Tensor, OutOfRangeIndexIsAnInternalError) {
  Tensor t(DType::f32, {2});
  EXPECT_ANY_THROW(t.get_f64(2));
  EXPECT_ANY_THROW(t.set_i64(-1, 0));
}

TEST(Tensor, Str) {
  Tensor t(DType::f32, {2, 3});
  for (int i = 0; i < 6; ++i) t.set_f64(i, i * 0.5);
  EXPECT_EQ(t.str(), "f32[2, 3] {0, 0.5, 1, 1.5, 2, 2.5}");
  EXPECT_EQ(t.str(2), "f32[2, 3] {0, 0.5, ...}");
  EXPECT_EQ(t.str(0), "f32[2, 3] {...}");

  Tensor scalar(DType::i64, {});
  scalar.set_i64(0, -7);
  EXPECT_EQ(scalar.str(), "i64[] {-7}");

  Tensor b(DType::boolean, {2});
  b.set_i64(0, 1);
  EXPECT_EQ(b.str(), "bool[2] {true, false}");

  Tensor h(DType::f16, {3});
  h.set_f64(0, 0.1);
  h.set_f64(1, -kInf);
  h.set_f64(2, kNaN);
  EXPECT_EQ(h.str(), "f16[3] {0.099975586, -inf, nan}");

  EXPECT_EQ(Tensor(DType::i32, {2, 0}).str(), "i32[2, 0] {}");
}

std::vector<std::byte> bytes_of(const Tensor& t) { return {t.raw(), t.raw() + t.nbytes()}; }

TEST(FillRandom, SameSeedSameBytes) {
  for (DType dtype : kAllDTypes) {
    Tensor a(dtype, {7, 13});
    Tensor b(dtype, {7, 13});
    fill_random(a, 1234);
    fill_random(b, 1234);
    EXPECT_EQ(bytes_of(a), bytes_of(b)) << dtype_name(dtype);
    Tensor c(dtype, {7, 13});
    fill_random(c, 1235);
    EXPECT_NE(bytes_of(a), bytes_of(c)) << dtype_name(dtype);
  }
}

TEST(FillRandom, PinnedStream) {
  // splitmix64 from state 0 starts 0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4,
  // 0x06C45D188009454F; integers take the top 4 bits minus 8.
  Tensor ints(DType::i32, {3});
  fill_random(ints, 0);
  EXPECT_EQ(ints.get_i64(0), 0xE - 8);
  EXPECT_EQ(ints.get_i64(1), 0x6 - 8);
  EXPECT_EQ(ints.get_i64(2), 0x0 - 8);

  // f64 takes the top 53 bits k and yields k * 2^-51 - 2.
  Tensor reals(DType::f64, {1});
  fill_random(reals, 0);
  EXPECT_EQ(reals.get_f64(0), std::ldexp(static_cast<double>(0xE220A8397B1DCDAFull >> 11), -51) - 2.0);
}

TEST(FillRandom, ValuesInRange) {
  for (DType dtype : kAllDTypes) {
    Tensor t(dtype, {4096});
    fill_random(t, 99);
    std::set<double> distinct;
    double lowest = kInf;
    double highest = -kInf;
    for (int64_t i = 0; i < t.numel(); ++i) {
      const double v = t.get_f64(i);
      ASSERT_FALSE(std::isnan(v));
      distinct.insert(v);
      lowest = std::min(lowest, v);
      highest = std::max(highest, v);
    }
    if (is_float(dtype)) {
      EXPECT_GE(lowest, -2.0) << dtype_name(dtype);
      EXPECT_LT(highest, 2.0) << dtype_name(dtype);
      EXPECT_LT(lowest, -1.9) << dtype_name(dtype);
      EXPECT_GT(highest, 1.9) << dtype_name(dtype);
      EXPECT_GT(distinct.size(), 200u) << dtype_name(dtype);
    } else if (is_integer(dtype)) {
      EXPECT_EQ(lowest, -8.0) << dtype_name(dtype);
      EXPECT_EQ(highest, 7.0) << dtype_name(dtype);
      EXPECT_EQ(distinct.size(), 16u) << dtype_name(dtype);
    } else {
      EXPECT_EQ(distinct, (std::set<double>{0.0, 1.0}));
      for (int64_t i = 0; i < t.numel(); ++i) ASSERT_LE(t.data<uint8_t>()[i], 1);
    }
  }
}

}  // namespace
}  // namespace stitch

namespace stitch {
namespace {

// Large storage (docs/executable.md, Tensor storage): its own mapping, zero
// without a fill, on a cache line; successive buffers start at different
// offsets in their pages; copies and moves keep the bytes.
TEST(TensorStorage, LargeBuffersAreZeroedAlignedAndColoured) {
  const int64_t n = static_cast<int64_t>(detail::kLargeStorageBytes / 4) + 1000;
  std::set<uintptr_t> offsets;
  std::vector<Tensor> held;
  for (int k = 0; k < 8; ++k) {
    Tensor t(DType::f32, {n});
    ASSERT_EQ(reinterpret_cast<uintptr_t>(t.raw()) % 64, 0u);
    offsets.insert(reinterpret_cast<uintptr_t>(t.raw()) % 4096);
    const float* f = t.data<float>();
    EXPECT_EQ(f[0], 0.0f);
    EXPECT_EQ(f[n / 2], 0.0f);
    EXPECT_EQ(f[n - 1], 0.0f);
    t.data<float>()[n - 1] = static_cast<float>(k);
    held.push_back(std::move(t));
  }
  EXPECT_EQ(offsets.size(), 8u);
  Tensor copy = held.back();
  EXPECT_EQ(copy.data<float>()[n - 1], 7.0f);
  EXPECT_NE(copy.raw(), held.back().raw());
  held.clear();
  // Small storage still comes from the aligned operator new.
  Tensor small(DType::f32, {16});
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small.raw()) % 64, 0u);
  EXPECT_EQ(small.data<float>()[15], 0.0f);
}

// A freed mapping of at most 32 MiB serves the next allocation of its size
// (as glibc's heap does below its mmap threshold), and the zero-filled
// constructor still zeroes it.
TEST(TensorStorage, KeptMappingsAreReusedAndZeroedWhenAsked) {
  // 7 MiB: with any colour's offset the mapping is 8 MiB, so both take one size.
  const int64_t n = (int64_t{7} << 20) / 4;
  uintptr_t first = 0;
  {
    Tensor t(DType::f32, {n});
    for (int64_t i = 0; i < n; i += 4096) t.data<float>()[i] = 1.0f;
    first = reinterpret_cast<uintptr_t>(t.raw());
  }
  Tensor u(DType::f32, {n});
  constexpr uintptr_t kHugePage = uintptr_t{2} << 20;
  EXPECT_EQ(reinterpret_cast<uintptr_t>(u.raw()) / kHugePage, first / kHugePage);  // the same mapping
  for (int64_t i = 0; i < n; i += 4096) ASSERT_EQ(u.data<float>()[i], 0.0f) << i;
}

}  // namespace
}  // namespace stitch
