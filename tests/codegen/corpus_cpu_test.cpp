// The workload corpus through the CPU back end against the interpreter: every
// `_small` and `_dyn` graph of bench/workloads/*.stitch (the entry graphs are
// 128+ MiB, too big for a test), for the none and xla planners, all graphs of
// a planner in one translation unit. `_dyn` graphs run with each symbol bound
// to 1 and to 7 on the same compiled kernels (docs/testing.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>

#include "interpreter_differential.h"
#include "ir/canonicalize.h"
#include "random_graph.h"
#include "pipeline/cpu_route.h"
#include "runtime/cpu/executable.h"
#include "stitch/interpreter.h"
#include "stitch/text.h"

namespace stitch {
namespace {

namespace fs = std::filesystem;
using runtime::cpu::CpuExecutable;
using runtime::cpu::KernelCache;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::vector<Graph> corpus_graphs() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(fs::path(STITCH_SOURCE_DIR) / "bench" / "workloads")) {
    if (entry.path().extension() == ".stitch") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<Graph> graphs;
  for (const fs::path& file : files) {
    for (const Graph& g : parse_file(file.string()).graphs) {
      if (ends_with(g.name(), "_small") || ends_with(g.name(), "_dyn")) graphs.push_back(g);
    }
  }
  return graphs;
}

SymbolBindings bind_every_symbol(const Graph& g, int64_t extent) {
  SymbolBindings symbols;
  for (ValueId p : g.params()) {
    for (const Dim& d : g.type(p).shape) {
      if (d.is_symbolic()) symbols[d.name()] = extent;
    }
  }
  return symbols;
}

class CorpusCpuDifferential : public ::testing::TestWithParam<PlannerKind> {};

TEST_P(CorpusCpuDifferential, MatchesInterpreter) {
  std::vector<Graph> sources = corpus_graphs();
  ASSERT_GE(sources.size(), 20u) << "the workload corpus went missing";
  std::vector<Graph> canonical;
  for (const Graph& g : sources) {
    canonical.push_back(canonicalize(g));
    EXPECT_EQ(pipeline::cpu_unsupported_reason(canonical.back(), GetParam()), "") << g.name();
  }
  testing::ScratchDirectory cache_dir("stitch-corpus-cpu-test");
  KernelCache cache(cache_dir.path());
  std::vector<CpuExecutable> exes = pipeline::compile_cpu_batch(canonical, GetParam(), cache);
  ASSERT_EQ(exes.size(), sources.size());
  for (size_t i = 0; i < sources.size(); ++i) {
    const Graph& g = sources[i];
    bool symbolic = ends_with(g.name(), "_dyn");
    for (int64_t extent : symbolic ? std::vector<int64_t>{1, 7} : std::vector<int64_t>{1}) {
      SymbolBindings symbols = bind_every_symbol(g, extent);
      std::vector<Tensor> inputs = testing::random_inputs(g, 1000 + i, symbols);
      BoundedReference want = interpret_with_error_bounds(g, inputs);
      std::vector<Tensor> got = exes[i].run(inputs);
      EXPECT_EQ(testing::compare_with_interpreter_outputs(g, symbols, got, want), "")
          << g.name() << (symbolic ? " with every symbol = " + std::to_string(extent) : "");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Planners, CorpusCpuDifferential,
                         ::testing::Values(PlannerKind::None, PlannerKind::Xla, PlannerKind::Stitch),
                         [](const ::testing::TestParamInfo<PlannerKind>& info) {
                           return std::string(planner_name(info.param));
                         });

}  // namespace
}  // namespace stitch
