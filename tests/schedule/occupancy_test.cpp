// CUDA's occupancy calculation on Hopper (docs/schedule.md, Latency
// evaluator): cases hand-computed from cuda_occupancy.h's rules, which the
// GPU model (docs/gpu-model.md) and the latency evaluator share.
#include <gtest/gtest.h>

#include "schedule/latency.h"
#include "schedule/target.h"

namespace stitch::schedule {
namespace {

void expect_occupancy(const Occupancy& o, int64_t blocks, OccupancyLimit limit, int64_t warps) {
  EXPECT_EQ(o.blocks_per_sm, blocks);
  EXPECT_EQ(o.limit, limit);
  EXPECT_DOUBLE_EQ(o.fraction, static_cast<double>(warps) / 64.0);
}

Occupancy h100(int64_t threads, int64_t registers, int64_t shared) {
  return occupancy(sm90_target(), threads, registers, shared);
}

TEST(HopperOccupancy, SmallRegisterCountIsThreadLimited) {
  expect_occupancy(h100(256, 32, 0), 8, OccupancyLimit::Threads, 64);
}

TEST(HopperOccupancy, ManyRegistersLimitBlocks) {
  // 128 x 32 = 4096 a warp; a sub-partition's 16384 hold 4 warps, the SM 16: 2 blocks of 8 warps.
  expect_occupancy(h100(256, 128, 0), 2, OccupancyLimit::Registers, 16);
  // 64 x 32 x 32 warps = 65536: one block of 1024 threads, though threads allow two.
  expect_occupancy(h100(1024, 64, 0), 1, OccupancyLimit::Registers, 32);
}

TEST(HopperOccupancy, SmallBlocksHitTheBlockLimitAndTiesNameThreads) {
  expect_occupancy(h100(64, 32, 0), 32, OccupancyLimit::Threads, 64);
  // 33 threads take 2 warp slots; 100 take 4.
  expect_occupancy(h100(33, 16, 0), 32, OccupancyLimit::Threads, 64);
  expect_occupancy(h100(100, 16, 0), 16, OccupancyLimit::Threads, 64);
  expect_occupancy(h100(32, 16, 0), 32, OccupancyLimit::Blocks, 32);
}

TEST(HopperOccupancy, SharedMemoryLimitsBlocksAndRoundsUpTo128Bytes) {
  // 102400 + 1024 reserved = 103424 a block; 233472 / 103424 = 2.26.
  expect_occupancy(h100(128, 32, 100 * 1024), 2, OccupancyLimit::SharedMemory, 8);
  // 7000 + 1024 = 8024 rounds to 8064: 233472 / 8064 = 28 (29 unrounded).
  expect_occupancy(h100(64, 32, 7000), 28, OccupancyLimit::SharedMemory, 56);
}

TEST(HopperOccupancy, RegistersRoundUpToEightPerThreadAndAllocatePerSubPartition) {
  // 33 registers allocate as 40: 1280 a warp, 12 warps a sub-partition, 48 an SM: 6 blocks (7 unrounded).
  expect_occupancy(h100(256, 33, 0), 6, OccupancyLimit::Registers, 48);
  // 40 registers, 3 warps a block: 12 warps in each sub-partition, 16 blocks
  // (the whole file, 65536 / 1280 = 51 warps, would give 17).
  expect_occupancy(h100(96, 40, 0), 16, OccupancyLimit::Registers, 48);
}

TEST(HopperOccupancy, WhatDoesNotFitIsUnlaunchable) {
  expect_occupancy(h100(2048, 32, 0), 0, OccupancyLimit::Unlaunchable, 0);
  // 72 registers x 32 lanes x 32 warps = 73728 > 65536 a block.
  expect_occupancy(h100(1024, 72, 0), 0, OccupancyLimit::Unlaunchable, 0);
  expect_occupancy(h100(32, 256, 0), 0, OccupancyLimit::Unlaunchable, 0);
  expect_occupancy(h100(128, 32, 232448 + 1), 0, OccupancyLimit::Unlaunchable, 0);
  expect_occupancy(h100(128, 32, 232448), 1, OccupancyLimit::SharedMemory, 4);
}

}  // namespace
}  // namespace stitch::schedule
