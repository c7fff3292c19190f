// Random reduction -> consumer graphs (tests/support/random_graph.h,
// stitched_options: softmax, norms, column centring, chains of reductions,
// odd and symbolic extents) through the stitch planner and the whole CPU back
// end, against the interpreter with the documented tolerance of each output
// (docs/testing.md, "Stitched random graphs"). Besides agreeing, the graphs
// must really be stitched: a shard fails when too few of its plans hold a
// GroupKind::Stitched group, or when none is a row, a column or a chain of
// two reductions, so the suite notices a planner that stops stitching.
//
// As tests/codegen/random_cpu_test.cpp: one translation unit per shard,
// compiled into a kernel cache of the run's own; STITCH_SOAK_GRAPHS /
// STITCH_SOAK_FIRST_SEED run other seeds, each in the shard of seed % kShards.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <system_error>
#include <vector>

#include "fusion/stitched_group.h"
#include "ir/canonicalize.h"
#include "random_graph.h"
#include "pipeline/cpu_route.h"
#include "runtime/cpu/executable.h"
#include "stitch/interpreter.h"
#include "stitch/text.h"
#include "tensor/compare.h"
#include "scratch_directory.h"

namespace stitch {
namespace {

using runtime::cpu::CpuExecutable;
using runtime::cpu::KernelCache;

constexpr uint64_t kNormalSeeds = 120;
constexpr uint64_t kShards = 2;
constexpr int kMaxReports = 5;
// Measured: all 120 graphs of a normal run and 980 of 1,000 soak seeds get a
// stitched kernel (the others: every pattern's total is read through a slice
// or concat, which moves the index); below 60% the planner or the generator
// has regressed.
constexpr double kMinStitchedFraction = 0.6;

struct Case {
  uint64_t seed = 0;
  testing::RandomGraphOptions options;
  Graph source;
  Graph canonical;
};

std::string compare_outputs(const Graph& g, const SymbolBindings& symbols, const std::vector<Tensor>& got,
                            const std::vector<Tensor>& want) {
  if (got.size() != want.size()) return "a different number of outputs";
  std::string failures;
  for (size_t i = 0; i < want.size(); ++i) {
    TensorComparison c = compare_with_interpreter(got[i], want[i], output_allowance(g, g.outputs()[i].value, symbols));
    if (!c.ok) failures += "output " + g.outputs()[i].name + ": " + c.describe() + "\n";
  }
  return failures;
}

class RandomStitched : public ::testing::TestWithParam<uint64_t> {
 protected:
  void report(const Case& c, const std::string& failure) {
    if (++reports_ > kMaxReports) return;
    ADD_FAILURE() << failure << "\n" << testing::reproducer(c.seed, c.source);
  }

  // What kinds of stitched kernel the plan holds, for the coverage counts.
  void note_plan(const CpuExecutable& exe) {
    bool stitched = false;
    for (const FusionGroup& grp : exe.plan().groups) {
      if (grp.kind != GroupKind::Stitched) continue;
      stitched = true;
      StitchedDomain domain;
      if (!stitched_group_problem(exe.graph(), grp.nodes, grp.roots, &domain).empty()) continue;
      ++coverage_[domain.innermost() ? "row" : "column"];
      if (domain.phases.size() >= 2) ++coverage_["chain"];
      if (std::any_of(domain.shape.begin(), domain.shape.end(), [](const Dim& d) { return d.is_symbolic(); }))
        ++coverage_["symbolic"];
    }
    if (stitched) ++stitched_graphs_;
  }

  void check(const std::vector<Case>& batch, std::vector<CpuExecutable> exes) {
    for (size_t i = 0; i < batch.size(); ++i) {
      const Case& c = batch[i];
      SymbolBindings symbols = testing::random_symbol_bindings(c.source, c.seed, c.options.max_symbol_extent);
      // A quarter of the seeds see ±0, ±inf and NaN in their inputs.
      std::vector<Tensor> inputs = testing::random_inputs(c.source, c.seed, symbols, c.seed % 4 == 3);
      try {
        std::vector<Tensor> want = interpret(c.source, inputs);
        std::vector<Tensor> got = exes[i].run(inputs);
        std::string failure = compare_outputs(c.source, symbols, got, want);
        if (!failure.empty()) report(c, failure + "plan:\n" + print_plan(exes[i].graph(), exes[i].plan()));
        ++compared_;
        note_plan(exes[i]);
      } catch (const std::exception& e) {
        report(c, std::string("exception: ") + e.what());
      }
    }
  }

  std::map<std::string, int> coverage_;
  int reports_ = 0;
  int compared_ = 0;
  int stitched_graphs_ = 0;
};

TEST_P(RandomStitched, MatchesInterpreterAndStitches) {
  auto start = std::chrono::steady_clock::now();
  testing::ScratchDirectory cache_dir("stitch-random-stitched");
  KernelCache cache(cache_dir.path());
  testing::SeedRange seeds = testing::random_seed_range(kNormalSeeds);
  std::vector<Case> batch;
  for (uint64_t seed = seeds.first; seed < seeds.first + seeds.count; ++seed) {
    if (seed % kShards != GetParam()) continue;
    Case c;
    c.seed = seed;
    c.options = testing::stitched_options(seed);
    try {
      c.source = testing::random_graph(c.options);
      c.canonical = canonicalize(c.source);
      std::string reason = pipeline::cpu_unsupported_reason(c.canonical, PlannerKind::Stitch);
      if (!reason.empty()) {
        report(c, "the back end cannot lower this graph: " + reason);
        continue;
      }
    } catch (const std::exception& e) {
      report(c, std::string("generating, canonicalising or planning: ") + e.what());
      continue;
    }
    batch.push_back(std::move(c));
  }
  ASSERT_FALSE(batch.empty());
  std::vector<Graph> graphs;
  for (const Case& c : batch) graphs.push_back(c.canonical);
  try {
    check(batch, pipeline::compile_cpu_batch(graphs, PlannerKind::Stitch, cache));
  } catch (const std::exception& batch_error) {
    // Each graph alone, so the report names the one at fault.
    for (const Case& c : batch) {
      try {
        check({c}, pipeline::compile_cpu_batch({c.canonical}, PlannerKind::Stitch, cache));
      } catch (const std::exception& e) {
        report(c, std::string("compile: ") + e.what());
      }
    }
  }

  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::string covered;
  for (const auto& [kind, count] : coverage_) covered += " " + kind + " " + std::to_string(count);
  std::printf("random stitched (shard %d of %d): %d graphs compared, %d with a stitched kernel; kernels:%s; %.1f s\n",
              static_cast<int>(GetParam()), static_cast<int>(kShards), compared_, stitched_graphs_, covered.c_str(),
              seconds);
  if (!seeds.soak) {
    EXPECT_EQ(compared_, static_cast<int>(batch.size()));
    EXPECT_GE(stitched_graphs_, kMinStitchedFraction * compared_) << "the stitch planner stitched too few graphs";
    for (const char* kind : {"row", "column", "chain", "symbolic"}) {
      EXPECT_GT(coverage_[kind], 0) << "no stitched kernel of kind " << kind;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shards, RandomStitched, ::testing::Range<uint64_t>(0, kShards),
                         [](const ::testing::TestParamInfo<uint64_t>& info) {
                           return "shard_" + std::to_string(info.param);
                         });

}  // namespace
}  // namespace stitch
