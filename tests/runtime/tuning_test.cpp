// Execution-based tuning (docs/tuning.md): the tuner measures every
// candidate schedule of a group, keeps the fastest, and caches the choice on
// disk: a second tuner over the same directory measures nothing (hit); an
// entry made for other candidates or another compiler is measured again
// (stale); an entry that does not parse is measured again and rewritten
// (corrupt). The executable follows the tuned schedule, and its results match
// the interpreter.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "ir/canonicalize.h"
#include "pipeline/schedule_groups.h"
#include "pipeline/cpu_route.h"
#include "runtime/cpu/executable.h"
#include "stitch/interpreter.h"
#include "stitch/text.h"
#include "random_graph.h"
#include "tensor_compare.h"
#include "tune/fusion_tuner.h"
#include "tune/group_graph.h"
#include "tune/schedule_tuner.h"

namespace stitch::tune {
namespace {

namespace fs = std::filesystem;
using schedule::GroupSchedule;
using schedule::RowScheduleTarget;

// A stitched softmax (row candidates) and a column reduction (column
// candidates) in two kernels.
const char* kGraph = R"(
graph tuned(x: f32[256, 300], a: f32[200, 64]) -> (f32[256, 300], f32[64]) {
  m = reduce_max(x, axes=[1], keepdims=true)
  e = exp(sub(x, m))
  s = reduce_sum(e, axes=[1], keepdims=true)
  y = div(e, s)
  c = reduce_sum(tanh(a), axes=[0])
  return y, c
}
)";

class Tuning : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("stitch_tuning_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    graph_ = canonicalize(parse_module(kGraph).graphs.front());
    plan_ = plan(graph_, PlannerKind::Stitch);
  }
  void TearDown() override { fs::remove_all(dir_); }

  TuneOptions options() const {
    TuneOptions o;
    o.directory = dir_;
    o.measure.min_runs = 2;
    o.measure.min_seconds = 0.001;
    return o;
  }
  // Entries in the tuning directory.
  std::vector<fs::path> entries() const {
    std::vector<fs::path> out;
    if (fs::exists(dir_)) {
      for (const auto& e : fs::directory_iterator(dir_)) out.push_back(e.path());
    }
    return out;
  }
  static std::string read(const fs::path& p) {
    std::ifstream in(p);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }

  fs::path dir_;
  Graph graph_;
  FusionPlan plan_;
  runtime::cpu::KernelCache kernels_;  // the shared kernel cache: compiles once per test run
};

TEST_F(Tuning, MeasuresOnceThenAnswersFromTheCache) {
  ASSERT_EQ(plan_.groups.size(), 2u) << print_plan(graph_, plan_);
  ScheduleTuner first(kernels_, options());
  const auto chosen = first.choose(graph_, plan_, RowScheduleTarget::cpu());
  EXPECT_EQ(first.stats().groups, 2);
  EXPECT_EQ(first.stats().measured, 2) << first.report();
  EXPECT_EQ(first.stats().hits, 0);
  EXPECT_EQ(first.stats().rejected, 0) << first.report();
  EXPECT_EQ(entries().size(), 2u);
  for (const auto& c : chosen) {
    ASSERT_TRUE(c.has_value());
    EXPECT_NE(c->reason.find("tuned:"), std::string::npos) << c->describe();
  }

  ScheduleTuner second(kernels_, options());
  const auto again = second.choose(graph_, plan_, RowScheduleTarget::cpu());
  EXPECT_EQ(second.stats().hits, 2) << second.report();
  EXPECT_EQ(second.stats().measured, 0);
  ASSERT_EQ(again.size(), chosen.size());
  for (size_t i = 0; i < again.size(); ++i) {
    EXPECT_EQ(*again[i], *chosen[i]);
    EXPECT_EQ(again[i]->reason, chosen[i]->reason);  // the kernels' comments, so their source, alike
  }
}

// A tuned schedule's kernel source is the same whether measured or read back
// from the tuning cache, so a second compile loads the kernels from disk.
TEST_F(Tuning, ASecondTunedCompileLoadsItsKernelsFromTheCache) {
  auto compile = [&](runtime::cpu::KernelCache& kernels, ScheduleTuner& tuner) {
    pipeline::CpuCompileOptions o;
    o.tuner = [&](const Graph& g, const FusionPlan& p, const RowScheduleTarget& t) { return tuner.choose(g, p, t); };
    o.tuner_key = tuner.key();
    return pipeline::compile_cpu(graph_, PlannerKind::Stitch, kernels, o);
  };
  runtime::cpu::KernelCache cold(dir_ / "kernels");
  ScheduleTuner measuring(cold, options());
  compile(cold, measuring);
  EXPECT_EQ(measuring.stats().measured, 2) << measuring.report();
  runtime::cpu::KernelCache warm(dir_ / "kernels");
  ScheduleTuner reading(warm, options());
  runtime::cpu::CpuExecutable exe = compile(warm, reading);
  EXPECT_EQ(reading.stats().hits, 2) << reading.report();
  EXPECT_EQ(exe.cache_stats().misses, 0);
  EXPECT_EQ(exe.cache_stats().hits, 1);
}

// Two groups of one structure share a cache entry, so they are measured
// once and take the same choice; a second run reads that choice back for
// both, and so compiles the same kernels.
TEST_F(Tuning, GroupsOfOneStructureAreMeasuredOnceAndChooseAlike) {
  const Graph g = canonicalize(parse_module(R"(
graph twice(x: f32[64, 300], w: f32[300, 300]) -> (f32[64, 300]) {
  m = reduce_max(x, axes=[1], keepdims=true)
  e = exp(sub(x, m))
  y = div(e, reduce_sum(e, axes=[1], keepdims=true))
  z = dot(y, w)
  m2 = reduce_max(z, axes=[1], keepdims=true)
  e2 = exp(sub(z, m2))
  y2 = div(e2, reduce_sum(e2, axes=[1], keepdims=true))
  return y2
}
)").graphs.front());
  const FusionPlan p = plan(g, PlannerKind::Stitch);
  ASSERT_EQ(p.groups.size(), 3u) << print_plan(g, p);
  ScheduleTuner first(kernels_, options());
  const auto chosen = first.choose(g, p, RowScheduleTarget::cpu());
  EXPECT_EQ(first.stats().groups, 2);
  EXPECT_EQ(first.stats().measured, 2) << first.report();
  EXPECT_NE(first.report().find("(the same structure)"), std::string::npos) << first.report();
  EXPECT_EQ(entries().size(), 1u);
  ASSERT_TRUE(chosen[0] && chosen[2]);
  EXPECT_EQ(chosen[0]->row, chosen[2]->row);
  ScheduleTuner second(kernels_, options());
  const auto again = second.choose(g, p, RowScheduleTarget::cpu());
  EXPECT_EQ(second.stats().hits, 2) << second.report();
  for (size_t i = 0; i < chosen.size(); ++i) {
    ASSERT_EQ(again[i].has_value(), chosen[i].has_value());
    if (chosen[i]) {
      EXPECT_EQ(*again[i], *chosen[i]);
    }
  }
}

TEST_F(Tuning, KeepsTheFastestAndTheExecutableFollowsIt) {
  const std::vector<GroupSchedule> candidates =
      pipeline::schedule_candidates(graph_, plan_.groups[0], RowScheduleTarget::cpu());
  ASSERT_GE(candidates.size(), 3u);
  TuneOptions o = options();
  // Candidate 2 is made the fastest of every group that has one.
  o.adjust_seconds = [](int index, double measured) { return index == 2 ? 1e-9 : measured + 1.0; };
  ScheduleTuner tuner(kernels_, o);
  pipeline::CpuCompileOptions compile;
  compile.tuner = [&](const Graph& g, const FusionPlan& p, const RowScheduleTarget& t) { return tuner.choose(g, p, t); };
  compile.tuner_key = tuner.key() + " test";
  runtime::cpu::CpuExecutable exe = pipeline::compile_cpu(graph_, PlannerKind::Stitch, kernels_,
                                                                        compile);
  EXPECT_GE(tuner.stats().changed, 1) << tuner.report();
  EXPECT_NE(exe.source().find(candidates[2].row.describe()), std::string::npos) << tuner.report();
  const std::vector<Tensor> inputs = stitch::testing::random_inputs(graph_, 3, {});
  EXPECT_TRUE(stitch::testing::outputs_match_interpreter(exe.run(inputs), interpret(graph_, inputs), true, 300));
}

TEST_F(Tuning, StaleEntriesAreMeasuredAgain) {
  ScheduleTuner(kernels_, options()).choose(graph_, plan_, RowScheduleTarget::cpu());
  const std::vector<fs::path> files = entries();
  ASSERT_EQ(files.size(), 2u);
  // As if made for other candidates or by another compiler.
  std::string text = read(files[0]);
  const size_t at = text.find("fingerprint ");
  ASSERT_NE(at, std::string::npos);
  text.replace(at + 12, 8, "00000000");
  std::ofstream(files[0]) << text;

  ScheduleTuner tuner(kernels_, options());
  tuner.choose(graph_, plan_, RowScheduleTarget::cpu());
  EXPECT_EQ(tuner.stats().stale, 1) << tuner.report();
  EXPECT_EQ(tuner.stats().measured, 1);
  EXPECT_EQ(tuner.stats().hits, 1);
  ScheduleTuner after(kernels_, options());
  after.choose(graph_, plan_, RowScheduleTarget::cpu());
  EXPECT_EQ(after.stats().hits, 2) << after.report();
}

TEST_F(Tuning, CorruptEntriesAreMeasuredAgainAndRewritten) {
  ScheduleTuner(kernels_, options()).choose(graph_, plan_, RowScheduleTarget::cpu());
  const std::vector<fs::path> files = entries();
  ASSERT_EQ(files.size(), 2u);
  std::ofstream(files[0]) << "\x7f garbage";
  {
    // A well-formed entry whose choice is no candidate is corrupt too.
    std::string text = read(files[1]);
    const size_t at = text.find("choice ");
    const size_t end = text.find('\n', at);
    text.replace(at, end - at, "choice row no-such-schedule");
    std::ofstream(files[1]) << text;
  }
  ScheduleTuner tuner(kernels_, options());
  const auto chosen = tuner.choose(graph_, plan_, RowScheduleTarget::cpu());
  EXPECT_EQ(tuner.stats().corrupt, 2) << tuner.report();
  EXPECT_EQ(tuner.stats().measured, 2);
  for (const auto& c : chosen) EXPECT_TRUE(c.has_value());
  ScheduleTuner after(kernels_, options());
  after.choose(graph_, plan_, RowScheduleTarget::cpu());
  EXPECT_EQ(after.stats().hits, 2) << after.report();
}

TEST_F(Tuning, SymbolicShapesKeepTheDefault) {
  const Graph g = canonicalize(parse_module(R"(
graph dyn(x: f32[B, 300]) -> (f32[B]) {
  y = reduce_sum(exp(x), axes=[1])
  return y
}
)").graphs.front());
  const FusionPlan p = plan(g, PlannerKind::Stitch);
  ScheduleTuner tuner(kernels_, options());
  const auto chosen = tuner.choose(g, p, RowScheduleTarget::cpu());
  ASSERT_EQ(chosen.size(), 1u);
  EXPECT_FALSE(chosen[0].has_value());
  EXPECT_EQ(tuner.stats().untunable, 1);
  EXPECT_TRUE(entries().empty());
}

TEST(TuningEnvironment, AcceptsZeroAndOneOnly) {
  const char* saved = std::getenv("STITCH_TUNE");
  const std::string keep = saved ? saved : "";
  setenv("STITCH_TUNE", "1", 1);
  EXPECT_TRUE(tuning_requested_by_environment());
  setenv("STITCH_TUNE", "0", 1);
  EXPECT_FALSE(tuning_requested_by_environment());
  setenv("STITCH_TUNE", "yes", 1);
  EXPECT_THROW(tuning_requested_by_environment(), UserError);
  unsetenv("STITCH_TUNE");
  EXPECT_FALSE(tuning_requested_by_environment());
  if (saved) setenv("STITCH_TUNE", keep.c_str(), 1);
}

TEST(GroupGraph, ParametersComeBeforeNodesWhateverTheReadOrder) {
  // y's second operand is a parameter first read after t is computed.
  const Graph g = canonicalize(parse_module(R"(
graph late(a: f32[64], b: f32[64]) -> (f32[64]) {
  t = exp(a)
  y = add(t, b)
  return y
}
)").graphs.front());
  const FusionPlan p = plan(g, PlannerKind::Xla);
  ASSERT_EQ(p.groups.size(), 1u);
  const GroupGraph sub = group_graph(g, p.groups[0], "sub");
  EXPECT_EQ(sub.graph.params().size(), 2u);
  EXPECT_EQ(sub.graph.nodes().size(), 2u);
}

TEST(GroupGraph, KeepsTheGroupsKindAndReadsItsInputsAsParameters) {
  const Graph g = canonicalize(parse_module(kGraph).graphs.front());
  const FusionPlan p = plan(g, PlannerKind::Stitch);
  for (const FusionGroup& group : p.groups) {
    const GroupGraph sub = group_graph(g, group, "sub");
    ASSERT_EQ(sub.plan.groups.size(), 1u);
    EXPECT_EQ(sub.plan.groups[0].kind, group.kind);
    EXPECT_EQ(sub.graph.nodes().size(), group.nodes.size());
    EXPECT_EQ(sub.graph.outputs().size(), group.roots.size());
    EXPECT_EQ(sub.graph.params().size(), 1u);  // x, or a
  }
}

}  // namespace
}  // namespace stitch::tune

namespace stitch::tune {
namespace {

// docs/tuning.md, Fusion decisions: the stitched softmax merges xla's four
// kernels; measured apart faster (by the test seam) it is split back.
class FusionTuning : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("stitch_fusion_tuning_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    graph_ = canonicalize(parse_module(R"(
graph softmax(x: f32[128, 300]) -> (f32[128, 300]) {
  m = reduce_max(x, axes=[1], keepdims=true)
  e = exp(sub(x, m))
  s = reduce_sum(e, axes=[1], keepdims=true)
  y = div(e, s)
  return y
}
)").graphs.front());
    plan_ = plan(graph_, PlannerKind::Stitch);
  }
  void TearDown() override { fs::remove_all(dir_); }
  TuneOptions options(bool apart_faster) const {
    TuneOptions o;
    o.directory = dir_;
    o.measure.min_runs = 2;
    o.measure.min_seconds = 0.001;
    o.adjust_seconds = [apart_faster](int index, double) { return (index == 1) == apart_faster ? 1.0 : 2.0; };
    return o;
  }
  fs::path dir_;
  Graph graph_;
  FusionPlan plan_;
  runtime::cpu::KernelCache kernels_;
};

TEST_F(FusionTuning, SplitsAKernelMeasuredSlowerThanItsPartsAndStillComputesTheGraph) {
  ASSERT_EQ(plan_.groups.size(), 1u);
  const size_t xla_kernels = plan(graph_, PlannerKind::Xla).groups.size();
  ASSERT_GE(xla_kernels, 2u);
  FusionTuner tuner(kernels_, options(true));
  const FusionPlan refined = tuner.refine(graph_, plan_, RowScheduleTarget::cpu());
  EXPECT_EQ(tuner.stats().contested, 1);
  EXPECT_EQ(tuner.stats().measured, 1) << tuner.report();
  EXPECT_EQ(tuner.stats().split, 1) << tuner.report();
  EXPECT_EQ(refined.groups.size(), xla_kernels) << print_plan(graph_, refined);
  EXPECT_NE(print_plan(graph_, refined).find("tuning measured these kernels apart faster"), std::string::npos)
      << print_plan(graph_, refined);

  pipeline::CpuCompileOptions compile;
  compile.plan_tuner = [&](const Graph& g, const FusionPlan& p, const RowScheduleTarget& t) {
    return FusionTuner(kernels_, options(true)).refine(g, p, t);
  };
  compile.tuner_key = "split by a test";
  runtime::cpu::CpuExecutable exe = pipeline::compile_cpu(graph_, PlannerKind::Stitch, kernels_, compile);
  EXPECT_EQ(exe.kernel_count(), static_cast<int>(xla_kernels));
  const std::vector<Tensor> inputs = stitch::testing::random_inputs(graph_, 5, {});
  EXPECT_TRUE(stitch::testing::outputs_match_interpreter(exe.run(inputs), interpret(graph_, inputs), true, 300));
}

TEST_F(FusionTuning, KeepsAKernelMeasuredFasterAndAnswersFromTheCache) {
  FusionTuner first(kernels_, options(false));
  const FusionPlan kept = first.refine(graph_, plan_, RowScheduleTarget::cpu());
  EXPECT_EQ(first.stats().split, 0) << first.report();
  EXPECT_EQ(kept.groups.size(), 1u);
  FusionTuner second(kernels_, options(true));  // would split, but the cache answers "fused"
  second.refine(graph_, plan_, RowScheduleTarget::cpu());
  EXPECT_EQ(second.stats().hits, 1) << second.report();
  EXPECT_EQ(second.stats().measured, 0);
  EXPECT_EQ(second.stats().split, 0);
}

TEST_F(FusionTuning, StaleAndCorruptEntriesAreMeasuredAgain) {
  FusionTuner(kernels_, options(false)).refine(graph_, plan_, RowScheduleTarget::cpu());
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir_)) files.push_back(e.path());
  ASSERT_EQ(files.size(), 1u);
  std::string text;
  {
    std::ifstream in(files[0]);
    std::ostringstream s;
    s << in.rdbuf();
    text = s.str();
  }
  const size_t at = text.find("fingerprint ");
  ASSERT_NE(at, std::string::npos);
  std::string stale = text;
  stale.replace(at + 12, 8, "00000000");
  std::ofstream(files[0]) << stale;
  FusionTuner after_stale(kernels_, options(false));
  after_stale.refine(graph_, plan_, RowScheduleTarget::cpu());
  EXPECT_EQ(after_stale.stats().stale, 1) << after_stale.report();
  EXPECT_EQ(after_stale.stats().measured, 1);

  std::ofstream(files[0]) << "stitch-fusion-tuning-v1\nfingerprint x\nchoice maybe\n";
  FusionTuner after_corrupt(kernels_, options(false));
  after_corrupt.refine(graph_, plan_, RowScheduleTarget::cpu());
  EXPECT_EQ(after_corrupt.stats().corrupt, 1) << after_corrupt.report();
  EXPECT_EQ(after_corrupt.stats().measured, 1);
  FusionTuner after(kernels_, options(false));
  after.refine(graph_, plan_, RowScheduleTarget::cpu());
  EXPECT_EQ(after.stats().hits, 1) << after.report();
}

}  // namespace
}  // namespace stitch::tune
