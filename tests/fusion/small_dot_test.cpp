// Small dots (docs/fusion.md, Small dots): the stitch planner computes a dot
// with a short static contraction inside its elementwise consumer's kernel.
// Plans, and results on the CPU back end against the interpreter.
#include <cstdint>

#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

#include "fusion/planner.h"
#include "plan_invariants.h"
#include "pipeline/cpu_route.h"
#include "runtime/cpu/executable.h"
#include "stitch/interpreter.h"
#include "tensor/compare.h"
#include "tensor_compare.h"

namespace stitch {
namespace {

using testing_fusion::canonical_graph;

int count_kind(const FusionPlan& p, GroupKind kind) {
  int n = 0;
  for (const FusionGroup& g : p.groups) n += g.kind == kind;
  return n;
}

// The stitch plan's results match the interpreter's on seeded random inputs:
// bit for bit when every op after the dot is exact (the fused dot adds the
// same double products in the same order), else within the documented
// allowance (gelu, exp: the vector math library's ulps).
void expect_matches_interpreter(const Graph& g, const std::vector<std::vector<int64_t>>& shapes, bool exact) {
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < g.params().size(); ++i) {
    inputs.emplace_back(g.type(g.params()[i]).dtype, shapes[i]);
    fill_random(inputs.back(), 11 + i);
  }
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("stitch-small-dot-" + std::to_string(::getpid()));
  runtime::cpu::KernelCache cache(dir);
  runtime::cpu::CpuExecutable exe = pipeline::compile_cpu(g, PlannerKind::Stitch, cache);
  ASSERT_TRUE(exe.fallback().empty()) << exe.fallback();
  const std::vector<Tensor> got = exe.run(inputs);
  const std::vector<Tensor> want = interpret(g, inputs);
  std::filesystem::remove_all(dir);
  ASSERT_EQ(got.size(), want.size());
  const SymbolBindings symbols = bind_inputs(g, inputs);
  for (size_t i = 0; i < want.size(); ++i) {
    if (exact) {
      EXPECT_TRUE(testing::tensors_bitwise_equal(got[i], want[i])) << g.name() << " output " << i;
    } else {
      const TensorComparison c =
          compare_with_interpreter(got[i], want[i], output_allowance(g, g.outputs()[i].value, symbols));
      EXPECT_TRUE(c.ok) << g.name() << " output " << i << ": " << c.describe();
    }
  }
}

constexpr const char* kBiasGelu = R"(graph proj(x: f32[B, 16], w: f32[16, 24], bias: f32[24]) -> (f32[B, 24]) {
  d = dot(x, w)
  y = gelu(add(d, broadcast(bias, shape=[B, 24])))
  return y
})";

TEST(SmallDot, JoinsItsElementwiseConsumer) {
  const Graph g = canonical_graph(kBiasGelu);
  const FusionPlan stitch = plan(g, PlannerKind::Stitch);
  EXPECT_EQ(stitch.groups.size(), 1u) << print_plan(g, stitch);
  EXPECT_EQ(count_kind(stitch, GroupKind::Library), 0);
  // xla keeps the dot a library call.
  EXPECT_EQ(count_kind(plan(g, PlannerKind::Xla), GroupKind::Library), 1);
  expect_matches_interpreter(g, {{37, 16}, {16, 24}, {24}}, false);
  expect_matches_interpreter(g, {{0, 16}, {16, 24}, {24}}, false);
}

TEST(SmallDot, BatchedBroadcastAndVectorOperands) {
  const Graph batched = canonical_graph(R"(graph bmm(a: f32[4, 1, 6, 8], b: f32[3, 8, 5]) -> (f32[4, 3, 6, 5]) {
  y = relu(dot(a, b))
  return y
})");
  EXPECT_EQ(count_kind(plan(batched, PlannerKind::Stitch), GroupKind::Library), 0);
  expect_matches_interpreter(batched, {{4, 1, 6, 8}, {3, 8, 5}}, true);
  const Graph vec = canonical_graph(R"(graph mv(a: f64[7, 12], v: f64[12]) -> (f64[7]) {
  y = exp(dot(a, v))
  return y
})");
  EXPECT_EQ(count_kind(plan(vec, PlannerKind::Stitch), GroupKind::Library), 0);
  expect_matches_interpreter(vec, {{7, 12}, {12}}, false);
  const Graph ints = canonical_graph(R"(graph im(a: i32[5, 9], b: i32[9, 3]) -> (i32[5, 3]) {
  y = mul(dot(a, b), dot(a, b))
  return y
})");
  expect_matches_interpreter(ints, {{5, 9}, {9, 3}}, true);
}

TEST(SmallDot, LongContractionsNarrowResultsAndSharedResultsStayLibraryCalls) {
  // 64 terms: over kSmallDotTerms.
  const Graph long_k = canonical_graph(R"(graph l(x: f32[8, 64], w: f32[64, 8]) -> (f32[8, 8]) {
  y = relu(dot(x, w))
  return y
})");
  EXPECT_EQ(count_kind(plan(long_k, PlannerKind::Stitch), GroupKind::Library), 1);
  // An f16 result would be rounded twice from the double sum.
  const Graph narrow = canonical_graph(R"(graph n(x: f16[8, 4], w: f16[4, 8]) -> (f16[8, 8]) {
  y = relu(dot(x, w))
  return y
})");
  EXPECT_EQ(count_kind(plan(narrow, PlannerKind::Stitch), GroupKind::Library), 1);
  // The dot is also an output: it is written once, by the library call.
  const Graph shared = canonical_graph(R"(graph s(x: f32[8, 4], w: f32[4, 8]) -> (f32[8, 8], f32[8, 8]) {
  d = dot(x, w)
  y = relu(d)
  return d, y
})");
  EXPECT_EQ(count_kind(plan(shared, PlannerKind::Stitch), GroupKind::Library), 1);
}

}  // namespace
}  // namespace stitch
