// The CUDA executable's host side on the fake driver (tests/runtime_cuda/fake_driver):
// no kernel runs, but everything around the launches does: the context, NVRTC
// to a cubin for the fake H100's sm_90, module loading, the launch list with
// its grids, blocks, dynamic shared memory and arguments, device buffers and
// their return. The results themselves are checked on a GPU (tests/gpu).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "fake_cuda_driver.h"
#include "runtime/cuda/context.h"
#include "pipeline/cuda/cuda_route.h"
#include "pipeline/cuda/device_target.h"
#include "runtime/cuda/cuda_executable.h"
#include "runtime/cuda/cuda_module.h"
#include "runtime/cuda/device_allocator.h"
#include "schedule/target.h"
#include "stitch/error.h"
#include "stitch/text.h"
#include "ir/canonicalize.h"

namespace stitch::runtime::cuda {
namespace {

class FakeGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    context_ = CudaContext::open(&why, 0, STITCH_FAKE_CUDA_DRIVER);
    ASSERT_TRUE(context_) << why;
    ASSERT_TRUE(fake_.open(STITCH_FAKE_CUDA_DRIVER, &why)) << why;
    launches_before_ = fake_.stitch_fake_cuda_launch_count();
    cache_dir_ = std::filesystem::temp_directory_path() / ("stitch-fake-exe-" + std::to_string(::getpid()));
  }
  void TearDown() override {
    // Argument bytes a test asked the fake to record: not past the test (a
    // later launch with fewer arguments would be read past its end).
    if (fake_.stitch_fake_cuda_record_param_sizes) fake_.stitch_fake_cuda_record_param_sizes(nullptr, 0);
    std::error_code ignored;
    std::filesystem::remove_all(cache_dir_, ignored);
  }

  CudaExecutable compile(const std::string& text, PlannerKind planner, const pipeline::CudaCompileOptions& options = {}) {
    CubinCache cache(cache_dir_);
    return pipeline::compile_cuda(canonicalize(parse_module(text).graphs.front()), planner, context_, cache, options);
  }

  std::vector<StitchFakeCudaLaunch> launches() {
    std::vector<StitchFakeCudaLaunch> out;
    for (int i = launches_before_; i < fake_.stitch_fake_cuda_launch_count(); ++i) {
      StitchFakeCudaLaunch l{};
      EXPECT_EQ(fake_.stitch_fake_cuda_get_launch(i, &l), 1);
      out.push_back(l);
    }
    return out;
  }

  std::shared_ptr<CudaContext> context_;
  fake_cuda::Inspection fake_;
  int launches_before_ = 0;
  std::filesystem::path cache_dir_;
};

constexpr const char* kSoftmaxDyn =
    "graph s(x: f32[B, 256]) -> (f32[B, 256]) {\n  y = softmax(x, axis=-1)\n  return y\n}\n";

TEST_F(FakeGpu, TheDeviceRanksTheSchedules) {
  EXPECT_EQ(context_->device().arch(), "sm_90");
  EXPECT_EQ(pipeline::device_target(*context_).sm_count, context_->device().sm_count);
  EXPECT_GT(pipeline::device_target(*context_).memory_bytes_per_second, 1e12);
}

// One stitched kernel: its launch has the grid its expression gives for B,
// the block of its KIR, and the arguments in ABI order (x, y, then B).
TEST_F(FakeGpu, LaunchesFollowTheKernelIr) {
  CudaExecutable exe = compile(kSoftmaxDyn, PlannerKind::Stitch);
  ASSERT_TRUE(exe.fallback().empty()) << exe.fallback();
  ASSERT_EQ(exe.kernel_count(), 1);
  const size_t sizes[3] = {sizeof(CUdeviceptr), sizeof(CUdeviceptr), sizeof(int64_t)};
  fake_.stitch_fake_cuda_record_param_sizes(sizes, 3);
  DeviceTensor x = upload(context_, Tensor(DType::f32, {7, 256}));
  std::vector<DeviceTensor> outputs;
  exe.run_on_device({&x}, outputs);
  context_->synchronize();
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].shape, (std::vector<int64_t>{7, 256}));
  const std::vector<StitchFakeCudaLaunch> l = launches();
  ASSERT_EQ(l.size(), 1u);
  EXPECT_GE(l[0].grid[0], 1u);
  EXPECT_LE(l[0].grid[0], 7u);
  EXPECT_EQ(l[0].grid[1], 1u);
  EXPECT_GT(l[0].block[0], 0u);
  EXPECT_EQ(l[0].block[0] % 32, 0u);
  EXPECT_EQ(l[0].shared_bytes, 0u);
  EXPECT_EQ(l[0].stream, context_->stream());
  EXPECT_NE(std::string(l[0].function_name).find("k_s_g"), std::string::npos) << l[0].function_name;
  const int index = fake_.stitch_fake_cuda_launch_count() - 1;
  CUdeviceptr in = 0, out = 0;
  int64_t rows = 0;
  ASSERT_EQ(fake_.stitch_fake_cuda_get_launch_param(index, 0, &in, sizeof in), 1);
  ASSERT_EQ(fake_.stitch_fake_cuda_get_launch_param(index, 1, &out, sizeof out), 1);
  ASSERT_EQ(fake_.stitch_fake_cuda_get_launch_param(index, 2, &rows, sizeof rows), 1);
  EXPECT_EQ(in, x.buffer.get());
  EXPECT_EQ(out, outputs[0].buffer.get());
  EXPECT_EQ(rows, 7);
  fake_.stitch_fake_cuda_record_param_sizes(nullptr, 0);
}

// Unfused, every op is a launch; an intermediate's buffer goes back to the
// allocator after its last reader, so a second run reuses the same blocks.
TEST_F(FakeGpu, IntermediatesAreReusedAcrossRuns) {
  CudaExecutable exe = compile(kSoftmaxDyn, PlannerKind::None);
  ASSERT_GT(exe.kernel_count(), 1);
  DeviceTensor x = upload(context_, Tensor(DType::f32, {64, 256}));
  std::vector<DeviceTensor> outputs;
  exe.run_on_device({&x}, outputs);
  const int64_t allocations = context_->allocator().stats().driver_allocations;
  const CUdeviceptr first_output = outputs[0].buffer.get();
  exe.run_on_device({&x}, outputs);
  EXPECT_EQ(context_->allocator().stats().driver_allocations, allocations) << "the second run allocated";
  EXPECT_EQ(outputs[0].buffer.get(), first_output) << "an output of the right shape is written in place";
  EXPECT_EQ(static_cast<int>(launches().size()), 2 * exe.kernel_count());
}

// An empty batch launches nothing (a grid of 0 blocks is not a launch).
TEST_F(FakeGpu, AnEmptyTensorLaunchesNothing) {
  CudaExecutable exe = compile(kSoftmaxDyn, PlannerKind::Stitch);
  DeviceTensor x = upload(context_, Tensor(DType::f32, {0, 256}));
  std::vector<DeviceTensor> outputs;
  exe.run_on_device({&x}, outputs);
  EXPECT_TRUE(launches().empty());
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].numel(), 0);
}

// A row cache past 48 KiB: the arena is dynamic shared memory, passed at launch.
TEST_F(FakeGpu, AnArenaOverTheStaticLimitIsPassedAtLaunch) {
  pipeline::CudaCompileOptions options;
  options.forced_rows = schedule::RowScheduleKind::BlockPerRow;
  CudaExecutable exe =
      compile("graph s(x: f32[4, 12288]) -> (f32[4, 12288]) {\n  y = softmax(x, axis=-1)\n  return y\n}\n",
              PlannerKind::Stitch, options);
  ASSERT_TRUE(exe.fallback().empty()) << exe.fallback();
  DeviceTensor x = upload(context_, Tensor(DType::f32, {4, 12288}));
  std::vector<DeviceTensor> outputs;
  exe.run_on_device({&x}, outputs);
  const std::vector<StitchFakeCudaLaunch> l = launches();
  ASSERT_EQ(l.size(), 1u);
  EXPECT_GT(l[0].shared_bytes, 48u * 1024u);
  // Two blocks of 48 KiB and more per SM need most of the SM's shared memory.
  EXPECT_GE(l[0].carveout, 40);
  EXPECT_LE(l[0].carveout, 100);
}

// A kernel with a row cache asks for the carveout its resident blocks need
// (docs/cuda-runtime.md, Shared-memory carveout); one without shared memory
// leaves the driver's default.
TEST_F(FakeGpu, ARowCacheAsksForTheCarveoutItsBlocksNeed) {
  pipeline::CudaCompileOptions options;
  options.forced_rows = schedule::RowScheduleKind::BlockPerRow;
  CudaExecutable rows =
      compile("graph s(x: f32[64, 6144]) -> (f32[64, 6144]) {\n  y = softmax(x, axis=-1)\n  return y\n}\n",
              PlannerKind::Stitch, options);
  ASSERT_TRUE(rows.fallback().empty()) << rows.fallback();
  DeviceTensor x = upload(context_, Tensor(DType::f32, {64, 6144}));
  std::vector<DeviceTensor> outputs;
  rows.run_on_device({&x}, outputs);
  CudaExecutable add = compile("graph a(x: f32[4096]) -> (f32[4096]) {\n  y = add(x, x)\n  return y\n}\n",
                               PlannerKind::Stitch);
  DeviceTensor v = upload(context_, Tensor(DType::f32, {4096}));
  add.run_on_device({&v}, outputs);
  const std::vector<StitchFakeCudaLaunch> l = launches();
  ASSERT_EQ(l.size(), 2u);
  EXPECT_GT(l[0].carveout, 0);
  EXPECT_LE(l[0].carveout, 100);
  EXPECT_EQ(l[1].carveout, -1);
}

TEST(SharedCarveout, CoversTheBlocksThreadsAndRegistersAllow) {
  const schedule::GpuTarget& t = schedule::sm90_target();
  // No shared memory: no preference.
  EXPECT_EQ(pipeline::shared_carveout_percent(t, 256, 32, 0), -1);
  // 8 blocks of 256 threads, each 24 KiB + the 1 KiB reservation: 201 KiB of 228.
  const int64_t per_block = 24608 + t.shared_reserved_per_block;
  const int64_t rounded = (per_block + t.shared_alloc_unit - 1) / t.shared_alloc_unit * t.shared_alloc_unit;
  const int64_t expected = (8 * rounded * 100 + t.shared_bytes_per_sm - 1) / t.shared_bytes_per_sm;
  EXPECT_EQ(pipeline::shared_carveout_percent(t, 256, 32, 24608), expected);
  EXPECT_GT(expected, 80);
  // Registers allow one block of 1024 threads at 64 each: a quarter of the SM's shared memory or less.
  EXPECT_LE(pipeline::shared_carveout_percent(t, 1024, 64, 24608), 25);
  // More than the SM holds is capped at 100.
  EXPECT_EQ(pipeline::shared_carveout_percent(t, 64, 32, 40000), 100);
}

// Inputs are checked as the interpreter checks them, before anything runs.
TEST_F(FakeGpu, ABadInputIsTheInterpretersUserError) {
  CudaExecutable exe = compile(kSoftmaxDyn, PlannerKind::Stitch);
  DeviceTensor x = upload(context_, Tensor(DType::f32, {3, 100}));
  std::vector<DeviceTensor> outputs;
  try {
    exe.run_on_device({&x}, outputs);
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("input 'x'"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(launches().empty());
}

// A translation unit NVRTC rejects (here: the test seam) costs the fusion,
// not the result: the unfused plan runs, and the warning says so.
TEST_F(FakeGpu, ARejectedPlanFallsBackLoudly) {
  pipeline::CudaCompileOptions options;
  std::string warning;
  options.warn = [&](const std::string& w) { warning += w; };
  options.reject_plan = [](const FusionPlan& p) { return p.groups.size() == 1; };
  CudaExecutable exe = compile(kSoftmaxDyn, PlannerKind::Stitch, options);
  EXPECT_NE(warning.find("falling back to the unfused plan"), std::string::npos) << warning;
  EXPECT_GT(exe.kernel_count(), 1);
}

// Everything the executable and the context took goes back to the driver.
TEST(FakeGpuLifetime, EveryAllocationIsReturned) {
  std::string why;
  fake_cuda::Inspection fake;
  {
    std::shared_ptr<CudaContext> context = CudaContext::open(&why, 0, STITCH_FAKE_CUDA_DRIVER);
    ASSERT_TRUE(context) << why;
    ASSERT_TRUE(fake.open(STITCH_FAKE_CUDA_DRIVER, &why)) << why;
    const int64_t live_before = fake.stitch_fake_cuda_live_allocations();
    {
      CubinCache cache(std::filesystem::temp_directory_path() / ("stitch-fake-life-" + std::to_string(::getpid())));
      CudaExecutable exe = pipeline::compile_cuda(canonicalize(parse_module(kSoftmaxDyn).graphs.front()),
                                                   PlannerKind::None, context, cache);
      DeviceTensor x = upload(context, Tensor(DType::f32, {16, 256}));
      std::vector<DeviceTensor> outputs;
      exe.run_on_device({&x}, outputs);
      EXPECT_GT(fake.stitch_fake_cuda_live_allocations(), live_before);
      std::filesystem::remove_all(cache.directory());
    }
    context.reset();
    EXPECT_EQ(fake.stitch_fake_cuda_live_allocations(), live_before);
  }
}

// run_at on the caller's memory and stream: the context's stream waits for
// an event recorded on the caller's before the first launch, and the caller's
// waits for one recorded after the last; no events when the caller passes
// the context's own stream. The outputs are written where the caller says.
TEST_F(FakeGpu, RunAtOrdersItsWorkBetweenTheCallersStreamAndItsOwn) {
  CudaExecutable exe = compile(kSoftmaxDyn, PlannerKind::Stitch);
  ASSERT_EQ(exe.kernel_count(), 1);
  const DriverApi& api = context_->api();
  CUstream caller = nullptr;
  ASSERT_EQ(api.cuStreamCreate(&caller, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  DeviceBuffer x(context_, 7 * 256 * sizeof(float)), y(context_, 7 * 256 * sizeof(float));
  auto stream_ops = [&](int from) {
    std::vector<StitchFakeCudaStreamOp> out;
    for (int i = from; i < fake_.stitch_fake_cuda_stream_op_count(); ++i) {
      StitchFakeCudaStreamOp op{};
      EXPECT_EQ(fake_.stitch_fake_cuda_get_stream_op(i, &op), 1);
      out.push_back(op);
    }
    return out;
  };
  auto run = [&](CUstream stream) {
    const int before = fake_.stitch_fake_cuda_stream_op_count();
    std::vector<int64_t> asked;
    exe.run_at({{x.get(), DType::f32, {7, 256}}},
               [&](size_t i, DType dtype, const std::vector<int64_t>& shape) {
                 EXPECT_EQ(i, 0u);
                 EXPECT_EQ(dtype, DType::f32);
                 asked = shape;
                 return y.get();
               },
               stream);
    EXPECT_EQ(asked, (std::vector<int64_t>{7, 256}));
    return stream_ops(before);
  };
  const size_t sizes[3] = {sizeof(CUdeviceptr), sizeof(CUdeviceptr), sizeof(int64_t)};
  fake_.stitch_fake_cuda_record_param_sizes(sizes, 3);
  const std::vector<StitchFakeCudaStreamOp> ops = run(caller);
  ASSERT_EQ(ops.size(), 5u);
  EXPECT_EQ(ops[0].kind, 'R');
  EXPECT_EQ(ops[0].stream, caller);
  EXPECT_EQ(ops[1].kind, 'W');
  EXPECT_EQ(ops[1].stream, context_->stream());
  EXPECT_EQ(ops[1].event, ops[0].event);
  EXPECT_EQ(ops[2].kind, 'L');
  EXPECT_EQ(ops[2].stream, context_->stream());
  EXPECT_EQ(ops[3].kind, 'R');
  EXPECT_EQ(ops[3].stream, context_->stream());
  EXPECT_EQ(ops[4].kind, 'W');
  EXPECT_EQ(ops[4].stream, caller);
  EXPECT_EQ(ops[4].event, ops[3].event);
  // The launch reads x and writes y, the caller's memory.
  const int last = fake_.stitch_fake_cuda_launch_count() - 1;
  CUdeviceptr read = 0, written = 0;
  ASSERT_EQ(fake_.stitch_fake_cuda_get_launch_param(last, 0, &read, sizeof read), 1);
  ASSERT_EQ(fake_.stitch_fake_cuda_get_launch_param(last, 1, &written, sizeof written), 1);
  EXPECT_EQ(read, x.get());
  EXPECT_EQ(written, y.get());

  const std::vector<StitchFakeCudaStreamOp> same = run(context_->stream());
  ASSERT_EQ(same.size(), 1u);
  EXPECT_EQ(same[0].kind, 'L');
  StitchFakeCudaHandles handles{};
  fake_.stitch_fake_cuda_live_handles(&handles);
  context_->synchronize();
  ASSERT_EQ(api.cuStreamDestroy(caller), CUDA_SUCCESS);
  StitchFakeCudaHandles after{};
  fake_.stitch_fake_cuda_live_handles(&after);
  EXPECT_EQ(after.events, handles.events) << "run_at left an event behind";

  // An output over an input is refused before anything is queued.
  const int before = fake_.stitch_fake_cuda_stream_op_count();
  EXPECT_THROW(exe.run_at({{x.get(), DType::f32, {7, 256}}},
                          [&](size_t, DType, const std::vector<int64_t>&) { return x.get() + 64; }, context_->stream()),
               UserError);
  EXPECT_EQ(fake_.stitch_fake_cuda_stream_op_count(), before);
}

}  // namespace
}  // namespace stitch::runtime::cuda
