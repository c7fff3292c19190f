// CudaExecutable::run_at on device memory the caller owns (what PyTorch's CUDA
// tensors reach through Executable::run_on_device and Python's run_at(...,
// device=True)), on the GPU and, in CI, on the simulated driver: every output
// written at the caller's address and compared with the interpreter, on a
// stream of the caller's own; outputs that are parameters or repeated
// values; an output over an input refused; a rejected gather index
// reported; an empty parameter returned; the interpreter's fallback.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "gpu_context.h"
#include "gpu_differential.h"
#include "gpu_test_graphs.h"
#include "ir/canonicalize.h"
#include "pipeline/cuda/cuda_route.h"
#include "runtime/cuda/cuda_executable.h"
#include "stitch/error.h"
#include "stitch/interpreter.h"
#include "stitch/text.h"

namespace stitch::gpu_testing {
namespace {

using runtime::cuda::CubinCache;
using runtime::cuda::CudaExecutable;
using runtime::cuda::DeviceArrayView;
using runtime::cuda::DeviceBuffer;
using runtime::cuda::DeviceTensor;

class DeviceMemoryGpu : public GpuTest {
 protected:
  // `body(exe)` for `text` compiled under none, xla and stitch.
  template <typename Body>
  void for_each_planner(const char* text, Body body) {
    const Graph g = canonicalize(parse_module(text).graphs.front());
    ScratchDirectory dir("stitch-device-memory-gpu-test");
    CubinCache cache(dir.path());
    for (PlannerKind planner : {PlannerKind::None, PlannerKind::Xla, PlannerKind::Stitch}) {
      SCOPED_TRACE(std::string(planner_name(planner)));
      CudaExecutable exe = pipeline::compile_cuda(g, planner, context(), cache);
      body(exe, g);
    }
  }
  // A stream of the caller's, as a framework's current stream would be.
  CUstream caller_stream() {
    if (!stream_) {
      EXPECT_EQ(context()->api().cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    }
    return stream_;
  }
  void TearDown() override {
    if (stream_) context()->api().cuStreamDestroy(stream_);
  }

  // Runs `exe` on device copies of `inputs` into output buffers of the
  // caller's; the outputs downloaded from where they were asked to go.
  // With `offset`, every input and output starts that many bytes into its
  // allocation (a view's storage offset: not aligned beyond its element).
  std::vector<Tensor> run_at(CudaExecutable& exe, const Graph& g, const std::vector<Tensor>& inputs, size_t offset = 0) {
    std::vector<DeviceBuffer> device;
    std::vector<DeviceArrayView> views;
    for (const Tensor& t : inputs) {
      device.emplace_back(context(), t.nbytes() + offset + 1);  // +1: never a null address
      if (t.nbytes() > 0) {
        EXPECT_EQ(context()->api().cuMemcpyHtoDAsync(device.back().get() + offset, t.raw(), t.nbytes(),
                                                     context()->stream()),
                  CUDA_SUCCESS);
      }
      views.push_back({device.back().get() + offset, t.dtype(), t.shape()});
    }
    context()->synchronize();
    std::vector<DeviceTensor> outputs(g.outputs().size());
    exe.run_at(
        views,
        [&](size_t i, DType dtype, const std::vector<int64_t>& shape) {
          DeviceTensor& out = outputs.at(i);
          out.dtype = dtype;
          out.shape = shape;
          out.buffer = DeviceBuffer(context(), out.nbytes() + offset + 1);
          return out.buffer.get() + offset;
        },
        caller_stream());
    EXPECT_EQ(context()->api().cuStreamSynchronize(caller_stream()), CUDA_SUCCESS);
    std::vector<Tensor> got;
    for (const DeviceTensor& t : outputs) got.push_back(download_exact(t, offset));
    return got;
  }

 private:
  Tensor download_exact(const DeviceTensor& t, size_t offset) {
    Tensor host(t.dtype, t.shape);
    if (host.nbytes() > 0) {
      EXPECT_EQ(
          context()->api().cuMemcpyDtoHAsync(host.raw(), t.buffer.get() + offset, host.nbytes(), context()->stream()),
          CUDA_SUCCESS);
    }
    context()->synchronize();
    return host;
  }
  CUstream stream_ = nullptr;
};

TEST_F(DeviceMemoryGpu, OutputsLandWhereTheCallerSays) {
  for (const char* text : {kFusableGraph, kRunTwiceGraph, kPassthroughGraph}) {
    for_each_planner(text, [&](CudaExecutable& exe, const Graph& g) {
      const std::vector<Tensor> inputs = seeded_inputs(g, 7, {});
      EXPECT_EQ(compare_outputs(g, {}, run_at(exe, g, inputs), interpret(g, inputs)), "") << g.name();
      // Again with other values into fresh memory: nothing kept from the first run.
      const std::vector<Tensor> again = seeded_inputs(g, 8, {});
      EXPECT_EQ(compare_outputs(g, {}, run_at(exe, g, again), interpret(g, again)), "") << g.name();
    });
  }
}

TEST_F(DeviceMemoryGpu, AnOutputOverAnInputIsRefused) {
  for_each_planner(kRunTwiceGraph, [&](CudaExecutable& exe, const Graph& g) {
    DeviceTensor x = runtime::cuda::upload(context(), seeded_inputs(g, 1, {})[0]);
    context()->synchronize();
    DeviceBuffer spare(context(), 64 * 32 * sizeof(float));
    try {
      exe.run_at({{x.buffer.get(), DType::f32, {64, 32}}},
                 [&](size_t i, DType, const std::vector<int64_t>&) { return i == 2 ? x.buffer.get() + 4 : spare.get(); },
                 caller_stream());
      ADD_FAILURE() << "an output over the input was accepted";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("output 2 overlaps an input"), std::string::npos) << e.what();
    }
  });
}

TEST_F(DeviceMemoryGpu, ARejectedGatherIndexIsTheInterpretersUserError) {
  for_each_planner(kGatherGraph, [&](CudaExecutable& exe, const Graph& g) {
    Tensor x(DType::f32, {5, 3});
    fill_random(x, 1);
    Tensor bad(DType::i64, {4});
    for (int64_t e = 0; e < 4; ++e) bad.set_i64(e, e == 1 ? 5 : e);
    EXPECT_THROW(interpret(g, {x, bad}), UserError);
    try {
      run_at(exe, g, {x, bad});
      ADD_FAILURE() << "index 5 was accepted";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("out of range for axis 0 of extent 5"), std::string::npos) << e.what();
    }
    Tensor good(DType::i64, {4});
    for (int64_t e = 0; e < 4; ++e) good.set_i64(e, 4 - e);
    EXPECT_EQ(compare_outputs(g, {}, run_at(exe, g, {x, good}), interpret(g, {x, good})), "");
  });
}

// Rows held in registers move 16-byte vectors where every buffer is aligned
// (docs/schedule.md, Rows in registers); a view PyTorch passes by address may
// start anywhere its element may, and the same kernel then takes its other
// copy of the body, one element at a time. Both against the interpreter.
TEST_F(DeviceMemoryGpu, HeldRowsRunRightAtAddressesThatAreNotAligned) {
  for (const char* text : {R"(graph held_f32(x: f32[5, 1024], g: f32[1024]) -> (f32[5, 1024], f32[5, 1024]) {
  y = softmax(x, axis=-1)
  z = rms_norm(x, g, axes=[-1], eps=1e-6)
  return y, z
})",
                           R"(graph held_bf16(x: bf16[5, 1024], g: bf16[1024]) -> (bf16[5, 1024]) {
  y = rms_norm(x, g, axes=[-1], eps=1e-6)
  return y
})"}) {
    for_each_planner(text, [&](CudaExecutable& exe, const Graph& g) {
      const std::vector<Tensor> inputs = seeded_inputs(g, 12, {});
      const std::vector<Tensor> want = interpret(g, inputs);
      for (size_t offset : {0, 4, 8}) {
        SCOPED_TRACE(offset);
        EXPECT_EQ(compare_outputs(g, {}, run_at(exe, g, inputs, offset), want), "") << g.name();
      }
    });
  }
}

// An empty parameter returned as is (its device address may be null) is an
// empty output on both entry points, not a missing one.
TEST_F(DeviceMemoryGpu, AnEmptyParameterReturnedIsAnEmptyOutput) {
  for_each_planner(R"(graph e(x: f32[0, 3], y: f32[4, 3]) -> (f32[0, 3], f32[3], f32[4, 3]) {
  s = reduce_sum(x, axes=[0])
  return x, s, y
})",
                   [&](CudaExecutable& exe, const Graph& g) {
                     const std::vector<Tensor> inputs = seeded_inputs(g, 4, {});
                     EXPECT_EQ(compare_outputs(g, {}, run_at(exe, g, inputs), interpret(g, inputs)), "");
                     EXPECT_EQ(compare_outputs(g, {}, exe.run(inputs), interpret(g, inputs)), "");
                   });
}

// Where neither plan compiled, the interpreter runs on copies of the
// device memory, and its results land where the caller said too.
TEST_F(DeviceMemoryGpu, TheInterpreterFallbackWritesTheCallersMemory) {
  const Graph g = canonicalize(parse_module(kPassthroughGraph).graphs.front());
  ScratchDirectory dir("stitch-device-memory-gpu-test");
  CubinCache cache(dir.path());
  pipeline::CudaCompileOptions options;
  options.warn = [](const std::string&) {};
  options.reject_plan = [](const FusionPlan&) { return true; };
  CudaExecutable exe = pipeline::compile_cuda(g, PlannerKind::Stitch, context(), cache, options);
  ASSERT_EQ(exe.kernel_count(), 0);
  const std::vector<Tensor> inputs = seeded_inputs(g, 9, {});
  EXPECT_EQ(compare_outputs(g, {}, run_at(exe, g, inputs), interpret(g, inputs)), "");
}

// stitch report --run --backend cuda: every step timed between two events,
// summed over the profiled runs, named as the report's kernels are; nothing
// recorded once profiling is off, and the results still right.
TEST_F(DeviceMemoryGpu, StepProfilingTimesEveryLaunchOfTheRunsAskedFor) {
  for_each_planner(kFusableGraph, [&](CudaExecutable& exe, const Graph& g) {
    const std::vector<Tensor> inputs = seeded_inputs(g, 11, {});
    exe.set_step_profiling(true);
    EXPECT_EQ(compare_outputs(g, {}, run_at(exe, g, inputs), interpret(g, inputs)), "");
    EXPECT_EQ(compare_outputs(g, {}, run_at(exe, g, inputs), interpret(g, inputs)), "");
    const std::vector<CudaExecutable::StepTime> times = exe.step_times();
    EXPECT_EQ(exe.profiled_runs(), 2);
    ASSERT_EQ(static_cast<int>(times.size()), exe.kernel_count());
    for (const CudaExecutable::StepTime& t : times) {
      EXPECT_EQ(t.kind, "kernel");
      EXPECT_EQ(t.label.rfind("k_", 0), 0u) << t.label;
      EXPECT_GT(t.seconds, 0) << t.label;
    }
    // Read again: the same sums, nothing pending.
    const std::vector<CudaExecutable::StepTime> again = exe.step_times();
    for (size_t i = 0; i < times.size(); ++i) EXPECT_EQ(again[i].seconds, times[i].seconds);
    exe.set_step_profiling(false);
    EXPECT_EQ(compare_outputs(g, {}, run_at(exe, g, inputs), interpret(g, inputs)), "");
    EXPECT_EQ(exe.profiled_runs(), 0);
  });
}

}  // namespace
}  // namespace stitch::gpu_testing
