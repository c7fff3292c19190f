// Random graphs (tests/support/random_graph.h) through the whole CUDA back end
// (plan, lower, emit, NVRTC, launch) against the interpreter, per output with
// the documented allowance (label gpu; mirrors tests/codegen/random_cpu_test.cpp).
// Two families:
//  - varied_options: every op, dtype and layout, 225 seeds for each of the
//    none, xla and stitch planners, in 5 shards per planner (seed % 5);
//  - stitched_options: reduction -> consumer patterns (softmax, norms,
//    column centring, chains; rows shorter than a warp and not multiples of
//    32, symbolic batches), 120 seeds for the stitch planner in 2 shards.
// A shard is one translation unit (pipeline::compile_cuda_batch, one NVRTC
// run) into a cubin cache of its own; when it fails to compile, each graph is
// compiled alone so the report names the seed. STITCH_SOAK_GRAPHS /
// STITCH_SOAK_FIRST_SEED run other seeds, each in the shard of its seed.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "gpu_context.h"
#include "gpu_differential.h"
#include "ir/canonicalize.h"
#include "random_graph.h"
#include "pipeline/cuda/cuda_route.h"
#include "runtime/cuda/cuda_executable.h"
#include "stitch/interpreter.h"
#include "stitch/ops.h"

namespace stitch::gpu_testing {
namespace {

using runtime::cuda::CubinCache;
using runtime::cuda::CudaExecutable;

enum class Family : uint8_t { Varied, Stitched };

struct Shard {
  Family family;
  PlannerKind planner;
  uint64_t index;
};

uint64_t seed_count(Family f) { return f == Family::Varied ? 225 : 120; }
uint64_t shard_count(Family f) { return f == Family::Varied ? 5 : 2; }
const char* family_name(Family f) { return f == Family::Varied ? "varied" : "stitched"; }

// For gtest's messages ("where GetParam() = varied xla shard 2").
void PrintTo(const Shard& s, std::ostream* os) {
  *os << family_name(s.family) << " " << planner_name(s.planner) << " shard " << s.index;
}

// Every seed of a normal run is compared.
int min_compared(Family f) { return static_cast<int>(seed_count(f) / shard_count(f)); }

// Each varied shard of a normal run compares at least one graph with each of
// these (op names, "reduction" for any reduce_*, dtypes, "symbolic dims"),
// as on the CPU.
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

class RandomGpuDifferential : public GpuTestWithParam<Shard> {
 protected:
  void report(const Case& c, const std::string& failure) {
    if (++reports_ > kMaxReports) return;
    ADD_FAILURE() << family_name(GetParam().family) << " graph, planner " << planner_name(GetParam().planner) << ": "
                  << failure << "\n"
                  << testing::reproducer(c.seed, c.source);
  }

  void check_batch(const std::vector<Case>& batch, std::vector<CudaExecutable>& exes) {
    for (size_t i = 0; i < batch.size(); ++i) {
      const Case& c = batch[i];
      const SymbolBindings symbols =
          testing::random_symbol_bindings(c.source, c.seed, c.options.max_symbol_extent);
      // As on the CPU: half the varied seeds and a quarter of the stitched
      // ones see ±0, ±inf, NaN and integer extremes in their inputs.
      const bool special = GetParam().family == Family::Varied ? c.seed % 2 == 1 : c.seed % 4 == 3;
      const std::vector<Tensor> inputs = testing::random_inputs(c.source, c.seed, symbols, special);
      const std::string failure = check_against_interpreter(exes[i], c.source, symbols, inputs);
      if (!failure.empty()) {
        report(c, failure);
        continue;
      }
      ++compared_;
      woven_ += exes[i].woven_launches();
      note_coverage(c.source);
      const auto& groups = exes[i].plan().groups;
      if (std::any_of(groups.begin(), groups.end(), [](const FusionGroup& g) { return g.kind == GroupKind::Stitched; }))
        ++coverage_["stitched kernel"];
    }
  }

  void compile_and_check(const std::vector<Case>& batch, CubinCache& cache) {
    std::vector<Graph> graphs;
    for (const Case& c : batch) graphs.push_back(c.canonical);
    std::vector<CudaExecutable> exes;
    try {
      exes = pipeline::compile_cuda_batch(graphs, GetParam().planner, context(), cache);
      ++compiles_;
    } catch (const std::exception& batch_error) {
      for (const Case& c : batch) {
        try {
          std::vector<CudaExecutable> one =
              pipeline::compile_cuda_batch({c.canonical}, GetParam().planner, context(), cache);
          check_batch({c}, one);
        } catch (const std::exception& e) {
          report(c, "compile: " + describe_failure(e));
        }
      }
      return;
    }
    check_batch(batch, exes);
  }

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
  int woven_ = 0;  // woven launches (STITCH_WEAVE=1; docs/goptx.md)
};

TEST_P(RandomGpuDifferential, MatchesInterpreter) {
  const Shard shard = GetParam();
  const auto start = std::chrono::steady_clock::now();
  ScratchDirectory cache_dir("stitch-random-gpu-test");
  CubinCache cache(cache_dir.path());
  const testing::SeedRange seeds = testing::random_seed_range(seed_count(shard.family));
  std::vector<Case> batch;
  for (uint64_t seed = seeds.first; seed < seeds.first + seeds.count && reports_ < kMaxReports; ++seed) {
    if (seed % shard_count(shard.family) != shard.index) continue;
    Case c;
    c.seed = seed;
    c.options = shard.family == Family::Varied ? testing::varied_options(seed) : testing::stitched_options(seed);
    try {
      c.source = testing::random_graph(c.options);
      c.canonical = canonicalize(c.source);
    } catch (const std::exception& e) {
      report(c, "generating or canonicalising: " + describe_failure(e));
      continue;
    }
    batch.push_back(std::move(c));
  }
  // One translation unit per shard; a soak run of thousands of seeds is cut
  // into units of the normal size.
  const size_t unit = static_cast<size_t>(min_compared(shard.family));
  for (size_t first = 0; first < batch.size(); first += unit) {
    const std::vector<Case> part(batch.begin() + static_cast<std::ptrdiff_t>(first),
                                 batch.begin() + static_cast<std::ptrdiff_t>(std::min(batch.size(), first + unit)));
    compile_and_check(part, cache);
  }

  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("random gpu (%s, %s, shard %d of %d): %d graphs compared, %d compiles, %.1f s\n",
              family_name(shard.family), std::string(planner_name(shard.planner)).c_str(),
              static_cast<int>(shard.index), static_cast<int>(shard_count(shard.family)), compared_, compiles_,
              seconds);
  std::string covered;
  for (const auto& [feature, count] : coverage_) {
    covered += (covered.empty() ? "" : ", ") + feature + " " + std::to_string(count);
  }
  std::printf("  graphs with: %s\n", covered.c_str());
  // With weaving on (the cuda_sim.gpu_suites.random_woven CTest), the unfused
  // plans' independent neighbours must really be woven.
  const char* weave = std::getenv("STITCH_WEAVE");
  if (weave != nullptr && std::string(weave) == "1") {
    std::printf("  woven launches: %d\n", woven_);
    if (shard.planner == PlannerKind::None && !seeds.soak) {
      EXPECT_GT(woven_, 0) << "STITCH_WEAVE=1, yet no pair of kernels was woven";
    }
  }
  if (!seeds.soak) {
    EXPECT_GE(compared_, min_compared(shard.family)) << "too few random graphs reach the CUDA back end";
    if (shard.family == Family::Varied) {
      for (const char* feature : kMustCover) EXPECT_GT(coverage_[feature], 0) << "no compared graph has " << feature;
    } else {
      EXPECT_GT(coverage_["stitched kernel"], 0) << "no stitched kernel ran";
    }
  }
}

std::vector<Shard> all_shards() {
  std::vector<Shard> shards;
  for (PlannerKind p : {PlannerKind::None, PlannerKind::Xla, PlannerKind::Stitch}) {
    for (uint64_t i = 0; i < shard_count(Family::Varied); ++i) shards.push_back({Family::Varied, p, i});
  }
  for (uint64_t i = 0; i < shard_count(Family::Stitched); ++i) {
    shards.push_back({Family::Stitched, PlannerKind::Stitch, i});
  }
  return shards;
}

INSTANTIATE_TEST_SUITE_P(Shards, RandomGpuDifferential, ::testing::ValuesIn(all_shards()),
                         [](const ::testing::TestParamInfo<Shard>& info) {
                           return std::string(family_name(info.param.family)) + "_" +
                                  std::string(planner_name(info.param.planner)) + "_" +
                                  std::to_string(info.param.index);
                         });

}  // namespace
}  // namespace stitch::gpu_testing
