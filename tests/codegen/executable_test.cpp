// CpuExecutable end to end: plan, lower, one translation unit through a
// KernelCache, run with pooled intermediates, compare with the interpreter.
// Each graph x planner compiles once per test run (compiles are slow) into a
// cache in a fresh temporary directory.
//
// Tolerances follow tests/lower/loop_lowering_test.cpp (docs/semantics.md,
// "What back ends may differ in"): exact without transcendentals or float
// reductions; else (32 if transcendental) + 4 * n ulps of (1 + |want|), n the
// longest float reduction, since kernels accumulate in f32 in their own order.
#include <cstdint>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <unistd.h>

#include "ir/canonicalize.h"
#include "pipeline/cpu_route.h"
#include "runtime/cpu/executable.h"
#include "stitch/error.h"
#include "stitch/interpreter.h"
#include "stitch/text.h"
#include "tensor_compare.h"

namespace stitch::runtime::cpu {
namespace {

namespace fs = std::filesystem;

struct Case {
  Graph source;
  bool transcendental = false;
  int64_t reduction_length = 0;
};

Graph workload(const std::string& stem) {
  Module m = parse_file(std::string(STITCH_SOURCE_DIR) + "/bench/workloads/" + stem + ".stitch");
  const Graph* g = m.find(stem + "_small");
  if (!g) throw std::runtime_error("no graph " + stem + "_small");
  return *g;
}

// A chain of operator-at-a-time kernels where early values die early, one
// (a1) lives to the end and the sizes change (reduction, broadcast back), so
// the pool both reuses and must not reuse buffers.
const char* const kChain = R"(graph long_chain(x: f32[64, 50]) -> (f32[64, 50], f32[64, 1]) {
  a1 = add(x, 1.0)
  a2 = mul(a1, 2.0)
  a3 = sub(a2, x)
  a4 = mul(a3, a3)
  s = reduce_max(a4, axes=[1], keepdims=true)
  sb = broadcast(s, shape=[64, 50])
  a5 = sub(a4, sb)
  a6 = add(a5, a1)
  a7 = mul(a6, 0.5)
  a8 = add(a7, a2)
  a9 = sub(a8, a3)
  return a9, s
})";

int64_t longest_float_reduction(const Graph& g) {
  int64_t longest = 0;
  for (const Node& n : g.nodes()) {
    if (!is_reduction(n.op) || !is_float(g.type(n.inputs[0]).dtype)) continue;
    int64_t len = 1;
    for (int64_t d : concrete_shape(g.type(n.inputs[0]).shape, {})) len *= d;
    for (int64_t d : concrete_shape(g.type(n.output).shape, {})) len /= std::max<int64_t>(d, 1);
    longest = std::max(longest, len);
  }
  return longest;
}

std::map<std::string, Case> build_cases() {
  std::map<std::string, Case> cases;
  auto add = [&](Graph g, bool transcendental) {
    Case c;
    c.reduction_length = longest_float_reduction(g);
    c.transcendental = transcendental;
    std::string name = g.name();
    c.source = std::move(g);
    cases.emplace(name, std::move(c));
  };
  for (const char* stem : {"softmax", "layernorm", "swish", "bias_gelu"}) add(workload(stem), true);
  for (const char* stem : {"column_reduce_sub", "transpose_add", "babelstream_triad"}) add(workload(stem), false);
  add(parse_module(kChain).graphs.front(), false);
  return cases;
}

std::vector<Tensor> random_inputs(const Graph& g, uint64_t seed) {
  std::vector<Tensor> inputs;
  for (ValueId p : g.params()) {
    Tensor t(g.type(p).dtype, concrete_shape(g.type(p).shape, {}));
    fill_random(t, seed++);
    inputs.push_back(std::move(t));
  }
  return inputs;
}


class Executable : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cache_dir_ = fs::temp_directory_path() / ("stitch_executable_test_" + std::to_string(::getpid()));
    fs::remove_all(cache_dir_);
    cache_ = std::make_unique<KernelCache>(cache_dir_);
    cases_ = std::make_unique<std::map<std::string, Case>>(build_cases());
    executables_ = std::make_unique<std::map<std::pair<std::string, PlannerKind>, CpuExecutable>>();
  }
  static void TearDownTestSuite() {
    executables_.reset();
    cases_.reset();
    cache_.reset();
    fs::remove_all(cache_dir_);
  }

  // Compiled on first use, then shared by every test of the run.
  static CpuExecutable& executable(const std::string& name, PlannerKind planner) {
    auto key = std::make_pair(name, planner);
    auto it = executables_->find(key);
    if (it == executables_->end()) {
      Graph canonical = canonicalize(cases_->at(name).source);
      it = executables_->emplace(key, pipeline::compile_cpu(canonical, planner, *cache_)).first;
    }
    return it->second;
  }

  static void expect_matches_interpreter(const std::string& name, PlannerKind planner, uint64_t seed) {
    SCOPED_TRACE(name + " / " + std::string(planner_name(planner)));
    const Case& c = cases_->at(name);
    std::vector<Tensor> inputs = random_inputs(c.source, seed);
    std::vector<Tensor> want = interpret(c.source, inputs);
    std::vector<Tensor> got = executable(name, planner).run(inputs);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_TRUE(testing::matches_interpreter(got[i], want[i], c.transcendental, c.reduction_length)) << "output " << i;
    }
  }

  static fs::path cache_dir_;
  static std::unique_ptr<KernelCache> cache_;
  static std::unique_ptr<std::map<std::string, Case>> cases_;
  static std::unique_ptr<std::map<std::pair<std::string, PlannerKind>, CpuExecutable>> executables_;
};

fs::path Executable::cache_dir_;
std::unique_ptr<KernelCache> Executable::cache_;
std::unique_ptr<std::map<std::string, Case>> Executable::cases_;
std::unique_ptr<std::map<std::pair<std::string, PlannerKind>, CpuExecutable>> Executable::executables_;

TEST_F(Executable, WorkloadsMatchInterpreterUnderNoneAndXla) {
  for (const char* name : {"softmax_small", "layernorm_small", "swish_small", "bias_gelu_small",
                           "column_reduce_sub_small", "transpose_add_small", "babelstream_triad_small"}) {
    for (PlannerKind planner : {PlannerKind::None, PlannerKind::Xla}) {
      expect_matches_interpreter(name, planner, 7);
      CpuExecutable& exe = executable(name, planner);
      EXPECT_GE(exe.kernel_count(), 1) << name;
      EXPECT_EQ(exe.kernel_count(), static_cast<int>(exe.plan().groups.size())) << name;
      // Under none every op is its own kernel, so every multi-op workload has
      // intermediates; under xla a single-kernel graph has none.
      if (planner == PlannerKind::None && exe.intermediate_value_count() > 0) {
        EXPECT_GT(exe.peak_intermediate_bytes(), 0) << name;
      }
    }
  }
}

TEST_F(Executable, FewerKernelsUnderXlaThanNone) {
  EXPECT_LT(executable("softmax_small", PlannerKind::Xla).kernel_count(),
            executable("softmax_small", PlannerKind::None).kernel_count());
  EXPECT_LT(executable("bias_gelu_small", PlannerKind::Xla).kernel_count(),
            executable("bias_gelu_small", PlannerKind::None).kernel_count());
}

TEST_F(Executable, ReusedBuffersDoNotCorruptALongChain) {
  // Two input sets through the same executable: reuse within a run and a
  // fresh pool per run must both leave the results exact.
  expect_matches_interpreter("long_chain", PlannerKind::None, 3);
  expect_matches_interpreter("long_chain", PlannerKind::None, 11);
  CpuExecutable& exe = executable("long_chain", PlannerKind::None);
  EXPECT_GT(exe.intermediate_value_count(), 5);
  EXPECT_LT(exe.intermediate_buffer_count(), exe.intermediate_value_count());
  // Liveness bounds the pool well below one buffer per intermediate.
  int64_t full = 64 * 50 * 4;
  EXPECT_GT(exe.peak_intermediate_bytes(), 0);
  EXPECT_LT(exe.peak_intermediate_bytes(), exe.intermediate_value_count() * full);
  expect_matches_interpreter("long_chain", PlannerKind::Xla, 3);
}

TEST_F(Executable, SecondCompileOfTheSameGraphHitsTheMemoryLevel) {
  Graph canonical = canonicalize(cases_->at("swish_small").source);
  CpuExecutable first = pipeline::compile_cpu(canonical, PlannerKind::Xla, *cache_);
  CpuExecutable second = pipeline::compile_cpu(canonical, PlannerKind::Xla, *cache_);
  EXPECT_EQ(second.cache_stats().memory_hits, 1);
  EXPECT_EQ(second.cache_stats().hits, 0);
  EXPECT_EQ(second.cache_stats().misses, 0);
  EXPECT_EQ(first.source(), second.source());
  // A fresh cache object on the same directory has no memory level yet: it
  // loads the shared object from disk without running the compiler.
  KernelCache other(cache_dir_);
  CpuExecutable third = pipeline::compile_cpu(canonical, PlannerKind::Xla, other);
  EXPECT_EQ(third.cache_stats().memory_hits, 0);
  EXPECT_EQ(third.cache_stats().hits, 1);
  EXPECT_EQ(third.cache_stats().misses, 0);
}

// Prefetch changes the generated code, not the values: the memory level
// keeps a graph compiled with it apart from one compiled without.
TEST_F(Executable, PrefetchSettingsAreDifferentMemoryEntries) {
  Graph canonical = canonicalize(cases_->at("swish_small").source);
  CpuExecutable with = pipeline::compile_cpu(canonical, PlannerKind::Xla, *cache_);
  pipeline::CpuCompileOptions off;
  off.rows.prefetch = false;
  CpuExecutable without = pipeline::compile_cpu(canonical, PlannerKind::Xla, *cache_, off);
  EXPECT_EQ(without.cache_stats().memory_hits, 0);
  EXPECT_NE(with.source(), without.source());
  EXPECT_EQ(without.source().find("stitch_prefetch(in_"), std::string::npos);
}

TEST_F(Executable, WrongInputsAreUserErrors) {
  CpuExecutable& exe = executable("swish_small", PlannerKind::Xla);
  EXPECT_THROW(exe.run({Tensor(DType::f32, {10})}), UserError);
  EXPECT_THROW(exe.run({}), UserError);
}

}  // namespace
}  // namespace stitch::runtime::cpu
