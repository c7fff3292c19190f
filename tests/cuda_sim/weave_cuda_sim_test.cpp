// --weave on cuda-sim (docs/goptx.md, In Stitch): the `_small`/`_dyn` workload
// graphs compiled with weaving on, so adjacent independent kernels run as one
// woven launch of PTX the weaver made from NVRTC's, each output compared with
// the reference interpreter as the unwoven suite does; and enough pairs are
// woven that the comparison means something.
#include <gtest/gtest.h>

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
using pipeline::CudaCompileOptions;
using runtime::cuda::CudaContext;
using runtime::cuda::CudaExecutable;

class WovenCorpusCudaSim : public ::testing::TestWithParam<PlannerKind> {};

TEST_P(WovenCorpusCudaSim, MatchesInterpreter) {
  std::shared_ptr<CudaContext> context = sim_context();
  ASSERT_TRUE(context);
  const PlannerKind planner = GetParam();
  std::vector<GpuGraph> graphs;
  for (const auto& file : stitch_files("bench/workloads")) {
    for (const Graph& g : parse_file(file.string()).graphs) {
      if (is_test_sized_workload(g.name())) graphs.push_back({g, every_symbol_bound_to(g, {0, 1, 7})});
    }
  }
  ScratchDirectory cache_dir("stitch-woven-cuda-sim-test");
  CubinCache cache(cache_dir.path());
  pipeline::CudaCompileOptions options;
  options.weave = 1;
  std::vector<CudaExecutable> exes;
  try {
    exes = pipeline::compile_cuda_batch(canonical_graphs(graphs), planner, context, cache, options);
  } catch (const std::exception& e) {
    FAIL() << "compile_batch failed: " << describe_failure(e);
  }
  ASSERT_EQ(exes.size(), graphs.size());
  int woven = 0, woven_graphs = 0, refused = 0;
  for (size_t i = 0; i < graphs.size(); ++i) {
    const Graph& g = graphs[i].graph;
    woven += exes[i].woven_launches();
    woven_graphs += exes[i].woven_launches() > 0;
    if (!exes[i].weave_refusals().empty()) {
      ++refused;
      std::printf("%s: %s", g.name().c_str(), exes[i].weave_refusals().c_str());
    }
    for (const SymbolBindings& symbols : graphs[i].bindings) {
      const std::vector<Tensor> inputs = seeded_inputs(g, 1000 + 10 * i, symbols);
      EXPECT_EQ(check_against_interpreter(exes[i], g, symbols, inputs), "")
          << g.name() << " (" << describe_bindings(symbols) << "), planner " << planner_name(planner) << ", "
          << exes[i].woven_launches() << " woven launches";
    }
  }
  std::printf("woven workloads on cuda-sim (%s): %d woven launches in %d of %zu graphs; %d graphs with refusals\n",
              std::string(planner_name(planner)).c_str(), woven, woven_graphs, graphs.size(), refused);
  // The unfused plan launches every reduction and loop alone: many neighbours are independent.
  if (planner == PlannerKind::None) {
    EXPECT_GE(woven_graphs, 5);
  }
}

INSTANTIATE_TEST_SUITE_P(Planners, WovenCorpusCudaSim,
                         ::testing::Values(PlannerKind::None, PlannerKind::Xla, PlannerKind::Stitch),
                         [](const ::testing::TestParamInfo<PlannerKind>& info) {
                           return std::string(planner_name(info.param));
                         });

}  // namespace
}  // namespace stitch::gpu_testing
