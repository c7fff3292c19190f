#include "fusion/node_index.h"

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace stitch {

namespace {

// Arrays of -1 that no index holds now, kept for the next one on this thread.
std::vector<std::unique_ptr<std::vector<int>>>& free_slots() {
  thread_local std::vector<std::unique_ptr<std::vector<int>>> pool;
  return pool;
}

// An array of at least `count` -1s, from the pool when it has one.
std::vector<int>* take_slots(size_t count) {
  auto& pool = free_slots();
  std::vector<int>* slots = nullptr;
  if (pool.empty()) {
    slots = new std::vector<int>();
  } else {
    slots = pool.back().release();
    pool.pop_back();
  }
  if (slots->size() < count) slots->resize(count, -1);
  return slots;
}

// Back to the pool; the caller has reset every slot it set to -1.
void give_back(std::vector<int>* slots) { free_slots().emplace_back(slots); }

}  // namespace

NodeIndex::NodeIndex(const std::vector<int>& nodes, size_t node_count)
    : nodes_(nodes), slots_(take_slots(node_count)) {
  for (size_t i = 0; i < nodes.size(); ++i) (*slots_)[static_cast<size_t>(nodes[i])] = static_cast<int>(i);
}

NodeIndex::~NodeIndex() {
  for (int n : nodes_) (*slots_)[static_cast<size_t>(n)] = -1;
  give_back(slots_);
}

IdSet::IdSet(size_t id_count) : slots_(take_slots(id_count)) {}

IdSet::~IdSet() {
  for (int id : inserted_) (*slots_)[static_cast<size_t>(id)] = -1;
  give_back(slots_);
}

bool IdSet::insert(int id) {
  int& slot = (*slots_)[static_cast<size_t>(id)];
  if (slot >= 0) return false;
  slot = static_cast<int>(inserted_.size());
  inserted_.push_back(id);
  return true;
}

std::vector<int> sorted_union(const std::vector<const std::vector<int>*>& lists) {
  int lo = -1, hi = -1;
  size_t total = 0;
  for (const std::vector<int>* list : lists) {
    for (int id : *list) {
      lo = lo < 0 ? id : std::min(lo, id);
      hi = std::max(hi, id);
    }
    total += list->size();
  }
  std::vector<int> out;
  if (total == 0) return out;
  out.reserve(total);
  // The bitmap spans at most 4 x total words below the largest id: a
  // constant every layer shares puts a small id into lists of late nodes,
  // and such ids below the span are sorted apart (they are few) and come first.
  const int64_t span_bits = 64 * 4 * static_cast<int64_t>(total);
  if (static_cast<int64_t>(hi) - lo >= span_bits) {
    const int floor = static_cast<int>(hi - span_bits + 1);
    for (const std::vector<int>* list : lists)
      for (int id : *list)
        if (id < floor) out.push_back(id);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    lo = floor;
  }
  const size_t words = static_cast<size_t>(hi - lo) / 64 + 1;
  thread_local std::vector<uint64_t> bits;
  bits.assign(words, 0);
  for (const std::vector<int>* list : lists) {
    for (int id : *list) {
      if (id < lo) continue;
      const size_t at = static_cast<size_t>(id - lo);
      bits[at / 64] |= uint64_t{1} << (at % 64);
    }
  }
  for (size_t w = 0; w < words; ++w) {
    for (uint64_t word = bits[w]; word != 0; word &= word - 1) {
      out.push_back(lo + static_cast<int>(w * 64) + std::countr_zero(word));
    }
  }
  return out;
}

}  // namespace stitch
