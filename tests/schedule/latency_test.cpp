// The latency evaluator (docs/schedule.md): occupancy on hand-computed cases,
// L = N_wave x N_instr x CPI on hand-computed kernels, and the ranking's
// choices for row reductions of short and long rows (STYLE.md §9: force each
// branch with chosen shapes).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "schedule/candidates.h"
#include "schedule/latency.h"

namespace stitch::schedule {
namespace {

TEST(Occupancy, RegistersLimit256ThreadsAt64RegistersTo4BlocksOnSm90) {
  // 8 warps x 64 x 32 = 16384 registers a block; 65536 / 16384 = 4.
  Occupancy o = occupancy(sm90_target(), 256, 64, 0);
  EXPECT_EQ(o.blocks_per_sm, 4);
  EXPECT_EQ(o.by_threads, 8);
  EXPECT_EQ(o.by_registers, 4);
  EXPECT_EQ(o.by_shared, 228);  // 228 KB / the 1 KB the system reserves per block
  EXPECT_EQ(o.by_blocks, 32);
  EXPECT_EQ(o.limit, OccupancyLimit::Registers);
  EXPECT_DOUBLE_EQ(o.fraction, 0.5);
  EXPECT_EQ(occupancy(sm80_target(), 256, 64, 0).blocks_per_sm, 4);
}

TEST(Occupancy, RegistersAreGivenPerWarpIn256RegisterUnits) {
  // 65 x 32 = 2080 -> 2304 per warp; 65536 / 2304 = 28 warps = 3 blocks of 8.
  EXPECT_EQ(occupancy(sm90_target(), 256, 65, 0).blocks_per_sm, 3);
  // 255 x 32 = 8160 -> 8192 per warp: 8 warps fill the register file exactly.
  EXPECT_EQ(occupancy(sm90_target(), 256, 255, 0).blocks_per_sm, 1);
  // 16 warps would need 131072 registers: more than a block may have.
  EXPECT_EQ(occupancy(sm90_target(), 512, 255, 0).limit, OccupancyLimit::Unlaunchable);
  EXPECT_EQ(occupancy(sm90_target(), 256, 256, 0).blocks_per_sm, 0);
}

TEST(Occupancy, SharedMemoryLimits) {
  // 48 KB + the 1 KB reserve = 50176 bytes a block: 164 KB holds 3, 228 KB holds 4.
  Occupancy a100 = occupancy(sm80_target(), 128, 32, 48 * 1024);
  EXPECT_EQ(a100.blocks_per_sm, 3);
  EXPECT_EQ(a100.limit, OccupancyLimit::SharedMemory);
  EXPECT_EQ(occupancy(sm90_target(), 128, 32, 48 * 1024).blocks_per_sm, 4);
  // 100 KB (opt-in): one block per SM on sm_80, two on sm_90.
  EXPECT_EQ(occupancy(sm80_target(), 128, 32, 100 * 1024).blocks_per_sm, 1);
  EXPECT_EQ(occupancy(sm90_target(), 128, 32, 100 * 1024).blocks_per_sm, 2);
  // 200 KB is past sm_80's opt-in maximum (163 KB) but within sm_90's (227 KB).
  EXPECT_EQ(occupancy(sm80_target(), 128, 32, 200 * 1024).limit, OccupancyLimit::Unlaunchable);
  EXPECT_EQ(occupancy(sm90_target(), 128, 32, 200 * 1024).blocks_per_sm, 1);
  // Allocation is in 128-byte units: 1 byte costs 1024 + 128.
  EXPECT_EQ(occupancy(sm90_target(), 32, 16, 1).by_shared, 233472 / 1152);
}

TEST(Occupancy, ThreadsAndBlockLimits) {
  Occupancy big = occupancy(sm90_target(), 1024, 32, 0);
  EXPECT_EQ(big.blocks_per_sm, 2);
  EXPECT_EQ(big.limit, OccupancyLimit::Threads);  // registers also allow exactly 2: threads are named first
  Occupancy tiny = occupancy(sm90_target(), 32, 16, 0);
  EXPECT_EQ(tiny.blocks_per_sm, 32);
  EXPECT_EQ(tiny.limit, OccupancyLimit::Blocks);
  EXPECT_DOUBLE_EQ(tiny.fraction, 0.5);
  EXPECT_EQ(occupancy(sm90_target(), 2048, 16, 0).limit, OccupancyLimit::Unlaunchable);
  EXPECT_EQ(occupancy(sm90_target(), 0, 16, 0).limit, OccupancyLimit::Unlaunchable);
}

KernelCandidate kernel(int64_t blocks, int64_t threads, InstructionMix mix, int64_t bytes = 0) {
  KernelCandidate k;
  k.blocks = blocks;
  k.threads_per_block = threads;
  k.registers_per_thread = 32;
  k.per_thread = mix;
  k.bytes_moved = bytes;
  return k;
}

TEST(Latency, WavesCountFullMachines) {
  const GpuTarget& t = sm90_target();  // 256 threads: 8 blocks per SM, 1056 a wave
  EXPECT_EQ(estimate_latency(t, kernel(1056, 256, {0, 1})).waves, 1);
  EXPECT_EQ(estimate_latency(t, kernel(1057, 256, {0, 1})).waves, 2);
  EXPECT_EQ(estimate_latency(t, kernel(3 * 1056, 256, {0, 1})).waves, 3);
  EXPECT_EQ(estimate_latency(t, kernel(1, 256, {0, 1})).waves, 1);
}

TEST(Latency, AluCpiIsLatencyOrTheWarpsTurn) {
  const GpuTarget& t = sm90_target();
  // A full wave: 64 warps per SM share 4 warp-instructions a cycle: CPI 16.
  LatencyEstimate full = estimate_latency(t, kernel(1056, 256, {0, 10}));
  EXPECT_EQ(full.warps_per_sm, 64);
  EXPECT_DOUBLE_EQ(full.cpi_alu, 16);
  EXPECT_DOUBLE_EQ(full.wave_cycles, 160);
  EXPECT_DOUBLE_EQ(full.seconds, 160 / 1.98e9);
  // Two waves cost twice one.
  EXPECT_DOUBLE_EQ(estimate_latency(t, kernel(2112, 256, {0, 10})).cycles, 320);
  // One block per SM: 8 warps, the 4-cycle latency dominates.
  LatencyEstimate sparse = estimate_latency(t, kernel(132, 256, {0, 10}));
  EXPECT_EQ(sparse.warps_per_sm, 8);
  EXPECT_DOUBLE_EQ(sparse.cpi_alu, 4);
  EXPECT_DOUBLE_EQ(sparse.cycles, 40);
}

TEST(Latency, MemoryBoundKernelRunsAtBandwidth) {
  const GpuTarget& t = sm90_target();
  // A full wave, 4 coalesced 128-byte loads per warp: the SM's share of DRAM decides.
  const int64_t bytes = 1056 * 8 * 4 * 128;
  LatencyEstimate e = estimate_latency(t, kernel(1056, 256, {4, 0}, bytes));
  EXPECT_NEAR(e.seconds, static_cast<double>(bytes) / t.memory_bytes_per_second, 1e-12);
  EXPECT_GT(e.cpi_memory, t.memory_latency / kMemoryLevelParallelism);
}

TEST(Latency, FewWarpsWaitForMemoryLatency) {
  const GpuTarget& t = sm90_target();
  // One warp, one load: the full latency. Four loads overlap: four x latency/4.
  EXPECT_DOUBLE_EQ(estimate_latency(t, kernel(1, 32, {1, 0}, 128)).cycles, t.memory_latency);
  EXPECT_DOUBLE_EQ(estimate_latency(t, kernel(1, 32, {4, 0}, 512)).cycles, t.memory_latency);
  // Uncoalesced (8x the DRAM bytes) is slower than coalesced at the same useful bytes.
  KernelCandidate strided = kernel(1056, 256, {4, 0}, 1056 * 8 * 4 * 128);
  strided.fetch_per_useful_byte = 8;
  EXPECT_GT(estimate_latency(t, strided).seconds,
            7 * estimate_latency(t, kernel(1056, 256, {4, 0}, 1056 * 8 * 4 * 128)).seconds);
}

TEST(Latency, UnlaunchableBlocksAreInfinite) {
  KernelCandidate k = kernel(10, 256, {1, 1}, 1024);
  k.shared_bytes_per_block = 300 * 1024;
  LatencyEstimate e = estimate_latency(sm90_target(), k);
  EXPECT_FALSE(e.launchable);
  EXPECT_TRUE(std::isinf(e.seconds));
}

GroupDescription row_reduction(int64_t rows, int64_t cols) {
  GroupDescription g;
  g.pattern = GroupPattern::RowReduction;
  g.rows = rows;
  g.cols = cols;
  return g;
}

TEST(Ranking, ShortRowsPreferAWarpPerRow) {
  for (const GpuTarget* t : {&sm80_target(), &sm90_target()}) {
    std::vector<RankedCandidate> r = rank_candidates(row_reduction(65536, 128), *t);
    ASSERT_FALSE(r.empty());
    EXPECT_EQ(r.front().kernel.strategy, "warp-per-row") << render_ranking(row_reduction(65536, 128), *t, r);
  }
}

TEST(Ranking, LongRowsPreferABlockPerRow) {
  for (const GpuTarget* t : {&sm80_target(), &sm90_target()}) {
    std::vector<RankedCandidate> r = rank_candidates(row_reduction(1024, 16384), *t);
    ASSERT_FALSE(r.empty());
    EXPECT_EQ(r.front().kernel.strategy, "block-per-row") << render_ranking(row_reduction(1024, 16384), *t, r);
    EXPECT_EQ(print_template(r.front().kernel.schedule), "[GRID,CTA];");
  }
}

// Re-read rows (candidates.cpp): three passes over rows of 4096 floats. A
// block per row caches its 16 KiB row in shared memory; 64 warps a SM, one
// row each, overflow half the L1, so warp-per-row reads every row 3 times
// from DRAM. Rows of 256 floats (64 KiB resident) hit the L1 instead.
TEST(Ranking, RereadRowsCostDramUnlessCachedOrInTheL1) {
  const GpuTarget& t = sm90_target();
  auto find = [](const std::vector<KernelCandidate>& all, const std::string& strategy, int64_t threads) {
    for (const KernelCandidate& k : all)
      if (k.strategy == strategy && k.threads_per_block == threads) return k;
    ADD_FAILURE() << strategy << " " << threads;
    return KernelCandidate{};
  };
  GroupDescription g = row_reduction(4096, 4096);
  g.passes = 3;
  const std::vector<KernelCandidate> all = enumerate_candidates(g, t);
  const KernelCandidate warp = find(all, "warp-per-row", 256);
  const KernelCandidate block = find(all, "block-per-row", 256);
  EXPECT_EQ(warp.bytes_moved, g.bytes_moved() + 2 * 4096 * 4096 * 4);
  EXPECT_EQ(block.bytes_moved, g.bytes_moved());
  EXPECT_EQ(block.shared_bytes_per_block, 8 * 4 + 4096 * 4);
  EXPECT_EQ(rank_candidates(g, t).front().kernel.strategy, "block-per-row");

  GroupDescription short_rows = row_reduction(65536, 256);
  short_rows.passes = 3;
  const KernelCandidate short_warp = find(enumerate_candidates(short_rows, t), "warp-per-row", 256);
  EXPECT_EQ(short_warp.bytes_moved, short_rows.bytes_moved());
  EXPECT_EQ(rank_candidates(short_rows, t).front().kernel.strategy, "warp-per-row");
}

TEST(Ranking, RowsShorterThanAWarpShareIt) {
  std::vector<RankedCandidate> r = rank_candidates(row_reduction(1 << 20, 8), sm90_target());
  ASSERT_FALSE(r.empty());
  EXPECT_EQ(r.front().kernel.strategy, "multi-row-per-warp") << render_ranking(row_reduction(1 << 20, 8), sm90_target(), r);
}

TEST(Ranking, IsSortedAndEveryTemplateValidates) {
  GroupDescription column;
  column.pattern = GroupPattern::ColumnReduction;
  column.rows = 4096;
  column.cols = 1024;
  GroupDescription ew;
  ew.rows = 1 << 22;
  ew.inputs = 2;
  ew.sfu_per_element = 1;
  GroupDescription tiny;
  tiny.rows = 10;
  for (const GroupDescription& g : {row_reduction(4096, 1000), column, ew, tiny}) {
    std::vector<RankedCandidate> r = rank_candidates(g, sm90_target());
    ASSERT_FALSE(r.empty()) << g.summary();
    for (size_t i = 0; i < r.size(); ++i) {
      EXPECT_EQ(schedule_problem(r[i].kernel.schedule.schedules.at(0), g.domain(), sm90_target().limits()), "");
      if (i) {
        EXPECT_LE(r[i - 1].estimate.cycles, r[i].estimate.cycles);
      }
    }
  }
}

TEST(Ranking, RendersATable) {
  const GroupDescription g = row_reduction(1024, 16384);
  std::vector<RankedCandidate> r = rank_candidates(g, sm90_target());
  const std::string text = render_ranking(g, sm90_target(), r, 2);
  EXPECT_EQ(text.substr(0, text.find('\n')),
            "row reduction 1024 x 16384, 4-byte elements, 1 input, 1 output on sm_90 (H100-SXM5-80GB): " +
                std::to_string(r.size()) + " candidates, best first");
  EXPECT_NE(text.find("rank   latency_us waves"), std::string::npos) << text;
  EXPECT_NE(text.find("block-per-row        [GRID,CTA];"), std::string::npos) << text;
  EXPECT_NE(text.find("... " + std::to_string(r.size() - 2) + " more"), std::string::npos) << text;
}

}  // namespace
}  // namespace stitch::schedule
