// The public library API (include/stitch/runtime.h) as a consumer uses it:
// only public headers, linked against libstitch.so.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "stitch/stitch.h"

namespace stitch {
namespace {

namespace fs = std::filesystem;

const char* const kGraphs = R"(
graph layernorm_small(x: f32[37, 100], gamma: f32[100], beta: f32[100]) -> (f32[37, 100]) {
  y = layer_norm(x, gamma, beta, axes=[-1], eps=1e-5)
  return y
}
graph passthrough(x: f32[N, 8], y: f32[N, 8]) -> (f32[N, 8], f32[N, 8], f32[N, 8], f32[N, 8]) {
  s = add(x, y)
  return s, x, s, y
}
graph softmax_residual(x: f32[16, 300], r: f32[16, 300]) -> (f32[16, 300], f32[16, 300]) {
  s = add(x, r)
  y = softmax(s, axis=-1)
  return y, s
}
)";

Graph graph_named(const std::string& name) {
  static const Module m = parse_module(kGraphs, "api_test");
  return *m.find(name);
}

std::vector<Tensor> random_inputs(const Graph& g) {
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < g.params().size(); ++i) {
    std::vector<int64_t> shape;
    for (const Dim& d : g.type(g.params()[i]).shape) shape.push_back(d.extent());
    inputs.emplace_back(g.type(g.params()[i]).dtype, shape);
    fill_random(inputs.back(), 100 + i);
  }
  return inputs;
}

// f32 kernels against the interpreter's f64 sums of at most 300 terms of
// values in [-4, 4) (docs/semantics.md): far below 1e-4 relative.
void expect_close(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t t = 0; t < got.size(); ++t) {
    ASSERT_EQ(got[t].dtype(), want[t].dtype());
    ASSERT_EQ(got[t].shape(), want[t].shape());
    for (int64_t i = 0; i < got[t].numel(); ++i) {
      const double a = got[t].get_f64(i), b = want[t].get_f64(i);
      ASSERT_LE(std::abs(a - b), 1e-4 * (1 + std::abs(b))) << "output " << t << " element " << i;
    }
  }
}

// A fresh directory per test, removed after it.
class ApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "stitch-api-test-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

class ApiPlannerTest : public ::testing::TestWithParam<const char*> {};

TEST_P(ApiPlannerTest, CompiledRunMatchesTheInterpreter) {
  for (const char* name : {"layernorm_small", "softmax_residual"}) {
    SCOPED_TRACE(name);
    const Graph g = graph_named(name);
    CompileOptions options;
    options.planner = GetParam();
    Executable exe = Executable::compile(g, options);
    EXPECT_EQ(exe.backend(), Backend::Cpu);
    EXPECT_EQ(exe.planner(), GetParam());
    EXPECT_GE(exe.kernel_count(), 1);
    EXPECT_EQ(exe.fallback(), "");
    EXPECT_NE(exe.plan_text().find("group 0"), std::string::npos) << exe.plan_text();
    const std::vector<Tensor> inputs = random_inputs(g);
    expect_close(exe.run(inputs), interpret(g, inputs));
  }
}

INSTANTIATE_TEST_SUITE_P(Planners, ApiPlannerTest, ::testing::Values("none", "xla", "stitch", "ilp", "greedy"),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

TEST(ApiFusion, StitchFusesWhatXlaSplits) {
  const Graph g = graph_named("layernorm_small");
  CompileOptions xla;
  xla.planner = "xla";
  CompileOptions stitch;
  stitch.planner = "stitch";
  EXPECT_LT(Executable::compile(g, stitch).kernel_count(), Executable::compile(g, xla).kernel_count());
}

// CompileOptions::f32_intermediates (docs/semantics.md): bf16 values computed
// in f32 between ops. x + 1000 - 1000 keeps x exactly in f32 and rounds it to a
// multiple of 4 in bf16, so the two choices are told apart by far more than a
// rounding; each matches the interpreter of the graph it stands for within
// one bf16 ulp (the kernels' exp is f32's, the interpreter's double's).
TEST(ApiNumerics, F32IntermediatesRoundOnlyWhereTheGraphHandsValuesOn) {
  const Module m = parse_module(R"(
graph written(x: bf16[64, 50]) -> (bf16[64, 50]) {
  y = softmax(sub(add(x, 1000.0), 1000.0), axis=-1)
  return y
}
graph widened(x: bf16[64, 50]) -> (bf16[64, 50]) {
  xf = cast(x, to=f32)
  y = cast(softmax(sub(add(xf, 1000.0), 1000.0), axis=-1), to=bf16)
  return y
}
)", "api_test");
  const Graph written = *m.find("written");
  const std::vector<Tensor> inputs = random_inputs(written);
  auto within_an_ulp = [](const Tensor& got, const Tensor& want) {
    for (int64_t i = 0; i < got.numel(); ++i) {
      const double a = got.get_f64(i), b = want.get_f64(i);
      if (std::abs(a - b) > std::ldexp(std::abs(b), -7) + 1e-30) return false;
    }
    return true;
  };
  CompileOptions options;
  const Tensor rounded = Executable::compile(written, options).run(inputs)[0];
  options.f32_intermediates = true;
  const Tensor wide = Executable::compile(written, options).run(inputs)[0];
  EXPECT_TRUE(within_an_ulp(rounded, interpret(written, inputs)[0]));
  EXPECT_TRUE(within_an_ulp(wide, interpret(*m.find("widened"), inputs)[0]));
  EXPECT_FALSE(within_an_ulp(wide, rounded));
}

TEST(ApiRun, WritesIntoGivenOutputsInPlace) {
  const Graph g = graph_named("softmax_residual");
  Executable exe = Executable::compile(g);
  const std::vector<Tensor> inputs = random_inputs(g);
  std::vector<Tensor> outputs;
  exe.run(inputs, outputs);
  expect_close(outputs, interpret(g, inputs));
  const std::byte* storage = outputs[0].raw();
  exe.run(inputs, outputs);
  EXPECT_EQ(outputs[0].raw(), storage);
}

// run_into on caller-owned memory: inputs read in place, each output
// written where the callback says, a parameter returned and a value returned
// twice copied into their own places.
TEST(ApiRun, RunIntoWritesTheCallersMemory) {
  for (const char* name : {"softmax_residual", "passthrough"}) {
    SCOPED_TRACE(name);
    Graph g = graph_named(name);
    Executable exe = Executable::compile(g);
    std::vector<Tensor> inputs = name == std::string("passthrough")
                                     ? std::vector<Tensor>{Tensor(DType::f32, {5, 8}), Tensor(DType::f32, {5, 8})}
                                     : random_inputs(g);
    for (size_t i = 0; i < inputs.size(); ++i) fill_random(inputs[i], 7 + i);
    std::vector<ArrayView> views;
    for (Tensor& t : inputs) views.push_back(ArrayView::of(t));
    std::vector<Tensor> mine(g.outputs().size());
    std::vector<int> asked(g.outputs().size(), 0);
    exe.run_into(views, [&](size_t i, DType dtype, const std::vector<int64_t>& shape) {
      ++asked.at(i);
      mine[i] = Tensor::uninitialized(dtype, shape);
      return mine[i].raw();
    });
    for (int n : asked) EXPECT_EQ(n, 1);
    expect_close(mine, interpret(g, inputs));
  }
}

// A zero-element parameter returned as an output has no address to copy
// from; its output is still asked for and given its dtype and shape.
TEST(ApiRun, AZeroElementParameterReturnedIsStillAnOutput) {
  const Graph g = parse_module("graph g(y: i32[0]) -> (i32[0]) {\n  return y\n}\n", "api_test").graphs.front();
  Executable exe = Executable::compile(g);
  const std::vector<Tensor> outputs = exe.run({Tensor(DType::i32, {0})});
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].dtype(), DType::i32);
  EXPECT_EQ(outputs[0].shape(), std::vector<int64_t>{0});
}

TEST(ApiRun, RunIntoPassesTheCallbacksError) {
  const Graph g = graph_named("layernorm_small");
  Executable exe = Executable::compile(g);
  std::vector<Tensor> inputs = random_inputs(g);
  std::vector<ArrayView> views;
  for (Tensor& t : inputs) views.push_back(ArrayView::of(t));
  EXPECT_THROW(exe.run_into(views, [](size_t, DType, const std::vector<int64_t>&) -> std::byte* {
                 throw UserError("no memory for it");
               }),
               UserError);
  views.pop_back();
  EXPECT_THROW(exe.run_into(views, [](size_t, DType, const std::vector<int64_t>&) -> std::byte* { return nullptr; }),
               UserError);
}

TEST(ApiRun, MovedExecutableStillRuns) {
  const Graph g = graph_named("layernorm_small");
  Executable first = Executable::compile(g);
  Executable moved = std::move(first);
  const std::vector<Tensor> inputs = random_inputs(g);
  expect_close(moved.run(inputs), interpret(g, inputs));
}

TEST(ApiErrors, UnknownPlannerIsAUserError) {
  CompileOptions options;
  options.planner = "fuse-everything";
  try {
    Executable::compile(graph_named("layernorm_small"), options);
    FAIL() << "no UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown planner 'fuse-everything'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("none, xla, stitch, ilp, greedy"), std::string::npos) << e.what();
  }
}

TEST(ApiErrors, UnknownBackendIsAUserError) {
  CompileOptions options;
  options.backend = static_cast<Backend>(7);
  EXPECT_THROW(Executable::compile(graph_named("layernorm_small"), options), UserError);
}

TEST(ApiErrors, WrongInputsAreUserErrors) {
  const Graph g = graph_named("layernorm_small");
  Executable exe = Executable::compile(g);
  std::vector<Tensor> inputs = random_inputs(g);
  inputs[0] = Tensor(DType::f32, {37, 99});
  try {
    exe.run(inputs);
    FAIL() << "no UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("'x'"), std::string::npos) << e.what();
  }
  inputs[0] = Tensor(DType::f16, {37, 100});
  EXPECT_THROW(exe.run(inputs), UserError);
  inputs.pop_back();
  EXPECT_THROW(exe.run(inputs), UserError);
}

TEST(ApiCuda, WithoutAGpuCompilingForCudaIsAUserError) {
  if (cuda_available()) GTEST_SKIP() << "this machine has a usable GPU";
  CompileOptions options;
  options.backend = Backend::Cuda;
  try {
    Executable::compile(graph_named("layernorm_small"), options);
    FAIL() << "no UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("Backend::Cuda is not available"), std::string::npos) << e.what();
  }
}

TEST_F(ApiTest, SecondCompileOfAnEqualGraphIsAMemoryHit) {
  CompileOptions options;
  options.cache_dir = dir_.string();
  const Graph g = graph_named("softmax_residual");
  Executable first = Executable::compile(g, options);
  EXPECT_EQ(first.cache_stats().memory_hits, 0);
  EXPECT_EQ(first.cache_stats().misses, 1);
  EXPECT_TRUE(fs::exists(dir_ / "cpu")) << "kernels stored elsewhere than cache_dir";

  // Another spelling of the same directory shares the process's cache.
  options.cache_dir = (dir_ / "." / "").string();
  Executable second = Executable::compile(g, options);
  EXPECT_EQ(second.cache_stats().memory_hits, 1);
  EXPECT_EQ(second.cache_stats().misses, 0);
  const std::vector<Tensor> inputs = random_inputs(g);
  expect_close(second.run(inputs), interpret(g, inputs));
}

TEST_F(ApiTest, AnotherDirectoryHasItsOwnCache) {
  const Graph g = graph_named("layernorm_small");
  CompileOptions options;
  options.cache_dir = (dir_ / "a").string();
  EXPECT_EQ(Executable::compile(g, options).cache_stats().misses, 1);
  options.cache_dir = (dir_ / "b").string();
  const CacheStats stats = Executable::compile(g, options).cache_stats();
  EXPECT_EQ(stats.memory_hits, 0);
  EXPECT_EQ(stats.misses, 1);
}

TEST_F(ApiTest, TuningKeepsItsChoicesBesideTheKernels) {
  CompileOptions options;
  options.cache_dir = dir_.string();
  options.tune = true;
  const Graph g = graph_named("softmax_residual");
  Executable exe = Executable::compile(g, options);
  EXPECT_TRUE(fs::exists(dir_ / "tuning"));
  const std::vector<Tensor> inputs = random_inputs(g);
  expect_close(exe.run(inputs), interpret(g, inputs));
  // Untuned, the same graph is another entry of the in-memory level.
  options.tune = false;
  EXPECT_EQ(Executable::compile(g, options).cache_stats().memory_hits, 0);
}

TEST(ApiInfo, VersionAndBackendNames) {
  EXPECT_EQ(version(), "0.1.0");
  EXPECT_EQ(backend_name(Backend::Cpu), "cpu");
  EXPECT_EQ(backend_name(Backend::Cuda), "cuda");
}

}  // namespace
}  // namespace stitch
