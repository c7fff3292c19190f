// The shared delta evaluator: M(V) interpolation, the three terms of a
// fusion's score, and plan estimates that order none above xla.
#include <cstdint>

#include <gtest/gtest.h>

#include "fusion/delta_evaluator.h"
#include "fusion/planner.h"
#include "plan_invariants.h"

namespace stitch {
namespace {

using testing_fusion::canonical_graph;

TargetModel two_point_target() {
  TargetModel t;
  t.bandwidth_curve = {{1000, 1e9}, {1000000, 4e9}};
  t.launch_seconds = 1e-6;
  t.expensive_op_seconds = 1e-9;
  return t;
}

TEST(DeltaEvaluator, BandwidthCurveInterpolatesLogLinearlyAndClamps) {
  TargetModel t = two_point_target();
  EXPECT_DOUBLE_EQ(t.bandwidth(10), 1e9);
  EXPECT_DOUBLE_EQ(t.bandwidth(1000), 1e9);
  EXPECT_NEAR(t.bandwidth(31623), 2.5e9, 1e6);  // halfway in log space
  EXPECT_DOUBLE_EQ(t.bandwidth(1 << 30), 4e9);
  EXPECT_DOUBLE_EQ(t.memory_seconds(0), 0.0);
  EXPECT_DOUBLE_EQ(t.memory_seconds(2000000), 2000000 / 4e9);
}

// An op measured on its own is charged its own cost, others the rate; the
// group's compute adds them per element.
TEST(DeltaEvaluator, ExpensiveOpsAreChargedPerOp) {
  TargetModel t = two_point_target();
  t.op_seconds = {{OpKind::Tanh, 4e-9}};
  EXPECT_DOUBLE_EQ(t.expensive_seconds_of(OpKind::Tanh), 4e-9);
  EXPECT_DOUBLE_EQ(t.expensive_seconds_of(OpKind::Exp), 1e-9);
  Graph g = canonical_graph(R"(graph ops(x: f32[1000]) {
  a = tanh(x)
  b = exp(a)
  return b
})");
  const FusionGroup all{GroupKind::Loop, {0, 1}, {1}};
  const DeltaEvaluator with(t), without(two_point_target());
  // The same memory and launch; tanh's 1,000 elements cost 3 us more.
  EXPECT_NEAR(with.group_seconds(g, all) - without.group_seconds(g, all), 1000 * 3e-9, 1e-12);
  // The CPU model lists every expensive op it was measured on.
  const TargetModel cpu = cpu_target_model();
  for (OpKind op : {OpKind::Exp, OpKind::Tanh, OpKind::Div, OpKind::Erf, OpKind::Sigmoid})
    EXPECT_TRUE(cpu.op_seconds.count(op)) << op_name(op);
}

TEST(DeltaEvaluator, TheMeasuredCpuCurveIsUsable) {
  TargetModel t = cpu_target_model();
  ASSERT_GE(t.bandwidth_curve.size(), 2u);
  for (size_t i = 1; i < t.bandwidth_curve.size(); ++i) {
    EXPECT_LT(t.bandwidth_curve[i - 1].first, t.bandwidth_curve[i].first);
  }
  for (const auto& [bytes, bps] : t.bandwidth_curve) EXPECT_GT(bps, 0) << bytes;
  EXPECT_GT(t.launch_seconds, 0);
}

// The GPU models from published figures: the A100's DRAM is slower than the
// H100's, so a large kernel takes longer on sm_80; other architectures take
// the nearest table entry and say so.
TEST(DeltaEvaluator, GpuModelsFollowTheirDatasheets) {
  const TargetModel h100 = gpu_target_model("sm_90");
  const TargetModel a100 = gpu_target_model("sm_80");
  EXPECT_EQ(h100.name, "sm_90 (published figures)");
  EXPECT_EQ(a100.name, "sm_80 (published figures)");
  const int64_t big = int64_t{1} << 30;
  EXPECT_GT(a100.memory_seconds(big), 2.0 * h100.memory_seconds(big));
  EXPECT_LT(a100.memory_seconds(big), 2.3 * h100.memory_seconds(big));
  EXPECT_GT(a100.expensive_op_seconds, h100.expensive_op_seconds);
  EXPECT_EQ(gpu_target_model("sm_86").name, "sm_86 (sm_80's published figures)");
  EXPECT_EQ(gpu_target_model("sm_100").name, "sm_100 (sm_90's published figures)");
  EXPECT_EQ(PlanOptions::for_gpu("sm_80").target.name, a100.name);
}

const char* kChain = R"(graph chain(x: f32[256, 256]) {
  a = exp(x)
  b = mul(a, 2.0)
  c = add(b, a)
  return c, a
})";

TEST(DeltaEvaluator, FusingASoleProducerSavesItsTrafficAndALaunch) {
  Graph g = canonical_graph(kChain);
  DeltaEvaluator eval(two_point_target());
  // b = mul(a, 2.0) absorbed into c's kernel; b has no other reader.
  const int a = 0, b = 1, c = 2;
  FusionGroup consumer{GroupKind::Loop, {c}, {c}};
  FusionGroup producer{GroupKind::Loop, {b}, {b}};
  FusionGroup merged{GroupKind::Loop, {b, c}, {c}};
  FusionDelta d = eval.delta(g, consumer, producer, merged, false);
  EXPECT_DOUBLE_EQ(d.saved_launches, 1e-6);
  EXPECT_GT(d.saved_memory, 0);
  EXPECT_DOUBLE_EQ(d.penalty, 0);
  EXPECT_GT(d.score(), 0);
  // Duplicating the expensive a = exp(x) (also an output, so it still runs):
  // no launch saved, the recompute is the penalty.
  FusionGroup exp_group{GroupKind::Loop, {a}, {a}};
  FusionGroup with_exp{GroupKind::Loop, {a, b, c}, {c}};
  FusionDelta dup = eval.delta(g, merged, exp_group, with_exp, true);
  EXPECT_DOUBLE_EQ(dup.saved_launches, 0);
  EXPECT_DOUBLE_EQ(dup.penalty, 256 * 256 * 1e-9);
}

TEST(DeltaEvaluator, XlaPlansEstimateFasterThanUnfusedOnes) {
  Graph g = canonical_graph(R"(graph ln(x: f32[512, 1024]) {
  m = reduce_mean(x, axes=[1], keepdims=true)
  d = sub(x, m)
  q = mul(d, d)
  v = reduce_mean(q, axes=[1], keepdims=true)
  r = rsqrt(add(v, 1e-5))
  y = mul(d, r)
  return y
})");
  DeltaEvaluator eval;
  EXPECT_LT(eval.plan_seconds(g, plan_xla(g)), eval.plan_seconds(g, plan_none(g)));
}

}  // namespace
}  // namespace stitch
