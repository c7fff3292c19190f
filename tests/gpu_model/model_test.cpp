// The GPU model's synthetic checks (docs/gpu-model.md, Tests): counters from
// the interpreter on hand-written PTX, and the time model's verdicts on the
// three launches the issue names: a coalesced 16-byte copy at the copy roof,
// the same copy with a 32-float stride far below it, one CTA latency-bound.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <string>
#include <vector>

#include "gpu_model/profile.h"
#include "ptx/parser.h"

namespace stitch::gpu_model {
namespace {

const char* const kHeader = ".version 8.0\n.target sm_90\n.address_size 64\n\n";

// out[i * STRIDE] = x[i * STRIDE] for i < n, one thread an element of WIDTH
// floats (1 or 4); STRIDE in elements.
std::string copy_kernel(int width, int stride) {
  const int bytes = 4 * width;
  const std::string v = width == 4 ? ".v4.f32 {%f1, %f2, %f3, %f4}" : ".f32 %f1";
  return std::string(kHeader) + R"(.visible .entry copy(.param .u64 x, .param .u64 out, .param .u32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .b64 %rd<8>;
  .reg .f32 %f<5>;
  ld.param.u64 %rd1, [x];
  ld.param.u64 %rd2, [out];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.u32 %p1, %r5, %r1;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd3, %rd1;
  cvta.to.global.u64 %rd4, %rd2;
  mul.wide.u32 %rd5, %r5, )" + std::to_string(bytes * stride) + R"(;
  add.s64 %rd6, %rd3, %rd5;
  add.s64 %rd7, %rd4, %rd5;
  ld.global)" + v + R"(, [%rd6];
  st.global)" + (width == 4 ? std::string(".v4.f32 [%rd7], {%f1, %f2, %f3, %f4}") : std::string(".f32 [%rd7], %f1")) +
         R"(;
DONE:
  ret;
}
)";
}

// Zeroed memory that costs nothing until touched: the sampled CTAs touch a
// few megabytes of buffers sized for the whole grid.
struct Reserved {
  explicit Reserved(size_t n) : bytes(n) {
    data = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  }
  ~Reserved() {
    if (data != MAP_FAILED) munmap(data, bytes);
  }
  size_t bytes;
  void* data;
};

KernelProfile profile_copy(int width, int stride, uint32_t elements, uint32_t threads, const std::string& target = "h200") {
  const std::string text = copy_kernel(width, stride);
  ptx::Interpreter interp(ptx::parse_module(text, "copy.ptx"));
  const size_t bytes = size_t{elements} * 4 * static_cast<size_t>(width) * static_cast<size_t>(stride);
  Reserved x(bytes), out(bytes);
  EXPECT_NE(x.data, MAP_FAILED);
  EXPECT_NE(out.data, MAP_FAILED);
  std::vector<ptx::KernelArg> args{ptx::KernelArg::buffer(x.data, bytes, "x"),
                                   ptx::KernelArg::buffer(out.data, bytes, "out"),
                                   ptx::KernelArg::scalar<uint32_t>(elements)};
  ptx::LaunchConfig config;
  config.grid = {(elements + threads - 1) / threads, 1, 1};
  config.block = {threads, 1, 1};
  return profile_launch(text, "copy", config, 0, *target_named(target),
                        [&](const ptx::InterpreterOptions& o) { interp.run("copy", config, args, o); });
}

TEST(GpuModel, ACoalescedSixteenByteCopyIsAtTheCopyRoof) {
  // 2^24 float4 = 256 MiB each way.
  const KernelProfile p = profile_copy(4, 1, 1u << 24, 256);
  EXPECT_EQ(p.prediction.bound, "dram");
  const double of_copy = p.copy_s / p.prediction.seconds;
  EXPECT_GE(of_copy, 0.95);
  EXPECT_LE(of_copy, 1.05);
  EXPECT_DOUBLE_EQ(p.counters.sectors_per_request(), 16.0);  // 512 bytes a warp
  EXPECT_NEAR(p.prediction.dram_read_bytes, 256.0 * 1024 * 1024, 1.0);
  EXPECT_NEAR(p.prediction.dram_write_bytes, 256.0 * 1024 * 1024, 1.0);
  EXPECT_LT(p.counters.ctas_run, p.counters.ctas_in_grid);  // sampled
}

TEST(GpuModel, ACopyWithAThirtyTwoFloatStrideIsFarBelowTheRoof) {
  // 2^24 lanes, each moving 4 bytes out of a 32-byte sector.
  const KernelProfile p = profile_copy(1, 32, 1u << 24, 256);
  EXPECT_DOUBLE_EQ(p.counters.sectors_per_request(), 32.0);
  EXPECT_LE(p.copy_s / p.prediction.seconds, 0.15);
  EXPECT_NEAR(p.footprint_bytes, 2.0 * 4 * (1u << 24), 1.0);
}

TEST(GpuModel, OneCtaIsLatencyBound) {
  const KernelProfile p = profile_copy(4, 1, 256, 256);
  EXPECT_EQ(p.counters.ctas_run, 1u);
  EXPECT_EQ(p.prediction.bound, "latency");
  EXPECT_GT(p.prediction.latency_s, 10 * p.prediction.dram_s);
}

TEST(GpuModel, H200PredictsAFasterCopyThanH100) {
  const KernelProfile h100 = profile_copy(4, 1, 1u << 22, 256, "h100");
  const KernelProfile h200 = profile_copy(4, 1, 1u << 22, 256, "h200");
  EXPECT_LT(h200.prediction.seconds, h100.prediction.seconds);
}

TEST(GpuModel, RegistersComeFromPtxasOrAreSaidToBeAssumed) {
  const KernelProfile p = profile_copy(4, 1, 1024, 256);
  if (p.resources.known) {
    EXPECT_GT(p.registers_used, 0);
    EXPECT_NE(p.resources.source.find("ptxas"), std::string::npos);
  } else {
    EXPECT_EQ(p.registers_used, kAssumedRegisters);
    EXPECT_FALSE(p.resources.source.empty());
  }
  EXPECT_EQ(p.occupancy.blocks_per_sm, 8);  // 256 threads: the thread limit
}

TEST(GpuModel, FinishPricesTheTermsWithTheFittedConstants) {
  const Terms t{10e-6, 2e-6, 1e-6, 6e-6};
  const Prediction at_peak = finish(t, FittedConstants{1.0, 3e-6, 1.0});
  EXPECT_EQ(at_peak.bound, "dram");
  EXPECT_DOUBLE_EQ(at_peak.seconds, 13e-6);
  const Prediction slow_dram = finish(t, FittedConstants{0.5, 3e-6, 1.0});
  EXPECT_DOUBLE_EQ(slow_dram.dram_s, 20e-6);
  const Prediction long_latency = finish(t, FittedConstants{1.0, 1e-6, 2.0});
  EXPECT_EQ(long_latency.bound, "latency");
  EXPECT_DOUBLE_EQ(long_latency.seconds, 13e-6);
}

}  // namespace
}  // namespace stitch::gpu_model
