// The compile pipeline (docs/pipeline.md): its stage table, the state each
// stage leaves, the dumps, the compile stage's fallback ladder (with a fake
// compiler, no system compiler needed), and the schedule stage's values:
// printable, comparable, hashable, and followed by the lowering (every
// candidate schedule of a group runs and matches the interpreter).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "codegen/cpu/cpp_emitter.h"
#include "ir/canonicalize.h"
#include "lower/lower_plan.h"
#include "pipeline/schedule_groups.h"
#include "pipeline/pipeline.h"
#include "pipeline/cpu_route.h"
#include "runtime/cpu/executable.h"
#include "stitch/interpreter.h"
#include "stitch/text.h"
#include "random_graph.h"
#include "tensor_compare.h"

namespace stitch::pipeline {
namespace {

using schedule::GroupSchedule;
using schedule::RowSchedule;
using schedule::RowScheduleKind;
using schedule::ScheduleKind;

const char* kSoftmax = R"(
graph softmax(x: f32[64, 100]) -> (f32[64, 100]) {
  m = reduce_max(x, axes=[1], keepdims=true)
  e = exp(sub(x, m))
  s = reduce_sum(e, axes=[1], keepdims=true)
  y = div(e, s)
  return y
}
)";

// A full reduction (split into two row reductions), a column reduction and a dot.
const char* kMixed = R"(
graph mixed(x: f32[65536], a: f32[64, 32], w: f32[32, 16]) -> (f32[], f32[32], f32[64, 16]) {
  t = reduce_sum(mul(x, x), axes=[0])
  c = reduce_sum(tanh(a), axes=[0])
  d = dot(a, w)
  return t, c, d
}
)";

Graph parse_graph(const char* text) { return parse_module(text).graphs.front(); }

Backend cpu_emitter() {
  Backend b;
  b.name = "cpu";
  b.emit = [](const std::vector<kir::Kernel>& kernels) { return codegen::cpu::emit_cpp_translation_unit(kernels); };
  return b;
}

TEST(Pipeline, StagesAreOneOrderedTable) {
  std::vector<std::string> names;
  for (const Stage& s : pipeline_stages()) names.emplace_back(s.name);
  EXPECT_EQ(names, (std::vector<std::string>{"canonicalize", "split-reductions", "attention", "conv", "widen-floats", "plan",
                                             "schedule", "lower", "emit", "compile"}));
  EXPECT_EQ(stage_index("schedule"), 6u);
  EXPECT_FALSE(stage_index("kir").has_value());
}

TEST(Pipeline, DumpNamesMatchStagesAndTheirOlderNames) {
  EXPECT_TRUE(dump_stage_matches("all", "emit"));
  EXPECT_TRUE(dump_stage_matches("schedule", "schedule"));
  EXPECT_TRUE(dump_stage_matches("graph", "split-reductions"));
  EXPECT_TRUE(dump_stage_matches("graph", "attention"));
  EXPECT_TRUE(dump_stage_matches("graph", "conv"));
  EXPECT_TRUE(dump_stage_matches("graph", "widen-floats"));
  EXPECT_TRUE(dump_stage_matches("kir", "lower"));
  EXPECT_TRUE(dump_stage_matches("source", "emit"));
  EXPECT_FALSE(dump_stage_matches("plan", "schedule"));
  EXPECT_FALSE(dump_stage_matches("kir", "emit"));
}

TEST(Pipeline, EachStageLeavesItsPartOfTheState) {
  Compilation c;
  c.input = parse_graph(kMixed);
  c.planner = PlannerKind::Stitch;
  std::vector<std::string> dumped;
  StageDump dump{[](std::string_view) { return true; },
                 [&](std::string_view stage, const std::string& text) {
                   dumped.emplace_back(stage);
                   EXPECT_FALSE(text.empty()) << stage;
                 }};
  run_pipeline(c, cpu_emitter(), "canonicalize", "emit", dump);
  EXPECT_EQ(dumped, (std::vector<std::string>{"canonicalize", "split-reductions", "attention", "conv", "widen-floats", "plan",
                                              "schedule", "lower", "emit"}));
  // The full reduction of 65536 elements became two row reductions.
  EXPECT_GT(c.graph.nodes().size(), c.canonical.nodes().size());
  ASSERT_EQ(c.schedules.size(), c.plan.groups.size());
  int kernels = 0, library = 0;
  for (const GroupSchedule& s : c.schedules) {
    EXPECT_NE(s.kind, ScheduleKind::Unlowered) << s.describe();
    (s.kind == ScheduleKind::Library ? library : kernels) += 1;
  }
  EXPECT_EQ(library, 1);  // the dot
  EXPECT_EQ(static_cast<int>(c.lowered.kernels.size()), kernels);
  EXPECT_NE(c.source.find(c.lowered.kernels.front().name), std::string::npos);
  // The schedule dump names every group with its schedule.
  const std::string text = pipeline::print_schedules(c.graph, c.plan, c.schedules);
  for (size_t i = 0; i < c.schedules.size(); ++i) {
    EXPECT_NE(text.find("group " + std::to_string(i) + " ["), std::string::npos) << text;
    EXPECT_NE(text.find(c.schedules[i].key()), std::string::npos) << text;
  }
}

TEST(Pipeline, DumpsOnlyWhatIsWanted) {
  Compilation c = compilation_of(canonicalize(parse_graph(kSoftmax)), PlannerKind::Xla, {},
                                 schedule::RowScheduleTarget::cpu());
  std::vector<std::string> dumped;
  StageDump dump{[](std::string_view stage) { return stage == "schedule"; },
                 [&](std::string_view stage, const std::string&) { dumped.emplace_back(stage); }};
  run_pipeline(c, cpu_emitter(), "split-reductions", "lower", dump);
  EXPECT_EQ(dumped, std::vector<std::string>{"schedule"});
}

// The plan stage makes dot epilogues for the CPU only: the CUDA executable
// has no way to run them (fusion/dot_epilogues.h), whatever the options say.
TEST(Pipeline, DotEpiloguesOnlyForTheCpu) {
  const Graph g = canonicalize(parse_graph(R"(graph e(x: f32[64, 128], w: f32[128, 48], b: f32[48]) {
  r = tanh(add(dot(x, w), b))
  return r
})"));
  auto epilogues = [](const FusionPlan& p) {
    return std::count_if(p.groups.begin(), p.groups.end(), [](const FusionGroup& grp) { return grp.epilogue_of >= 0; });
  };
  Compilation cpu = compilation_of(g, PlannerKind::Stitch, {}, schedule::RowScheduleTarget::cpu());
  run_pipeline(cpu, cpu_emitter(), "split-reductions", "lower");
  EXPECT_EQ(epilogues(cpu.plan), 1);
  EXPECT_EQ(cpu.plan.kernel_count(), 1);
  EXPECT_EQ(cpu.lowered.kernels.size(), 1u);
  EXPECT_GT(cpu.lowered.kernels.front().panel_elements, 0);
  Compilation gpu = compilation_of(g, PlannerKind::Stitch, {}, schedule::RowScheduleTarget::gpu());
  run_pipeline(gpu, Backend{}, "split-reductions", "lower");
  EXPECT_EQ(epilogues(gpu.plan), 0);
  EXPECT_EQ(gpu.plan.kernel_count(), 2);
  EXPECT_EQ(gpu.lowered.kernels.front().panel_elements, 0);
}

// A bf16 column sum is left whole by the split stage (its partials would round
// to bf16); computed in f32 (the widen stage), it is split as an f32 one is,
// so that its kernel uses every core: a bias gradient's sum over 6,144 rows
// of 384 columns ran on one.
TEST(Pipeline, AWidenedColumnSumIsSplitLikeAnF32One) {
  const Graph g = canonicalize(parse_graph(R"(graph bias(d: bf16[8, 768, 384]) {
  s = reduce_sum(d, axes=[0, 1], keepdims=false)
  return s
})"));
  auto partials = [](const Graph& graph) {
    return std::count_if(graph.nodes().begin(), graph.nodes().end(), [&](const Node& n) {
      return is_reduction(n.op) && graph.value_name(n.output).find("_partial") != std::string::npos;
    });
  };
  for (bool widen : {false, true}) {
    PlanOptions options;
    options.f32_intermediates = widen;
    Compilation c = compilation_of(g, PlannerKind::Stitch, options, schedule::RowScheduleTarget::cpu());
    run_pipeline(c, cpu_emitter(), "split-reductions", "plan");
    EXPECT_EQ(partials(c.graph), widen ? 1 : 0) << print_graph(c.graph);
    const std::vector<Tensor> inputs = testing::random_inputs(g, 3, {});
    EXPECT_TRUE(testing::matches_interpreter(interpret(c.graph, inputs)[0], interpret(g, inputs)[0], false, 6144));
  }
}

// The attention stage (ir/attention_pattern.h): on the CPU the pattern
// becomes one op and one library group, unless the plan options turn it off;
// for the GPU an attention op becomes its composite again.
TEST(Pipeline, AttentionIsOneCallOnTheCpuAndItsCompositeElsewhere) {
  const Graph g = canonicalize(parse_graph(R"(graph a(q: f32[2, 8, 16], k: f32[2, 8, 16], v: f32[2, 8, 16]) {
  out = dot(softmax(mul(dot(q, transpose(k, perm=[0, 2, 1])), 0.25), axis=-1), v)
  return out
})"));
  auto count = [](const Graph& graph, OpKind op) {
    return std::count_if(graph.nodes().begin(), graph.nodes().end(), [op](const Node& n) { return n.op == op; });
  };
  Compilation cpu = compilation_of(g, PlannerKind::Stitch, {}, schedule::RowScheduleTarget::cpu());
  run_pipeline(cpu, cpu_emitter(), "split-reductions", "lower");
  EXPECT_EQ(count(cpu.graph, OpKind::Attention), 1);
  ASSERT_EQ(cpu.plan.groups.size(), 1u);
  EXPECT_EQ(cpu.plan.groups[0].kind, GroupKind::Library);
  EXPECT_TRUE(cpu.lowered.kernels.empty());
  PlanOptions off;
  off.attention = false;
  Compilation unfused = compilation_of(g, PlannerKind::Stitch, off, schedule::RowScheduleTarget::cpu());
  run_pipeline(unfused, cpu_emitter(), "split-reductions", "attention");
  EXPECT_EQ(count(unfused.graph, OpKind::Attention), 0);
  EXPECT_EQ(count(unfused.graph, OpKind::Dot), 2);
  Compilation gpu = compilation_of(cpu.graph, PlannerKind::Stitch, {}, schedule::RowScheduleTarget::gpu());
  run_pipeline(gpu, Backend{}, "split-reductions", "lower");
  EXPECT_EQ(count(gpu.graph, OpKind::Attention), 0);
  EXPECT_EQ(count(gpu.graph, OpKind::Dot), 2);
  EXPECT_FALSE(gpu.lowered.kernels.empty());
}

TEST(Pipeline, LowerStageNamesTheGroupItCannotLower) {
  // A dot is a library call; any other group lowers, so force an Unlowered schedule.
  Compilation c = compilation_of(canonicalize(parse_graph(kSoftmax)), PlannerKind::Xla, {},
                                 schedule::RowScheduleTarget::cpu());
  c.schedule_override = [](int, const std::vector<GroupSchedule>&) -> std::optional<GroupSchedule> {
    GroupSchedule s;
    s.kind = ScheduleKind::Unlowered;
    s.reason = "not lowered yet: a test says so";
    return s;
  };
  try {
    run_pipeline(c, cpu_emitter(), "split-reductions", "lower");
    FAIL() << "lowering an Unlowered schedule must throw";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("--backend cpu cannot run this graph yet: group 0"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("a test says so"), std::string::npos) << e.what();
  }
}

// The compile stage's ladder with a fake compiler that rejects what the test says.
struct FakeCompiler {
  int calls = 0;
  bool reject_fused = true;
  bool reject_unfused = false;
  Backend backend() {
    Backend b = cpu_emitter();
    b.build = [this](const std::string&, const LoweredPlan& lowered, std::string& error) {
      ++calls;
      const bool unfused = lowered.plan.planner == "none";
      if ((unfused && reject_unfused) || (!unfused && reject_fused)) {
        error = "fake compiler: rejected";
        return false;
      }
      return true;
    };
    return b;
  }
};

TEST(Pipeline, CompileStageFallsBackToTheUnfusedPlan) {
  Compilation c = compilation_of(canonicalize(parse_graph(kSoftmax)), PlannerKind::Stitch, {},
                                 schedule::RowScheduleTarget::cpu());
  std::vector<std::string> warnings;
  c.warn = [&](const std::string& w) { warnings.push_back(w); };
  FakeCompiler fake;
  run_pipeline(c, fake.backend(), "split-reductions", "compile");
  EXPECT_EQ(fake.calls, 2);
  EXPECT_FALSE(c.interpret);
  EXPECT_EQ(c.plan.planner, "none");
  EXPECT_EQ(c.lowered.kernels.size(), c.plan.groups.size());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("falling back to the unfused plan"), std::string::npos) << warnings[0];
  EXPECT_EQ(c.fallback, warnings[0]);
}

TEST(Pipeline, CompileStageEndsOnTheInterpreter) {
  Compilation c = compilation_of(canonicalize(parse_graph(kSoftmax)), PlannerKind::Xla, {},
                                 schedule::RowScheduleTarget::cpu());
  std::vector<std::string> warnings;
  c.warn = [&](const std::string& w) { warnings.push_back(w); };
  FakeCompiler fake;
  fake.reject_unfused = true;
  run_pipeline(c, fake.backend(), "split-reductions", "compile");
  // The fused unit, the bisection down to every group alone (each fails, so
  // none is blamed: 2 builds for each of the groups less one), the unfused unit.
  const int groups = static_cast<int>(plan(c.graph, PlannerKind::Xla).groups.size());
  EXPECT_GT(groups, 1);
  EXPECT_EQ(fake.calls, 2 + 2 * (groups - 1));
  EXPECT_TRUE(c.interpret);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("reference interpreter"), std::string::npos) << warnings[0];
}

GroupSchedule row(RowScheduleKind kind, int64_t threads, std::string reason) {
  GroupSchedule s;
  s.kind = ScheduleKind::Row;
  s.row = RowSchedule{kind, threads, 32};
  s.reason = std::move(reason);
  return s;
}

TEST(GroupSchedule, PrintsComparesAndHashesTheDecisionNotTheReason) {
  const GroupSchedule a = row(RowScheduleKind::WarpPerRow, 256, "rank 1 of 15 on sm_90");
  const GroupSchedule b = row(RowScheduleKind::WarpPerRow, 256, "tuned");
  const GroupSchedule c = row(RowScheduleKind::WarpPerRow, 128, "rank 1 of 15 on sm_90");
  EXPECT_EQ(a.key(), "row warp-per-row [GRID-WARP_8,CTA]; 256 threads");
  EXPECT_EQ(a.describe(), "row warp-per-row [GRID-WARP_8,CTA]; 256 threads (rank 1 of 15 on sm_90)");
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.hash(), b.hash());
  EXPECT_NE(a, c);
  GroupSchedule d = a;
  d.prefetch = true;
  d.cached = {3, 5};
  d.shared_bytes = 2048;
  EXPECT_EQ(d.key(), "row warp-per-row [GRID-WARP_8,CTA]; 256 threads prefetch cached [3 5] shared 2048");
  EXPECT_NE(a, d);
  const std::unordered_set<GroupSchedule> set{a, b, c, d};
  EXPECT_EQ(set.size(), 3u);
}

TEST(ScheduleStage, StitchedSoftmaxCarriesItsSharedMemoryPlan) {
  const Graph g = canonicalize(parse_graph(kSoftmax));
  const FusionPlan p = plan(g, PlannerKind::Stitch);
  ASSERT_EQ(p.groups.size(), 1u);
  ASSERT_EQ(p.groups[0].kind, GroupKind::Stitched);
  const std::vector<GroupSchedule> s = pipeline::schedule_plan(g, p, schedule::RowScheduleTarget::cpu());
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].kind, ScheduleKind::Row);
  ASSERT_NE(s[0].shared_memory, nullptr);
  EXPECT_EQ(s[0].cached, s[0].shared_memory->cached);
  EXPECT_FALSE(s[0].cached.empty()) << s[0].describe();  // exp's row is kept, not recomputed
  EXPECT_EQ(s[0].shared_bytes, s[0].shared_memory->plan.arena_bytes);
  // The same decision made twice is the same value.
  EXPECT_EQ(s, pipeline::schedule_plan(g, p, schedule::RowScheduleTarget::cpu()));
}

// The lowering decides nothing the schedule does not say: a stitched row
// kernel over a static row follows the schedule stage's shared-memory plan
// and refuses to make one of its own when the schedule has none.
TEST(ScheduleStage, TheLoweringTakesTheSharedMemoryPlanFromTheSchedule) {
  const Graph g = canonicalize(parse_graph(kSoftmax));
  const FusionPlan p = plan(g, PlannerKind::Stitch);
  ASSERT_EQ(p.groups.size(), 1u);
  std::vector<GroupSchedule> s = pipeline::schedule_plan(g, p, schedule::RowScheduleTarget::cpu());
  ASSERT_EQ(s[0].kind, ScheduleKind::Row);
  const std::vector<lower::LoweredGroup> lowered = lower::lower_plan(g, p, s, "t");
  ASSERT_TRUE(lowered[0].kernel.has_value());
  EXPECT_EQ(lowered[0].kernel->shared.size(), s[0].shared_memory->request_nodes.size())
      << "one shared buffer per request of the schedule's plan (row caches and scratch)";
  s[0].shared_memory.reset();
  EXPECT_THROW(lower::lower_plan(g, p, s, "t"), InternalError);
}

TEST(ScheduleStage, TileGroupsAreAKindOfTheirOwn) {
  const Graph g = canonicalize(parse_graph(R"(
graph center(x: f32[16, 32, 48]) -> (f32[16, 32, 48]) {
  r = reduce_mean(x, axes=[2], keepdims=true)
  c = reduce_mean(x, axes=[1], keepdims=true)
  y = sub(sub(x, r), c)
  return y
}
)"));
  const FusionPlan p = plan(g, PlannerKind::Stitch);
  ASSERT_EQ(p.groups.size(), 1u) << print_plan(g, p);
  EXPECT_EQ(p.groups[0].kind, GroupKind::Tile);
  EXPECT_EQ(pipeline::schedule_plan(g, p, schedule::RowScheduleTarget::cpu())[0].kind, ScheduleKind::Tile);
}

// Every candidate the tuner may pick lowers, compiles and matches the
// interpreter: a stitched row group, a column reduction, a loop group.
TEST(ScheduleStage, EveryCandidateRunsCorrectly) {
  const Graph softmax = canonicalize(parse_graph(kSoftmax));
  const Graph column = canonicalize(parse_graph(R"(
graph colsum(a: f32[300, 70]) -> (f32[70]) {
  c = reduce_sum(tanh(a), axes=[0])
  return c
}
)"));
  const Graph loop = canonicalize(parse_graph(R"(
graph ew(a: f32[1000, 33], b: f32[33]) -> (f32[1000, 33]) {
  y = tanh(add(a, b))
  return y
}
)"));
  runtime::cpu::KernelCache cache;
  int compiled = 0;
  for (const Graph* g : {&softmax, &column, &loop}) {
    const Graph& graph = *g;
    const FusionPlan p = plan(graph, PlannerKind::Stitch);
    ASSERT_EQ(p.groups.size(), 1u) << print_plan(graph, p);
    const std::vector<GroupSchedule> candidates =
        pipeline::schedule_candidates(graph, p.groups[0], schedule::RowScheduleTarget::cpu());
    EXPECT_GE(candidates.size(), 2u) << g->name();
    const std::vector<Tensor> inputs = stitch::testing::random_inputs(graph, 7, {});
    const std::vector<Tensor> want = interpret(graph, inputs);
    for (const GroupSchedule& candidate : candidates) {
      SCOPED_TRACE(g->name() + ": " + candidate.describe());
      pipeline::CpuCompileOptions options;
      options.schedule_override = [&](int, const std::vector<GroupSchedule>&) { return candidate; };
      options.tuner_key = candidate.key();
      runtime::cpu::CpuExecutable exe = pipeline::compile_cpu(*g, PlannerKind::Stitch, cache, options);
      ++compiled;
      EXPECT_TRUE(exe.fallback().empty()) << exe.fallback();
      EXPECT_TRUE(stitch::testing::outputs_match_interpreter(exe.run(inputs), want, true, 300));
      // The kernel follows the schedule: a row kernel says which one.
      if (candidate.kind == ScheduleKind::Row) {
        EXPECT_NE(exe.source().find(candidate.row.describe()), std::string::npos);
      }
    }
  }
  EXPECT_GE(compiled, 6);
}

}  // namespace
}  // namespace stitch::pipeline
