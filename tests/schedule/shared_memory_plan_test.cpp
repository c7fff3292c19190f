// The shared-memory planner (FusionStitching 2019, Alg. 4): reuse decided by
// dominance on the data-flow graph, first-fit offsets, alignment, the budget,
// the alloc/req ratio of the paper's Table 4, and the printed plan.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>

#include "schedule/shared_memory_plan.h"
#include "stitch/error.h"

namespace stitch {
namespace {

std::vector<int64_t> offsets(const SharedMemoryPlan& plan) {
  std::vector<int64_t> out;
  for (const auto& a : plan.allocations) out.push_back(a.offset);
  return out;
}

// A chain whose buffers are each read by an op without a request before the
// next buffer is written: every buffer is dead in time, so all share one slot.
TEST(SharedMemoryPlan, ChainOfDeadBuffersSharesOneSlot) {
  SharedMemoryProblem p;
  int n = 8;
  p.successors.resize(n);
  for (int v = 0; v + 1 < n; ++v) p.successors[v] = {v + 1};
  for (int v = 0; v < n; v += 2) p.requests.push_back({v, 1024, {v + 1}});
  SharedMemoryPlan plan = plan_shared_memory(p);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(offsets(plan), (std::vector<int64_t>{0, 0, 0, 0}));
  EXPECT_EQ(plan.arena_bytes, 1024);
  EXPECT_EQ(plan.requested_bytes, 4096);
  EXPECT_DOUBLE_EQ(plan.alloc_req_ratio(), 0.25);  // 1/n for n buffers
  EXPECT_EQ(plan.allocations[3].reuses, (std::vector<int>{0, 1, 2}));
}

// Each op reads its predecessor's buffer while writing its own: two slots alternate.
TEST(SharedMemoryPlan, ChainOfReadersAlternatesTwoSlots) {
  SharedMemoryProblem p;
  int n = 5;
  p.successors.resize(n);
  for (int v = 0; v + 1 < n; ++v) p.successors[v] = {v + 1};
  for (int v = 0; v < n; ++v) p.requests.push_back({v, 1024, v + 1 < n ? std::vector<int>{v + 1} : std::vector<int>{}});
  SharedMemoryPlan plan = plan_shared_memory(p);
  EXPECT_EQ(offsets(plan), (std::vector<int64_t>{0, 1024, 0, 1024, 0}));
  EXPECT_EQ(plan.arena_bytes, 2048);
  EXPECT_DOUBLE_EQ(plan.alloc_req_ratio(), 0.4);
  EXPECT_EQ(plan.allocations[2].reuses, (std::vector<int>{0}));
}

// 0 -> {1, 2} -> 3: the buffers of 1 and 2 are live together (both read by 3);
// 0's buffer, read by 1 and 2, is dead at 3 because 3 post-dominates both readers.
TEST(SharedMemoryPlan, DiamondKeepsBothBranchesLive) {
  SharedMemoryProblem p;
  p.successors = {{1, 2}, {3}, {3}, {}};
  p.requests = {{0, 256, {1, 2}}, {1, 256, {3}}, {2, 256, {3}}, {3, 256, {}}};
  SharedMemoryPlan plan = plan_shared_memory(p);
  EXPECT_EQ(offsets(plan), (std::vector<int64_t>{0, 256, 512, 0}));
  EXPECT_EQ(plan.allocations[3].reuses, (std::vector<int>{0}));
  EXPECT_EQ(plan.arena_bytes, 768);
  EXPECT_DOUBLE_EQ(plan.alloc_req_ratio(), 0.75);
}

// Op 0's buffer is read by 1; op 2 writes its own. In the schedule 0, 1, 2 the
// read is over before 2, but 1 and 2 are independent (kernel packing may run
// them in any order), so the space is reused only once an edge orders them.
TEST(SharedMemoryPlan, ReuseOnlyWhenTheReaderDominates) {
  SharedMemoryProblem p;
  p.requests = {{0, 512, {1}}, {2, 512, {3}}};
  p.successors = {{1, 2}, {3}, {3}, {}};
  SharedMemoryPlan independent = plan_shared_memory(p);
  EXPECT_EQ(offsets(independent), (std::vector<int64_t>{0, 512}));
  EXPECT_DOUBLE_EQ(independent.alloc_req_ratio(), 1.0);

  p.successors = {{1}, {2, 3}, {3}, {}};
  SharedMemoryPlan ordered = plan_shared_memory(p);
  EXPECT_EQ(offsets(ordered), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(ordered.allocations[1].reuses, (std::vector<int>{0}));
  EXPECT_DOUBLE_EQ(ordered.alloc_req_ratio(), 0.5);
}

// 0 -> {1, 2}, 1 -> 2: reader 1 does not dominate 2 (the edge 0 -> 2 bypasses
// it), but 2 post-dominates 1, which is the witness that 1 finished first.
TEST(SharedMemoryPlan, ReuseWhenTheOpPostDominatesTheReader) {
  SharedMemoryProblem p;
  p.successors = {{1, 2}, {2}, {}};
  p.requests = {{0, 512, {1}}, {2, 512, {}}};
  SharedMemoryPlan plan = plan_shared_memory(p);
  EXPECT_EQ(offsets(plan), (std::vector<int64_t>{0, 0}));
}

// The reader 1 is an ancestor of 2, yet 1 does not dominate 2 (input 4 enters
// at 2) and 2 does not post-dominate 1 (1 also feeds the output 3): dominance
// cannot see it, so the plan keeps the buffer (docs/shared-memory.md, Limits).
TEST(SharedMemoryPlan, ConservativeWhenNoDominanceWitnessHolds) {
  SharedMemoryProblem p;
  p.successors = {{1}, {2, 3}, {}, {}, {2}};
  p.order = {0, 4, 1, 2, 3};
  p.requests = {{0, 512, {1}}, {2, 512, {}}};
  SharedMemoryPlan plan = plan_shared_memory(p);
  EXPECT_EQ(offsets(plan), (std::vector<int64_t>{0, 512}));
}

TEST(SharedMemoryPlan, OffsetsAndArenaFollowTheAlignment) {
  SharedMemoryProblem p;
  p.successors = {{3}, {3}, {3}, {}};
  p.requests = {{0, 100, {3}}, {1, 100, {3}}, {2, 100, {3}}};
  SharedMemoryPlan plan16 = plan_shared_memory(p);
  EXPECT_EQ(offsets(plan16), (std::vector<int64_t>{0, 112, 224}));
  EXPECT_EQ(plan16.arena_bytes, 336);
  EXPECT_EQ(plan16.requested_bytes, 300);
  EXPECT_DOUBLE_EQ(plan16.alloc_req_ratio(), 1.12);

  p.alignment = 128;
  SharedMemoryPlan plan128 = plan_shared_memory(p);
  EXPECT_EQ(offsets(plan128), (std::vector<int64_t>{0, 128, 256}));
  EXPECT_EQ(plan128.arena_bytes, 384);
}

// A small buffer fits into the gap a dead one left below a live one.
TEST(SharedMemoryPlan, FirstFitFillsAGapBelowALiveBuffer) {
  SharedMemoryProblem p;
  // 0 -> 1 -> 2 -> 3, and 1 -> 3: 1's buffer stays live until 3.
  p.successors = {{1}, {2, 3}, {3}, {}};
  p.requests = {{0, 256, {1}}, {1, 1024, {3}}, {2, 128, {3}}};
  SharedMemoryPlan plan = plan_shared_memory(p);
  EXPECT_EQ(offsets(plan), (std::vector<int64_t>{0, 256, 0}));
  EXPECT_EQ(plan.arena_bytes, 1280);
}

TEST(SharedMemoryPlan, OverBudgetFailsWithAReason) {
  SharedMemoryProblem p;
  p.successors = {{2}, {2}, {}};
  p.op_names = {"dot_1", "add", "out"};
  p.requests = {{0, 768, {2}}, {1, 768, {2}}};
  p.budget_bytes = 1024;
  SharedMemoryPlan plan = plan_shared_memory(p);
  EXPECT_FALSE(plan.ok());
  EXPECT_EQ(plan.arena_bytes, 1536);
  EXPECT_EQ(plan.failure,
            "shared memory arena of 1536 bytes exceeds the budget of 1024 bytes per block: add (768 bytes) lands "
            "at [768, 1536) while dot_1 is live");

  p.budget_bytes = 1536;
  EXPECT_TRUE(plan_shared_memory(p).ok());
}

TEST(SharedMemoryPlan, ZeroByteRequestsAndEmptyKernels) {
  SharedMemoryProblem p;
  p.successors = {{1}, {}};
  p.requests = {{0, 0, {1}}};
  SharedMemoryPlan plan = plan_shared_memory(p);
  EXPECT_TRUE(plan.ok());
  EXPECT_EQ(plan.arena_bytes, 0);
  EXPECT_DOUBLE_EQ(plan.alloc_req_ratio(), 1.0);
  EXPECT_EQ(print_shared_memory_plan(p, plan),
            "shared memory: 0 buffers, 0 bytes requested, arena 0 bytes, alloc/req 1.00, align 16, budget none\n");
}

// A softmax followed by a mean, every cross-thread value through shared memory:
//   row_max = reduce_max(x); e = exp(x - row_max); row_sum = reduce_sum(e);
//   y = e / row_sum; m = reduce_mean(y); out = y - m
TEST(SharedMemoryPlan, GoldenSoftmaxThenMean) {
  SharedMemoryProblem p;
  p.op_names = {"x", "row_max", "e", "row_sum", "y", "m", "out"};
  p.successors = {{1, 2}, {2}, {3, 4}, {4}, {5, 6}, {6}, {}};
  p.requests = {{1, 128, {2}}, {2, 4096, {3, 4}}, {3, 128, {4}}, {4, 4096, {5, 6}}, {5, 128, {6}}};
  p.budget_bytes = 49152;
  SharedMemoryPlan plan = plan_shared_memory(p);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(print_shared_memory_plan(p, plan),
            "shared memory: 5 buffers, 8576 bytes requested, arena 8320 bytes, alloc/req 0.97, align 16, budget 49152\n"
            "  row_max: [0, 128) 128 bytes\n"
            "  e: [128, 4224) 4096 bytes\n"
            "  row_sum: [0, 128) 128 bytes, reuses row_max\n"
            "  y: [4224, 8320) 4096 bytes\n"
            "  m: [0, 128) 128 bytes, reuses row_max, row_sum\n");
}

TEST(SharedMemoryPlan, GoldenOverBudget) {
  SharedMemoryProblem p;
  p.successors = {{2}, {2}, {}};
  p.requests = {{0, 40000, {2}}, {1, 20000, {2}}};
  p.budget_bytes = 49152;
  SharedMemoryPlan plan = plan_shared_memory(p);
  EXPECT_EQ(print_shared_memory_plan(p, plan),
            "shared memory: 2 buffers, 60000 bytes requested, arena 60000 bytes, alloc/req 1.00, align 16, "
            "budget 49152\n"
            "  op0: [0, 40000) 40000 bytes\n"
            "  op1: [40000, 60000) 20000 bytes\n"
            "error: shared memory arena of 60000 bytes exceeds the budget of 49152 bytes per block: op1 (20000 bytes) "
            "lands at [40000, 60000) while op0 is live\n");
}

// The lowering fills the problem; a malformed one is a bug there, not user input.
TEST(SharedMemoryPlan, MalformedProblemsAreInternalErrors) {
  SharedMemoryProblem p;
  p.successors = {{1}, {}};
  p.order = {1, 0};
  EXPECT_THROW(plan_shared_memory(p), InternalError);
  p.order = {};
  p.requests = {{1, 64, {0}}};
  EXPECT_THROW(plan_shared_memory(p), InternalError);
  p.requests = {{0, 64, {1}}};
  p.alignment = 24;
  EXPECT_THROW(plan_shared_memory(p), InternalError);
}

// Soundness on random kernels: two buffers overlap only when every reader of
// the earlier one is a strict data-flow ancestor of the later one's op.
TEST(SharedMemoryPlan, OverlapsOnlyDeadBuffersOnRandomKernels) {
  std::mt19937 rng(11);
  int reused = 0;
  for (int trial = 0; trial < 300; ++trial) {
    int n = 2 + static_cast<int>(rng() % 14);
    SharedMemoryProblem p;
    p.successors.resize(n);
    for (int u = 0; u < n; ++u) {
      for (int v = u + 1; v < n; ++v) {
        if (rng() % 3 == 0) p.successors[u].push_back(v);
      }
    }
    for (int u = 0; u < n; ++u) {
      if (rng() % 3 == 0) continue;
      SharedRequest r{u, 16 * static_cast<int64_t>(1 + rng() % 8), {}};
      for (int v : p.successors[u]) {
        if (rng() % 2 == 0) r.consumers.push_back(v);
      }
      p.requests.push_back(r);
    }
    // ancestor[u][v]: a path u -> ... -> v of at least one edge.
    std::vector<std::vector<char>> ancestor(n, std::vector<char>(n, 0));
    for (int u = n - 1; u >= 0; --u) {
      for (int v : p.successors[u]) {
        ancestor[u][v] = 1;
        for (int w = 0; w < n; ++w) ancestor[u][w] |= ancestor[v][w];
      }
    }
    SharedMemoryPlan plan = plan_shared_memory(p);
    for (size_t a = 0; a < p.requests.size(); ++a) {
      const auto& ra = p.requests[a];
      const auto& aa = plan.allocations[a];
      EXPECT_EQ(aa.offset % p.alignment, 0);
      EXPECT_LE(aa.offset + aa.bytes, plan.arena_bytes);
      for (size_t b = 0; b < p.requests.size(); ++b) {
        const auto& rb = p.requests[b];
        const auto& ab = plan.allocations[b];
        bool overlap = aa.offset < ab.offset + ab.bytes && ab.offset < aa.offset + aa.bytes;
        if (a == b || !overlap || ra.op > rb.op || (ra.op == rb.op && a > b)) continue;
        ++reused;
        std::vector<int> readers = ra.consumers.empty() ? std::vector<int>{ra.op} : ra.consumers;
        for (int reader : readers) {
          EXPECT_TRUE(ancestor[reader][rb.op]) << "trial " << trial << ": buffers " << a << " and " << b;
        }
      }
    }
  }
  EXPECT_GT(reused, 100);
}

}  // namespace
}  // namespace stitch
