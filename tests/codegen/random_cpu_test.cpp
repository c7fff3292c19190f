// Random graphs (tests/support/random_graph.h) through the whole CPU back end
// (plan, lower, emit, compile, run) against the interpreter, for the none and
// xla planners, with the documented tolerance of each output
// (docs/testing.md, "CPU back end against the interpreter").
//
// Compiling is what costs (g++ -O3 takes 10-20 s for 45 graphs' kernels):
// graphs are compiled up to kBatchSize to a translation unit with
// pipeline::compile_cpu_batch, into a kernel cache of this run's own, and
// the seeds are split into kShards tests (seed % kShards) so that ctest -j
// spreads them over the cores. Every generated graph must lower: nothing is
// left out (pipeline::cpu_unsupported_reason non-empty is a failure).
// STITCH_SOAK_GRAPHS=N (from STITCH_SOAK_FIRST_SEED) runs N seeds instead,
// each in the shard it has in a normal run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>

#include <chrono>
#include <cstdio>
#include <map>
#include <ostream>
#include <set>

#include "interpreter_differential.h"
#include "ir/canonicalize.h"
#include "random_graph.h"
#include "pipeline/cpu_route.h"
#include "runtime/cpu/executable.h"
#include "stitch/interpreter.h"

namespace stitch {
namespace {

using runtime::cpu::CpuExecutable;
using runtime::cpu::KernelCache;

constexpr uint64_t kNormalSeeds = 225;
constexpr uint64_t kShards = 5;
// Every seed of a normal run compared: 225 graphs per planner.
constexpr int kMinComparedPerShard = 45;
// A normal shard is one translation unit.
constexpr size_t kBatchSize = 60;
// Each shard of a normal run compares at least one graph with each of these
// (op names, "reduction" for any reduce_*, dtypes of values, "symbolic dims").
const char* const kMustCover[] = {"broadcast", "transpose", "slice", "concat", "gather", "reshape", "pad",
                                  "iota", "reduction", "dot", "cast", "select", "f16", "bf16", "f32", "f64",
                                  "i8", "i32", "i64", "bool", "symbolic dims"};
constexpr int kMaxReports = 5;

struct Case {
  uint64_t seed = 0;
  testing::RandomGraphOptions options;
  Graph source;     // the interpreter runs this one
  Graph canonical;  // the back end compiles this one
};

struct Shard {
  PlannerKind planner;
  uint64_t index;
};

// For gtest's messages ("where GetParam() = xla shard 2").
void PrintTo(const Shard& s, std::ostream* os) { *os << planner_name(s.planner) << " shard " << s.index; }

class RandomCpuDifferential : public ::testing::TestWithParam<Shard> {
 protected:
  PlannerKind planner() const { return GetParam().planner; }

  void report(const Case& c, const std::string& failure) {
    if (++reports_ > kMaxReports) return;
    ADD_FAILURE() << "planner " << planner_name(planner()) << ": " << failure << "\n"
                  << testing::reproducer(c.seed, c.source);
  }

  // Runs every case of one compiled batch and compares each output.
  void check_batch(const std::vector<Case>& batch, std::vector<CpuExecutable>& exes) {
    for (size_t i = 0; i < batch.size(); ++i) {
      const Case& c = batch[i];
      SymbolBindings symbols = testing::random_symbol_bindings(c.source, c.seed, c.options.max_symbol_extent);
      // Half the seeds see ±0, ±inf, NaN and integer extremes in their inputs.
      std::vector<Tensor> inputs = testing::random_inputs(c.source, c.seed, symbols, c.seed % 2 == 1);
      try {
        BoundedReference want = interpret_with_error_bounds(c.source, inputs);
        std::vector<Tensor> got = exes[i].run(inputs);
        std::string failure = testing::compare_with_interpreter_outputs(c.source, symbols, got, want);
        if (!failure.empty()) report(c, failure);
        ++compared_;
        note_coverage(c.source);
        const auto& groups = exes[i].plan().groups;
        if (std::any_of(groups.begin(), groups.end(), [](const FusionGroup& g) { return g.kind == GroupKind::Stitched; }))
          ++coverage_["stitched kernel"];
      } catch (const std::exception& e) {
        report(c, std::string("exception: ") + e.what());
      }
    }
  }

  // One translation unit for the whole batch; when it fails, each graph
  // alone, so the report names the graph at fault.
  void compile_and_check(const std::vector<Case>& batch, KernelCache& cache) {
    std::vector<Graph> graphs;
    for (const Case& c : batch) graphs.push_back(c.canonical);
    std::vector<CpuExecutable> exes;
    try {
      exes = pipeline::compile_cpu_batch(graphs, planner(), cache);
      ++compiles_;
    } catch (const std::exception& batch_error) {
      for (const Case& c : batch) {
        try {
          std::vector<CpuExecutable> one = pipeline::compile_cpu_batch({c.canonical}, planner(), cache);
          check_batch({c}, one);
        } catch (const std::exception& e) {
          report(c, std::string("compile: ") + e.what());
        }
      }
      return;
    }
    check_batch(batch, exes);
  }

  // How many compared graphs contain each feature the suite must reach.
  void note_coverage(const Graph& g) {
    std::set<std::string> features;
    for (const Node& n : g.nodes()) {
      features.insert(is_reduction(n.op) ? "reduction" : std::string(op_name(n.op)));
      features.insert(std::string(dtype_name(g.type(n.output).dtype)));
    }
    for (ValueId p : g.params()) {
      for (const Dim& d : g.type(p).shape) {
        if (d.is_symbolic()) features.insert("symbolic dims");
      }
    }
    for (const std::string& f : features) ++coverage_[f];
  }

  std::map<std::string, int> coverage_;
  int reports_ = 0;
  int compared_ = 0;
  int compiles_ = 0;
};

TEST_P(RandomCpuDifferential, MatchesInterpreter) {
  const PlannerKind planner = GetParam().planner;
  auto start = std::chrono::steady_clock::now();
  testing::ScratchDirectory cache_dir("stitch-random-cpu-test");
  KernelCache cache(cache_dir.path());
  testing::SeedRange seeds = testing::random_seed_range(kNormalSeeds);
  std::vector<Case> batch;
  for (uint64_t seed = seeds.first; seed < seeds.first + seeds.count && reports_ < kMaxReports; ++seed) {
    if (seed % kShards != GetParam().index) continue;
    Case c;
    c.seed = seed;
    c.options = testing::varied_options(seed);
    std::string reason;
    try {
      c.source = testing::random_graph(c.options);
      c.canonical = canonicalize(c.source);
      reason = pipeline::cpu_unsupported_reason(c.canonical, planner);
    } catch (const std::exception& e) {
      report(c, std::string("generating, canonicalising or lowering: ") + e.what());
      continue;
    }
    if (!reason.empty()) {
      report(c, "the back end cannot lower this graph: " + reason);
      continue;
    }
    batch.push_back(std::move(c));
    if (batch.size() == kBatchSize) {
      compile_and_check(batch, cache);
      batch.clear();
    }
  }
  if (!batch.empty()) compile_and_check(batch, cache);

  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("random cpu (%s, shard %d of %d): %d graphs compared, %d compiles, %.1f s\n",
              std::string(planner_name(planner)).c_str(), static_cast<int>(GetParam().index),
              static_cast<int>(kShards), compared_, compiles_, seconds);
  std::string covered;
  for (const auto& [feature, count] : coverage_) {
    covered += (covered.empty() ? "" : ", ") + feature + " " + std::to_string(count);
  }
  std::printf("  graphs with: %s\n", covered.c_str());
  if (!seeds.soak) {
    EXPECT_GE(compared_, kMinComparedPerShard) << "too few random graphs reach the CPU back end";
    for (const char* feature : kMustCover) EXPECT_GT(coverage_[feature], 0) << "no compared graph has " << feature;
  }
}

std::vector<Shard> all_shards() {
  std::vector<Shard> shards;
  // The stitch planner's shards are cheap (a few seconds each: fewer kernels
  // to compile and run); about 40% of the graphs get a stitched kernel.
  for (PlannerKind p : {PlannerKind::None, PlannerKind::Xla, PlannerKind::Stitch}) {
    for (uint64_t i = 0; i < kShards; ++i) shards.push_back({p, i});
  }
  return shards;
}

INSTANTIATE_TEST_SUITE_P(Planners, RandomCpuDifferential, ::testing::ValuesIn(all_shards()),
                         [](const ::testing::TestParamInfo<Shard>& info) {
                           return std::string(planner_name(info.param.planner)) + "_" +
                                  std::to_string(info.param.index);
                         });

}  // namespace
}  // namespace stitch
