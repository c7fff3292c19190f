// The per-group fallback's end-to-end case (pipeline/group_fallback.h),
// shared by the CPU test (tests/codegen/executable_runtime_test.cpp) and the
// cuda-sim one (tests/gpu/executable_gpu_test.cpp): two independent chains,
// which the stitch planner makes two groups; the seam rejects the first.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "fusion/fusion_plan.h"
#include "stitch/graph.h"

namespace stitch::testing {

inline const char* const kTwoChains =
    R"(graph two_chains(x: f32[16, 32], y: f32[16, 32], z: f32[16, 32]) -> (f32[16, 32], f32[16], f32[16, 32]) {
  a = mul(x, y)
  b = exp(a)
  c = add(b, x)
  s = reduce_sum(c, axes=[1])
  d = neg(z)
  e = tanh(d)
  f = mul(e, z)
  return c, s, f
})";

// The node that computes the value `name`, or -1.
inline int node_computing(const Graph& g, std::string_view name) {
  for (int n = 0; n < static_cast<int>(g.nodes().size()); ++n) {
    if (g.value_name(g.nodes()[n].output) == name) return n;
  }
  return -1;
}

// The seam's choice: a group of several ops holding b = exp(a).
inline std::function<bool(const FusionGroup&)> rejects_the_fused_exp(const Graph& g) {
  const int exp = node_computing(g, "b");
  return [exp](const FusionGroup& group) { return group.nodes.size() > 1 && group.contains(exp); };
}

// The seam's choice when b = exp(a) does not compile even alone: every group
// holding it.
inline std::function<bool(const FusionGroup&)> rejects_every_exp(const Graph& g) {
  const int exp = node_computing(g, "b");
  return [exp](const FusionGroup& group) { return group.contains(exp); };
}

// Empty when `plan` is kTwoChains' stitch plan with its first group unfused:
// five groups, f's of its three ops, every other of one.
inline std::string two_chains_plan_problems(const Graph& g, const FusionPlan& plan) {
  if (plan.planner != "stitch") return "planner " + plan.planner;
  if (plan.groups.size() != 5) return std::to_string(plan.groups.size()) + " groups";
  const int f = node_computing(g, "f");
  for (const FusionGroup& group : plan.groups) {
    if (group.nodes.size() != (group.contains(f) ? 3u : 1u)) return "a group of " + std::to_string(group.nodes.size());
  }
  return "";
}

}  // namespace stitch::testing
