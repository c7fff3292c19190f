// The CUDA back end on the PTX interpreter (label cuda_sim; docs/cuda-sim.md):
// the `_small`/`_dyn` workload graphs compiled exactly as for a GPU (NVRTC for
// sm_90, the same launch list and buffers), their PTX run by the simulated
// driver, and every output compared with the reference interpreter under the
// documented allowance of its cone, under the none, xla and stitch planners.
// Symbols are bound to small odd extents: the interpreter runs about half a
// billion thread instructions a second.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "gpu_differential.h"
#include "gpu_test_graphs.h"
#include "sim_context.h"
#include "runtime/cuda/context.h"
#include "pipeline/cuda/cuda_route.h"
#include "runtime/cuda/cuda_executable.h"

namespace stitch::gpu_testing {
namespace {

using runtime::cuda::CubinCache;
using runtime::cuda::CudaContext;
using runtime::cuda::CudaExecutable;

std::vector<GpuGraph> workload_graphs(const std::vector<int64_t>& extents) {
  std::vector<GpuGraph> out;
  for (const auto& file : stitch_files("bench/workloads")) {
    for (const Graph& g : parse_file(file.string()).graphs) {
      if (is_test_sized_workload(g.name())) out.push_back({g, every_symbol_bound_to(g, extents)});
    }
  }
  return out;
}

TEST(CudaSimDriver, LoadsPtxNotCubins) {
  std::shared_ptr<CudaContext> context = sim_context();
  ASSERT_TRUE(context);
  EXPECT_TRUE(context->api().loads_ptx);
  EXPECT_EQ(context->device().arch(), "sm_90");
  CUmodule module = nullptr;
  const char elf[] = "\x7f" "ELF\2\1\1";
  const CUresult r = context->api().cuModuleLoadData(&module, elf);
  EXPECT_EQ(r, CUDA_ERROR_INVALID_IMAGE);
  EXPECT_NE(runtime::cuda::describe_result(context->api(), r).find("cubin"), std::string::npos);
}

class CorpusCudaSim : public ::testing::TestWithParam<PlannerKind> {};

TEST_P(CorpusCudaSim, MatchesInterpreter) {
  std::shared_ptr<CudaContext> context = sim_context();
  ASSERT_TRUE(context);
  const PlannerKind planner = GetParam();
  const auto start = std::chrono::steady_clock::now();
  const std::vector<GpuGraph> graphs = workload_graphs({0, 1, 7});
  ScratchDirectory cache_dir("stitch-corpus-cuda-sim-test");
  CubinCache cache(cache_dir.path());
  std::vector<CudaExecutable> exes;
  try {
    exes = pipeline::compile_cuda_batch(canonical_graphs(graphs), planner, context, cache);
  } catch (const std::exception& e) {
    FAIL() << "compile_batch failed: " << describe_failure(e);
  }
  ASSERT_EQ(exes.size(), graphs.size());
  int runs = 0;
  for (size_t i = 0; i < graphs.size(); ++i) {
    const Graph& g = graphs[i].graph;
    for (const SymbolBindings& symbols : graphs[i].bindings) {
      const std::vector<Tensor> inputs = seeded_inputs(g, 1000 + 10 * i, symbols);
      EXPECT_EQ(check_against_interpreter(exes[i], g, symbols, inputs), "")
          << g.name() << " (" << describe_bindings(symbols) << "), planner " << planner_name(planner);
      ++runs;
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("workloads on cuda-sim (%s): %zu graphs, %d runs compared in %.1f s\n",
              std::string(planner_name(planner)).c_str(), graphs.size(), runs, seconds);
}

INSTANTIATE_TEST_SUITE_P(Planners, CorpusCudaSim,
                         ::testing::Values(PlannerKind::None, PlannerKind::Xla, PlannerKind::Stitch),
                         [](const ::testing::TestParamInfo<PlannerKind>& info) {
                           return std::string(planner_name(info.param));
                         });

}  // namespace
}  // namespace stitch::gpu_testing
