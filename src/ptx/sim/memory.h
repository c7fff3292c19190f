// The SIMT interpreter's memories (docs/ptx-interpreter.md, Memory): global
// allocations with bounds, a CTA's shared memory with the shadow state that
// finds races the barrier structure makes detectable, and per-thread stacks
// for .local and .func .param memory.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ptx/sim/program.h"

namespace stitch::ptx::sim {

// Global memory: non-overlapping allocations, each at a fixed address, found
// by binary search behind a one-entry cache (consecutive accesses of a warp
// almost always hit the same buffer).
class GlobalMemory {
 public:
  // `data` must stay valid for the memory's lifetime; `size` may be 0.
  void add(uint64_t base, std::byte* data, uint64_t size, std::string name, bool read_only);
  // The bytes at [addr, addr + size) when they lie inside one allocation; null otherwise.
  std::byte* find(uint64_t addr, uint64_t size, bool write) const;
  // find() for the allocation the previous access hit; null on a miss.
  std::byte* find_cached(uint64_t addr, uint64_t size, bool write) const {
    if (allocations_.empty()) return nullptr;
    const Allocation& a = allocations_[last_];
    const uint64_t at = addr - a.base;
    if (at >= a.size || a.size - at < size || (write && a.read_only)) return nullptr;
    return a.data + at;
  }
  // Says where `addr` lies relative to the allocations, for error messages.
  std::string describe(uint64_t addr, uint64_t size, bool write) const;

 private:
  struct Allocation {
    uint64_t base = 0;
    uint64_t size = 0;
    std::byte* data = nullptr;
    std::string name;
    bool read_only = false;
  };
  std::vector<Allocation> allocations_;  // sorted by base
  mutable size_t last_ = 0;
};

// Per byte of shared memory: who wrote and who read it in which barrier
// interval. A write and another warp's access to the same byte in the same
// interval race on real hardware whatever the warps' order (bar.sync is the
// only ordering between warps); accesses by lanes of one warp are not
// compared, as warp-synchronous code orders them with shfl/__syncwarp.
struct SharedShadow {
  static constexpr uint16_t kSeveral = 0xffff;
  struct Byte {
    uint32_t write_interval = 0;
    uint32_t read_interval = 0;
    uint16_t writer = 0;
    uint16_t reader = 0;  // kSeveral: more than one warp read it
  };
  std::vector<Byte> bytes;
};

// Per-thread memory made of frames (one per active function call): .local
// variables, or the .param variables of .func frames. Addresses in the state
// space are per thread and start at 0; each lane has its own bytes.
class ThreadStack {
 public:
  // Reserves `bytes` (rounded up to 16) for a new frame; returns its base address.
  uint32_t push(uint32_t bytes);
  void pop(uint32_t base);
  std::byte* find(unsigned lane, uint64_t addr, uint64_t size) {
    if (addr + size > top_ || addr + size < addr) return nullptr;
    return lanes_[lane].data() + addr;
  }
  uint32_t top() const { return top_; }

 private:
  uint32_t top_ = 0;
  std::array<std::vector<std::byte>, kWarpSize> lanes_;
};

}  // namespace stitch::ptx::sim
