// What the lazy trace's two files share (trace.cpp: recording and flushing;
// trace_fused.cpp: running a partition as fused kernels): their helpers, the
// region index of a partition's arrays, and the scratch a flush keeps. Private
// to src/lazy.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iostream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "lazy/trace.h"
#include "options/options.h"
#include "stitch/interpreter.h"

namespace stitch::lazy {

namespace trace_detail {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// STITCH_DUMP=trace, partitions, fused (or lazy, or all) prints the lazy stages.
inline bool dump_wanted(std::string_view stage) {
  return environment_options().dumps(stage);
}

inline void dump(std::string_view stage, const std::string& text) { std::cerr << "// STITCH_DUMP " << stage << "\n" << text; }

// The value of a fused kernel's reduction belongs to the one reduction call among calls [begin, end).
inline void set_results(std::vector<TraceCall>& calls, int begin, int end, const Tensor& result) {
  for (int c = begin; c < end; ++c) {
    TraceCall& call = calls[static_cast<size_t>(c)];
    if (call.result) {
      call.result->value = result;
      call.result->ready = true;
    }
  }
}

// Plan-cache keys are raw words, not text: a flush builds one per partition,
// and formatting numbers was most of a small partition's analysis time.
constexpr int64_t kFutureTag = int64_t{1} << 40;
constexpr int64_t kOverlapTag = int64_t{1} << 42;
constexpr size_t kMaxPlans = 4096;

// A map from pointers to ints, open addressing in two flat vectors: a flush
// queries it for every argument of every call, and node-based maps spent
// most of that in the allocator.
class PointerIndex {
 public:
  // The value at `key`, or -1.
  int find(const void* key) const {
    if (keys_.empty()) return -1;
    for (size_t i = slot(key);; i = (i + 1) & (keys_.size() - 1)) {
      if (keys_[i] == key) return values_[i];
      if (keys_[i] == nullptr) return -1;
    }
  }
  void clear() {
    std::fill(keys_.begin(), keys_.end(), nullptr);
    size_ = 0;
  }
  // Sets `key` (not null) to `value`.
  void set(const void* key, int value) {
    if (2 * (size_ + 1) > keys_.size()) grow();
    size_t i = slot(key);
    while (keys_[i] != nullptr && keys_[i] != key) i = (i + 1) & (keys_.size() - 1);
    if (keys_[i] == nullptr) ++size_;
    keys_[i] = key;
    values_[i] = value;
  }

 private:
  size_t slot(const void* key) const {
    return static_cast<size_t>((reinterpret_cast<uintptr_t>(key) >> 4) * 0x9E3779B97F4A7C15ULL >> 20) & (keys_.size() - 1);
  }
  void grow() {
    std::vector<const void*> keys = std::move(keys_);
    std::vector<int> values = std::move(values_);
    keys_.assign(std::max<size_t>(64, 2 * keys.size()), nullptr);
    values_.assign(keys_.size(), -1);
    size_ = 0;
    for (size_t i = 0; i < keys.size(); ++i) {
      if (keys[i] != nullptr) set(keys[i], values[i]);
    }
  }
  std::vector<const void*> keys_;
  std::vector<int> values_;
  size_t size_ = 0;
};

// Regions grouped by storage: only regions of one storage can overlap, so a
// query looks at those alone (a long partition touches hundreds of arrays).
// Each storage's regions are a chain through `next_`, from `head_`.
class RegionsByStorage {
 public:
  // Empties the set, keeping its buffers.
  void clear() {
    regions_.clear();
    next_.clear();
    head_.clear();
    storage_of_.clear();
    storage_count_ = 0;
  }
  // Adds `a` unless the same region is there; returns its index.
  int add(const ArrayState* a) {
    const int head = head_.find(a->storage.get());
    for (int r = head; r >= 0; r = next_[static_cast<size_t>(r)]) {
      const ArrayState* b = regions_[static_cast<size_t>(r)];
      if (b == a || b->same_region(*a)) return r;
    }
    const int r = static_cast<int>(regions_.size());
    regions_.push_back(a);
    next_.push_back(head);
    head_.set(a->storage.get(), r);
    return r;
  }
  // The storage of region `r`, as an index (0, 1, ... in first-use order).
  int storage_of(int r) const { return storage_of_[static_cast<size_t>(r)]; }
  int storage_count() const { return storage_count_; }
  // Numbers storages in first-use order; call after the last add().
  void number_storages() {
    PointerIndex& index = numbering_;
    index.clear();
    storage_of_.assign(regions_.size(), -1);
    for (size_t r = 0; r < regions_.size(); ++r) {
      const void* storage = regions_[r]->storage.get();
      int st = index.find(storage);
      if (st < 0) {
        st = storage_count_++;
        index.set(storage, st);
      }
      storage_of_[r] = st;
    }
  }
  // Calls f(r) for each region r that overlaps `a`.
  template <class F>
  void for_overlapping(const ArrayState* a, F f) const {
    for (int r = head_.find(a->storage.get()); r >= 0; r = next_[static_cast<size_t>(r)]) {
      if (regions_[static_cast<size_t>(r)]->overlaps(*a)) f(r);
    }
  }
  const std::vector<const ArrayState*>& regions() const { return regions_; }
  // Pairs of distinct regions that overlap, (lower index, higher), sorted.
  std::vector<std::pair<int, int>> overlapping() const {
    std::vector<std::pair<int, int>> pairs;
    for (size_t x = 0; x < regions_.size(); ++x) {
      for (int y = next_[x]; y >= 0; y = next_[static_cast<size_t>(y)]) {
        if (regions_[x]->overlaps(*regions_[static_cast<size_t>(y)])) {
          pairs.emplace_back(std::min(static_cast<int>(x), y), std::max(static_cast<int>(x), y));
        }
      }
    }
    std::sort(pairs.begin(), pairs.end());
    return pairs;
  }

 private:
  std::vector<const ArrayState*> regions_;
  std::vector<int> next_;  // the storage's region added before, or -1
  PointerIndex head_;      // storage -> its last region added
  PointerIndex numbering_;  // number_storages()'s scratch
  std::vector<int> storage_of_;
  int storage_count_ = 0;
};

// A word of a structural key, zigzag then 7 bits a byte (most words are small
// numbers, and a key is compared whole against a stored one, cold).
inline void append_word(std::string& key, int64_t word) {
  uint64_t v = (static_cast<uint64_t>(word) << 1) ^ static_cast<uint64_t>(word >> 63);
  while (v >= 0x80) {
    key.push_back(static_cast<char>(0x80 | (v & 0x7f)));
    v >>= 7;
  }
  key.push_back(static_cast<char>(v));
}

inline bool writes(ArrayAccess a) { return a == ArrayAccess::Write || a == ArrayAccess::ReadWrite; }
inline bool reads(ArrayAccess a) { return a == ArrayAccess::Read || a == ArrayAccess::ReadWrite; }

}  // namespace trace_detail

// A fused segment's kernel arguments, gathered before any segment runs.
struct Trace::PreparedSegment {
  bool ready = false;
  bool check_indices = false;
  std::vector<KernelArg> args;
  // Arguments whose memory is taken just before the kernel runs: storage
  // not allocated yet (zeros()), allocated then as memory management, not
  // analysis; and on a device every array, made current there.
  std::vector<std::pair<size_t, const ArrayState*>> late;
  void clear() {
    ready = false;
    check_indices = false;
    args.clear();
    late.clear();
  }
};

// Buffers a flush fills and empties, kept from one flush to the next: a flush
// allocating them afresh sometimes paid for glibc consolidating the small
// blocks freed since (a third of jacobi_1d's programs spent 0.25 ms instead
// of 0.07 in analysis).
struct Trace::Scratch {
  // run_closure
  std::vector<char> needed;
  trace_detail::RegionsByStorage later;
  std::vector<uint8_t> later_access;
  // run_fused
  trace_detail::RegionsByStorage storages;
  std::string signature;
  std::string detail;
  std::vector<int> arg_region;
  std::vector<size_t> first_arg;
  std::vector<const std::shared_ptr<ArrayState>*> handles;
  std::vector<char> outlives;
  std::vector<long> handle_count;
  std::vector<size_t> last_use;
  std::vector<PreparedSegment> prepared;
  std::vector<int64_t> proof_key;
  std::unordered_map<const ScalarState*, int> result_of;  // the call whose result each value is
  bool reads_results = false;                             // whether a call reads an earlier one's
  std::vector<std::pair<int, int>> overlapping;           // distinct regions of one storage that overlap
};

}  // namespace stitch::lazy
