// Tensor storage: small buffers from the aligned operator new, large ones
// mapped on their own, 2 MiB aligned and advised for transparent huge pages
// (docs/executable.md, Tensor storage).
#include <sys/mman.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <string>

#include <fmt/format.h>

#include "stitch/error.h"
#include "stitch/tensor.h"

namespace stitch::detail {
namespace {

constexpr std::align_val_t kLineAlignment{64};
constexpr size_t kHugePageBytes = size_t{2} << 20;

size_t round_up_to_huge_page(size_t bytes) { return (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes; }

bool read_huge_pages_setting() {
  const char* env = std::getenv("STITCH_HUGE_PAGES");
  if (!env || !*env) return true;
  const std::string value = env;
  if (value != "0" && value != "1") throw UserError(fmt::format("STITCH_HUGE_PAGES={}: not 0 or 1", env));
  return value == "1";
}

// Colours: successive large buffers start at different offsets within a
// 4 KiB page, 0 to 7 times 9 cache lines, so that the same element of two
// buffers of one shape (an elementwise kernel's operands and result) does not
// share the low 12 address bits: loads and stores 4 KiB apart stall on a
// false dependence, and on huge pages they also share cache sets.
constexpr size_t kColourStep = 9 * 64;
constexpr unsigned kColours = 8;
std::atomic<unsigned> next_colour{0};

}  // namespace

bool huge_pages_enabled() {
  static const bool enabled = read_huge_pages_setting();
  return enabled;
}

// A large buffer is a private anonymous mapping of whole huge pages: the
// kernel hands it out zeroed, and one fault maps 2 MiB instead of 4 KiB,
// which is most of the cost of writing a fresh output (docs/benchmarks.md).
// The mapping asks for one huge page more than it keeps, and returns the
// unaligned head and the tail to the kernel at once.
void* allocate_storage(size_t bytes) {
  if (bytes < kLargeStorageBytes) return ::operator new(bytes, kLineAlignment);
  const bool advise = huge_pages_enabled();
  const size_t offset = kColourStep * (next_colour.fetch_add(1, std::memory_order_relaxed) % kColours);
  const size_t kept = round_up_to_huge_page(bytes + offset);
  const size_t mapped = kept + kHugePageBytes;
  void* raw = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  char* base = static_cast<char*>(raw);
  char* aligned = base + (kHugePageBytes - reinterpret_cast<uintptr_t>(base) % kHugePageBytes) % kHugePageBytes;
  if (aligned > base) munmap(base, static_cast<size_t>(aligned - base));
  char* tail = aligned + kept;
  if (tail < base + mapped) munmap(tail, static_cast<size_t>(base + mapped - tail));
  // Advice only: a kernel without transparent huge pages maps small ones.
  if (advise) madvise(aligned, kept, MADV_HUGEPAGE);
  return aligned + offset;
}

void free_storage(void* p, size_t bytes) noexcept {
  if (!p) return;
  if (bytes < kLargeStorageBytes) {
    ::operator delete(p, kLineAlignment);
    return;
  }
  // The mapping starts on the huge page boundary below the coloured start.
  const size_t offset = reinterpret_cast<uintptr_t>(p) % kHugePageBytes;
  munmap(static_cast<char*>(p) - offset, round_up_to_huge_page(bytes + offset));
}

}  // namespace stitch::detail
