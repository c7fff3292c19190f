// The shared memory of stitched kernels: which rows are cached between phases
// and how Algorithm 4 lays out the scratch and caches (docs/shared-memory.md,
// Stitched kernels).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fusion/planner.h"
#include "ir/canonicalize.h"
#include "schedule/group_shared_memory.h"
#include "stitch/text.h"

namespace stitch::schedule {
namespace {

Graph graph(const std::string& text) { return canonicalize(parse_module(text, "<test>").graphs.front()); }

const char* kSoftmax = R"(graph softmax(x: f32[64, 1024]) -> (f32[64, 1024]) {
  m = reduce_max(x, axes=[1], keepdims=true)
  d = sub(x, broadcast(m, shape=[64, 1024]))
  e = exp(d)
  s = reduce_sum(e, axes=[1], keepdims=true)
  y = div(e, broadcast(s, shape=[64, 1024]))
  return y
})";

struct Planned {
  Graph g;
  FusionGroup group;
  StitchedDomain domain;
};

Planned stitched(const std::string& text) {
  Planned p{graph(text), {}, {}};
  FusionPlan plan = plan_stitch(p.g);
  for (const FusionGroup& group : plan.groups) {
    if (group.kind == GroupKind::Stitched) p.group = group;
  }
  EXPECT_EQ(stitched_group_problem(p.g, p.group.nodes, p.group.roots, &p.domain), "");
  return p;
}

TEST(GroupSharedMemory, SoftmaxCachesExpAndTheSecondScratchReusesTheFirst) {
  Planned p = stitched(kSoftmax);
  GroupSharedMemory m = plan_group_shared_memory(p.g, p.group, p.domain, {1024, 1, 8, 48 * 1024});
  ASSERT_EQ(m.cached.size(), 1u);
  EXPECT_EQ(p.g.value(p.g.nodes()[m.cached[0]].output).name, "e");
  // exp runs after the max's block reduction, so the row cache takes its
  // scratch; the sum's scratch must not overlap the cache, which the final
  // division still reads.
  EXPECT_EQ(print_group_shared_memory(m),
            "shared memory: 3 buffers, 4160 bytes requested, arena 4128 bytes, alloc/req 0.99, align 16, budget 49152\n"
            "  scratch %m: [0, 32) 32 bytes\n"
            "  row cache %e: [0, 4096) 4096 bytes, reuses scratch %m\n"
            "  scratch %s: [4096, 4128) 32 bytes\n");
}

TEST(GroupSharedMemory, WithoutRoomForTheRowExpIsRecomputedAndTheScratchesShare) {
  Planned p = stitched(kSoftmax);
  GroupSharedMemory m = plan_group_shared_memory(p.g, p.group, p.domain, {1024, 1, 8, 2048});
  EXPECT_TRUE(m.cached.empty());
  EXPECT_TRUE(m.plan.ok());
  EXPECT_EQ(m.plan.arena_bytes, 32);
  EXPECT_DOUBLE_EQ(m.plan.alloc_req_ratio(), 0.5);
}

TEST(GroupSharedMemory, WarpPerRowCachesOneRowPerWarpWithinTheBudget) {
  Planned p = stitched(kSoftmax);
  // Eight rows of 1024 f32 fit 48 KiB; eight rows of 4096 need the opt-in limit.
  GroupSharedMemory small = plan_group_shared_memory(p.g, p.group, p.domain, {1024, 8, 0, 48 * 1024});
  EXPECT_EQ(small.cached.size(), 1u);
  EXPECT_EQ(small.plan.arena_bytes, 8 * 1024 * 4);
  GroupSharedMemory wide = plan_group_shared_memory(p.g, p.group, p.domain, {4096, 8, 0, 48 * 1024});
  EXPECT_TRUE(wide.cached.empty());
  EXPECT_EQ(wide.plan.arena_bytes, 0);
  GroupSharedMemory optin = plan_group_shared_memory(p.g, p.group, p.domain, {4096, 8, 0, 227 * 1024});
  EXPECT_EQ(optin.cached.size(), 1u);
}

// A bf16 softmax as the torch backend writes it: the scores scaled (a div, the
// expensive op) and rounded, a mask added and rounded again, before the max.
// The later phase reads the max's input, so that is kept, not the div with
// the cheap ops after it recomputed; and exp, which the store phase reads.
TEST(GroupSharedMemory, TheValueALaterPhaseReadsIsKeptNotAnExpensiveOneUpstream) {
  Planned p = stitched(R"(graph sm(x: bf16[64, 128], mask: bf16[128]) -> (bf16[64, 128]) {
  xf = cast(x, to=f32)
  d = div(xf, 8.0)
  db = cast(d, to=bf16)
  mf = cast(mask, to=f32)
  mm = mul(mf, -10000.0)
  mb = cast(mm, to=bf16)
  a = add(cast(db, to=f32), broadcast(cast(mb, to=f32), shape=[64, 128]))
  ab = cast(a, to=bf16)
  af = cast(ab, to=f32)
  y = softmax(af, axis=1)
  yb = cast(y, to=bf16)
  return yb
})");
  GroupSharedMemory m = plan_group_shared_memory(p.g, p.group, p.domain, {128, 1, 8, 48 * 1024});
  std::vector<std::string> names;
  for (int n : m.cached) names.push_back(p.g.value(p.g.nodes()[n].output).name);
  ASSERT_EQ(names.size(), 2u) << print_group_shared_memory(m);
  EXPECT_EQ(names[0], "af");
  EXPECT_NE(names[1].find("exp"), std::string::npos) << names[1];
}

TEST(GroupSharedMemory, LayerNormsVarianceScratchReusesTheMeans) {
  Planned p = stitched(R"(graph ln(x: f32[32, 768], gamma: f32[768], beta: f32[768]) -> (f32[32, 768]) {
  y = layer_norm(x, gamma, beta, axes=[-1], eps=1e-5)
  return y
})");
  GroupSharedMemory m = plan_group_shared_memory(p.g, p.group, p.domain, {768, 1, 8, 48 * 1024});
  EXPECT_TRUE(m.cached.empty());  // nothing expensive is read twice
  ASSERT_EQ(m.problem.requests.size(), 2u);
  EXPECT_EQ(m.plan.allocations[1].offset, 0);
  EXPECT_EQ(m.plan.allocations[1].reuses, std::vector<int>{0});
  EXPECT_DOUBLE_EQ(m.plan.alloc_req_ratio(), 0.5);
}

}  // namespace
}  // namespace stitch::schedule
