// The soak (docs/testing.md, Soak; scripts/soak.sh): random graphs of every
// op mix (the varied family) and of the stitched patterns, under every
// planner, on the CPU back end and on the CUDA back end on the simulated
// driver (cuda-sim), each against the reference interpreter; and random lazy
// programs of kernel-language calls, fused and unfused, against the lazy
// interpreter. A failing graph is shrunk to a small one that still fails
// (tests/support/graph_shrink.h) and written, with how to rerun it, to
// $STITCH_SOAK_OUT (default <build>/soak-failures).
//
// CI runs a few seeds from the soak's own range (from 100000, which the
// other suites never reach); a long run sets
//   STITCH_SOAK_GRAPHS=N      seeds per family (default 4)
//   STITCH_SOAK_FIRST_SEED=S  the first (default 100000)
//   STITCH_SOAK_PLANNERS=none,xla,stitch,greedy,ilp   STITCH_SOAK_BACKENDS=cpu,cuda-sim
//   STITCH_SOAK_SEEDS_FILE=FILE  the seeds in FILE (one a line) instead
//   STITCH_SOAK_GRAPHS_OUT=FILE  also writes the graphs' text to FILE
//   STITCH_SOAK_MODEL_GRAPHS=N   model-shaped graphs (default 2; below)
//   STITCH_SOAK_MODEL_NODES=MIN,MAX  their sizes (default 1000,20000)
//   STITCH_SOAK_MODEL_SAMPLE_EVERY=K  seeds divisible by K also run (default
//                                     20; 0: none), so a long run can plan in
//                                     one process and run the sample in another
//   STITCH_SOAK_MODEL_RUN_NODES=N  the size of the graph they run, with small
//                                  tensors (default 400; the long form 1000)
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "graph_shrink.h"
#include "progress.h"
#include "interpreter_differential.h"
#include "fusion/planner.h"
#include "ir/canonicalize.h"
#include "lazy_programs.h"
#include "model_graph.h"
#include "plan_invariants.h"
#include "random_graph.h"
#include "pipeline/cpu_route.h"
#include "runtime/cpu/executable.h"
#include "stitch/interpreter.h"
#include "stitch/text.h"

#ifdef STITCH_CUDA_SIM_DRIVER
#include "gpu_differential.h"
#include "sim_context.h"
#include "runtime/cuda/context.h"
#include "pipeline/cuda/cuda_route.h"
#include "runtime/cuda/cuda_executable.h"
#endif

namespace stitch {
namespace {

namespace fs = std::filesystem;

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v ? std::string(v) : fallback;
}

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream s(list);
  for (std::string item; std::getline(s, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

struct SoakConfig {
  uint64_t graphs = 4;
  uint64_t first_seed = 100000;
  std::vector<uint64_t> seeds;  // from STITCH_SOAK_SEEDS_FILE: these instead of the range
  std::vector<PlannerKind> planners;
  std::vector<std::string> backends;
  fs::path out;
};

SoakConfig config() {
  SoakConfig c;
  c.graphs = std::stoull(env_or("STITCH_SOAK_GRAPHS", "4"));
  c.first_seed = std::stoull(env_or("STITCH_SOAK_FIRST_SEED", "100000"));
  if (const std::string file = env_or("STITCH_SOAK_SEEDS_FILE", ""); !file.empty()) {
    std::ifstream in(file);
    if (!in) throw std::invalid_argument("STITCH_SOAK_SEEDS_FILE: cannot read " + file);
    for (uint64_t seed; in >> seed;) c.seeds.push_back(seed);
    std::sort(c.seeds.begin(), c.seeds.end());
    c.seeds.erase(std::unique(c.seeds.begin(), c.seeds.end()), c.seeds.end());
  } else {
    for (uint64_t seed = c.first_seed; seed < c.first_seed + c.graphs; ++seed) c.seeds.push_back(seed);
  }
  for (const std::string& name : split(env_or("STITCH_SOAK_PLANNERS", "none,xla,stitch,greedy,ilp"))) {
    const std::optional<PlannerKind> p = parse_planner_kind(name);
    if (!p) throw std::invalid_argument("STITCH_SOAK_PLANNERS: unknown planner " + name);
    c.planners.push_back(*p);
  }
#ifdef STITCH_SOAK_DEFAULT_BACKENDS
  c.backends = split(env_or("STITCH_SOAK_BACKENDS", STITCH_SOAK_DEFAULT_BACKENDS));
#else
  c.backends = split(env_or("STITCH_SOAK_BACKENDS", "cpu,cuda-sim"));
#endif
  c.out = env_or("STITCH_SOAK_OUT", std::string(STITCH_BINARY_DIR) + "/soak-failures");
  return c;
}

struct Case {
  std::string family;  // "varied" or "stitched"
  uint64_t seed = 0;
  testing::RandomGraphOptions options;
  Graph source;
};

// "" when the back end agrees with the interpreter on `g` (seeded inputs).
using Check = std::function<std::string(const Graph& g, uint64_t seed, int64_t max_symbol_extent)>;

// Seeded inputs (half the seeds with ±0, ±inf, NaN and integer extremes)
// through a compiled graph and the interpreter.
std::string run_cpu(runtime::cpu::CpuExecutable& exe, const Graph& g, uint64_t seed, int64_t max_symbol_extent) {
  try {
    const SymbolBindings symbols = testing::random_symbol_bindings(g, seed, max_symbol_extent);
    const std::vector<Tensor> inputs = testing::random_inputs(g, seed, symbols, seed % 2 == 1);
    const BoundedReference want = interpret_with_error_bounds(g, inputs);
    return testing::compare_with_interpreter_outputs(g, symbols, exe.run(inputs), want);
  } catch (const std::exception& e) {
    return std::string("exception: ") + e.what();
  }
}

std::string check_cpu(const Graph& g, uint64_t seed, int64_t max_symbol_extent, PlannerKind planner,
                      runtime::cpu::KernelCache& cache) {
  try {
    std::vector<runtime::cpu::CpuExecutable> exes =
        pipeline::compile_cpu_batch({canonicalize(g)}, planner, cache);
    return run_cpu(exes[0], g, seed, max_symbol_extent);
  } catch (const std::exception& e) {
    return std::string("compile: ") + e.what();
  }
}

#ifdef STITCH_CUDA_SIM_DRIVER
using gpu_testing::sim_context;

std::string run_cuda_sim(runtime::cuda::CudaExecutable& exe, const Graph& g, uint64_t seed,
                         int64_t max_symbol_extent) {
  try {
    const SymbolBindings symbols = testing::random_symbol_bindings(g, seed, max_symbol_extent);
    const std::vector<Tensor> inputs = testing::random_inputs(g, seed, symbols, seed % 2 == 1);
    return gpu_testing::check_against_interpreter(exe, g, symbols, inputs);
  } catch (const std::exception& e) {
    return std::string("exception: ") + gpu_testing::describe_failure(e);
  }
}

std::string check_cuda_sim(const Graph& g, uint64_t seed, int64_t max_symbol_extent, PlannerKind planner,
                           runtime::cuda::CubinCache& cache) {
  try {
    std::vector<runtime::cuda::CudaExecutable> exes =
        pipeline::compile_cuda_batch({canonicalize(g)}, planner, sim_context(), cache);
    return run_cuda_sim(exes[0], g, seed, max_symbol_extent);
  } catch (const std::exception& e) {
    return std::string("compile: ") + gpu_testing::describe_failure(e);
  }
}
#endif

// Graphs a translation unit: compiling is what costs, so the soak compiles
// in batches and falls back to one graph a compile when a batch fails.
constexpr size_t kBatch = 60;

// Per case of `batch`: "" or what failed. Compiles the batch as one
// translation unit; when that fails, `check_one` compiles each on its own.
template <class Exe, class CompileBatch, class RunOne>
std::vector<std::string> check_batch(const std::vector<const Case*>& batch, const CompileBatch& compile_batch,
                                     const RunOne& run_one, const Check& check_one) {
  std::vector<Graph> canonical;
  for (const Case* c : batch) canonical.push_back(canonicalize(c->source));
  std::vector<std::string> failures;
  std::vector<Exe> exes;
  try {
    exes = compile_batch(canonical);
  } catch (const std::exception&) {
    for (const Case* c : batch) failures.push_back(check_one(c->source, c->seed, c->options.max_symbol_extent));
    return failures;
  }
  for (size_t i = 0; i < batch.size(); ++i) failures.push_back(run_one(exes[i], *batch[i]));
  return failures;
}

// Shrinks the failing graph and writes it where a person finds it.
void report_failure(const SoakConfig& cfg, const Case& c, const std::string& planner, const std::string& backend,
                    const std::string& failure, const Check& check) {
  testing::ShrinkStats stats;
  const Graph small = testing::shrink_graph(
      c.source, [&](const Graph& g) { return !check(g, c.seed, c.options.max_symbol_extent).empty(); }, 200, &stats);
  fs::create_directories(cfg.out);
  const fs::path file = cfg.out / fmt::format("soak-{}-{}-{}-{}.stitch", c.family, c.seed, planner, backend);
  std::ofstream out(file);
  out << fmt::format("# soak failure: {} graph, seed {}, planner {}, backend {}\n", c.family, c.seed, planner, backend);
  out << "# shrunk from " << c.source.nodes().size() << " to " << small.nodes().size() << " nodes in "
      << stats.attempts << " attempts; inputs: seed " << c.seed << "\n";
  std::istringstream lines(failure);
  for (std::string line; std::getline(lines, line);) out << "# " << line << "\n";
  out << fmt::format("# rerun: STITCH_SOAK_FIRST_SEED={} STITCH_SOAK_GRAPHS=1 STITCH_SOAK_PLANNERS={} "
                     "STITCH_SOAK_BACKENDS={} <build>/tests/test_soak\n",
                     c.seed, planner, backend);
  out << "\n" << print_graph(small);
  ADD_FAILURE() << c.family << " graph, seed " << c.seed << ", planner " << planner << ", " << backend << ": "
                << failure << "\nshrunk reproducer: " << file.string() << "\n"
                << print_graph(small);
}

// Counts a failure: the first three are shrunk and written; every one is named.
void note_failure(const SoakConfig& cfg, const Case& c, const std::string& planner, const std::string& backend,
                  const std::string& failure, const Check& check, int* failures) {
  cli::Progress::clear_for_output();
  if (++*failures <= 3) {
    report_failure(cfg, c, planner, backend, failure, check);
    return;
  }
  ADD_FAILURE() << c.family << " graph, seed " << c.seed << ", planner " << planner << ", " << backend << ": "
                << failure.substr(0, failure.find('\n'));
}

TEST(Soak, RandomGraphsEveryPlannerAndBackendMatchTheInterpreter) {
  const SoakConfig cfg = config();
  const auto start = std::chrono::steady_clock::now();
  std::vector<Case> cases;
  for (uint64_t seed : cfg.seeds) {
    for (const char* family : {"varied", "stitched"}) {
      Case c;
      c.family = family;
      c.seed = seed;
      c.options = c.family == "varied" ? testing::varied_options(seed) : testing::stitched_options(seed);
      c.source = testing::random_graph(c.options);
      cases.push_back(std::move(c));
    }
  }
  // STITCH_SOAK_GRAPHS_OUT=FILE: the graphs of the run, one after another,
  // each under a comment naming its family and seed (to compare generators).
  if (const std::string file = env_or("STITCH_SOAK_GRAPHS_OUT", ""); !file.empty()) {
    std::ofstream out(file);
    for (const Case& c : cases) out << "# " << c.family << " " << c.seed << "\n" << print_graph(c.source) << "\n";
  }
  testing::ScratchDirectory cache_dir("stitch-soak");
  runtime::cpu::KernelCache cpu_cache(cache_dir.path());
#ifdef STITCH_CUDA_SIM_DRIVER
  runtime::cuda::CubinCache cubin_cache(cache_dir.path());
#endif
  // Batches outermost, so that a run stopped early has checked each graph it
  // reached under every planner and back end; one line a batch says how far.
  int runs = 0, failures = 0;
  cli::Progress progress("soak: graphs", cases.size());
  for (size_t first = 0; first < cases.size(); first += kBatch) {
    std::vector<const Case*> batch;
    for (size_t i = first; i < std::min(cases.size(), first + kBatch); ++i) batch.push_back(&cases[i]);
    progress.update(first, fmt::format("to seed {}, {} runs, {} mismatches", batch.back()->seed, runs, failures));
    for (PlannerKind planner : cfg.planners) {
      const std::string planner_text(planner_name(planner));
      for (const std::string& backend : cfg.backends) {
        Check check;
        std::vector<std::string> results;
        if (backend == "cpu") {
          check = [&](const Graph& g, uint64_t seed, int64_t extent) {
            return check_cpu(g, seed, extent, planner, cpu_cache);
          };
          results = check_batch<runtime::cpu::CpuExecutable>(
              batch,
              [&](const std::vector<Graph>& g) {
                return pipeline::compile_cpu_batch(g, planner, cpu_cache);
              },
              [&](runtime::cpu::CpuExecutable& exe, const Case& c) {
                return run_cpu(exe, c.source, c.seed, c.options.max_symbol_extent);
              },
              check);
#ifdef STITCH_CUDA_SIM_DRIVER
        } else if (backend == "cuda-sim") {
          check = [&](const Graph& g, uint64_t seed, int64_t extent) {
            return check_cuda_sim(g, seed, extent, planner, cubin_cache);
          };
          results = check_batch<runtime::cuda::CudaExecutable>(
              batch,
              [&](const std::vector<Graph>& g) {
                return pipeline::compile_cuda_batch(g, planner, sim_context(), cubin_cache);
              },
              [&](runtime::cuda::CudaExecutable& exe, const Case& c) {
                return run_cuda_sim(exe, c.source, c.seed, c.options.max_symbol_extent);
              },
              check);
#endif
        } else {
          FAIL() << "STITCH_SOAK_BACKENDS: " << backend << " is not a back end this build can soak (cpu, cuda-sim)";
        }
        for (size_t i = 0; i < batch.size(); ++i) {
          ++runs;
          if (results[i].empty()) continue;
          note_failure(cfg, *batch[i], planner_text, backend, results[i], check, &failures);
        }
      }
    }
  }
  progress.finish();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("soak: %zu graphs (%zu seeds from %llu to %llu, varied and stitched) x %zu planners x %zu back ends: %d "
              "runs, %d mismatches, %.0f s\n",
              cases.size(), cfg.seeds.size(), cfg.seeds.empty() ? 0ull : static_cast<unsigned long long>(cfg.seeds.front()),
              cfg.seeds.empty() ? 0ull : static_cast<unsigned long long>(cfg.seeds.back()), cfg.planners.size(),
              cfg.backends.size(), runs, failures, seconds);
  EXPECT_EQ(failures, 0);
}

// Model-scale graphs (tests/support/model_graph.h): each seed's graph of
// STITCH_SOAK_MODEL_NODES=MIN,MAX nodes (default 1000,20000) planned by every
// planner, each plan checked as a cover (plan_invariants.h); one seed in
// twenty (seed % 20 == 0) also runs a graph of the same family with tensors
// of a few hundred elements (and about 1,000 nodes) under every planner and
// back end against the interpreter. STITCH_SOAK_MODEL_GRAPHS=N seeds
// (default 2) from STITCH_SOAK_FIRST_SEED, or STITCH_SOAK_SEEDS_FILE's.
TEST(Soak, ModelShapedGraphsPlanUnderEveryPlannerAndASampleRuns) {
  SoakConfig cfg = config();
  const uint64_t graphs = std::stoull(env_or("STITCH_SOAK_MODEL_GRAPHS", "2"));
  if (env_or("STITCH_SOAK_SEEDS_FILE", "").empty()) {
    cfg.seeds.clear();
    for (uint64_t seed = cfg.first_seed; seed < cfg.first_seed + graphs; ++seed) cfg.seeds.push_back(seed);
  }
  const std::vector<std::string> bounds = split(env_or("STITCH_SOAK_MODEL_NODES", "1000,20000"));
  if (bounds.size() != 2) throw std::invalid_argument("STITCH_SOAK_MODEL_NODES: MIN,MAX");
  const int min_nodes = std::stoi(bounds[0]), max_nodes = std::stoi(bounds[1]);
  const uint64_t sample_every = std::stoull(env_or("STITCH_SOAK_MODEL_SAMPLE_EVERY", "20"));
  const int run_nodes = std::stoi(env_or("STITCH_SOAK_MODEL_RUN_NODES", "400"));
  testing::ScratchDirectory cache_dir("stitch-soak-model");
  runtime::cpu::KernelCache cpu_cache(cache_dir.path());
#ifdef STITCH_CUDA_SIM_DRIVER
  runtime::cuda::CubinCache cubin_cache(cache_dir.path());
#endif
  const auto start = std::chrono::steady_clock::now();
  size_t planned = 0, nodes = 0, runs = 0;
  int failures = 0;
  double slowest = 0;
  auto progress = [&](uint64_t seed) {
    std::fprintf(stderr, "soak: model seed %llu: %zu plans, %zu runs, %d failures, %.0f s\n",
                 static_cast<unsigned long long>(seed), planned, runs, failures,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  };
  for (uint64_t seed : cfg.seeds) {
    const testing::ModelGraphOptions options = testing::model_graph_options(seed, min_nodes, max_nodes);
    const Graph g = canonicalize(testing::model_graph(options));
    nodes += g.nodes().size();
    for (PlannerKind planner : cfg.planners) {
      const auto planning = std::chrono::steady_clock::now();
      std::string problems;
      try {
        problems = testing_fusion::plan_invariant_violations(g, plan(g, planner));
      } catch (const std::exception& e) {
        problems = std::string("exception: ") + e.what();
      }
      slowest = std::max(slowest, std::chrono::duration<double>(std::chrono::steady_clock::now() - planning).count());
      ++planned;
      if (!problems.empty()) {
        ++failures;
        ADD_FAILURE() << testing::describe(options) << ", planner " << planner_name(planner) << ": " << problems;
      }
    }
    if (sample_every == 0 || seed % sample_every != 0) {
      if (planned % (50 * cfg.planners.size()) == 0) progress(seed);
      continue;
    }
    Case c;
    c.family = "model";
    c.seed = seed;
    c.options.max_symbol_extent = 3;
    c.source = testing::model_graph(testing::model_graph_options(seed, run_nodes, run_nodes, /*run_sized=*/true));
    for (PlannerKind planner : cfg.planners) {
      for (const std::string& backend : cfg.backends) {
        Check check;
        if (backend == "cpu") {
          check = [&](const Graph& graph, uint64_t s, int64_t extent) { return check_cpu(graph, s, extent, planner, cpu_cache); };
#ifdef STITCH_CUDA_SIM_DRIVER
        } else if (backend == "cuda-sim") {
          check = [&](const Graph& graph, uint64_t s, int64_t extent) {
            return check_cuda_sim(graph, s, extent, planner, cubin_cache);
          };
#endif
        } else {
          FAIL() << "STITCH_SOAK_BACKENDS: " << backend << " is not a back end this build can soak (cpu, cuda-sim)";
        }
        ++runs;
        const std::string result = check(c.source, seed, c.options.max_symbol_extent);
        if (result.empty()) continue;
        note_failure(cfg, c, std::string(planner_name(planner)), backend, result, check, &failures);
      }
    }
    progress(seed);
  }
  std::printf("soak: %zu model-shaped graphs (%zu nodes in all, %d to %d each) x %zu planners: %zu plans (slowest "
              "%.2f s), %zu sampled runs, %d failures, %.0f s\n",
              cfg.seeds.size(), nodes, min_nodes, max_nodes, cfg.planners.size(), planned, slowest, runs, failures,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  EXPECT_EQ(failures, 0);
}

TEST(Soak, RandomLazyProgramsMatchTheInterpreter) {
  const SoakConfig cfg = config();
  const std::map<std::string, KernelRef> pool =
      share_kernels(parse_module(lazy_programs::kPool, "pool.stitch"));
  std::mt19937_64 rng(cfg.first_seed);
  uint64_t programs = 0;
  for (uint64_t attempt = 0; programs < cfg.graphs && attempt < 40 * cfg.graphs + 40; ++attempt) {
    lazy_programs::Program p = lazy_programs::random_program(rng);
    const uint64_t seed = cfg.first_seed + attempt;
    LazyOptions reference_options;
    reference_options.mode = LazyOptions::Mode::Reference;
    lazy_programs::Outcome reference;
    try {
      reference = lazy_programs::run(p, reference_options, seed, pool);
    } catch (const UserError&) {
      continue;  // a call races with itself: not a valid program
    }
    ++programs;
    SCOPED_TRACE(lazy_programs::describe(p));
    for (LazyOptions::Mode mode : {LazyOptions::Mode::Fused, LazyOptions::Mode::Unfused}) {
      LazyOptions options;
      options.mode = mode;
      lazy_programs::expect_same(lazy_programs::run(p, options, seed, pool), reference, "soak");
    }
    if (HasFailure()) return;
  }
  std::printf("soak: %llu lazy programs, fused and unfused, against the lazy interpreter\n",
              static_cast<unsigned long long>(programs));
  EXPECT_EQ(programs, cfg.graphs);
}

}  // namespace
}  // namespace stitch
