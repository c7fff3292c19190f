// Tuning on a GPU (pipeline/cuda/cuda_tuning.h) on the fake CUDA driver: every
// candidate schedule of a group is lowered for the device, compiled by NVRTC
// in one translation unit and launched once before any timing. The fake runs
// no kernel, so every candidate's results disagree with the interpreter: the
// check before timing must then keep the default and write no cache entry.
// Timing and choosing on a real device are tests/gpu/tuning_gpu_test.cpp's.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "fake_cuda_driver.h"
#include "fusion/planner.h"
#include "ir/canonicalize.h"
#include "pipeline/schedule_groups.h"
#include "runtime/cuda/context.h"
#include "pipeline/cuda/cuda_tuning.h"
#include "pipeline/cuda/device_target.h"
#include "stitch/text.h"

namespace stitch::runtime::cuda {
namespace {

namespace fs = std::filesystem;

TEST(CudaTuningFake, EveryCandidateIsLaunchedAndCheckedBeforeItIsTimed) {
  std::string why;
  std::shared_ptr<CudaContext> context = CudaContext::open(&why, 0, STITCH_FAKE_CUDA_DRIVER);
  ASSERT_TRUE(context) << why;
  fake_cuda::Inspection fake;
  ASSERT_TRUE(fake.open(STITCH_FAKE_CUDA_DRIVER, &why)) << why;
  fake.stitch_fake_cuda_record_param_sizes(nullptr, 0);  // no argument bytes recorded: launches of any arity
  const fs::path dir = fs::temp_directory_path() / ("stitch-cuda-tuning-fake-" + std::to_string(::getpid()));
  {
    CubinCache cubins(dir);
    const Graph g = canonicalize(parse_module(R"(graph s(x: f32[96, 512]) {
      y = softmax(x, axis=-1)
      return y
    })").graphs.front());
    const FusionPlan p = plan(g, PlannerKind::Stitch, PlanOptions::for_gpu(context->device().arch()));
    ASSERT_EQ(p.groups.size(), 1u);
    const schedule::RowScheduleTarget target = schedule::RowScheduleTarget::for_device(pipeline::device_target(*context));
    const size_t candidates = pipeline::schedule_candidates(g, p.groups[0], target).size();
    ASSERT_GE(candidates, 2u);

    tune::ScheduleTuner tuner(pipeline::cuda_measurer(context, cubins), pipeline::cuda_tuning_directory(cubins));
    const int launches_before = fake.stitch_fake_cuda_launch_count();
    const std::vector<std::optional<schedule::GroupSchedule>> chosen = tuner.choose(g, p, target);
    // One translation unit for all candidates, one launch each (the check).
    EXPECT_EQ(cubins.stats().misses, 1);
    EXPECT_EQ(fake.stitch_fake_cuda_launch_count() - launches_before, static_cast<int>(candidates));
    ASSERT_EQ(chosen.size(), 1u);
    EXPECT_FALSE(chosen[0].has_value());
    EXPECT_EQ(tuner.stats().groups, 1);
    EXPECT_EQ(tuner.stats().measured, 0);
    EXPECT_EQ(tuner.stats().untunable, 1);
    EXPECT_NE(tuner.report().find("disagrees with the interpreter"), std::string::npos) << tuner.report();
    EXPECT_FALSE(fs::exists(tuner.entry_path(tune::group_graph(g, p.groups[0], "tune").graph, target)));
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace stitch::runtime::cuda
