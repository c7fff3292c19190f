#include "schedule/shared_memory_plan.h"

#include <cstdint>

#include <algorithm>
#include <fmt/format.h>
#include <utility>

#include "stitch/error.h"

namespace stitch {
namespace {

int64_t align_up(int64_t value, int64_t alignment) { return (value + alignment - 1) / alignment * alignment; }

// Positions of the ops in the schedule, checked to be a topological order.
std::vector<int> schedule_positions(const SharedMemoryProblem& problem) {
  int n = static_cast<int>(problem.successors.size());
  std::vector<int> order = problem.order;
  if (order.empty()) {
    for (int v = 0; v < n; ++v) order.push_back(v);
  }
  STITCH_ASSERT(static_cast<int>(order.size()) == n, "shared memory plan: the order must list every op once");
  std::vector<int> position(n, -1);
  for (int i = 0; i < n; ++i) {
    STITCH_ASSERT(order[i] >= 0 && order[i] < n && position[order[i]] < 0,
                  "shared memory plan: the order must list every op once");
    position[order[i]] = i;
  }
  for (int u = 0; u < n; ++u) {
    for (int v : problem.successors[u]) {
      STITCH_ASSERT(v >= 0 && v < n && position[u] < position[v],
                    "shared memory plan: the order is not topological");
    }
  }
  return position;
}

// "name" for an op with one request, "name.k" for the k-th of several.
std::vector<std::string> request_names(const SharedMemoryProblem& problem) {
  auto op_name = [&](int op) {
    return op < static_cast<int>(problem.op_names.size()) ? problem.op_names[op] : fmt::format("op{}", op);
  };
  std::vector<int> per_op(problem.successors.size(), 0);
  for (const auto& r : problem.requests) ++per_op[r.op];
  std::vector<int> seen(problem.successors.size(), 0);
  std::vector<std::string> names;
  for (const auto& r : problem.requests) {
    int k = seen[r.op]++;
    names.push_back(per_op[r.op] > 1 ? fmt::format("{}.{}", op_name(r.op), k) : op_name(r.op));
  }
  return names;
}

std::string join_names(const std::vector<std::string>& names, const std::vector<int>& requests) {
  std::string out;
  for (int r : requests) out += (out.empty() ? "" : ", ") + names[r];
  return out;
}

}  // namespace

double SharedMemoryPlan::alloc_req_ratio() const {
  if (requested_bytes == 0) return 1.0;
  return static_cast<double>(arena_bytes) / static_cast<double>(requested_bytes);
}

bool buffer_dead_before(const SharedRequest& buffer, int op, const DominatorTree& dom,
                        const DominatorTree& post_dom) {
  // Dominance and post-dominance are the paper's cheap witnesses that `a` is a
  // strict data-flow ancestor of `b` (§5.4); each alone misses cases the other catches.
  auto known_before = [&](int a, int b) {
    return dom.strictly_dominates(a, b) || post_dom.strictly_dominates(b, a);
  };
  // A buffer nobody else reads is dead once its own op is done.
  const std::vector<int> self{buffer.op};
  const std::vector<int>& readers = buffer.consumers.empty() ? self : buffer.consumers;
  // Only the last readers need a witness: a reader known to precede another
  // reader precedes `op` whenever that one does (a softmax's exp buffer read
  // by the sum and then by the division is dead once the division dominates).
  for (int reader : readers) {
    bool last = std::none_of(readers.begin(), readers.end(),
                             [&](int other) { return other != reader && known_before(reader, other); });
    if (last && !known_before(reader, op)) return false;
  }
  return true;
}

SharedMemoryPlan plan_shared_memory(const SharedMemoryProblem& problem) {
  int n = static_cast<int>(problem.successors.size());
  STITCH_ASSERT(problem.alignment > 0 && (problem.alignment & (problem.alignment - 1)) == 0,
                "shared memory plan: the alignment must be a power of two");
  std::vector<int> position = schedule_positions(problem);
  for (const auto& r : problem.requests) {
    STITCH_ASSERT(r.op >= 0 && r.op < n, "shared memory plan: request for an op outside the graph");
    STITCH_ASSERT(r.bytes >= 0, "shared memory plan: negative request");
    for (int c : r.consumers) {
      STITCH_ASSERT(c >= 0 && c < n && position[c] > position[r.op],
                    "shared memory plan: a consumer must come after the op that writes the buffer");
    }
  }
  DominatorTree dom = DominatorTree::with_virtual_entry(problem.successors);
  DominatorTree post_dom = DominatorTree::post_dominators(problem.successors);

  int count = static_cast<int>(problem.requests.size());
  std::vector<int> by_schedule(count);
  for (int i = 0; i < count; ++i) by_schedule[i] = i;
  std::stable_sort(by_schedule.begin(), by_schedule.end(), [&](int a, int b) {
    return position[problem.requests[a].op] < position[problem.requests[b].op];
  });

  SharedMemoryPlan plan;
  plan.allocations.resize(count);
  plan.budget_bytes = problem.budget_bytes;
  std::vector<int> placed;
  int first_over_budget = -1;
  std::vector<int> live_at_overflow;
  for (int r : by_schedule) {
    const SharedRequest& request = problem.requests[r];
    if (request.bytes == 0) continue;
    plan.requested_bytes += request.bytes;
    // An earlier buffer is placed before this one in a topological order, so
    // only its own death before this op decides whether the two may overlap.
    std::vector<int> live;
    for (int p : placed) {
      if (!buffer_dead_before(problem.requests[p], request.op, dom, post_dom)) live.push_back(p);
    }
    std::sort(live.begin(), live.end(), [&](int a, int b) {
      return plan.allocations[a].offset < plan.allocations[b].offset;
    });
    // First fit: the lowest aligned gap between live buffers that holds this one.
    int64_t offset = 0;
    for (int l : live) {
      const SharedAllocation& other = plan.allocations[l];
      if (offset + request.bytes <= other.offset) break;
      offset = std::max(offset, align_up(other.offset + other.bytes, problem.alignment));
    }
    SharedAllocation& alloc = plan.allocations[r];
    alloc.offset = offset;
    alloc.bytes = request.bytes;
    for (int p : placed) {
      const SharedAllocation& other = plan.allocations[p];
      if (other.offset < offset + request.bytes && offset < other.offset + other.bytes) alloc.reuses.push_back(p);
    }
    std::sort(alloc.reuses.begin(), alloc.reuses.end());
    placed.push_back(r);
    int64_t end = align_up(offset + request.bytes, problem.alignment);
    plan.arena_bytes = std::max(plan.arena_bytes, end);
    if (problem.budget_bytes > 0 && end > problem.budget_bytes && first_over_budget < 0) {
      first_over_budget = r;
      live_at_overflow = live;
    }
  }

  if (first_over_budget >= 0) {
    std::vector<std::string> names = request_names(problem);
    const SharedAllocation& alloc = plan.allocations[first_over_budget];
    std::sort(live_at_overflow.begin(), live_at_overflow.end(),
              [&](int a, int b) { return position[problem.requests[a].op] < position[problem.requests[b].op]; });
    plan.failure = fmt::format(
        "shared memory arena of {} bytes exceeds the budget of {} bytes per block: {} ({} bytes) lands at "
        "[{}, {}) while {} {} live",
        plan.arena_bytes, problem.budget_bytes, names[first_over_budget], alloc.bytes, alloc.offset,
        alloc.offset + alloc.bytes, live_at_overflow.empty() ? "nothing" : join_names(names, live_at_overflow),
        live_at_overflow.size() > 1 ? "are" : "is");
  }
  return plan;
}

std::string print_shared_memory_plan(const SharedMemoryProblem& problem, const SharedMemoryPlan& plan) {
  std::vector<std::string> names = request_names(problem);
  std::vector<int> position = schedule_positions(problem);
  int count = static_cast<int>(problem.requests.size());
  std::vector<int> shown;
  for (int i = 0; i < count; ++i) {
    if (problem.requests[i].bytes > 0) shown.push_back(i);
  }
  std::stable_sort(shown.begin(), shown.end(), [&](int a, int b) {
    return position[problem.requests[a].op] < position[problem.requests[b].op];
  });
  std::string out = fmt::format("shared memory: {} buffer{}, {} bytes requested, arena {} bytes, alloc/req {:.2f}, "
                                "align {}, budget {}\n",
                                shown.size(), shown.size() == 1 ? "" : "s", plan.requested_bytes, plan.arena_bytes,
                                plan.alloc_req_ratio(), problem.alignment,
                                plan.budget_bytes > 0 ? std::to_string(plan.budget_bytes) : "none");
  for (int r : shown) {
    const SharedAllocation& alloc = plan.allocations[r];
    out += fmt::format("  {}: [{}, {}) {} bytes", names[r], alloc.offset, alloc.offset + alloc.bytes, alloc.bytes);
    if (!alloc.reuses.empty()) out += ", reuses " + join_names(names, alloc.reuses);
    out += "\n";
  }
  if (!plan.ok()) out += "error: " + plan.failure + "\n";
  return out;
}

}  // namespace stitch
