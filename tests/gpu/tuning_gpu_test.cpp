// Tuning schedules on the GPU (label gpu; docs/tuning.md, On a GPU): every
// candidate of a group is measured on the device, the choice is written to
// the tuning cache and read back by a second tuner without measuring, and the
// executable built with a chosen (forced) candidate matches the interpreter.
// The CPU's counterparts are tests/runtime/tuning_test.cpp; the host side
// without a GPU is tests/runtime_cuda/cuda_tuning_fake_test.cpp.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "gpu_context.h"
#include "gpu_differential.h"
#include "fusion/planner.h"
#include "ir/canonicalize.h"
#include "pipeline/schedule_groups.h"
#include "pipeline/cuda/cuda_route.h"
#include "runtime/cuda/cuda_executable.h"
#include "pipeline/cuda/cuda_tuning.h"
#include "pipeline/cuda/device_target.h"
#include "stitch/text.h"

namespace stitch::gpu_testing {
namespace {

using runtime::cuda::CubinCache;
using pipeline::CudaCompileOptions;
using runtime::cuda::CudaExecutable;
using schedule::RowScheduleTarget;

constexpr const char* kLayerNorm = R"(graph ln(x: f32[300, 768], g: f32[768], b: f32[768]) {
  y = layer_norm(x, g, b, axes=[-1], eps=1e-5)
  return y
})";

class TuningGpu : public GpuTest {
 protected:
  Graph graph() const { return canonicalize(parse_module(kLayerNorm).graphs.front()); }
  RowScheduleTarget target() const { return RowScheduleTarget::for_device(pipeline::device_target(*context())); }
};

TEST_F(TuningGpu, MeasuresOnceThenAnswersFromTheCache) {
  ScratchDirectory dir("stitch-tuning-gpu-test");
  CubinCache cubins(dir.path());
  const Graph g = graph();
  const FusionPlan p = plan(g, PlannerKind::Stitch, PlanOptions::for_gpu(context()->device().arch()));
  tune::ScheduleTuner first(pipeline::cuda_measurer(context(), cubins), pipeline::cuda_tuning_directory(cubins));
  first.choose(g, p, target());
  EXPECT_GE(first.stats().groups, 1) << first.report();
  EXPECT_EQ(first.stats().measured, first.stats().groups) << first.report();
  EXPECT_EQ(first.stats().rejected, 0) << first.report();
  tune::ScheduleTuner second(pipeline::cuda_measurer(context(), cubins), pipeline::cuda_tuning_directory(cubins));
  second.choose(g, p, target());
  EXPECT_EQ(second.stats().hits, first.stats().groups) << second.report();
  EXPECT_EQ(second.stats().measured, 0) << second.report();
}

TEST_F(TuningGpu, KeepsTheFastestAndTheExecutableFollowsIt) {
  ScratchDirectory dir("stitch-tuning-gpu-test");
  CubinCache cubins(dir.path());
  const Graph g = graph();
  const FusionPlan p = plan(g, PlannerKind::Stitch, PlanOptions::for_gpu(context()->device().arch()));
  ASSERT_EQ(p.groups.size(), 1u);
  const std::vector<schedule::GroupSchedule> candidates = pipeline::schedule_candidates(g, p.groups[0], target());
  ASSERT_GE(candidates.size(), 3u);
  // The test seam makes candidate 2 the fastest, whatever the device says.
  tune::TuneOptions o;
  o.adjust_seconds = [](int index, double measured) { return index == 2 ? 1e-9 : measured + 1.0; };
  tune::ScheduleTuner tuner(pipeline::cuda_measurer(context(), cubins), pipeline::cuda_tuning_directory(cubins), o);
  pipeline::CudaCompileOptions options;
  options.tuner = [&](const Graph& graph, const FusionPlan& plan, const RowScheduleTarget& t) {
    return tuner.choose(graph, plan, t);
  };
  CudaExecutable exe = pipeline::compile_cuda(g, PlannerKind::Stitch, context(), cubins, options);
  ASSERT_TRUE(exe.fallback().empty()) << exe.fallback();
  EXPECT_EQ(tuner.stats().changed, 1) << tuner.report();
  EXPECT_NE(exe.source().find("tuned: the fastest candidate"), std::string::npos);
  EXPECT_EQ(check_against_interpreter(exe, g, {}, seeded_inputs(g, 9, {})), "");
}

}  // namespace
}  // namespace stitch::gpu_testing
