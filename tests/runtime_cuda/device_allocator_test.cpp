// The caching device allocator (docs/cuda-allocator-and-cublas.md, The
// caching allocator), run on the fake driver: which requests reach cuMemAlloc,
// which are served from the cache, and what running out of memory does.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fake_driver_fixture.h"
#include "runtime/cuda/device_allocator.h"
#include "stitch/error.h"

namespace stitch::runtime::cuda {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

using CachingAllocator = FakeDriverTest;

TEST(DeviceAllocatorBlockSize, SmallInHalfKilobytesLargeInTwoMegabytes) {
  EXPECT_EQ(DeviceAllocator::block_size(0), 512u);
  EXPECT_EQ(DeviceAllocator::block_size(1), 512u);
  EXPECT_EQ(DeviceAllocator::block_size(512), 512u);
  EXPECT_EQ(DeviceAllocator::block_size(513), 1024u);
  EXPECT_EQ(DeviceAllocator::block_size(kMiB - 1), kMiB);
  EXPECT_EQ(DeviceAllocator::block_size(kMiB), 2 * kMiB);
  EXPECT_EQ(DeviceAllocator::block_size(2 * kMiB + 1), 4 * kMiB);
}

TEST_F(CachingAllocator, AReleasedBlockIsReusedWithoutTheDriver) {
  DeviceAllocator allocator(*api_);
  const CUdeviceptr first = allocator.allocate(1000);
  EXPECT_NE(first, 0u);
  allocator.release(first);
  EXPECT_EQ(fake_.stitch_fake_cuda_live_allocations(), 1);  // cached, not freed
  const CUdeviceptr second = allocator.allocate(900);
  EXPECT_EQ(second, first);
  const DeviceAllocator::Stats s = allocator.stats();
  EXPECT_EQ(s.driver_allocations, 1);
  EXPECT_EQ(s.reuses, 1);
  EXPECT_EQ(s.bytes_in_use, 1024);
  EXPECT_EQ(s.bytes_cached, 0);
  EXPECT_EQ(fake_.stitch_fake_cuda_alloc_calls(), 1);
  EXPECT_EQ(fake_.stitch_fake_cuda_free_calls(), 0);
  allocator.release(second);
}

TEST_F(CachingAllocator, BestFitWithinTwiceTheRequest) {
  DeviceAllocator allocator(*api_);
  const CUdeviceptr big = allocator.allocate(4096);
  const CUdeviceptr middle = allocator.allocate(2048);
  allocator.release(big);
  allocator.release(middle);
  // 1500 rounds to 1536: the 2048 block fits within 2x, the 4096 one would too
  // large a share of it go unused.
  EXPECT_EQ(allocator.allocate(1500), middle);
  // 1024 may take neither (4096 > 2 x 1024): a new block.
  const CUdeviceptr small = allocator.allocate(1024);
  EXPECT_NE(small, big);
  EXPECT_EQ(allocator.stats().driver_allocations, 3);
  EXPECT_EQ(allocator.allocate(2100), big);
}

TEST_F(CachingAllocator, ATinyRequestDoesNotPinAHugeBlock) {
  DeviceAllocator allocator(*api_);
  const CUdeviceptr huge = allocator.allocate(8 * kMiB);
  allocator.release(huge);
  const CUdeviceptr tiny = allocator.allocate(64);
  EXPECT_NE(tiny, huge);
  EXPECT_EQ(allocator.stats().bytes_cached, static_cast<int64_t>(8 * kMiB));
  // A large request slightly bigger than the last one's size reuses its block.
  EXPECT_EQ(allocator.allocate(7 * kMiB + 3), huge);
}

TEST_F(CachingAllocator, ZeroBytesGetDistinctValidBlocks) {
  DeviceAllocator allocator(*api_);
  const CUdeviceptr a = allocator.allocate(0);
  const CUdeviceptr b = allocator.allocate(0);
  EXPECT_NE(a, 0u);
  EXPECT_NE(b, 0u);
  EXPECT_NE(a, b);
  allocator.release(a);
  allocator.release(b);
}

TEST_F(CachingAllocator, EmptyCacheFreesOnlyCachedBlocks) {
  DeviceAllocator allocator(*api_);
  const CUdeviceptr kept = allocator.allocate(3000);
  allocator.release(allocator.allocate(5000));
  allocator.empty_cache();
  EXPECT_EQ(fake_.stitch_fake_cuda_live_allocations(), 1);
  EXPECT_EQ(fake_.stitch_fake_cuda_free_calls(), 1);
  const DeviceAllocator::Stats s = allocator.stats();
  EXPECT_EQ(s.bytes_cached, 0);
  EXPECT_EQ(s.bytes_in_use, 3072);
  allocator.release(kept);
}

TEST_F(CachingAllocator, TheDestructorFreesEveryBlock) {
  {
    DeviceAllocator allocator(*api_);
    allocator.allocate(100);
    allocator.release(allocator.allocate(3 * kMiB));
    EXPECT_EQ(fake_.stitch_fake_cuda_live_allocations(), 2);
  }
  EXPECT_EQ(fake_.stitch_fake_cuda_live_allocations(), 0);
}

TEST_F(CachingAllocator, PeakBytesInUseIsKept) {
  DeviceAllocator allocator(*api_);
  const CUdeviceptr a = allocator.allocate(kMiB);
  const CUdeviceptr b = allocator.allocate(kMiB);
  allocator.release(a);
  allocator.release(b);
  const DeviceAllocator::Stats s = allocator.stats();
  EXPECT_EQ(s.bytes_in_use, 0);
  EXPECT_EQ(s.peak_bytes_in_use, static_cast<int64_t>(4 * kMiB));
  EXPECT_EQ(s.bytes_cached, static_cast<int64_t>(4 * kMiB));
}

TEST_F(CachingAllocator, OutOfMemoryReturnsTheCacheAndRetries) {
  fake_.stitch_fake_cuda_set_total_memory(4 * kMiB);
  DeviceAllocator allocator(*api_);
  allocator.release(allocator.allocate(3 * kMiB));  // a 4 MiB block, all of the device
  // 600 KiB may not take the 4 MiB block; the driver is full until the cache goes back.
  const CUdeviceptr ptr = allocator.allocate(600 * 1024);
  EXPECT_NE(ptr, 0u);
  EXPECT_EQ(fake_.stitch_fake_cuda_free_calls(), 1);
  const DeviceAllocator::Stats s = allocator.stats();
  EXPECT_EQ(s.driver_allocations, 2);
  EXPECT_EQ(s.bytes_cached, 0);
  allocator.release(ptr);
}

TEST_F(CachingAllocator, OutOfMemoryAfterTheRetryIsAUserError) {
  DeviceAllocator allocator(*api_);
  const CUdeviceptr held = allocator.allocate(2000);
  allocator.release(allocator.allocate(kMiB));
  fake_.stitch_fake_cuda_fail_next_allocations(2);
  try {
    allocator.allocate(1000);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("out of GPU memory: 1000 bytes requested, 2048 in use"), std::string::npos) << message;
    EXPECT_NE(message.find("free per cuMemGetInfo"), std::string::npos) << message;
  }
  EXPECT_EQ(allocator.stats().bytes_cached, 0);  // given back for the retry
  // Nothing cached: a single failure is not retried.
  fake_.stitch_fake_cuda_fail_next_allocations(1);
  EXPECT_THROW(allocator.allocate(1000), UserError);
  EXPECT_NE(allocator.allocate(1000), 0u);
  allocator.release(held);
}

TEST_F(CachingAllocator, ReleasingAPointerItDidNotHandOutIsAnInternalError) {
  DeviceAllocator allocator(*api_);
  EXPECT_THROW(allocator.release(0x1234), InternalError);
  const CUdeviceptr ptr = allocator.allocate(10);
  allocator.release(ptr);
  EXPECT_THROW(allocator.release(ptr), InternalError);  // twice
}

TEST_F(CachingAllocator, ThreadsShareOneCache) {
  DeviceAllocator allocator(*api_);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&allocator, t] {
      std::mt19937 random(static_cast<unsigned>(t));
      std::uniform_int_distribution<size_t> size(1, 64 * 1024);
      std::vector<CUdeviceptr> held;
      for (int i = 0; i < 500; ++i) {
        held.push_back(allocator.allocate(size(random)));
        if (held.size() > 3) {
          allocator.release(held.front());
          held.erase(held.begin());
        }
      }
      for (CUdeviceptr p : held) allocator.release(p);
    });
  }
  for (std::thread& t : threads) t.join();
  const DeviceAllocator::Stats s = allocator.stats();
  EXPECT_EQ(s.bytes_in_use, 0);
  EXPECT_EQ(s.driver_allocations + s.reuses, 4 * 500);
  EXPECT_EQ(fake_.stitch_fake_cuda_live_allocations(), s.driver_allocations);
  EXPECT_LT(s.driver_allocations, 4 * 500);
}

}  // namespace
}  // namespace stitch::runtime::cuda
