// Integer semantics of the PTX interpreter: wraparound, high and wide
// products, clamped shifts, division by zero, bit operations.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "interpreter_test_util.h"

namespace stitch::ptx::testing {
namespace {

std::vector<uint64_t> run_one(const std::string& body, size_t n) { return run_one_thread<uint64_t>(body, n); }

TEST(InterpreterInteger, WraparoundAndProducts) {
  auto out = run_one(R"(
    mov.u32 %r1, 0xFFFFFFFF;
    add.u32 %r2, %r1, 2;
    cvt.u64.u32 %rd2, %r2;
    st.global.u64 [%rd1], %rd2;
    mov.u32 %r3, 0x80000000;
    mul.lo.u32 %r4, %r3, 2;
    cvt.u64.u32 %rd3, %r4;
    st.global.u64 [%rd1+8], %rd3;
    mov.u32 %r5, 0x12345678;
    mul.hi.u32 %r6, %r5, %r5;
    cvt.u64.u32 %rd4, %r6;
    st.global.u64 [%rd1+16], %rd4;
    mov.s32 %r7, -3;
    mul.wide.s32 %rd5, %r7, 1000000000;
    st.global.u64 [%rd1+24], %rd5;
    mul.wide.u32 %rd6, %r1, %r1;
    st.global.u64 [%rd1+32], %rd6;
    mov.s32 %r8, -7;
    mul.hi.s32 %r9, %r8, 0x40000000;
    cvt.s64.s32 %rd7, %r9;
    st.global.u64 [%rd1+40], %rd7;
    mov.u64 %rd8, -1;
    mul.hi.u64 %rd9, %rd8, %rd8;
    st.global.u64 [%rd1+48], %rd9;
    mad.wide.u32 %rd10, %r1, 2, %rd8;
    st.global.u64 [%rd1+56], %rd10;
  )", 8);
  EXPECT_EQ(out[0], 1u);
  EXPECT_EQ(out[1], 0u);
  EXPECT_EQ(out[2], (uint64_t{0x12345678} * 0x12345678) >> 32);
  EXPECT_EQ(static_cast<int64_t>(out[3]), -3000000000LL);
  EXPECT_EQ(out[4], uint64_t{0xFFFFFFFF} * 0xFFFFFFFF);
  EXPECT_EQ(static_cast<int64_t>(out[5]), (-7LL * 0x40000000LL) >> 32);
  EXPECT_EQ(out[6], 0xFFFFFFFFFFFFFFFEull);
  EXPECT_EQ(out[7], uint64_t{0xFFFFFFFF} * 2 - 1);
}

TEST(InterpreterInteger, ShiftsClampAtTheWidth) {
  auto out = run_one(R"(
    mov.u32 %r1, 0x80000001;
    shl.b32 %r2, %r1, 40;
    shr.u32 %r3, %r1, 33;
    shr.s32 %r4, %r1, 100;
    shr.s32 %r5, %r1, 4;
    shl.b32 %r6, %r1, 1;
    cvt.u64.u32 %rd2, %r2;  st.global.u64 [%rd1], %rd2;
    cvt.u64.u32 %rd2, %r3;  st.global.u64 [%rd1+8], %rd2;
    cvt.u64.u32 %rd2, %r4;  st.global.u64 [%rd1+16], %rd2;
    cvt.u64.u32 %rd2, %r5;  st.global.u64 [%rd1+24], %rd2;
    cvt.u64.u32 %rd2, %r6;  st.global.u64 [%rd1+32], %rd2;
  )", 5);
  EXPECT_EQ(out[0], 0u);
  EXPECT_EQ(out[1], 0u);
  EXPECT_EQ(out[2], 0xFFFFFFFFu);
  EXPECT_EQ(out[3], 0xF8000000u);
  EXPECT_EQ(out[4], 2u);
}

TEST(InterpreterInteger, DivisionByZeroAndOverflow) {
  auto out = run_one(R"(
    mov.u32 %r1, 17;
    mov.u32 %r2, 0;
    div.u32 %r3, %r1, %r2;
    rem.u32 %r4, %r1, %r2;
    mov.s32 %r5, 0x80000000;
    div.s32 %r6, %r5, -1;
    rem.s32 %r7, %r5, -1;
    div.s32 %r8, -7, 2;
    rem.s32 %r9, -7, 2;
    cvt.u64.u32 %rd2, %r3;  st.global.u64 [%rd1], %rd2;
    cvt.u64.u32 %rd2, %r4;  st.global.u64 [%rd1+8], %rd2;
    cvt.u64.u32 %rd2, %r6;  st.global.u64 [%rd1+16], %rd2;
    cvt.u64.u32 %rd2, %r7;  st.global.u64 [%rd1+24], %rd2;
    cvt.s64.s32 %rd2, %r8;  st.global.u64 [%rd1+32], %rd2;
    cvt.s64.s32 %rd2, %r9;  st.global.u64 [%rd1+40], %rd2;
  )", 6);
  EXPECT_EQ(out[0], 0xFFFFFFFFu);
  EXPECT_EQ(out[1], 17u);
  EXPECT_EQ(out[2], 0x80000000u);
  EXPECT_EQ(out[3], 0u);
  EXPECT_EQ(static_cast<int64_t>(out[4]), -3);
  EXPECT_EQ(static_cast<int64_t>(out[5]), -1);
}

// NVRTC emits dp4a for an i8 dot (soak seed 103956): bytes signed per operand
// type, the sum wrapping to 32 bits.
TEST(InterpreterInteger, Dp4aSumsByteProducts) {
  auto out = run_one(R"(
    dp4a.s32.s32 %r1, 0x80FF0102, 0x7F020304, 10;
    dp4a.u32.u32 %r2, 0x80FF0102, 0x7F020304, 10;
    dp4a.u32.s32 %r3, 0x000000FF, 0x000000FF, 0;
    dp4a.s32.s32 %r4, 0x80808080, 0x80808080, 0x7FFFFFFF;
    cvt.u64.u32 %rd2, %r1; st.global.u64 [%rd1], %rd2;
    cvt.u64.u32 %rd2, %r2; st.global.u64 [%rd1+8], %rd2;
    cvt.u64.u32 %rd2, %r3; st.global.u64 [%rd1+16], %rd2;
    cvt.u64.u32 %rd2, %r4; st.global.u64 [%rd1+24], %rd2;
  )", 4);
  // bytes low to high: a = 2, 1, -1, -128 (signed) or 2, 1, 255, 128; b = 4, 3, 2, 127
  EXPECT_EQ(static_cast<int32_t>(out[0]), 10 + 8 + 3 - 2 - 128 * 127);
  EXPECT_EQ(out[1], 10u + 8 + 3 + 255 * 2 + 128 * 127);
  EXPECT_EQ(static_cast<int32_t>(out[2]), 255 * -1);
  EXPECT_EQ(out[3], (0x7FFFFFFFull + 4 * 16384) & 0xFFFFFFFFull);
}

TEST(InterpreterInteger, Dp2aSumsHalfTimesByteProducts) {
  auto out = run_one(R"(
    dp2a.lo.s32.s32 %r1, 0xFFFE0003, 0x7F80FF02, 5;
    dp2a.hi.s32.s32 %r2, 0xFFFE0003, 0x7F80FF02, 5;
    dp2a.lo.u32.u32 %r3, 0xFFFE0003, 0x7F80FF02, 5;
    cvt.u64.u32 %rd2, %r1; st.global.u64 [%rd1], %rd2;
    cvt.u64.u32 %rd2, %r2; st.global.u64 [%rd1+8], %rd2;
    cvt.u64.u32 %rd2, %r3; st.global.u64 [%rd1+16], %rd2;
  )", 3);
  // a's halves low to high: 3, -2 (signed) or 3, 65534; b's bytes: 2, -1, -128, 127 (signed) or 2, 255, 128, 127
  EXPECT_EQ(static_cast<int32_t>(out[0]), 5 + 3 * 2 + -2 * -1);
  EXPECT_EQ(static_cast<int32_t>(out[1]), 5 + 3 * -128 + -2 * 127);
  EXPECT_EQ(out[2], 5u + 3 * 2 + 65534u * 255);
}

TEST(InterpreterInteger, BitOperations) {
  auto out = run_one(R"(
    mov.b32 %r1, 0x00F0F00F;
    popc.b32 %r2, %r1;
    clz.b32 %r3, %r1;
    brev.b32 %r4, %r1;
    bfe.u32 %r5, %r1, 4, 8;
    bfe.s32 %r6, 0x00000F00, 8, 4;
    bfi.b32 %r7, 0xA, 0xFFFFFFFF, 4, 4;
    prmt.b32 %r8, 0x33221100, 0x77665544, 0x7531;
    lop3.b32 %r9, 0xF0F0F0F0, 0xCCCCCCCC, 0xAAAAAAAA, 0x96;
    shf.l.wrap.b32 %r10, 0x80000000, 0x1, 4;
    shf.r.clamp.b32 %r11, 0x1, 0x2, 40;
    min.s32 %r12, -1, 1;
    min.u32 %r13, -1, 1;
    cvt.u64.u32 %rd2, %r2;  st.global.u64 [%rd1], %rd2;
    cvt.u64.u32 %rd2, %r3;  st.global.u64 [%rd1+8], %rd2;
    cvt.u64.u32 %rd2, %r4;  st.global.u64 [%rd1+16], %rd2;
    cvt.u64.u32 %rd2, %r5;  st.global.u64 [%rd1+24], %rd2;
    cvt.u64.u32 %rd2, %r6;  st.global.u64 [%rd1+32], %rd2;
    cvt.u64.u32 %rd2, %r7;  st.global.u64 [%rd1+40], %rd2;
    cvt.u64.u32 %rd2, %r8;  st.global.u64 [%rd1+48], %rd2;
    cvt.u64.u32 %rd2, %r9;  st.global.u64 [%rd1+56], %rd2;
    cvt.u64.u32 %rd2, %r10; st.global.u64 [%rd1+64], %rd2;
    cvt.u64.u32 %rd2, %r11; st.global.u64 [%rd1+72], %rd2;
    cvt.u64.u32 %rd2, %r12; st.global.u64 [%rd1+80], %rd2;
    cvt.u64.u32 %rd2, %r13; st.global.u64 [%rd1+88], %rd2;
  )", 12);
  EXPECT_EQ(out[0], 12u);
  EXPECT_EQ(out[1], 8u);
  EXPECT_EQ(out[2], 0xF00F0F00u);
  EXPECT_EQ(out[3], 0x00u);
  EXPECT_EQ(out[4], 0xFFFFFFFFu);
  EXPECT_EQ(out[5], 0xFFFFFFAFu);
  EXPECT_EQ(out[6], 0x77553311u);
  EXPECT_EQ(out[7], 0xF0F0F0F0u ^ 0xCCCCCCCCu ^ 0xAAAAAAAAu);
  EXPECT_EQ(out[8], 0x18u);
  EXPECT_EQ(out[9], 0x2u);
  EXPECT_EQ(out[10], 0xFFFFFFFFu);
  EXPECT_EQ(out[11], 1u);
}

}  // namespace
}  // namespace stitch::ptx::testing
