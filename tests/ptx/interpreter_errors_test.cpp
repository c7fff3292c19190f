// What the PTX interpreter reports as errors: out-of-bounds and misaligned
// accesses, barriers reached divergently or by part of a CTA, races between
// warps on shared memory, traps, shuffles across divergent lanes, and
// unsupported instructions, each at the instruction's source line.
#include <gtest/gtest.h>

#include "interpreter_test_util.h"

namespace stitch::ptx::testing {
namespace {

std::string run_error(const std::string& body, uint32_t threads, std::vector<float>* buffer = nullptr,
                      const std::string& before = "") {
  std::vector<float> local(16, 0.0f);
  std::vector<float>& out = buffer != nullptr ? *buffer : local;
  const std::string text = kernel_text(".param .u64 out", std::string(kRegs) + R"(
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
  )" + body + "\nret;", before);
  return error_of([&] { run_text(text, launch(2, threads), {buffer_arg(out, "out")}); });
}

TEST(InterpreterErrors, OutOfBoundsGlobalAccessNamesTheBufferAndThread) {
  // 16 floats: thread 16 of the first block stores one past the end.
  const std::string e = run_error(R"(
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.f32 [%rd3], 0f3F800000;
  )", 32);
  EXPECT_NE(e.find("test.ptx:"), std::string::npos) << e;
  EXPECT_NE(e.find("st.global.f32 in thread (16,0,0) of block (0,0,0)"), std::string::npos) << e;
  EXPECT_NE(e.find("out-of-bounds global store of 4 bytes"), std::string::npos) << e;
  EXPECT_NE(e.find("0 bytes past the end of out (64 bytes)"), std::string::npos) << e;
}

TEST(InterpreterErrors, NullAndMisalignedAccesses) {
  EXPECT_NE(run_error("mov.u64 %rd2, 0;\nld.global.f32 %f1, [%rd2];", 32).find("a null pointer"), std::string::npos);
  EXPECT_NE(run_error("ld.global.f32 %f1, [%rd1+2];", 32).find("misaligned global load of 4 bytes"), std::string::npos);
  EXPECT_NE(run_error("ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1+8];", 32).find("misaligned global load of 16 bytes"),
            std::string::npos);
}

TEST(InterpreterErrors, OutOfBoundsSharedAccess) {
  const std::string e = run_error(R"(
    .shared .align 4 .b8 buf[64];
    mov.u32 %r2, buf;
    shl.b32 %r3, %r1, 2;
    add.u32 %r4, %r2, %r3;
    st.shared.u32 [%r4], %r1;
  )", 32);
  EXPECT_NE(e.find("out-of-bounds shared store of 4 bytes at shared address 0x40 (the CTA has 64 bytes)"),
            std::string::npos)
      << e;
}

TEST(InterpreterErrors, BarrierInDivergentCode) {
  const std::string e = run_error(R"(
    setp.lt.u32 %p1, %r1, 8;
    @%p1 bra SKIP;
    bar.sync 0;
  SKIP:
  )", 32);
  EXPECT_NE(e.find("bar.sync reached divergently: lanes 0xffffff00 of warp 0 are here"), std::string::npos) << e;
}

TEST(InterpreterErrors, BarrierAfterSomeThreadsExited) {
  // Warp 1 (threads 32..63) returns early; warp 0 waits at the barrier forever.
  const std::string e = run_error(R"(
    setp.ge.u32 %p1, %r1, 32;
    @%p1 ret;
    bar.sync 0;
  )", 64);
  EXPECT_NE(e.find("bar.sync reached by only 32 of the CTA's 64 threads"), std::string::npos) << e;
}

TEST(InterpreterErrors, SharedMemoryRaceBetweenWarps) {
  // Every thread writes its slot, then reads its neighbour's: without a
  // barrier, thread 31 reads what warp 1 writes.
  const std::string racy = R"(
    .shared .align 4 .b8 buf[256];
    mov.u32 %r2, buf;
    shl.b32 %r3, %r1, 2;
    add.u32 %r4, %r2, %r3;
    st.shared.u32 [%r4], %r1;
    BARRIER
    add.u32 %r5, %r1, 1;
    and.b32 %r5, %r5, 63;
    shl.b32 %r6, %r5, 2;
    add.u32 %r7, %r2, %r6;
    ld.shared.u32 %r8, [%r7];
  )";
  std::string without = racy, with = racy;
  without.replace(without.find("BARRIER"), 7, "");
  with.replace(with.find("BARRIER"), 7, "bar.sync 0;");
  const std::string e = run_error(without, 64);
  EXPECT_NE(e.find("data race on shared address"), std::string::npos) << e;
  EXPECT_EQ(run_error(with, 64), "");
}

TEST(InterpreterErrors, TrapAndShuffleAcrossDivergentLanes) {
  EXPECT_NE(run_error("setp.eq.u32 %p1, %r1, 5;\n@%p1 trap;", 32).find("trap executed"), std::string::npos);
  const std::string e = run_error(R"(
    setp.lt.u32 %p1, %r1, 4;
    @%p1 bra DONE;
    shfl.sync.bfly.b32 %r2, %r1, 1, 31, -1;
  DONE:
  )", 32);
  EXPECT_NE(e.find("membermask 0xffffffff names lanes 0x0000000f that are on another path"), std::string::npos) << e;
}

TEST(InterpreterErrors, UnsupportedInstructionIsNamed) {
  // (dp4a, the example here before, is supported since the soak met it: interpreter_integer_test.cpp.)
  const std::string e = run_error("bmsk.clamp.b32 %r2, %r1, %r1;", 32);
  EXPECT_NE(e.find("instruction 'bmsk' is not supported by the PTX interpreter"), std::string::npos) << e;
  // (add.cc is supported since the carry chain was added: interpreter_carry_test.cpp.)
  const std::string m = run_error("addc.sat.u32 %r2, %r1, 1;", 32);
  EXPECT_NE(m.find("modifier .sat is not supported"), std::string::npos) << m;
}

TEST(InterpreterErrors, EndlessLoopStopsAtTheInstructionLimit) {
  InterpreterOptions options;
  options.max_warp_instructions = 10000;
  std::vector<float> out(16);
  const std::string text = kernel_text(".param .u64 out", "L:\nbra.uni L;\nret;");
  const std::string e = error_of([&] { run_text(text, launch(1, 32), {buffer_arg(out)}, "k", options); });
  EXPECT_NE(e.find("more than 10000 warp instructions"), std::string::npos) << e;
}

}  // namespace
}  // namespace stitch::ptx::testing
