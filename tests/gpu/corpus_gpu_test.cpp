// The test corpus on the GPU against the interpreter (label gpu): every graph
// of tests/ir/corpus and the `_small`/`_dyn` workload graphs under the none,
// xla and stitch planners; every row schedule forced on the reduction
// workloads and on rows chosen to reach each branch; the block-tile column
// schedule forced on column reductions. As tests/codegen/corpus_cpu_test.cpp,
// all graphs of a test are one translation unit (pipeline::compile_cuda_batch:
// one NVRTC run) compiled into a cubin cache of the test's own, and each
// output is compared under the documented allowance of its cone. The graphs
// and their bindings are in gpu_test_graphs.h.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <ostream>
#include <string>
#include <vector>

#include "gpu_context.h"
#include "gpu_differential.h"
#include "gpu_test_graphs.h"
#include "pipeline/cuda/cuda_route.h"
#include "runtime/cuda/cuda_executable.h"
#include "schedule/row_schedule.h"

namespace stitch::gpu_testing {
namespace {

using runtime::cuda::CubinCache;
using pipeline::CudaCompileOptions;
using runtime::cuda::CudaExecutable;
using schedule::RowScheduleKind;

bool contains(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

// Compiles `graphs` as one translation unit and runs each with each of its
// bindings against the interpreter; prints what it compared. Returns the
// executables, whose source the callers inspect.
std::vector<CudaExecutable> compile_and_compare(const std::string& what, const std::vector<GpuGraph>& graphs,
                                                PlannerKind planner,
                                                const std::shared_ptr<runtime::cuda::CudaContext>& context,
                                                const pipeline::CudaCompileOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  ScratchDirectory cache_dir("stitch-corpus-gpu-test");
  CubinCache cache(cache_dir.path());
  std::vector<CudaExecutable> exes;
  try {
    exes = pipeline::compile_cuda_batch(canonical_graphs(graphs), planner, context, cache, options);
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << " (" << planner_name(planner) << "): compile_batch failed: " << describe_failure(e);
    return {};
  }
  EXPECT_EQ(exes.size(), graphs.size());
  EXPECT_EQ(cache.stats().misses, 1) << "one translation unit, one NVRTC run";
  const double compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  int runs = 0;
  for (size_t i = 0; i < graphs.size() && i < exes.size(); ++i) {
    const Graph& g = graphs[i].graph;
    for (const SymbolBindings& symbols : graphs[i].bindings) {
      const std::vector<Tensor> inputs = seeded_inputs(g, 1000 + 10 * i, symbols);
      EXPECT_EQ(check_against_interpreter(exes[i], g, symbols, inputs), "")
          << g.name() << " (" << describe_bindings(symbols) << "), planner " << planner_name(planner);
      ++runs;
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%s (%s): %zu graphs, %d runs compared; compile %.1f s, total %.1f s\n", what.c_str(),
              std::string(planner_name(planner)).c_str(), graphs.size(), runs, compile_seconds, seconds);
  return exes;
}

class CorpusGpu : public GpuTestWithParam<PlannerKind> {};

TEST_P(CorpusGpu, MatchesInterpreter) {
  const std::vector<GpuGraph> graphs = corpus_graphs();
  ASSERT_GE(graphs.size(), 50u) << "the parser corpus or the workloads went missing";
  compile_and_compare("corpus gpu", graphs, GetParam(), context(), {});
}

INSTANTIATE_TEST_SUITE_P(Planners, CorpusGpu,
                         ::testing::Values(PlannerKind::None, PlannerKind::Xla, PlannerKind::Stitch),
                         [](const ::testing::TestParamInfo<PlannerKind>& info) {
                           return std::string(planner_name(info.param));
                         });

struct ForcedRows {
  RowScheduleKind kind;
  PlannerKind planner;
};

void PrintTo(const ForcedRows& f, std::ostream* os) {
  *os << schedule::row_schedule_kind_name(f.kind) << " " << planner_name(f.planner);
}

class ForcedRowScheduleGpu : public GpuTestWithParam<ForcedRows> {};

TEST_P(ForcedRowScheduleGpu, MatchesInterpreter) {
  const ForcedRows forced = GetParam();
  pipeline::CudaCompileOptions options;
  options.forced_rows = forced.kind;
  const std::vector<CudaExecutable> exes =
      compile_and_compare("forced " + std::string(schedule::row_schedule_kind_name(forced.kind)),
                          row_schedule_graphs(), forced.planner, context(), options);
  ASSERT_FALSE(exes.empty());
  // The force took effect: the emitter names each row kernel's schedule.
  EXPECT_TRUE(contains(exes.front().source(),
                       "// row schedule: " + std::string(schedule::row_schedule_kind_name(forced.kind))));
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, ForcedRowScheduleGpu,
    ::testing::Values(ForcedRows{RowScheduleKind::BlockPerRow, PlannerKind::Stitch},
                      ForcedRows{RowScheduleKind::WarpPerRow, PlannerKind::Stitch},
                      ForcedRows{RowScheduleKind::MultiRowPerWarp, PlannerKind::Stitch},
                      ForcedRows{RowScheduleKind::BlockPerRow, PlannerKind::Xla},
                      ForcedRows{RowScheduleKind::WarpPerRow, PlannerKind::Xla},
                      ForcedRows{RowScheduleKind::MultiRowPerWarp, PlannerKind::Xla}),
    [](const ::testing::TestParamInfo<ForcedRows>& info) {
      std::string name = std::string(schedule::row_schedule_kind_name(info.param.kind)) + "_" +
                         std::string(planner_name(info.param.planner));
      for (char& c : name) c = c == '-' ? '_' : c;
      return name;
    });

class ForcedColumnTilesGpu : public GpuTestWithParam<PlannerKind> {};

TEST_P(ForcedColumnTilesGpu, MatchesInterpreter) {
  pipeline::CudaCompileOptions options;
  // Four row groups per tile: rows are split over the tile's warps, so the
  // partials are combined across groups after the barrier.
  options.forced_column_groups = 4;
  const std::vector<CudaExecutable> exes =
      compile_and_compare("forced column tiles", column_tile_graphs(), GetParam(), context(), options);
  ASSERT_FALSE(exes.empty());
  EXPECT_TRUE(contains(exes.front().source(), "// column schedule: block-tile-column"));
}

INSTANTIATE_TEST_SUITE_P(Planners, ForcedColumnTilesGpu, ::testing::Values(PlannerKind::Xla, PlannerKind::Stitch),
                         [](const ::testing::TestParamInfo<PlannerKind>& info) {
                           return std::string(planner_name(info.param));
                         });

}  // namespace
}  // namespace stitch::gpu_testing
