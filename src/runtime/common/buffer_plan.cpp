#include "runtime/common/buffer_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <set>

#include "stitch/error.h"

namespace stitch::runtime {

namespace {

// The entry of `value` in `entries`, sorted by value; nullptr when absent.
template <class Entries, class ValueOf>
auto find_sorted(Entries& entries, int value, ValueOf value_of) -> decltype(&entries[0]) {
  auto it = std::lower_bound(entries.begin(), entries.end(), value,
                             [&](const auto& e, int v) { return value_of(e) < v; });
  return it != entries.end() && value_of(*it) == value ? &*it : nullptr;
}

int value_of(const Lifetime& l) { return l.value; }
int planned_value_of(const PlannedValue& p) { return p.lifetime.value; }

}  // namespace

const Lifetime* Lifetimes::find(int value) const {
  return find_sorted(values, value, value_of);
}

const PlannedValue* BufferPlan::find(int value) const {
  return find_sorted(values, value, planned_value_of);
}

Lifetimes plan_lifetimes(const std::vector<StepValues>& steps, const std::set<int>& external) {
  const int step_count = static_cast<int>(steps.size());
  Lifetimes out;
  out.written_at.resize(step_count);
  out.released_after.resize(step_count);
  std::map<int, Lifetime> by_value;
  for (int i = 0; i < step_count; ++i) {
    for (int v : steps[i].writes) {
      if (external.count(v)) continue;
      auto [it, fresh] = by_value.emplace(v, Lifetime{v, i, i});
      STITCH_ASSERT(fresh, fmt::format("buffer plan: value {} is written by steps {} and {}", v,
                                       it->second.first_step, i));
      out.written_at[i].push_back(v);
    }
  }
  for (int i = 0; i < step_count; ++i) {
    for (int v : steps[i].reads) {
      auto it = by_value.find(v);
      if (it == by_value.end()) continue;
      STITCH_ASSERT(i >= it->second.first_step,
                    fmt::format("buffer plan: step {} reads value {} before step {} writes it", i, v,
                                it->second.first_step));
      it->second.last_step = std::max(it->second.last_step, i);
    }
  }
  for (const auto& [v, lifetime] : by_value) {
    out.values.push_back(lifetime);
    out.released_after[lifetime.last_step].push_back(v);
  }
  return out;
}

BufferPlan plan_buffers(const Lifetimes& lifetimes, const std::map<int, int64_t>& bytes,
                        const std::vector<int64_t>& pool_bytes, const std::map<int, int>& in_place) {
  BufferPlan plan;
  plan.pool_bytes = pool_bytes;
  for (const Lifetime& l : lifetimes.values) {
    auto it = bytes.find(l.value);
    STITCH_ASSERT(it != bytes.end() && it->second >= 0,
                  fmt::format("buffer plan: no byte size for intermediate {}", l.value));
    plan.values.push_back({l, it->second, -1});
  }
  auto planned = [&](int value) -> PlannedValue& {
    PlannedValue* p = find_sorted(plan.values, value, planned_value_of);
    STITCH_ASSERT(p, fmt::format("buffer plan: value {} is no intermediate", value));
    return *p;
  };

  // Free buffers in the order they became free, the given pool first in
  // index order; of equally large ones the first is taken.
  std::vector<int> free_buffers(pool_bytes.size());
  std::iota(free_buffers.begin(), free_buffers.end(), 0);
  std::vector<bool> used(pool_bytes.size(), false);
  // The read values whose buffer a value written at their last step took.
  std::set<int> handed_over;
  for (size_t step = 0; step < lifetimes.written_at.size(); ++step) {
    for (int v : lifetimes.written_at[step]) {
      PlannedValue& p = planned(v);
      if (auto it = in_place.find(v); it != in_place.end()) {
        const PlannedValue* read = find_sorted(plan.values, it->second, planned_value_of);
        const int at = static_cast<int>(step);
        if (read && read->lifetime.first_step < at && read->lifetime.last_step == at &&
            plan.pool_bytes[read->buffer] >= p.bytes && handed_over.insert(it->second).second) {
          p.buffer = read->buffer;
          continue;
        }
      }
      auto best = free_buffers.end();
      for (auto it = free_buffers.begin(); it != free_buffers.end(); ++it) {
        const int64_t size = plan.pool_bytes[*it];
        if (size >= p.bytes && (best == free_buffers.end() || size < plan.pool_bytes[*best])) best = it;
      }
      if (best != free_buffers.end()) {
        p.buffer = *best;
        free_buffers.erase(best);
      } else {
        p.buffer = static_cast<int>(plan.pool_bytes.size());
        plan.pool_bytes.push_back(p.bytes);
        used.push_back(false);
      }
      if (!used[p.buffer]) {
        used[p.buffer] = true;
        ++plan.buffers_used;
        plan.bytes_used += plan.pool_bytes[p.buffer];
      }
    }
    for (int v : lifetimes.released_after[step]) {
      if (!handed_over.count(v)) free_buffers.push_back(planned(v).buffer);
    }
  }
  return plan;
}

std::string print_buffer_plan(const BufferPlan& plan) {
  std::string text;
  for (const PlannedValue& p : plan.values) {
    text += fmt::format("v{}: {} bytes in buffer {}, steps [{}, {}]\n", p.lifetime.value, p.bytes, p.buffer,
                        p.lifetime.first_step, p.lifetime.last_step);
  }
  text += fmt::format("{} intermediates in {} of {} buffers, {} bytes used\n", plan.intermediate_count(),
                      plan.buffers_used, plan.pool_bytes.size(), plan.bytes_used);
  return text;
}

}  // namespace stitch::runtime
