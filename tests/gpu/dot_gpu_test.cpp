// Dots on the GPU against the interpreter (label gpu): library groups, run by
// cuBLAS for the float dtypes and by the CPU's exact loop on a host copy for
// integers (src/runtime/cuda/gpu_dot.h). Every shape class of numpy matmul:
// matrix, 1-D operands on either side, batches broadcast against each other
// or against a matrix, an empty contraction, a symbolic batch bound to 0; in
// f32, f64, f16, bf16, i32 and i8, at sizes small and large enough for
// cuBLAS's tiled kernels; with fused elementwise work and a transposed
// operand around them (the graphs are in gpu_test_graphs.h); under the
// stitch planner a small dot is computed inside its consumer's loop kernel
// (docs/fusion.md, Small dots). Each output is
// compared under the documented allowance, in which a dot counts its
// contraction length.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gpu_context.h"
#include "gpu_differential.h"
#include "gpu_test_graphs.h"
#include "ir/canonicalize.h"
#include "pipeline/cuda/cuda_route.h"
#include "runtime/cuda/cuda_executable.h"
#include "stitch/text.h"

namespace stitch::gpu_testing {
namespace {

using runtime::cuda::CubinCache;
using runtime::cuda::CudaExecutable;

const PlannerKind kPlanners[] = {PlannerKind::None, PlannerKind::Xla, PlannerKind::Stitch};

// Where the plan put the graph's dots: library calls, and dots computed
// inside a loop kernel (the stitch planner's small dots, docs/fusion.md).
struct DotPlacement {
  int library = 0;
  int in_loop = 0;
};

DotPlacement dot_placement(const CudaExecutable& exe, const Graph& g) {
  DotPlacement out;
  for (const FusionGroup& group : exe.plan().groups) {
    for (int n : group.nodes) {
      if (g.nodes()[n].op != OpKind::Dot) continue;
      if (group.kind == GroupKind::Library) {
        ++out.library;
      } else {
        EXPECT_EQ(group.kind, GroupKind::Loop) << "dot " << n << " in a group of another kind";
        ++out.in_loop;
      }
    }
  }
  return out;
}

class DotGpu : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped()) return;
    cache_dir_ = std::make_unique<ScratchDirectory>("stitch-dot-gpu-test");
    cache_ = std::make_unique<CubinCache>(cache_dir_->path());
  }

  // Compiles `text` under every planner and compares each binding's run.
  void check(const char* text, int dots, const std::vector<SymbolBindings>& bindings = {SymbolBindings{}}) {
    const Graph g = canonicalize(parse_module(text).graphs.front());
    for (PlannerKind planner : kPlanners) {
      SCOPED_TRACE(std::string(planner_name(planner)));
      CudaExecutable exe = pipeline::compile_cuda(g, planner, context(), *cache_);
      const DotPlacement placed = dot_placement(exe, g);
      EXPECT_EQ(placed.library + placed.in_loop, dots);
      // Only the stitch planner computes a (small) dot inside a loop kernel.
      if (planner != PlannerKind::Stitch) {
        EXPECT_EQ(placed.in_loop, 0);
      }
      uint64_t seed = 11;
      for (const SymbolBindings& symbols : bindings) {
        EXPECT_EQ(check_against_interpreter(exe, g, symbols, seeded_inputs(g, seed++, symbols)), "")
            << g.name() << " (" << describe_bindings(symbols) << ")";
      }
    }
  }

 private:
  std::unique_ptr<ScratchDirectory> cache_dir_;
  std::unique_ptr<CubinCache> cache_;
};

TEST_F(DotGpu, EveryShapeClassAndDtypeAtSmallSizes) {
  check(kSmallDotsGraph, 11);
}

TEST_F(DotGpu, LargeDotsInEveryFloatDtypeAndI32) {
  check(kLargeDotsGraph, 7);
}

TEST_F(DotGpu, SymbolicBatchIncludingAnEmptyOne) {
  check(kBatchedDotsGraph, 2, {{{"B", 0}}, {{"B", 1}}, {{"B", 3}}, {{"B", 40}}});
}

}  // namespace
}  // namespace stitch::gpu_testing
