// CudaExecutable's behaviour beyond the generated kernels, on the GPU (label
// gpu; the CPU's counterparts are tests/codegen/executable_runtime_test.cpp):
// the cubin cache across cache objects and a corrupted entry, repeated
// run_on_device calls into the same outputs, inputs the interpreter rejects
// (a gather index out of range, argmax over an empty axis), empty tensors,
// graphs that return a parameter or one value twice, a row past the static 48 KiB
// kept in one kernel, a transpose in shared-memory tiles, and the fallback when
// NVRTC rejects the fused plan (pipeline::CudaCompileOptions::reject_plan). Every
// result is compared with the interpreter.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "gpu_context.h"
#include "gpu_differential.h"
#include "gpu_test_graphs.h"
#include "group_fallback_case.h"
#include "ir/canonicalize.h"
#include "pipeline/cuda/cuda_route.h"
#include "runtime/cuda/cuda_executable.h"
#include "stitch/error.h"
#include "stitch/interpreter.h"
#include "stitch/text.h"

namespace stitch::gpu_testing {
namespace {

namespace fs = std::filesystem;
using runtime::cuda::CubinCache;
using pipeline::CudaCompileOptions;
using runtime::cuda::CudaExecutable;
using runtime::cuda::DeviceBuffer;
using runtime::cuda::DeviceTensor;

Graph canonical_graph(const char* text) { return canonicalize(parse_module(text).graphs.front()); }

bool contains(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

const PlannerKind kPlanners[] = {PlannerKind::None, PlannerKind::Xla, PlannerKind::Stitch};

class ExecutableGpu : public GpuTest {
 protected:
  void expect_matches(CudaExecutable& exe, const Graph& g, const SymbolBindings& symbols = {}, uint64_t seed = 5) {
    EXPECT_EQ(check_against_interpreter(exe, g, symbols, seeded_inputs(g, seed, symbols)), "") << g.name();
  }
  std::string arch() const { return context()->device().arch(); }
  // kTwoChains compiled under the stitch planner with `reject` as the seam,
  // then checked against the interpreter; the one warning it gave, with the
  // steps the interpreter runs counted.
  void expect_per_group_fallback(const std::function<bool(const FusionGroup&)>& reject,
                                 const std::string& warned, int interpreted_steps) {
    const Graph g = canonical_graph(testing::kTwoChains);
    ScratchDirectory dir("stitch-executable-gpu-test");
    CubinCache cache(dir.path());
    std::vector<std::string> warnings;
    pipeline::CudaCompileOptions options;
    options.warn = [&](const std::string& w) { warnings.push_back(w); };
    options.reject_group = reject;
    CudaExecutable exe = pipeline::compile_cuda(g, PlannerKind::Stitch, context(), cache, options);
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_TRUE(contains(warnings[0], warned)) << warnings[0];
    EXPECT_TRUE(contains(warnings[0], "reject_group")) << warnings[0];
    EXPECT_EQ(exe.fallback(), warnings[0]);
    EXPECT_EQ(testing::two_chains_plan_problems(g, exe.plan()), "") << print_plan(g, exe.plan());
    int interpreted = 0;
    for (const CudaExecutable::StepTime& t : exe.step_times()) interpreted += t.kind == "interpreter";
    EXPECT_EQ(interpreted, interpreted_steps);
    expect_matches(exe, g);
  }

  // `body(exe)` for `g` compiled under each of kPlanners against one scratch
  // cubin cache, the planner named in the trace.
  template <typename Body>
  void for_each_planner(const Graph& g, Body body) {
    ScratchDirectory dir("stitch-executable-gpu-test");
    CubinCache cache(dir.path());
    for (PlannerKind planner : kPlanners) {
      SCOPED_TRACE(std::string(planner_name(planner)));
      CudaExecutable exe = pipeline::compile_cuda(g, planner, context(), cache);
      body(exe);
    }
  }
};

TEST_F(ExecutableGpu, ASecondCompileInANewCacheObjectOnTheSameDirectoryIsAHit) {
  const Graph g = canonical_graph(kFusableGraph);
  ScratchDirectory dir("stitch-executable-gpu-test");
  std::string source;
  {
    CubinCache first(dir.path());
    CudaExecutable exe = pipeline::compile_cuda(g, PlannerKind::Stitch, context(), first);
    EXPECT_EQ(first.stats().misses, 1);
    EXPECT_EQ(first.stats().hits, 0);
    expect_matches(exe, g);
    source = exe.source();
  }
  CubinCache second(dir.path());
  CudaExecutable again = pipeline::compile_cuda(g, PlannerKind::Stitch, context(), second);
  EXPECT_EQ(again.source(), source);
  EXPECT_EQ(second.stats().hits, 1);
  EXPECT_EQ(second.stats().misses, 0);
  EXPECT_EQ(second.stats().recompiled_corrupt, 0);
  EXPECT_TRUE(again.fallback().empty()) << again.fallback();
  expect_matches(again, g, {}, 6);
}

TEST_F(ExecutableGpu, ACorruptedCubinIsDetectedAndRecompiled) {
  const Graph g = canonical_graph(kFusableGraph);
  ScratchDirectory dir("stitch-executable-gpu-test");
  CubinCache first(dir.path());
  const CudaExecutable exe = pipeline::compile_cuda(g, PlannerKind::Xla, context(), first);
  // PTX on the simulated driver (docs/cuda-sim.md), a cubin on a GPU.
  const runtime::cuda::ModuleImage image = runtime::cuda::module_image_for(context()->api());
  const std::string key = first.key(exe.source(), arch(), image);
  const fs::path cubin = first.cubin_path(key, arch(), image);
  ASSERT_TRUE(fs::exists(cubin)) << cubin;
  ASSERT_TRUE(fs::exists(first.checksum_path(key, arch())));
  const std::string good = read_bytes(cubin);
  ASSERT_FALSE(good.empty());
  {
    // Same size, other bytes: only the checksum can tell.
    std::string bad = good;
    for (size_t i = 0; i < bad.size(); i += 7) bad[i] = static_cast<char>(bad[i] ^ 0x5a);
    std::ofstream out(cubin, std::ios::binary | std::ios::trunc);
    out << bad;
  }
  CubinCache second(dir.path());
  CudaExecutable recompiled = pipeline::compile_cuda(g, PlannerKind::Xla, context(), second);
  EXPECT_EQ(second.stats().recompiled_corrupt, 1);
  EXPECT_EQ(second.stats().hits, 0);
  EXPECT_EQ(second.stats().misses, 0);
  EXPECT_TRUE(recompiled.fallback().empty()) << recompiled.fallback();
  expect_matches(recompiled, g);
  // The entry was replaced by a good one: the next object hits it.
  CubinCache third(dir.path());
  pipeline::compile_cuda(g, PlannerKind::Xla, context(), third);
  EXPECT_EQ(third.stats().hits, 1);
}

TEST_F(ExecutableGpu, RunOnDeviceTwiceWritesTheSameOutputsInPlace) {
  const Graph g = canonical_graph(kRunTwiceGraph);
  for_each_planner(g, [&](CudaExecutable& exe) {
    const std::vector<Tensor> first = seeded_inputs(g, 1, {}), second = seeded_inputs(g, 2, {});
    std::vector<DeviceTensor> outputs;
    auto run = [&](const std::vector<Tensor>& host) {
      DeviceTensor x = runtime::cuda::upload(context(), host[0]);
      exe.run_on_device({&x}, outputs);
      context()->synchronize();  // `host` and `x` die here
    };
    auto download_all = [&] {
      std::vector<Tensor> out;
      for (const DeviceTensor& t : outputs) out.push_back(runtime::cuda::download(*context(), t));
      return out;
    };
    run(first);
    ASSERT_EQ(outputs.size(), 4u);
    EXPECT_EQ(compare_outputs(g, {}, download_all(), interpret(g, first)), "");
    const CUdeviceptr b_data = outputs[0].buffer.get();
    run(second);
    ASSERT_EQ(outputs.size(), 4u);
    // Written in place: same memory, new values; the repeated output is a copy.
    EXPECT_EQ(outputs[0].buffer.get(), b_data);
    EXPECT_NE(outputs[2].buffer.get(), outputs[0].buffer.get());
    EXPECT_EQ(compare_outputs(g, {}, download_all(), interpret(g, second)), "");
    // A wrongly shaped tensor in the outputs is replaced, not written past;
    // a missing one is made.
    outputs[1] = DeviceTensor{DType::f32, {3}, DeviceBuffer(context(), 3 * sizeof(float))};
    outputs.pop_back();
    run(first);
    ASSERT_EQ(outputs.size(), 4u);
    EXPECT_EQ(outputs[1].shape, std::vector<int64_t>{64});
    EXPECT_EQ(compare_outputs(g, {}, download_all(), interpret(g, first)), "");
  });
}

// An output given as the input too: the kernels' pointers are __restrict__,
// so the output is replaced rather than written over the values the kernels
// read, and the result is that of the input's old values.
TEST_F(ExecutableGpu, AnOutputThatIsAlsoTheInputIsReplaced) {
  const Graph g = canonical_graph(kRunTwiceGraph);
  for_each_planner(g, [&](CudaExecutable& exe) {
    DeviceTensor x = runtime::cuda::upload(context(), seeded_inputs(g, 3, {})[0]);
    std::vector<DeviceTensor> outputs;
    exe.run_on_device({&x}, outputs);
    ASSERT_EQ(outputs.size(), 4u);
    const Tensor b = runtime::cuda::download(*context(), outputs[0]);  // f32[64, 32], as x
    const CUdeviceptr b_data = outputs[0].buffer.get();
    exe.run_on_device({&outputs[0]}, outputs);
    context()->synchronize();
    EXPECT_NE(outputs[0].buffer.get(), b_data);
    std::vector<Tensor> got;
    for (const DeviceTensor& t : outputs) got.push_back(runtime::cuda::download(*context(), t));
    EXPECT_EQ(compare_outputs(g, {}, got, interpret(g, {b})), "");
  });
}

// A row of 64 KiB is over the static 48 KiB a block holds but within what the
// device lets a row cache take (half the opt-in maximum): the stitch planner
// keeps LayerNorm in one kernel on the device rather than splitting it at planning.
TEST_F(ExecutableGpu, ARowPastTheStaticSharedMemoryIsOneKernelOnTheDevice) {
  const Graph g = canonical_graph(
      "graph ln(x: f32[3, 16384], gamma: f32[16384], beta: f32[16384]) -> (f32[3, 16384]) {\n"
      "  y = layer_norm(x, gamma, beta, axes=[-1], eps=1e-5)\n  return y\n}\n");
  ScratchDirectory dir("stitch-executable-gpu-test");
  CubinCache cache(dir.path());
  CudaExecutable exe = pipeline::compile_cuda(g, PlannerKind::Stitch, context(), cache);
  ASSERT_TRUE(exe.fallback().empty()) << exe.fallback();
  EXPECT_EQ(exe.plan().groups.size(), 1u);
  expect_matches(exe, g);
}

// A transpose whose squares fit 32 x 32 runs as the GPU's transpose tiles (one
// warp a block, the tile read back along its columns), under every planner.
TEST_F(ExecutableGpu, ATransposeOfWholeSquaresRunsInSharedMemoryTiles) {
  const Graph g = canonical_graph(
      "graph t(a: f32[96, 64], b: f32[64, 96]) -> (f32[64, 96]) {\n"
      "  y = add(transpose(a, perm=[1, 0]), b)\n  return y\n}\n");
  for_each_planner(g, [&](CudaExecutable& exe) {
    ASSERT_TRUE(exe.fallback().empty()) << exe.fallback();
    expect_matches(exe, g);
  });
  ScratchDirectory dir("stitch-executable-gpu-test");
  CubinCache cache(dir.path());
  CudaExecutable exe = pipeline::compile_cuda(g, PlannerKind::Stitch, context(), cache);
  EXPECT_TRUE(contains(exe.source(), "__launch_bounds__(32)")) << exe.source();
  EXPECT_TRUE(contains(exe.source(), "* 33) + j)]")) << exe.source();
}

TEST_F(ExecutableGpu, OutOfRangeGatherIndexIsTheInterpretersUserError) {
  const Graph g = canonical_graph(kGatherGraph);
  for_each_planner(g, [&](CudaExecutable& exe) {
    Tensor x(DType::f32, {5, 3});
    fill_random(x, 1);
    auto indices = [](std::vector<int64_t> values) {
      Tensor t(DType::i64, {4});
      for (int64_t e = 0; e < 4; ++e) t.set_i64(e, values[static_cast<size_t>(e)]);
      return t;
    };
    const std::vector<Tensor> good = {x, indices({0, -5, 4, -1})};
    EXPECT_EQ(compare_outputs(g, {}, exe.run(good), interpret(g, good)), "");
    for (int64_t bad_index : {int64_t{5}, int64_t{-6}, int64_t{1} << 40}) {
      const std::vector<Tensor> bad = {x, indices({0, bad_index, 1, 2})};
      EXPECT_THROW(interpret(g, bad), UserError);
      try {
        exe.run(bad);
        ADD_FAILURE() << "index " << bad_index << " was accepted";
      } catch (const UserError& e) {
        EXPECT_TRUE(contains(e.what(), "out of range for axis 0 of extent 5")) << e.what();
      }
    }
    // The executable is still usable after a rejected input.
    EXPECT_EQ(compare_outputs(g, {}, exe.run(good), interpret(g, good)), "");
  });
}

TEST_F(ExecutableGpu, ArgmaxOverAnAxisEmptyAtRunTimeIsTheInterpretersUserError) {
  const Graph g = canonical_graph(kArgmaxGraph);
  for_each_planner(g, [&](CudaExecutable& exe) {
    const std::vector<Tensor> empty = seeded_inputs(g, 1, {{"N", 0}});
    EXPECT_EQ(testing::rejects_like_interpreter([&] { interpret(g, empty); }, [&] { exe.run(empty); }), "");
    expect_matches(exe, g, {{"N", 5}});
    expect_matches(exe, g, {{"N", 40}});
  });
}

TEST_F(ExecutableGpu, EmptyTensorsFromSymbolsBoundToZero) {
  const Graph g = canonical_graph(kEmptiesGraph);
  for_each_planner(g, [&](CudaExecutable& exe) {
    for (const SymbolBindings& symbols : std::vector<SymbolBindings>{
             {{"B", 0}, {"N", 0}}, {{"B", 0}, {"N", 5}}, {{"B", 3}, {"N", 0}}, {{"B", 70}, {"N", 33}}}) {
      expect_matches(exe, g, symbols);
    }
  });
}

TEST_F(ExecutableGpu, ReturnsAParameterAndTheSameValueTwice) {
  const Graph g = canonical_graph(kPassthroughGraph);
  for_each_planner(g, [&](CudaExecutable& exe) {
    const std::vector<Tensor> inputs = seeded_inputs(g, 3, {});
    expect_matches(exe, g);
    // Returned parameters are copies, never the input's own memory.
    DeviceTensor x = runtime::cuda::upload(context(), inputs[0]);
    DeviceTensor y = runtime::cuda::upload(context(), inputs[1]);
    std::vector<DeviceTensor> outputs;
    exe.run_on_device({&x, &y}, outputs);
    ASSERT_EQ(outputs.size(), 6u);
    EXPECT_NE(outputs[0].buffer.get(), x.buffer.get());
    EXPECT_NE(outputs[5].buffer.get(), x.buffer.get());
    EXPECT_NE(outputs[0].buffer.get(), outputs[5].buffer.get());
    EXPECT_NE(outputs[3].buffer.get(), y.buffer.get());
    EXPECT_NE(outputs[1].buffer.get(), outputs[2].buffer.get());
    std::vector<Tensor> got;
    for (const DeviceTensor& t : outputs) got.push_back(runtime::cuda::download(*context(), t));
    EXPECT_EQ(compare_outputs(g, {}, got, interpret(g, inputs)), "");
  });
}

TEST_F(ExecutableGpu, RejectedFusedPlanFallsBackToTheUnfusedPlanLoudly) {
  const Graph g = canonical_graph(kFusableGraph);
  ScratchDirectory dir("stitch-executable-gpu-test");
  CubinCache cache(dir.path());
  for (PlannerKind planner : {PlannerKind::Xla, PlannerKind::Stitch}) {
    SCOPED_TRACE(std::string(planner_name(planner)));
    std::vector<std::string> warnings;
    pipeline::CudaCompileOptions options;
    options.warn = [&](const std::string& w) { warnings.push_back(w); };
    options.reject_plan = [](const FusionPlan& p) { return p.planner != "none"; };
    CudaExecutable exe = pipeline::compile_cuda(g, planner, context(), cache, options);
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_TRUE(contains(warnings[0], "falling back to the unfused plan")) << warnings[0];
    EXPECT_TRUE(contains(warnings[0], "reject_plan")) << warnings[0];
    EXPECT_EQ(exe.fallback(), warnings[0]);
    EXPECT_EQ(exe.plan().planner, "none");
    EXPECT_GT(exe.kernel_count(), 0);
    expect_matches(exe, g);
  }
}

// One group that NVRTC rejects (the seam) falls back alone: its ops run as one
// kernel each, the other group keeps its fused kernel, and the warning names
// the group.
TEST_F(ExecutableGpu, ARejectedGroupFallsBackAloneLoudly) {
  const Graph g = canonical_graph(testing::kTwoChains);
  expect_per_group_fallback(testing::rejects_the_fused_exp(g), "did not compile alone (2 builds to find it)", 0);
}

// When the unfused exp does not compile even alone, the interpreter runs that op.
TEST_F(ExecutableGpu, AnOpThatDoesNotCompileAloneRunsOnTheInterpreter) {
  const Graph g = canonical_graph(testing::kTwoChains);
  expect_per_group_fallback(testing::rejects_every_exp(g),
                            "of its ops, b = exp(a) did not compile even alone (4 builds to find it)", 1);
}

TEST_F(ExecutableGpu, BothPlansRejectedRunsTheInterpreter) {
  const Graph g = canonical_graph(kFusableGraph);
  ScratchDirectory dir("stitch-executable-gpu-test");
  CubinCache cache(dir.path());
  for (PlannerKind planner : kPlanners) {
    SCOPED_TRACE(std::string(planner_name(planner)));
    std::vector<std::string> warnings;
    pipeline::CudaCompileOptions options;
    options.warn = [&](const std::string& w) { warnings.push_back(w); };
    options.reject_plan = [](const FusionPlan&) { return true; };
    CudaExecutable exe = pipeline::compile_cuda(g, planner, context(), cache, options);
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_TRUE(contains(warnings[0], "reference interpreter")) << warnings[0];
    if (planner != PlannerKind::None) {
      EXPECT_TRUE(contains(warnings[0], "the unfused plan failed too")) << warnings[0];
    }
    EXPECT_EQ(exe.fallback(), warnings[0]);
    EXPECT_EQ(exe.kernel_count(), 0);
    EXPECT_EQ(cache.stats().misses + cache.stats().hits, 0) << "NVRTC ran for a rejected plan";
    expect_matches(exe, g);
    // The device entry point takes the same path.
    const std::vector<Tensor> inputs = seeded_inputs(g, 8, {});
    DeviceTensor x = runtime::cuda::upload(context(), inputs[0]);
    DeviceTensor y = runtime::cuda::upload(context(), inputs[1]);
    std::vector<DeviceTensor> outputs;
    exe.run_on_device({&x, &y}, outputs);
    std::vector<Tensor> got;
    for (const DeviceTensor& t : outputs) got.push_back(runtime::cuda::download(*context(), t));
    EXPECT_EQ(compare_outputs(g, {}, got, interpret(g, inputs)), "");
  }
}

}  // namespace
}  // namespace stitch::gpu_testing
