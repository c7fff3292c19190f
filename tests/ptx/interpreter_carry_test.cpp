// The PTX interpreter's carry chain (CC.CF) and run_with_memory, the entry
// the simulated CUDA driver launches through (docs/cuda-sim.md). NVRTC's PTX
// for double-precision pow multiplies 64-bit integers with mad.lo.cc.u32 and
// madc.hi.u32; the cuda_sim suites first found the interpreter lacking them.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "interpreter_test_util.h"

namespace stitch::ptx::testing {
namespace {

std::vector<uint64_t> run_one(const std::string& body, size_t n) { return run_one_thread<uint64_t>(body, n); }

TEST(InterpreterCarry, AddAndSubtractThroughTheCarryFlag) {
  auto out = run_one(R"(
    mov.u32 %r1, 0xFFFFFFFF;
    mov.u32 %r2, 0x00000001;
    add.cc.u32 %r3, %r1, 1;
    addc.u32 %r4, %r2, 0;
    mov.b64 %rd2, {%r3, %r4};
    st.global.u64 [%rd1], %rd2;
    sub.cc.u32 %r5, 0, 1;
    subc.u32 %r6, 5, 0;
    mov.b64 %rd3, {%r5, %r6};
    st.global.u64 [%rd1+8], %rd3;
    add.cc.u32 %r7, 1, 1;
    addc.cc.u32 %r8, %r1, 1;
    addc.u32 %r9, 0, 0;
    cvt.u64.u32 %rd4, %r9;
    st.global.u64 [%rd1+16], %rd4;
    mov.u64 %rd5, -1;
    add.cc.u64 %rd6, %rd5, 2;
    addc.u64 %rd7, 0, 0;
    st.global.u64 [%rd1+24], %rd6;
    st.global.u64 [%rd1+32], %rd7;
  )", 5);
  EXPECT_EQ(out[0], 0x200000000ull);  // 0x1_FFFFFFFF + 1
  EXPECT_EQ(out[1], 0x4FFFFFFFFull);  // 0x5_00000000 - 1
  EXPECT_EQ(out[2], 1u);              // 0xFFFFFFFF + 1 carried out of the second add
  EXPECT_EQ(out[3], 1u);
  EXPECT_EQ(out[4], 1u);
}

TEST(InterpreterCarry, SixtyFourBitProductFromThirtyTwoBitHalves) {
  // (a * b) mod 2^64 from 32-bit halves, as NVRTC writes it.
  const uint64_t a = 0x123456789ABCDEF1ull, b = 0xFEDCBA9876543211ull;
  auto out = run_one(fmt::format(R"(
    mov.b64 %rd2, {:#x};
    mov.b64 %rd3, {:#x};
    mov.b64 {{%r1, %r2}}, %rd2;
    mov.b64 {{%r3, %r4}}, %rd3;
    mul.lo.u32 %r5, %r1, %r3;
    mul.hi.u32 %r6, %r1, %r3;
    mad.lo.cc.u32 %r6, %r1, %r4, %r6;
    madc.hi.u32 %r7, %r1, %r4, 0;
    mad.lo.cc.u32 %r6, %r2, %r3, %r6;
    madc.hi.cc.u32 %r7, %r2, %r3, %r7;
    mov.b64 %rd4, {{%r5, %r6}};
    st.global.u64 [%rd1], %rd4;
  )", a, b), 1);
  EXPECT_EQ(out[0], a * b);
}

TEST(InterpreterCarry, RunWithMemoryResolvesRawAddressesAndChecksBounds) {
  const std::string text = kernel_text(".param .u64 p, .param .u32 n", std::string(kRegs) + R"(
    ld.param.u64 %rd1, [p];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %tid.x;
    setp.ge.u32 %p1, %r2, %r1;
    @%p1 bra DONE;
    mul.wide.u32 %rd2, %r2, 4;
    add.u64 %rd3, %rd1, %rd2;
    ld.global.u32 %r3, [%rd3];
    add.u32 %r3, %r3, 1;
    st.global.u32 [%rd3], %r3;
    DONE:
    ret;
  )");
  Interpreter interp(parse_module(text, "test.ptx"));
  std::vector<uint32_t> data(8, 41);
  const uint64_t address = kFirstRegionAddress + 0x1000;
  std::vector<GlobalRegion> memory{{address, reinterpret_cast<std::byte*>(data.data()), 32, "data"}};
  uint64_t p = address + 4;  // a pointer into the middle of the region
  uint32_t n = 7;
  void* params[] = {&p, &n};
  interp.run_with_memory("k", launch(1, 32), memory, params);
  EXPECT_EQ(data[0], 41u);
  for (size_t i = 1; i < 8; ++i) EXPECT_EQ(data[i], 42u) << i;
  n = 8;  // one past the end
  EXPECT_NE(error_of([&] { interp.run_with_memory("k", launch(1, 32), memory, params); }), "");
}

}  // namespace
}  // namespace stitch::ptx::testing
