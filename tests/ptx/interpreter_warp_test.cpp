// Warp semantics of the PTX interpreter: reconvergence after divergent
// branches and loops, shfl.sync in every mode with segments and clamps,
// vote, atomics, and calls.
#include <gtest/gtest.h>

#include <cstdint>

#include "interpreter_test_util.h"

namespace stitch::ptx::testing {
namespace {

// A kernel over `threads` threads in one CTA; %r1 = tid.x, %rd1 = &out[tid.x]
// (u32 elements); the body computes %r2, which is stored.
std::vector<uint32_t> run_lanes(const std::string& body, uint32_t threads, uint32_t block = 0) {
  std::vector<uint32_t> out(threads, 0xdeadbeef);
  const std::string text = kernel_text(".param .u64 out", std::string(kRegs) + R"(
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd1, %rd1, %rd2;
  )" + body + "\nst.global.u32 [%rd1], %r2;\nret;");
  run_text(text, launch(1, block == 0 ? threads : block), {buffer_arg(out)});
  return out;
}

TEST(InterpreterWarp, DivergentIfElseReconvergesBeforeAShuffle) {
  // Odd lanes take one side, even lanes the other; the shuffle after the join
  // needs the whole warp again (an error if it had not reconverged).
  auto out = run_lanes(R"(
    and.b32 %r3, %r1, 1;
    setp.eq.u32 %p1, %r3, 0;
    @%p1 bra EVEN;
    mul.lo.u32 %r4, %r1, 10;
    bra.uni JOIN;
  EVEN:
    add.u32 %r4, %r1, 1000;
  JOIN:
    shfl.sync.idx.b32 %r2, %r4, 3, 31, -1;
    add.u32 %r2, %r2, %r4;
  )", 32);
  for (uint32_t l = 0; l < 32; ++l) EXPECT_EQ(out[l], 30 + (l % 2 ? l * 10 : l + 1000)) << l;
}

TEST(InterpreterWarp, DataDependentLoopThenVote) {
  // Lane l loops l times; afterwards the warp is whole: vote.all sees every lane.
  auto out = run_lanes(R"(
    mov.u32 %r3, 0;
    mov.u32 %r4, 0;
    setp.eq.u32 %p1, %r1, 0;
    @%p1 bra DONE;
  LOOP:
    add.u32 %r4, %r4, %r3;
    add.u32 %r3, %r3, 1;
    setp.lt.u32 %p2, %r3, %r1;
    @%p2 bra LOOP;
  DONE:
    setp.ge.u32 %p3, %r3, 0;
    vote.sync.all.pred %p4, %p3, -1;
    activemask.b32 %r5;
    selp.u32 %r6, 1, 0, %p4;
    mad.lo.u32 %r2, %r6, 1000000, %r4;
    setp.eq.u32 %p5, %r5, -1;
    @!%p5 mov.u32 %r2, 7;
  )", 32);
  for (uint32_t l = 0; l < 32; ++l) EXPECT_EQ(out[l], 1000000 + l * (l - (l > 0 ? 1 : 0)) / 2 * (l > 0)) << l;
}

uint32_t segment_source(int mode, uint32_t lane, uint32_t b, uint32_t width) {
  const uint32_t base = lane / width * width, in = lane % width;
  switch (mode) {
    case 0: return in >= b ? lane - b : lane;
    case 1: return in + b < width ? lane + b : lane;
    case 2: return ((lane ^ b) / width == lane / width) ? lane ^ b : lane;
    default: return base + b % width;
  }
}

TEST(InterpreterWarp, ShuffleModesWithSegments) {
  // Width-8 segments as CUDA encodes them: c = ((32 - width) << 8) | clamp.
  const char* modes[] = {"up", "down", "bfly", "idx"};
  for (int mode = 0; mode < 4; ++mode) {
    for (uint32_t b : {1u, 3u, 5u}) {
      const uint32_t c = mode == 0 ? (24u << 8) : ((24u << 8) | 31u);
      auto out = run_lanes("mul.lo.u32 %r3, %r1, 7;\nshfl.sync." + std::string(modes[mode]) + ".b32 %r4|%p1, %r3, " +
                               std::to_string(b) + ", " + std::to_string(c) +
                               ", -1;\nselp.u32 %r5, 1000, 0, %p1;\nadd.u32 %r2, %r4, %r5;",
                           32);
      for (uint32_t l = 0; l < 32; ++l) {
        const uint32_t src = segment_source(mode, l, b, 8);
        const bool in_range = mode == 3 || src != l || (mode == 2 && (l ^ b) == l);
        EXPECT_EQ(out[l] % 1000, src * 7) << modes[mode] << " b=" << b << " lane " << l;
        if (mode != 2) {
          EXPECT_EQ(out[l] >= 1000, in_range) << modes[mode] << " b=" << b << " lane " << l;
        }
      }
    }
  }
}

TEST(InterpreterWarp, VoteBallotAnyUniInDivergentCode) {
  auto out = run_lanes(R"(
    setp.lt.u32 %p1, %r1, 16;
    @!%p1 bra HIGH;
    and.b32 %r3, %r1, 3;
    setp.eq.u32 %p2, %r3, 0;
    vote.sync.ballot.b32 %r4, %p2, 0x0000ffff;
    vote.sync.any.pred %p3, %p2, 0x0000ffff;
    vote.sync.uni.pred %p4, %p2, 0x0000ffff;
    selp.u32 %r5, 1, 0, %p3;
    selp.u32 %r6, 2, 0, %p4;
    add.u32 %r7, %r5, %r6;
    bra.uni JOIN;
  HIGH:
    activemask.b32 %r4;
    mov.u32 %r7, 0;
  JOIN:
    add.u32 %r2, %r4, %r7;
  )", 32);
  for (uint32_t l = 0; l < 16; ++l) EXPECT_EQ(out[l], 0x1111u + 1) << l;
  for (uint32_t l = 16; l < 32; ++l) EXPECT_EQ(out[l], 0xffff0000u) << l;
}

TEST(InterpreterWarp, AtomicsOnGlobalAndSharedMemory) {
  // 64 threads: atom.global.add.f32 of 0.5 each; atom.shared.cas builds a
  // chain in which each thread records the value it replaced.
  std::vector<float> sum{1.0f};
  std::vector<uint32_t> out(64, 0), counter{0};
  const std::string text = kernel_text(".param .u64 sum, .param .u64 out, .param .u64 counter", std::string(kRegs) + R"(
    .shared .align 4 .u32 slot;
    ld.param.u64 %rd1, [sum];
    ld.param.u64 %rd2, [out];
    ld.param.u64 %rd3, [counter];
    mov.u32 %r1, %tid.x;
    atom.global.add.f32 %f1, [%rd1], 0f3F000000;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra SKIP;
    st.shared.u32 [slot], 0;
  SKIP:
    bar.sync 0;
    mov.u32 %r2, 0;
  RETRY:
    add.u32 %r3, %r2, 1;
    atom.shared.cas.b32 %r4, [slot], %r2, %r3;
    setp.ne.u32 %p2, %r4, %r2;
    mov.u32 %r2, %r4;
    @%p2 bra RETRY;
    mul.wide.u32 %rd4, %r1, 4;
    add.s64 %rd5, %rd2, %rd4;
    st.global.u32 [%rd5], %r2;
    red.global.add.u32 [%rd3], 2;
    ret;
  )");
  run_text(text, launch(1, 64), {buffer_arg(sum), buffer_arg(out), buffer_arg(counter)});
  EXPECT_EQ(sum[0], 33.0f);
  EXPECT_EQ(counter[0], 128u);
  std::vector<bool> seen(64, false);
  for (uint32_t v : out) {
    ASSERT_LT(v, 64u);
    EXPECT_FALSE(seen[v]) << v;
    seen[v] = true;
  }
}

TEST(InterpreterWarp, CallsWithDivergentReturn) {
  // f(x) returns early for odd x; calls are made by some lanes only.
  const std::string before = R"(
.func (.param .b32 ret) f(.param .b32 x)
{
  .reg .pred %q<2>;
  .reg .b32 %v<4>;
  ld.param.b32 %v1, [x];
  and.b32 %v2, %v1, 1;
  setp.ne.u32 %q1, %v2, 0;
  @%q1 bra ODD;
  mul.lo.u32 %v3, %v1, 3;
  st.param.b32 [ret], %v3;
  ret;
ODD:
  st.param.b32 [ret], 1;
  ret;
}
)";
  std::vector<uint32_t> out(32, 0);
  const std::string text = kernel_text(".param .u64 out", std::string(kRegs) + R"(
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, 5;
    setp.lt.u32 %p1, %r1, 20;
    @!%p1 bra STORE;
    {
      .param .b32 arg0;
      st.param.b32 [arg0], %r1;
      .param .b32 ret0;
      call (ret0), f, (arg0);
      ld.param.b32 %r2, [ret0];
    }
  STORE:
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r2;
    ret;
  )", before);
  run_text(text, launch(1, 32), {buffer_arg(out)});
  for (uint32_t l = 0; l < 32; ++l) EXPECT_EQ(out[l], l >= 20 ? 5u : (l % 2 ? 1u : 3 * l)) << l;
}

// barrier.sync without .aligned may be reached by the lanes of a warp on
// different paths, even at different instructions (the woven kernels of
// docs/goptx.md rely on it); bar.sync (.aligned) may not.
std::string split_barrier_kernel(const std::string& barrier) {
  return kernel_text(".param .u64 out", std::string(kRegs) + R"(
    mov.u32 %r1, %tid.x;
    shl.b32 %r2, %r1, 2;
    mov.u32 %r3, smem;
    add.u32 %r4, %r3, %r2;
    add.u32 %r5, %r1, 1;
    st.shared.u32 [%r4], %r5;
    and.b32 %r6, %r1, 31;
    setp.lt.u32 %p1, %r6, 16;
    @%p1 bra LOW;
    )" + barrier + R"( 0;
    bra JOIN;
  LOW:
    )" + barrier + R"( 0;
  JOIN:
    add.u32 %r7, %r1, 33;
    rem.u32 %r7, %r7, 64;
    shl.b32 %r8, %r7, 2;
    add.u32 %r9, %r3, %r8;
    ld.shared.u32 %r10, [%r9];
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd1, %rd1;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r10;
    ret;
  )", ".shared .align 4 .b8 smem[256];\n");
}

TEST(InterpreterBarriers, NonAlignedBarrierReachedOnTwoPathsSynchronises) {
  std::vector<uint32_t> out(64, 0);
  run_text(split_barrier_kernel("barrier.sync"), launch(1, 64), {buffer_arg(out)});
  for (uint32_t t = 0; t < 64; ++t) EXPECT_EQ(out[t], (t + 33) % 64 + 1) << t;
}

TEST(InterpreterBarriers, AlignedBarrierReachedOnTwoPathsIsAnError) {
  std::vector<uint32_t> out(64, 0);
  const std::string message = error_of([&] { run_text(split_barrier_kernel("bar.sync"), launch(1, 64), {buffer_arg(out)}); });
  EXPECT_NE(message.find("reached divergently"), std::string::npos) << message;
}

TEST(InterpreterBarriers, LanesWaitingWhileTheOthersLeaveAreReportedAsNotModelled) {
  // Only the low half-warp reaches the barrier; the others exit. A GPU lets
  // the barrier pass (exited threads do not count); the interpreter, whose
  // reconvergence stack cannot run the exiting lanes first, says so instead.
  std::vector<uint32_t> out(32, 0);
  const std::string text = kernel_text(".param .u64 out", std::string(kRegs) + R"(
    mov.u32 %r1, %tid.x;
    setp.lt.u32 %p1, %r1, 16;
    @!%p1 bra SKIP;
    barrier.sync 0;
  SKIP:
    ret;
  )");
  const std::string message = error_of([&] { run_text(text, launch(1, 32), {buffer_arg(out)}); });
  EXPECT_NE(message.find("barrier"), std::string::npos) << message;
}

}  // namespace
}  // namespace stitch::ptx::testing
