// Tensor storage: small buffers from the aligned operator new, large ones
// mapped on their own, 2 MiB aligned and advised for transparent huge pages
// (docs/executable.md, Tensor storage).
#include <sys/mman.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <new>
#include <vector>

#include "options/options.h"
#include "stitch/tensor.h"

namespace stitch::detail {
namespace {

constexpr std::align_val_t kLineAlignment{64};
constexpr size_t kHugePageBytes = size_t{2} << 20;

size_t round_up_to_huge_page(size_t bytes) { return (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes; }

// Colours: successive large buffers start at different offsets within a
// 4 KiB page, 0 to 7 times 9 cache lines, so that the same element of two
// buffers of one shape (an elementwise kernel's operands and result) does not
// share the low 12 address bits: loads and stores 4 KiB apart stall on a
// false dependence, and on huge pages they also share cache sets.
constexpr size_t kColourStep = 9 * 64;
constexpr unsigned kColours = 8;
std::atomic<unsigned> next_colour{0};

// Freed mappings of at most kKeptMappingBytes are kept, up to
// kKeptTotalBytes in all, for the next allocation of the same size: what glibc
// does for the peers, whose malloc serves blocks up to its largest mmap
// threshold (32 MiB) from a heap it does not return to the kernel, so a
// framework's 8 MiB output costs no page fault on the next call. Larger ones
// are unmapped, as glibc unmaps blocks above the threshold.
constexpr size_t kKeptMappingBytes = size_t{32} << 20;
constexpr size_t kKeptTotalBytes = size_t{256} << 20;

struct KeptMapping {
  char* base;
  size_t bytes;
};

class KeptMappings {
 public:
  // A kept mapping of exactly `bytes`, or nullptr.
  char* take(size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = kept_.size(); i-- > 0;) {
      if (kept_[i].bytes != bytes) continue;
      char* base = kept_[i].base;
      kept_.erase(kept_.begin() + static_cast<std::ptrdiff_t>(i));
      total_ -= bytes;
      return base;
    }
    return nullptr;
  }
  // Keeps the mapping if it is small enough, dropping the oldest kept ones
  // over the total; unmaps whatever is not kept.
  void give(char* base, size_t bytes) {
    std::vector<KeptMapping> dropped;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (bytes > kKeptMappingBytes) {
        dropped.push_back({base, bytes});
      } else {
        kept_.push_back({base, bytes});
        total_ += bytes;
        while (total_ > kKeptTotalBytes) {
          dropped.push_back(kept_.front());
          total_ -= kept_.front().bytes;
          kept_.erase(kept_.begin());
        }
      }
    }
    for (const KeptMapping& m : dropped) munmap(m.base, m.bytes);
  }

 private:
  std::mutex mutex_;
  std::vector<KeptMapping> kept_;
  size_t total_ = 0;
};

KeptMappings& kept_mappings() {
  static KeptMappings* kept = new KeptMappings();  // never destroyed: tensors may outlive statics
  return *kept;
}

// The last storage this thread got from a new mapping, which the kernel zeroed.
thread_local const void* last_zeroed = nullptr;

char* map_huge_pages(size_t kept) {
  const size_t mapped = kept + kHugePageBytes;
  void* raw = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  char* base = static_cast<char*>(raw);
  char* aligned = base + (kHugePageBytes - reinterpret_cast<uintptr_t>(base) % kHugePageBytes) % kHugePageBytes;
  if (aligned > base) munmap(base, static_cast<size_t>(aligned - base));
  char* tail = aligned + kept;
  if (tail < base + mapped) munmap(tail, static_cast<size_t>(base + mapped - tail));
  // Advice only: a kernel without transparent huge pages maps small ones.
  if (huge_pages_enabled()) madvise(aligned, kept, MADV_HUGEPAGE);
  return aligned;
}

}  // namespace

bool huge_pages_enabled() {
  return environment_options().huge_pages;
}

// A large buffer is a private anonymous mapping of whole huge pages: the
// kernel hands it out zeroed, and one fault maps 2 MiB instead of 4 KiB,
// which is most of the cost of writing a fresh output (docs/benchmarks.md).
// The mapping asks for one huge page more than it keeps, and returns the
// unaligned head and the tail to the kernel at once.
void* allocate_storage(size_t bytes) {
  last_zeroed = nullptr;
  if (bytes < kLargeStorageBytes) return ::operator new(bytes, kLineAlignment);
  const size_t offset = kColourStep * (next_colour.fetch_add(1, std::memory_order_relaxed) % kColours);
  const size_t kept = round_up_to_huge_page(bytes + offset);
  if (char* reused = kept_mappings().take(kept)) return reused + offset;
  char* fresh = map_huge_pages(kept) + offset;
  last_zeroed = fresh;
  return fresh;
}

bool storage_is_zeroed(const void* p) { return p != nullptr && p == last_zeroed; }

void free_storage(void* p, size_t bytes) noexcept {
  if (!p) return;
  if (bytes < kLargeStorageBytes) {
    ::operator delete(p, kLineAlignment);
    return;
  }
  if (p == last_zeroed) last_zeroed = nullptr;
  // The mapping starts on the huge page boundary below the coloured start.
  const size_t offset = reinterpret_cast<uintptr_t>(p) % kHugePageBytes;
  kept_mappings().give(static_cast<char*>(p) - offset, round_up_to_huge_page(bytes + offset));
}

}  // namespace stitch::detail
