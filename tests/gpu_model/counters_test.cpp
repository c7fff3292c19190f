// The counters' rules one at a time (docs/gpu-model.md, Counters): accesses
// fed to the collector as the interpreter would, with addresses chosen to
// hit each case.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "gpu_model/counters.h"

namespace stitch::gpu_model {
namespace {

using ptx::sim::DFunction;
using ptx::sim::DInst;
using ptx::sim::MemoryAccess;
using ptx::sim::Space;

// A one-instruction function with `text`, for the collector's class lookup.
DFunction function_of(const std::string& text) {
  DFunction f;
  f.code.resize(1);
  f.info.push_back({text, {}});
  return f;
}

MemoryAccess access(Space space, bool write, uint32_t bytes, uint64_t base, uint64_t lane_stride) {
  MemoryAccess a;
  a.space = space;
  a.write = write;
  a.bytes = bytes;
  for (int l = 0; l < 32; ++l) a.address[l] = base + lane_stride * static_cast<uint64_t>(l);
  return a;
}

uint64_t shared_wavefronts(uint32_t bytes, uint64_t lane_stride, uint32_t mask = 0xffffffffu) {
  CounterCollector c(1, 1, 1e9);
  const DFunction f = function_of("ld.shared.f32");
  c.begin_cta({0, 0, 0}, 1);
  const MemoryAccess a = access(Space::Shared, false, bytes, 0, lane_stride);
  c.issue(0, f, 0, DInst{}, 0, mask, &a);
  c.end_cta();
  return c.counters().shared_wavefronts;
}

TEST(GpuCounters, SharedMemoryWavefrontsCountBankConflicts) {
  EXPECT_EQ(shared_wavefronts(4, 4), 1u);        // one word a bank
  EXPECT_EQ(shared_wavefronts(4, 0), 1u);        // one word for all: a broadcast
  EXPECT_EQ(shared_wavefronts(4, 8), 2u);        // two lanes a bank
  EXPECT_EQ(shared_wavefronts(4, 128), 32u);     // a column of a 32-wide tile
  EXPECT_EQ(shared_wavefronts(4, 132), 1u);      // padded to 33: no conflict
  EXPECT_EQ(shared_wavefronts(16, 16), 4u);      // 512 bytes: four phases of eight lanes
  EXPECT_EQ(shared_wavefronts(8, 8), 2u);        // 256 bytes: two phases
  EXPECT_EQ(shared_wavefronts(4, 128, 0x1u), 1u);  // one lane
}

KernelCounters global(uint32_t bytes, uint64_t lane_stride, bool write = false) {
  CounterCollector c(1, 1, 1e9);
  const DFunction f = function_of(write ? "st.global.f32" : "ld.global.f32");
  c.begin_cta({0, 0, 0}, 1);
  const MemoryAccess a = access(Space::Global, write, bytes, 1u << 20, lane_stride);
  c.issue(0, f, 0, DInst{}, 0, 0xffffffffu, &a);
  c.end_cta();
  return c.counters();
}

TEST(GpuCounters, SectorsAndLinesPerRequest) {
  EXPECT_EQ(global(4, 4).global_load.sectors, 4u);
  EXPECT_EQ(global(4, 4).global_load.lines, 1u);
  EXPECT_EQ(global(16, 16).global_load.sectors, 16u);
  EXPECT_EQ(global(16, 16).global_load.lines, 4u);
  EXPECT_EQ(global(4, 128).global_load.sectors, 32u);
  EXPECT_EQ(global(4, 0).global_load.sectors, 1u);
  EXPECT_EQ(global(4, 4, true).global_store.bytes, 128u);
  EXPECT_EQ(global(16, 16).access_width[4], 1u);
}

// One CTA reads 64 KiB twice; between its two reads it touched 64 KiB, and
// `concurrent` CTAs like it share an L2 of `l2` bytes.
KernelCounters reread(uint64_t concurrent, double l2) {
  CounterCollector c(1, concurrent, l2);
  const DFunction f = function_of("ld.global.f32");
  c.begin_cta({0, 0, 0}, 1);
  for (int pass = 0; pass < 2; ++pass) {
    for (uint64_t at = 0; at < 65536; at += 128) {
      const MemoryAccess a = access(Space::Global, false, 4, (1u << 20) + at, 4);
      c.issue(0, f, 0, DInst{}, 0, 0xffffffffu, &a);
    }
  }
  c.end_cta();
  return c.counters();
}

TEST(GpuCounters, ARereadHitsTheL2WhenTheCtasBetweenFit) {
  const KernelCounters fits = reread(132 * 8, 50.0 * 1024 * 1024);  // 66 MiB in flight: does not fit in 50
  EXPECT_EQ(fits.l2_reread_hits, 0u);
  EXPECT_NEAR(fits.dram_read_bytes(), 2 * 65536, 1);
  const KernelCounters small = reread(132, 50.0 * 1024 * 1024);  // 8 MiB: fits
  EXPECT_EQ(small.l2_reread_misses, 0u);
  EXPECT_NEAR(small.dram_read_bytes(), 65536, 1);
}

TEST(GpuCounters, ASectorManyCtasReadIsFetchedOnce) {
  // Four sampled CTAs of a grid of 400 read the same 128 bytes (a bias) and their own 128.
  CounterCollector c(400, 8, 1e9);
  const DFunction f = function_of("ld.global.f32");
  for (uint64_t cta = 0; cta < 4; ++cta) {
    c.begin_cta({static_cast<uint32_t>(cta), 0, 0}, 1);
    const MemoryAccess bias = access(Space::Global, false, 4, 1u << 20, 4);
    const MemoryAccess own = access(Space::Global, false, 4, (2u << 20) + cta * 128, 4);
    c.issue(0, f, 0, DInst{}, 0, 0xffffffffu, &bias);
    c.issue(0, f, 0, DInst{}, 0, 0xffffffffu, &own);
    c.end_cta();
  }
  const KernelCounters k = c.counters();
  EXPECT_DOUBLE_EQ(k.scale(), 100.0);
  // The private rows scale to the grid (400 x 128); the bias is read once.
  EXPECT_NEAR(k.dram_read_bytes(), 400.0 * 128 + 128, 1e-6);
}

// A warp's instructions as the collector sees them: loads write a register,
// a use reads one, a store writes memory, a branch ends the block.
struct Stream {
  CounterCollector collector{1, 1, 1e9};
  std::map<std::string, DFunction> functions;  // the collector remembers classes by function
  uint32_t next_address = 1u << 20;

  const DFunction& function(const std::string& text) {
    return functions.try_emplace(text, function_of(text)).first->second;
  }

  Stream() { collector.begin_cta({0, 0, 0}, 1); }
  void load(uint32_t reg, const std::string& text = "ld.global.f32") {
    const DFunction& f = function(text);
    DInst in;
    in.width = 1;
    in.ops[0].kind = ptx::sim::OperandKind::Reg;
    in.ops[0].index = 100;  // the address
    in.ops[1].kind = ptx::sim::OperandKind::Reg;
    in.ops[1].index = reg;
    const MemoryAccess a = access(Space::Global, false, 4, next_address, 4);
    next_address += 128;
    collector.issue(0, f, 0, in, 0, 0xffffffffu, &a);
  }
  void use(uint32_t reg) {
    DInst in;
    in.ops[0].kind = ptx::sim::OperandKind::Reg;
    in.ops[0].index = 200;
    in.ops[1].kind = ptx::sim::OperandKind::Reg;
    in.ops[1].index = reg;
    collector.issue(0, function("add.f32"), 0, in, 0, 0xffffffffu, nullptr);
  }
  void store() {
    DInst in;
    in.width = 1;
    const MemoryAccess a = access(Space::Global, true, 4, (8u << 20) + next_address, 4);
    collector.issue(0, function("st.global.f32"), 0, in, 0, 0xffffffffu, &a);
  }
  void branch() { collector.issue(0, function("bra.uni"), 0, DInst{}, 0, 0xffffffffu, nullptr); }
  uint64_t batches() {
    collector.end_cta();
    return collector.counters().load_batches;
  }
};

TEST(GpuCounters, ABlocksLoadsAreOneBatchAsPtxasSchedulesThem) {
  Stream unrolled;  // ld, use, ld, use in one block, then the branch: ptxas hoists the second load
  unrolled.load(1);
  unrolled.use(1);
  unrolled.load(2);
  unrolled.use(2);
  unrolled.branch();
  unrolled.load(3);
  unrolled.use(3);
  unrolled.branch();
  EXPECT_EQ(unrolled.batches(), 2u);

  Stream aliasing;  // a store between: a plain load may alias it and waits
  aliasing.load(1);
  aliasing.use(1);
  aliasing.store();
  aliasing.load(2);
  aliasing.use(2);
  EXPECT_EQ(aliasing.batches(), 2u);

  Stream restricted;  // ld.global.nc (a __restrict__ const pointer) moves above the store
  restricted.load(1, "ld.global.nc.f32");
  restricted.use(1);
  restricted.store();
  restricted.load(2, "ld.global.nc.f32");
  restricted.use(2);
  EXPECT_EQ(restricted.batches(), 1u);
}

TEST(GpuCounters, InstructionClassesFromTheText) {
  EXPECT_EQ(class_of("fma.rn.f32", nullptr), InstructionClass::Fp32);
  EXPECT_EQ(class_of("add.f64", nullptr), InstructionClass::Fp64);
  EXPECT_EQ(class_of("ex2.approx.ftz.f32", nullptr), InstructionClass::Sfu);
  EXPECT_EQ(class_of("div.rn.f32", nullptr), InstructionClass::Sfu);
  EXPECT_EQ(class_of("mad.lo.s32", nullptr), InstructionClass::Integer);
  EXPECT_EQ(class_of("cvt.rn.f32.s32", nullptr), InstructionClass::Convert);
  EXPECT_EQ(class_of("shfl.sync.bfly.b32", nullptr), InstructionClass::Shuffle);
  EXPECT_EQ(class_of("bar.sync", nullptr), InstructionClass::Barrier);
  EXPECT_EQ(class_of("bra.uni", nullptr), InstructionClass::Control);
  EXPECT_EQ(class_of("ld.param.u64", nullptr), InstructionClass::Other);
  const MemoryAccess st = access(Space::Shared, true, 4, 0, 4);
  EXPECT_EQ(class_of("st.shared.f32", &st), InstructionClass::SharedStore);
}

TEST(GpuCounters, ASampleHasTheFirstAndLastWavesAndIsAscending) {
  const std::vector<uint64_t> all = sample_ctas(100, 192);
  ASSERT_EQ(all.size(), 100u);
  const std::vector<uint64_t> s = sample_ctas(100000, 192);
  ASSERT_EQ(s.size(), 192u);
  EXPECT_EQ(s.front(), 0u);
  EXPECT_EQ(s[47], 47u);
  EXPECT_EQ(s.back(), 99999u);
  EXPECT_EQ(s[192 - 48], 100000u - 48);
  EXPECT_TRUE(std::is_sorted(s.begin(), s.end()));
  EXPECT_EQ(std::set<uint64_t>(s.begin(), s.end()).size(), s.size());
}

}  // namespace
}  // namespace stitch::gpu_model
