// The compile stage's per-group fallback (pipeline/group_fallback.h):
// which groups a bisection blames, and the plan that unfuses only them. The
// executables' end-to-end tests are in tests/codegen/executable_runtime_test.cpp
// (CPU) and tests/gpu/executable_gpu_test.cpp (cuda-sim).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "codegen/cpu/cpp_emitter.h"
#include "fusion/planner.h"
#include "ir/canonicalize.h"
#include "pipeline/group_fallback.h"
#include "stitch/text.h"
#include "group_fallback_case.h"

namespace stitch::pipeline {
namespace {

Graph graph(const char* text) { return canonicalize(parse_module(text).graphs.front()); }

// a = exp(x) is computed inside both consumers' kernels and written by none;
// unfusing the first group makes a a group of its own (now written), while the
// second group still computes it inside.
TEST(GroupFallback, AnOpNoGroupWritesGetsAGroupOfItsOwn) {
  const Graph g = graph(R"(graph dup(x: f32[64]) -> (f32[64], f32[64]) {
  a = exp(x)
  b = add(a, x)
  c = mul(a, x)
  return b, c
})");
  const int a = testing::node_computing(g, "a"), b = testing::node_computing(g, "b"), c = testing::node_computing(g, "c");
  FusionPlan plan;
  plan.graph_name = "dup";
  plan.planner = "xla";
  plan.groups = {{GroupKind::Loop, {a, b}, {b}}, {GroupKind::Loop, {a, c}, {c}}};
  finalize_plan(g, plan);
  const FusionPlan out = unfuse_groups(g, plan, {0}, "test: rejected");
  EXPECT_EQ(print_plan(g, out), R"(plan dup (planner xla): 3 groups
group 0 [loop] root a: a = exp(x)
group 1 [loop] root b: b = add(a, x)
group 2 [loop] root c: a = exp(x); c = mul(a, x)
duplicated: a in groups 0, 2
not fused: a -> b: test: rejected
)");
}

// A fake compiler that rejects any unit holding the kernel of a group with
// one of `bad`'s roots: the bisection finds exactly those groups.
TEST(GroupFallback, TheBisectionBlamesTheGroupsThatFailAlone) {
  const Graph g = graph(R"(graph five(x: f32[8, 16]) -> (f32[8, 16], f32[8, 16], f32[8, 16], f32[8, 16], f32[8, 16]) {
  a = exp(x)
  b = tanh(x)
  c = neg(x)
  d = abs(x)
  e = sqrt(x)
  return a, b, c, d, e
})");
  Compilation c = compilation_of(g, PlannerKind::None, {}, schedule::RowScheduleTarget::cpu());
  Backend backend;
  backend.emit = [](const std::vector<kir::Kernel>& kernels) { return codegen::cpu::emit_cpp_translation_unit(kernels); };
  run_pipeline(c, backend, "split-reductions", "emit");
  ASSERT_EQ(c.lowered.kernels.size(), 5u) << print_plan(c.graph, c.plan);
  const std::set<int> bad = {testing::node_computing(c.graph, "b"), testing::node_computing(c.graph, "e")};
  int builds = 0;
  backend.build = [&](const std::string&, const LoweredPlan& lowered, std::string& error) {
    ++builds;
    for (const lower::LoweredGroup& l : lowered.groups) {
      for (int root : lowered.plan.groups[static_cast<size_t>(l.group)].roots) {
        if (bad.count(root)) {
          error = "fake: group " + std::to_string(l.group);
          return false;
        }
      }
    }
    return true;
  };
  const FailingGroups failing = locate_failing_groups(c, backend);
  std::vector<int> want;
  for (int root : bad) want.push_back(c.plan.home_group(root));
  std::sort(want.begin(), want.end());
  EXPECT_EQ(failing.groups, want);
  EXPECT_EQ(failing.builds, builds);
  EXPECT_LE(failing.builds, 8);
  EXPECT_EQ(failing.error, "fake: group " + std::to_string(want.front()));

  // Every unit failing blames no group, within the bisection's budget.
  builds = 0;
  backend.build = [&](const std::string&, const LoweredPlan&, std::string& error) {
    ++builds;
    error = "fake: nothing builds";
    return false;
  };
  EXPECT_TRUE(locate_failing_groups(c, backend).groups.empty());
  EXPECT_EQ(builds, 8);  // 2 for each of the 5 groups less one
}

}  // namespace
}  // namespace stitch::pipeline
