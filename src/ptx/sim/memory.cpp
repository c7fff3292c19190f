#include "ptx/sim/memory.h"

#include <fmt/format.h>

#include <algorithm>

namespace stitch::ptx::sim {

void GlobalMemory::add(uint64_t base, std::byte* data, uint64_t size, std::string name, bool read_only) {
  Allocation a{base, size, data, std::move(name), read_only};
  auto it = std::lower_bound(allocations_.begin(), allocations_.end(), base,
                             [](const Allocation& x, uint64_t b) { return x.base < b; });
  STITCH_ASSERT(it == allocations_.end() || it->base >= base + std::max<uint64_t>(size, 1),
                "global allocations overlap");
  STITCH_ASSERT(it == allocations_.begin() || std::prev(it)->base + std::prev(it)->size <= base,
                "global allocations overlap");
  allocations_.insert(it, std::move(a));
  last_ = 0;
}

std::byte* GlobalMemory::find(uint64_t addr, uint64_t size, bool write) const {
  if (allocations_.empty()) return nullptr;
  const Allocation* a = &allocations_[last_];
  if (addr < a->base || addr - a->base >= a->size) {
    auto it = std::upper_bound(allocations_.begin(), allocations_.end(), addr,
                               [](uint64_t x, const Allocation& b) { return x < b.base; });
    if (it == allocations_.begin()) return nullptr;
    --it;
    a = &*it;
    if (addr - a->base >= a->size) return nullptr;
    last_ = static_cast<size_t>(it - allocations_.begin());
  }
  if (addr - a->base + size > a->size) return nullptr;
  if (write && a->read_only) return nullptr;
  return a->data + (addr - a->base);
}

std::string GlobalMemory::describe(uint64_t addr, uint64_t size, bool write) const {
  if (addr == 0) return "a null pointer";
  const Allocation* below = nullptr;
  const Allocation* above = nullptr;
  for (const Allocation& a : allocations_) {
    if (a.base <= addr) below = &a;
    if (a.base > addr && above == nullptr) above = &a;
  }
  if (below != nullptr && addr - below->base < below->size) {
    if (write && below->read_only) return fmt::format("read-only {}", below->name);
    return fmt::format("byte {} of {} ({} bytes), running {} bytes past its end", addr - below->base, below->name,
                       below->size, addr - below->base + size - below->size);
  }
  std::string where;
  if (below != nullptr) {
    where = fmt::format("{} bytes past the end of {} ({} bytes)", addr - below->base - below->size, below->name,
                        below->size);
  }
  if (above != nullptr) {
    if (!where.empty()) where += ", ";
    where += fmt::format("{} bytes before {}", above->base - addr, above->name);
  }
  return where.empty() ? "no buffer" : where;
}

uint32_t ThreadStack::push(uint32_t bytes) {
  const uint32_t base = top_;
  top_ += (bytes + 15) / 16 * 16;
  for (auto& lane : lanes_) {
    if (lane.size() < top_) lane.resize(std::max<size_t>(top_, lane.size() * 2));
    std::fill(lane.begin() + base, lane.begin() + top_, std::byte{0});
  }
  return base;
}

void ThreadStack::pop(uint32_t base) {
  STITCH_ASSERT(base <= top_, "thread stack popped past its top");
  top_ = base;
}

}  // namespace stitch::ptx::sim
