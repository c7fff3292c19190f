// A linear layer's dot(x, transpose(w)) on the CPU executable: the transpose
// of B's last two axes is read by the gemm's flag (fold_operand_transposes in
// runtime/cpu/executable.cpp), so no kernel copies the weight, and the result
// matches the interpreter under every planner, with and without an epilogue,
// batched, in f32 and f64. A transpose that something else reads too still
// runs as a kernel.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <unistd.h>

#include "ir/canonicalize.h"
#include "random_graph.h"
#include "pipeline/cpu_route.h"
#include "runtime/cpu/executable.h"
#include "stitch/interpreter.h"
#include "stitch/text.h"
#include "tensor_compare.h"

namespace stitch::runtime::cpu {
namespace {

namespace fs = std::filesystem;

struct DotCase {
  const char* text;
  int kernels;  // steps of the launch list: the transposes folded
  int64_t k;    // the contraction, for the tolerance
};

TEST(DotTranspose, ALinearLayersWeightIsReadTransposedInPlace) {
  const DotCase cases[] = {
      {R"(graph linear(x: f32[64, 48], w: f32[80, 48]) {
  wt = transpose(w, perm=[1, 0])
  y = dot(x, wt)
  return y
})",
       1, 48},
      {R"(graph linear_gelu(x: f32[64, 48], w: f32[80, 48], b: f32[80]) {
  wt = transpose(w, perm=[1, 0])
  d = dot(x, wt)
  y = gelu(add(d, b))
  return y
})",
       1, 48},
      {R"(graph scores(q: f64[4, 16, 32], k: f64[4, 24, 32]) {
  kt = transpose(k, perm=[0, 2, 1])
  s = dot(q, kt)
  return s
})",
       1, 32},
      {R"(graph mlp(x: f32[32, 24], w1: f32[96, 24], b1: f32[96], w2: f32[24, 96]) {
  w1t = transpose(w1, perm=[1, 0])
  h = dot(x, w1t)
  a = gelu(add(h, b1))
  w2t = transpose(w2, perm=[1, 0])
  y = dot(a, w2t)
  return y
})",
       3, 96},  // both transposes in one packed kernel, dropped; the GELU is the first dot's epilogue
      {R"(graph shared(x: f32[8, 16], w: f32[12, 16]) {
  wt = transpose(w, perm=[1, 0])
  y = dot(x, wt)
  z = mul(wt, 2.0)
  return y, z
})",
       2, 16},  // wt written beside z by one kernel, which stays
      // Batches of A sharing B run as one gemm of their rows stacked; B per
      // batch, or A shared by the batches, one gemm per batch.
      {R"(graph stacked(x: f32[3, 5, 48], w: f32[40, 48], b: f32[40]) {
  wt = transpose(w, perm=[1, 0])
  d = dot(x, wt)
  y = gelu(add(d, b))
  return y
})",
       1, 48},
      {R"(graph per_batch(x: f32[3, 5, 48], w: f32[3, 48, 40], v: f32[5, 48]) {
  y = dot(x, w)
  z = dot(v, w)
  return y, z
})",
       2, 48},
  };
  const fs::path dir = fs::temp_directory_path() / ("stitch-dot-transpose-" + std::to_string(getpid()));
  KernelCache cache(dir);
  for (const DotCase& c : cases) {
    const Graph g = canonicalize(parse_module(c.text, "dot.stitch").graphs.front());
    const std::vector<Tensor> inputs = testing::random_inputs(g, 11, {});
    const std::vector<Tensor> want = interpret(g, inputs);
    // Every planner: the fold works on whatever launch list the plan makes.
    for (PlannerKind planner : kEveryPlanner) {
      SCOPED_TRACE(g.name() + " under " + std::string(planner_name(planner)));
      CpuExecutable exe = pipeline::compile_cpu(g, planner, cache);
      ASSERT_EQ(exe.fallback(), "");
      if (planner == PlannerKind::Stitch) {
        EXPECT_EQ(exe.kernel_count(), c.kernels);
      }
      EXPECT_TRUE(testing::outputs_match_interpreter(exe.run(inputs), want, true, c.k));
    }
  }
  fs::remove_all(dir);
}

// A bias added in the dot's epilogue is read at the thread's column, as in
// the kernel alone: the epilogue's blocks are whole rows of the dot's result
// (loop_block_threads), not a fixed 256 threads that read the bias through a
// remainder per element (a [6144, 384] bias-GELU epilogue ran 15% slower
// than the dot and its kernel apart that way).
TEST(DotTranspose, AnEpiloguesBiasIsReadAtItsColumn) {
  const Graph g = canonicalize(parse_module(R"(graph bias_gelu(x: f32[64, 48], w: f32[48, 384], b: f32[384]) {
  d = dot(x, w)
  y = gelu(add(d, b))
  return y
})", "dot.stitch").graphs.front());
  const fs::path dir = fs::temp_directory_path() / ("stitch-dot-bias-" + std::to_string(getpid()));
  KernelCache cache(dir);
  CpuExecutable exe = pipeline::compile_cpu(g, PlannerKind::Stitch, cache);
  ASSERT_EQ(exe.kernel_count(), 1);  // the GELU is the dot's epilogue
  const std::string& source = exe.source();
  EXPECT_NE(source.find("stitch_block_first"), std::string::npos);
  EXPECT_EQ(source.find("% 384u"), std::string::npos) << source.substr(source.find("extern \"C\" void k_"));
  const std::vector<Tensor> inputs = testing::random_inputs(g, 5, {});
  EXPECT_TRUE(testing::outputs_match_interpreter(exe.run(inputs), interpret(g, inputs), true, 48));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace stitch::runtime::cpu
