// Floating-point semantics of the PTX interpreter: rounding modifiers, fma's
// single rounding, ftz and sat, NaN in comparisons and min/max, cvt rounding
// and saturation, and the approximate functions' special values.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "interpreter_test_util.h"

namespace stitch::ptx::testing {
namespace {

std::vector<uint32_t> run_words(const std::string& body, size_t n) { return run_one_thread<uint32_t>(body, n); }

float f(uint32_t bits) { return std::bit_cast<float>(bits); }
uint32_t b(float v) { return std::bit_cast<uint32_t>(v); }

TEST(InterpreterFloat, RoundingModifiersOnF32) {
  // 1 + 2^-30 and -1 - 2^-30 under each mode.
  auto out = run_words(R"(
    mov.f32 %f1, 0f3F800000;
    mov.f32 %f2, 0f30800000;
    add.rn.f32 %f3, %f1, %f2;  st.global.f32 [%rd1], %f3;
    add.rz.f32 %f3, %f1, %f2;  st.global.f32 [%rd1+4], %f3;
    add.rm.f32 %f3, %f1, %f2;  st.global.f32 [%rd1+8], %f3;
    add.rp.f32 %f3, %f1, %f2;  st.global.f32 [%rd1+12], %f3;
    neg.f32 %f4, %f1;
    sub.rz.f32 %f3, %f4, %f2;  st.global.f32 [%rd1+16], %f3;
    sub.rm.f32 %f3, %f4, %f2;  st.global.f32 [%rd1+20], %f3;
    sub.rp.f32 %f3, %f4, %f2;  st.global.f32 [%rd1+24], %f3;
    mov.f32 %f5, 0f40400000;
    div.rn.f32 %f3, %f1, %f5;  st.global.f32 [%rd1+28], %f3;
    div.rz.f32 %f3, %f1, %f5;  st.global.f32 [%rd1+32], %f3;
    div.rp.f32 %f3, %f1, %f5;  st.global.f32 [%rd1+36], %f3;
    mov.f32 %f6, 0f40000000;
    sqrt.rn.f32 %f3, %f6;      st.global.f32 [%rd1+40], %f3;
    sqrt.rp.f32 %f3, %f6;      st.global.f32 [%rd1+44], %f3;
    sqrt.rz.f32 %f3, %f6;      st.global.f32 [%rd1+48], %f3;
    mul.rp.f32 %f3, %f5, 0f3EAAAAAB; st.global.f32 [%rd1+52], %f3;
    mul.rm.f32 %f3, %f5, 0f3EAAAAAB; st.global.f32 [%rd1+56], %f3;
    sub.rm.f32 %f3, %f1, %f1;  st.global.f32 [%rd1+60], %f3;
    sub.rn.f32 %f3, %f1, %f1;  st.global.f32 [%rd1+64], %f3;
  )", 17);
  const float up = std::nextafter(1.0f, 2.0f);
  EXPECT_EQ(f(out[0]), 1.0f);
  EXPECT_EQ(f(out[1]), 1.0f);
  EXPECT_EQ(f(out[2]), 1.0f);
  EXPECT_EQ(f(out[3]), up);
  EXPECT_EQ(f(out[4]), -1.0f);
  EXPECT_EQ(f(out[5]), -up);
  EXPECT_EQ(f(out[6]), -1.0f);
  EXPECT_EQ(out[7], 0x3EAAAAABu);
  EXPECT_EQ(out[8], 0x3EAAAAAAu);
  EXPECT_EQ(out[9], 0x3EAAAAABu);
  EXPECT_EQ(f(out[10]), std::sqrt(2.0f));
  EXPECT_EQ(out[11], 0x3FB504F4u);  // sqrt(2) = 1.41421353...: rn gives ...F3, above the root
  EXPECT_EQ(out[12], 0x3FB504F3u);
  EXPECT_EQ(f(out[13]), up);        // 3 * 0x3EAAAAAB = 1 + 2^-24 (exact), rounded up
  EXPECT_EQ(f(out[14]), 1.0f);
  EXPECT_EQ(out[15], 0x80000000u);  // x - x is -0 rounding down
  EXPECT_EQ(out[16], 0x00000000u);
}

TEST(InterpreterFloat, FmaRoundsOnce) {
  // a = 1 + 2^-12: a*a = 1 + 2^-11 + 2^-24, which mul rounds to 1 + 2^-11 (a tie to even).
  auto out = run_words(R"(
    mov.f32 %f1, 0f3F800800;
    mov.f32 %f2, 0fBF801000;
    fma.rn.f32 %f3, %f1, %f1, %f2;  st.global.f32 [%rd1], %f3;
    mul.rn.f32 %f4, %f1, %f1;
    add.rn.f32 %f5, %f4, %f2;       st.global.f32 [%rd1+4], %f5;
    mad.rn.f32 %f3, %f1, %f1, %f2;  st.global.f32 [%rd1+8], %f3;
    fma.rm.f32 %f3, %f1, %f1, 0fBF800000;  st.global.f32 [%rd1+12], %f3;
    fma.rz.f32 %f3, %f1, %f1, 0f00000000;  st.global.f32 [%rd1+16], %f3;
    fma.rp.f32 %f3, %f1, %f1, 0f00000000;  st.global.f32 [%rd1+20], %f3;
  )", 6);
  EXPECT_EQ(f(out[0]), std::ldexp(1.0f, -24));
  EXPECT_EQ(f(out[1]), 0.0f);
  EXPECT_EQ(f(out[2]), std::ldexp(1.0f, -24));
  EXPECT_EQ(f(out[3]), std::ldexp(1.0f, -11) + std::ldexp(1.0f, -24));
  EXPECT_EQ(out[4], 0x3F801000u);
  EXPECT_EQ(out[5], 0x3F801001u);
}

TEST(InterpreterFloat, FtzSatMinMaxAndNaN) {
  auto out = run_words(R"(
    mov.f32 %f1, 0f00000010;
    add.ftz.f32 %f2, %f1, %f1;    st.global.f32 [%rd1], %f2;
    add.f32 %f2, %f1, %f1;        st.global.f32 [%rd1+4], %f2;
    add.sat.f32 %f2, 0f3F800000, 0f3F800000;  st.global.f32 [%rd1+8], %f2;
    mov.f32 %f3, 0f7FC00000;
    add.sat.f32 %f2, %f3, 0f3F800000;  st.global.f32 [%rd1+12], %f2;
    min.f32 %f2, %f3, 0f40000000;  st.global.f32 [%rd1+16], %f2;
    max.f32 %f2, 0f40000000, %f3;  st.global.f32 [%rd1+20], %f2;
    min.f32 %f2, 0f00000000, 0f80000000;  st.global.f32 [%rd1+24], %f2;
    max.f32 %f2, 0f80000000, 0f00000000;  st.global.f32 [%rd1+28], %f2;
    setp.lt.f32 %p1, %f3, 0f3F800000;   selp.u32 %r1, 1, 0, %p1;  st.global.u32 [%rd1+32], %r1;
    setp.ltu.f32 %p1, %f3, 0f3F800000;  selp.u32 %r1, 1, 0, %p1;  st.global.u32 [%rd1+36], %r1;
    setp.ne.f32 %p1, %f3, %f3;          selp.u32 %r1, 1, 0, %p1;  st.global.u32 [%rd1+40], %r1;
    setp.neu.f32 %p1, %f3, %f3;         selp.u32 %r1, 1, 0, %p1;  st.global.u32 [%rd1+44], %r1;
    setp.num.f32 %p1, %f3, 0f3F800000;  selp.u32 %r1, 1, 0, %p1;  st.global.u32 [%rd1+48], %r1;
    setp.nan.f32 %p1, %f3, 0f3F800000;  selp.u32 %r1, 1, 0, %p1;  st.global.u32 [%rd1+52], %r1;
    setp.geu.f32 %p1|%p2, 0f3F800000, 0f40000000;
    selp.u32 %r1, 1, 0, %p1;  st.global.u32 [%rd1+56], %r1;
    selp.u32 %r1, 1, 0, %p2;  st.global.u32 [%rd1+60], %r1;
    setp.lt.and.s32 %p3, 1, 2, %p2;     selp.u32 %r1, 1, 0, %p3;  st.global.u32 [%rd1+64], %r1;
    setp.hi.u32 %p4, -1, 1;             selp.u32 %r1, 1, 0, %p4;  st.global.u32 [%rd1+68], %r1;
    setp.gt.s32 %p4, -1, 1;             selp.u32 %r1, 1, 0, %p4;  st.global.u32 [%rd1+72], %r1;
  )", 19);
  EXPECT_EQ(out[0], 0u);
  EXPECT_EQ(out[1], 0x20u);
  EXPECT_EQ(f(out[2]), 1.0f);
  EXPECT_EQ(f(out[3]), 0.0f);
  EXPECT_EQ(f(out[4]), 2.0f);
  EXPECT_EQ(f(out[5]), 2.0f);
  EXPECT_EQ(out[6], 0x80000000u);
  EXPECT_EQ(out[7], 0x00000000u);
  EXPECT_EQ(out[8], 0u);
  EXPECT_EQ(out[9], 1u);
  EXPECT_EQ(out[10], 0u);
  EXPECT_EQ(out[11], 1u);
  EXPECT_EQ(out[12], 0u);
  EXPECT_EQ(out[13], 1u);
  EXPECT_EQ(out[14], 0u);
  EXPECT_EQ(out[15], 1u);
  EXPECT_EQ(out[16], 1u);
  EXPECT_EQ(out[17], 1u);
  EXPECT_EQ(out[18], 0u);
}

TEST(InterpreterFloat, ConvertRoundingAndSaturation) {
  auto out = run_words(R"(
    cvt.rzi.s32.f32 %r1, 0fC02CCCCD;  st.global.u32 [%rd1], %r1;
    cvt.rni.s32.f32 %r1, 0f40200000;  st.global.u32 [%rd1+4], %r1;
    cvt.rmi.s32.f32 %r1, 0fC0200000;  st.global.u32 [%rd1+8], %r1;
    cvt.rpi.s32.f32 %r1, 0f40066666;  st.global.u32 [%rd1+12], %r1;
    cvt.rzi.s32.f32 %r1, 0f7FC00000;  st.global.u32 [%rd1+16], %r1;
    cvt.rzi.s32.f32 %r1, 0f501502F9;  st.global.u32 [%rd1+20], %r1;
    cvt.rzi.s32.f32 %r1, 0fD01502F9;  st.global.u32 [%rd1+24], %r1;
    cvt.rzi.u32.f32 %r1, 0fC0A00000;  st.global.u32 [%rd1+28], %r1;
    cvt.rn.f32.s32 %f1, 16777217;     st.global.f32 [%rd1+32], %f1;
    cvt.rp.f32.s32 %f1, 16777217;     st.global.f32 [%rd1+36], %f1;
    cvt.rm.f32.s32 %f1, -16777217;    st.global.f32 [%rd1+40], %f1;
    mov.u64 %rd2, -1;
    cvt.rn.f32.u64 %f1, %rd2;         st.global.f32 [%rd1+44], %f1;
    cvt.rz.f32.u64 %f1, %rd2;         st.global.f32 [%rd1+48], %f1;
    mov.f64 %fd1, 0d3FB999999999999A;
    cvt.rn.f32.f64 %f1, %fd1;         st.global.f32 [%rd1+52], %f1;
    cvt.rz.f32.f64 %f1, %fd1;         st.global.f32 [%rd1+56], %f1;
    cvt.rn.f16.f32 %rs1, 0f3EAAAAAB;  cvt.u32.u16 %r1, %rs1;  st.global.u32 [%rd1+60], %r1;
    cvt.rz.f16.f32 %rs1, 0f477FF000;  cvt.u32.u16 %r1, %rs1;  st.global.u32 [%rd1+64], %r1;
    cvt.rn.f16.f32 %rs1, 0f477FF000;  cvt.u32.u16 %r1, %rs1;  st.global.u32 [%rd1+68], %r1;
    mov.b16 %rs2, 0x3555;
    cvt.f32.f16 %f1, %rs2;            st.global.f32 [%rd1+72], %f1;
    cvt.sat.f32.f32 %f1, 0f3FC00000;  st.global.f32 [%rd1+76], %f1;
    cvt.sat.f32.f32 %f1, 0f7FC00000;  st.global.f32 [%rd1+80], %f1;
    cvt.sat.s8.s32 %r1, 300;          st.global.u32 [%rd1+84], %r1;
    cvt.s32.s8 %r1, 200;              st.global.u32 [%rd1+88], %r1;
    cvt.rni.f32.f32 %f1, 0f40300000;  st.global.f32 [%rd1+92], %f1;
    cvt.rn.bf16.f32 %rs1, 0f3F808000; cvt.u32.u16 %r1, %rs1;  st.global.u32 [%rd1+96], %r1;
    cvt.rzi.s64.f64 %rd3, 0dC3E0000000000001; st.global.u64 [%rd1+104], %rd3;
  )", 28);
  EXPECT_EQ(static_cast<int32_t>(out[0]), -2);
  EXPECT_EQ(static_cast<int32_t>(out[1]), 2);
  EXPECT_EQ(static_cast<int32_t>(out[2]), -3);
  EXPECT_EQ(static_cast<int32_t>(out[3]), 3);
  EXPECT_EQ(out[4], 0u);
  EXPECT_EQ(static_cast<int32_t>(out[5]), std::numeric_limits<int32_t>::max());
  EXPECT_EQ(static_cast<int32_t>(out[6]), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(out[7], 0u);
  EXPECT_EQ(f(out[8]), 16777216.0f);
  EXPECT_EQ(f(out[9]), 16777218.0f);
  EXPECT_EQ(f(out[10]), -16777218.0f);
  EXPECT_EQ(f(out[11]), 18446744073709551616.0f);
  EXPECT_EQ(f(out[12]), std::nextafter(18446744073709551616.0f, 0.0f));
  EXPECT_EQ(f(out[13]), 0.1f);
  EXPECT_EQ(out[14], b(0.1f) - 1);  // 0.1f is above 0.1
  EXPECT_EQ(out[15], 0x3555u);
  EXPECT_EQ(out[16], 0x7BFFu);      // 65520 rounds toward zero to the largest half
  EXPECT_EQ(out[17], 0x7C00u);      // and to nearest to infinity
  EXPECT_EQ(f(out[18]), 0.333251953125f);
  EXPECT_EQ(f(out[19]), 1.0f);
  EXPECT_EQ(f(out[20]), 0.0f);
  EXPECT_EQ(out[21], 127u);
  EXPECT_EQ(static_cast<int32_t>(out[22]), -56);
  EXPECT_EQ(f(out[23]), 3.0f);      // 2.75 to the nearest integer
  EXPECT_EQ(out[24], 0x3F80u);      // 1.00390625 ties to even
  EXPECT_EQ(static_cast<int64_t>(uint64_t{out[26]} | (uint64_t{out[27]} << 32)), std::numeric_limits<int64_t>::min());
}

TEST(InterpreterFloat, ApproximateFunctionsSpecialValuesAndAccuracy) {
  auto out = run_words(R"(
    ex2.approx.ftz.f32 %f1, 0f3FC00000;   st.global.f32 [%rd1], %f1;
    ex2.approx.f32 %f1, 0fFF800000;       st.global.f32 [%rd1+4], %f1;
    lg2.approx.f32 %f1, 0f00000000;       st.global.f32 [%rd1+8], %f1;
    lg2.approx.f32 %f1, 0fBF800000;       st.global.f32 [%rd1+12], %f1;
    rcp.approx.f32 %f1, 0f80000000;       st.global.f32 [%rd1+16], %f1;
    rsqrt.approx.f32 %f1, 0f40800000;     st.global.f32 [%rd1+20], %f1;
    sin.approx.f32 %f1, 0f7F800000;       st.global.f32 [%rd1+24], %f1;
    cos.approx.f32 %f1, 0f00000000;       st.global.f32 [%rd1+28], %f1;
    tanh.approx.f32 %f1, 0f41200000;      st.global.f32 [%rd1+32], %f1;
    ex2.approx.ftz.f32 %f1, 0f00000001;   st.global.f32 [%rd1+36], %f1;
    rcp.rn.f32 %f1, 0f40400000;           st.global.f32 [%rd1+40], %f1;
    div.full.f32 %f1, 0f3F800000, 0f40400000; st.global.f32 [%rd1+44], %f1;
  )", 12);
  EXPECT_NEAR(f(out[0]), std::exp2(1.5), std::ldexp(std::exp2(1.5), -22));
  EXPECT_EQ(f(out[1]), 0.0f);
  EXPECT_EQ(f(out[2]), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(f(out[3])));
  EXPECT_EQ(f(out[4]), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(f(out[5]), 0.5f);
  EXPECT_TRUE(std::isnan(f(out[6])));
  EXPECT_EQ(f(out[7]), 1.0f);
  EXPECT_NEAR(f(out[8]), 1.0f, 1e-6);
  EXPECT_EQ(f(out[9]), 1.0f);
  EXPECT_EQ(out[10], 0x3EAAAAABu);
  EXPECT_EQ(out[11], 0x3EAAAAABu);
}

TEST(InterpreterFloat, DoubleRoundingModifiers) {
  auto out = run_words(R"(
    mov.f64 %fd1, 0d3FF0000000000000;
    mov.f64 %fd2, 0d3C80000000000000;
    add.rp.f64 %fd3, %fd1, %fd2;  st.global.f64 [%rd1], %fd3;
    add.rn.f64 %fd3, %fd1, %fd2;  st.global.f64 [%rd1+8], %fd3;
    div.rz.f64 %fd3, %fd1, 0d4008000000000000;  st.global.f64 [%rd1+16], %fd3;
    div.rp.f64 %fd3, %fd1, 0d4008000000000000;  st.global.f64 [%rd1+24], %fd3;
    fma.rm.f64 %fd3, %fd2, %fd2, %fd1;  st.global.f64 [%rd1+32], %fd3;
    fma.rp.f64 %fd3, %fd2, %fd2, %fd1;  st.global.f64 [%rd1+40], %fd3;
  )", 12);
  auto d = [&](int i) { return std::bit_cast<double>(uint64_t{out[2 * i]} | (uint64_t{out[2 * i + 1]} << 32)); };
  EXPECT_EQ(d(0), std::nextafter(1.0, 2.0));
  EXPECT_EQ(d(1), 1.0);
  EXPECT_EQ(d(2), 1.0 / 3.0);  // the nearest double is below 1/3
  EXPECT_EQ(d(3), std::nextafter(1.0 / 3.0, 1.0));
  EXPECT_EQ(d(4), 1.0);
  EXPECT_EQ(d(5), std::nextafter(1.0, 2.0));
}

}  // namespace
}  // namespace stitch::ptx::testing
