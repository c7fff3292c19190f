// Shared helpers for the fusion tests: parse + canonicalise a graph, and the
// invariants every FusionPlan must satisfy whatever planner made it.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "fusion/fusion_plan.h"
#include "ir/canonicalize.h"
#include "plan_checks.h"
#include "stitch/text.h"

namespace stitch::testing_fusion {

// Two reductions of x over the same axes where the second depends on the
// first through a dot's kernel: merging them would close a cycle.
inline constexpr const char* kDiamond = R"(graph diamond(x: f32[8, 8], w: f32[8, 8]) {
  r1 = reduce_max(x, axes=[1], keepdims=true)
  b1 = broadcast(r1, shape=[8, 8])
  d = dot(b1, w)
  y = add(x, d)
  r2 = reduce_sum(y, axes=[1], keepdims=true)
  return r2
})";

inline Graph canonical_graph(const std::string& text) {
  Module m = parse_module(text, "<test>");
  return canonicalize(m.graphs.front());
}

// Empty when the plan is a valid cover of `g`; otherwise one line per problem
// (tests/support/plan_checks.h, shared with fuzz/planner_fuzzer.cpp).
using stitch::testing::plan_invariant_violations;

inline void check_plan_invariants(const Graph& g, const FusionPlan& plan) {
  EXPECT_EQ(plan_invariant_violations(g, plan), "") << print_plan(g, plan);
}

}  // namespace stitch::testing_fusion
