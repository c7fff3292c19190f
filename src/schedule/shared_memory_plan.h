// Shared-memory planning for one kernel (FusionStitching 2019, §5.4, Alg. 4;
// docs/shared-memory.md): every op that keeps a result in shared memory gets an
// offset in one per-block arena, and a buffer whose readers have all finished
// before an op in every schedule of the kernel lends that op its space.
// "Finished before" is decided on the data-flow graph with dominators, as the
// paper does, so the plan holds for any topological order the lowering picks,
// kernel packing of independent ops included.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schedule/dominators.h"

namespace stitch {

// One shared buffer: written by `op`, read by `consumers` (ops of the same
// kernel that come after it). No consumers: only `op` itself reads it.
struct SharedRequest {
  int op = -1;
  int64_t bytes = 0;  // 0: the op needs no shared memory
  std::vector<int> consumers;
};

// The kernel as the lowering sees it; plain data so any caller can fill it.
struct SharedMemoryProblem {
  Digraph successors;  // data-flow edges producer -> consumer over the kernel's ops 0..n-1
  std::vector<int> order;  // a topological order (the schedule); empty: 0, 1, ..., n-1
  std::vector<SharedRequest> requests;
  std::vector<std::string> op_names;  // optional, for the printed plan; empty: "op3"
  int64_t alignment = 16;             // of every offset and of the arena; a power of two
  int64_t budget_bytes = 0;           // the target's shared memory per block; 0: no limit
};

// Where requests[i] lives: [offset, offset + bytes).
struct SharedAllocation {
  int64_t offset = 0;
  int64_t bytes = 0;
  // Earlier requests whose (dead) space this one overlaps, ascending. The
  // lowering owes a barrier between their last read and this buffer's first
  // write unless one already lies on every path (a write-after-read hazard).
  std::vector<int> reuses;
};

struct SharedMemoryPlan {
  std::vector<SharedAllocation> allocations;  // parallel to SharedMemoryProblem::requests
  int64_t arena_bytes = 0;      // shared memory per block, rounded up to the alignment
  int64_t requested_bytes = 0;  // sum of the requests, as if none were reused
  int64_t budget_bytes = 0;
  std::string failure;  // empty when the arena fits the budget; otherwise why it does not

  bool ok() const { return failure.empty(); }
  // The paper's Table 4 metric, allocated / requested: 1 means no reuse; 1 when nothing was requested.
  double alloc_req_ratio() const;
};

// Whether request `buffer`'s readers have all finished before `op` starts in
// every schedule: each reader is a strict data-flow ancestor of `op`, shown by
// the reader dominating `op` or `op` post-dominating the reader, directly or
// through a later reader of the same buffer. Conservative: an ancestor that
// neither dominance witnesses keeps the buffer live.
bool buffer_dead_before(const SharedRequest& buffer, int op, const DominatorTree& dom,
                        const DominatorTree& post_dom);

// Places the requests in schedule order, each at the lowest aligned offset that
// overlaps no buffer still live at its op. Malformed input (an order that is not
// topological, an op or consumer outside the graph) is an internal error.
SharedMemoryPlan plan_shared_memory(const SharedMemoryProblem& problem);

// The deterministic text form that golden tests and STITCH_DUMP print:
//   shared memory: 3 buffers, 1536 bytes requested, arena 1024 bytes, alloc/req 0.67, align 16, budget 49152
//     a: [0, 512) 512 bytes
//     b: [512, 1024) 512 bytes
//     c: [0, 512) 512 bytes, reuses a
//   error: <failure>                      (only when the arena exceeds the budget)
std::string print_shared_memory_plan(const SharedMemoryProblem& problem, const SharedMemoryPlan& plan);

}  // namespace stitch
