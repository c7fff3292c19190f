#include "runtime/cuda/device_allocator.h"

#include <algorithm>
#include <cstdint>

#include <fmt/format.h>

#include "stitch/error.h"

namespace stitch::runtime::cuda {

namespace {

constexpr size_t kSmallUnit = 512;
constexpr size_t kLargeThreshold = size_t{1} << 20;
constexpr size_t kLargeUnit = size_t{2} << 20;

size_t round_up(size_t bytes, size_t unit) { return (bytes + unit - 1) / unit * unit; }

}  // namespace

DeviceAllocator::DeviceAllocator(const DriverApi& api) : api_(api) {}

DeviceAllocator::~DeviceAllocator() {
  std::lock_guard<std::mutex> lock(mutex_);
  // A destructor cannot throw, and a failing free at teardown (the context
  // already gone) leaves nothing to recover, so results are not checked here.
  for (const auto& [size, ptr] : cached_) api_.cuMemFree(ptr);
  for (const auto& [ptr, size] : in_use_) api_.cuMemFree(ptr);
}

size_t DeviceAllocator::block_size(size_t bytes) {
  if (bytes == 0) return kSmallUnit;
  // Coarse units for large blocks let a slightly larger tensor of the next
  // run reuse the block of the last one.
  return bytes < kLargeThreshold ? round_up(bytes, kSmallUnit) : round_up(bytes, kLargeUnit);
}

// Every kernel, copy and library call of Stitch is enqueued on one stream, so
// a block released here is only reused by work enqueued after the work that
// last touched it: stream order makes the reuse safe without events.
CUdeviceptr DeviceAllocator::allocate(size_t bytes, std::string_view what) {
  const size_t size = block_size(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  // Best fit, but at most twice the request: a huge cached block is not
  // pinned by a tiny tensor while large requests go to the driver.
  auto fit = cached_.lower_bound(size);
  if (fit != cached_.end() && fit->first <= 2 * size) {
    const auto [block, ptr] = *fit;
    cached_.erase(fit);
    in_use_.emplace(ptr, block);
    stats_.reuses++;
    stats_.bytes_cached -= static_cast<int64_t>(block);
    stats_.bytes_in_use += static_cast<int64_t>(block);
    stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
    return ptr;
  }
  CUdeviceptr ptr = 0;
  CUresult result = api_.cuMemAlloc(&ptr, size);
  if (result == CUDA_ERROR_OUT_OF_MEMORY && !cached_.empty()) {
    free_cached_blocks();
    result = api_.cuMemAlloc(&ptr, size);
  }
  if (result == CUDA_ERROR_OUT_OF_MEMORY) {
    size_t free_bytes = 0, total_bytes = 0;
    const bool known = api_.cuMemGetInfo(&free_bytes, &total_bytes) == CUDA_SUCCESS;
    throw UserError(fmt::format("out of GPU memory: {} bytes requested{}, {} in use, {} free per cuMemGetInfo", bytes,
                                what.empty() ? std::string() : fmt::format(" for {}", what), stats_.bytes_in_use,
                                known ? fmt::format("{}", free_bytes) : std::string("unknown")));
  }
  check(api_, result, "cuMemAlloc");
  in_use_.emplace(ptr, size);
  stats_.driver_allocations++;
  stats_.bytes_in_use += static_cast<int64_t>(size);
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  return ptr;
}

void DeviceAllocator::release(CUdeviceptr ptr) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = in_use_.find(ptr);
  if (it == in_use_.end()) {
    fail_internal(fmt::format("DeviceAllocator::release of 0x{:x}, which is not a block it handed out", ptr), __FILE__,
                  __LINE__);
  }
  const size_t size = it->second;
  in_use_.erase(it);
  cached_.emplace(size, ptr);
  stats_.bytes_in_use -= static_cast<int64_t>(size);
  stats_.bytes_cached += static_cast<int64_t>(size);
}

void DeviceAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  free_cached_blocks();
}

void DeviceAllocator::free_cached_blocks() {
  while (!cached_.empty()) {
    auto it = cached_.begin();
    check(api_, api_.cuMemFree(it->second), "cuMemFree");
    stats_.bytes_cached -= static_cast<int64_t>(it->first);
    cached_.erase(it);
  }
}

DeviceAllocator::Stats DeviceAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace stitch::runtime::cuda
