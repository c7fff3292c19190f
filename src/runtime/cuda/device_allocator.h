// Device memory for the CUDA runtime (docs/cuda-allocator-and-cublas.md, The
// caching allocator): cuMemAlloc and cuMemFree synchronise the device and cost
// tens of microseconds, so blocks a run releases are kept and handed to later
// requests of about the same size instead of going back to the driver.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string_view>
#include <unordered_map>

#include "runtime/cuda/driver.h"

namespace stitch::runtime::cuda {

class DeviceAllocator {
 public:
  // The caller has made the context current, and keeps it alive and current
  // on every thread that calls in, until the allocator is destroyed.
  explicit DeviceAllocator(const DriverApi& api);
  // Frees every block, cached or still handed out: the allocator owns all of
  // the device memory it obtained.
  ~DeviceAllocator();
  DeviceAllocator(const DeviceAllocator&) = delete;
  DeviceAllocator& operator=(const DeviceAllocator&) = delete;

  // A block of at least `bytes` bytes, 256-byte aligned. Zero bytes gives a
  // distinct minimal block, so every tensor has its own valid address and
  // release needs no special case. Out of memory, after the cache has been
  // returned to the driver and the request retried, is a UserError naming
  // the bytes and `what` asked for them (a tensor of a graph), when given.
  CUdeviceptr allocate(size_t bytes, std::string_view what = {});
  // Back to the cache, never to the driver. A pointer allocate did not return,
  // or one already released, is an InternalError.
  void release(CUdeviceptr ptr);
  // cuMemFree every cached (free) block.
  void empty_cache();

  // Byte counts are of blocks, that is of rounded sizes.
  struct Stats {
    int64_t driver_allocations = 0;  // successful cuMemAlloc calls
    int64_t reuses = 0;              // requests served from the cache
    int64_t bytes_in_use = 0;
    int64_t bytes_cached = 0;
    int64_t peak_bytes_in_use = 0;
  };
  Stats stats() const;

  // The block size a request of `bytes` gets: whole 512-byte units below
  // 1 MiB, whole 2 MiB units from there (exposed for tests).
  static size_t block_size(size_t bytes);

 private:
  void free_cached_blocks();  // mutex_ held

  const DriverApi& api_;
  mutable std::mutex mutex_;
  std::multimap<size_t, CUdeviceptr> cached_;         // free blocks by size, for best fit
  std::unordered_map<CUdeviceptr, size_t> in_use_;  // handed-out blocks and their sizes
  Stats stats_;
};

}  // namespace stitch::runtime::cuda
