// Tile groups (docs/lowering.md, Tile groups): reductions over different axes
// of one tile in one kernel, a block per outer index. Each graph is one
// hand-built group (every node; the graph's outputs as roots), lowered by
// lower_tile_group; all kernels are compiled in one translation unit and
// compared with the interpreter at the tolerances of docs/lowering.md (Tests
// and tolerances): 4 n eps for reductions of length n.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "codegen/cpu/cpp_emitter.h"
#include "group_kernel_runner.h"
#include "fusion/planner.h"
#include "fusion/tile_group.h"
#include "ir/canonicalize.h"
#include "kir/printer.h"
#include "lower/lower_loop_group.h"
#include "lower/lower_tile_group.h"
#include "runtime/cpu/cpu_compiler.h"
#include "pipeline/cpu_route.h"
#include "runtime/cpu/executable.h"
#include "stitch/interpreter.h"
#include "stitch/text.h"
#include "tensor_compare.h"

namespace stitch::lower {
namespace {


struct Case {
  std::string id;
  std::string text;
  int64_t reduction_length;            // the longest reduction
  std::vector<int64_t> batches{0};     // values of B to run (0: the graph has no B)
  bool transcendental = false;
};

const char* const kCenter = R"(graph center(x: f32[B, 32, 48]) -> (f32[B, 32, 48]) {
  rm = reduce_mean(x, axes=[2], keepdims=true)
  cm = reduce_mean(x, axes=[1], keepdims=true)
  y = sub(sub(x, broadcast(rm, shape=[B, 32, 48])), broadcast(cm, shape=[B, 32, 48]))
  return y
})";

std::vector<Case> make_cases() {
  return {
      {"center_symbolic", kCenter, 48, {0, 1, 3, 5}},
      {"center_static", R"(graph center_static(x: f32[3, 32, 48]) -> (f32[3, 32, 48]) {
  rm = reduce_mean(x, axes=[2], keepdims=true)
  cm = reduce_mean(x, axes=[1], keepdims=true)
  y = sub(sub(x, broadcast(rm, shape=[3, 32, 48])), broadcast(cm, shape=[3, 32, 48]))
  return y
})",
       48},
      {"center_small", R"(graph center_small(x: f32[2, 5, 7]) -> (f32[2, 5, 7]) {
  y = sub(sub(x, reduce_mean(x, axes=[2], keepdims=true)), reduce_mean(x, axes=[1], keepdims=true))
  return y
})",
       7},
      // More results per block than threads (100 column means, 256 threads,
      // 6400 tile elements: 25 store steps).
      {"center_wide", R"(graph center_wide(x: f32[1, 64, 100]) -> (f32[1, 64, 100]) {
  y = sub(sub(x, reduce_mean(x, axes=[2], keepdims=true)), reduce_mean(x, axes=[1], keepdims=true))
  return y
})",
       100},
      // The tile is the whole matrix: one block; only reduction roots.
      {"sums_2d", R"(graph sums_2d(x: f32[64, 100]) -> (f32[64], f32[100]) {
  r = reduce_sum(x, axes=[1])
  c = reduce_sum(x, axes=[0])
  return r, c
})",
       100},
      // The column sums read x minus the row means: a second phase.
      {"chain", R"(graph chain(x: f32[B, 16, 24]) -> (f32[B, 16, 24], f32[B, 24], f32[B, 16]) {
  rm = reduce_mean(x, axes=[2])
  c = sub(x, reshape(rm, shape=[B, 16, 1]))
  cs = reduce_sum(mul(c, c), axes=[1], keepdims=true)
  y = div(c, sqrt(add(cs, 1.0)))
  s = reshape(cs, shape=[B, 24])
  return y, s, rm
})",
       24, {1, 4}, true},
      // The row sums read transposed and a full sum of the result: a result
      // read at another tile position than the thread that computed it.
      {"transposed", R"(graph transposed(x: f32[8, 8]) -> (f32[8, 8], f32[]) {
  m = reduce_sum(x, axes=[1], keepdims=true)
  y = add(x, transpose(m, perm=[1, 0]))
  s = reduce_max(y)
  return y, s
})",
       64},
      // Tile positions moved by a slice.
      {"shifted", R"(graph shifted(x: f32[B, 8, 9]) -> (f32[B, 8, 9]) {
  rm = reduce_max(x, axes=[2], keepdims=true)
  cm = reduce_sum(x, axes=[1], keepdims=true)
  s = slice(broadcast(cm, shape=[B, 16, 9]), start=[0, 8, 0])
  y = add(sub(x, s), broadcast(rm, shape=[B, 8, 9]))
  return y
})",
       9, {2, 3}},
      // Bool and integer results in shared memory.
      {"logical", R"(graph logical(x: f32[2, 6, 10]) -> (bool[2, 6, 10]) {
  p = gt(x, -1.0)
  y = xor(reduce_any(p, axes=[2], keepdims=true), reduce_all(p, axes=[1], keepdims=true))
  return y
})",
       10},
      {"integers", R"(graph integers(x: i32[3, 7, 5]) -> (i32[3, 7, 5]) {
  y = sub(mul(x, reduce_max(x, axes=[2], keepdims=true)), reduce_sum(x, axes=[1, 2], keepdims=true))
  return y
})",
       35},
      // f16: accumulated in f32, each result rounded once.
      {"center_f16", R"(graph center_f16(x: f16[3, 12, 20]) -> (f16[3, 12, 20], f16[3, 12]) {
  rm = reduce_mean(x, axes=[2], keepdims=true)
  y = sub(sub(x, rm), reduce_mean(x, axes=[1], keepdims=true))
  r = reshape(rm, shape=[3, 12])
  return y, r
})",
       20},
  };
}

using Lowered = testing::LoweredGroup<Case>;

FusionGroup whole_graph_group(const Graph& g) { return testing::whole_graph_group(g, GroupKind::Stitched); }

class TileLowering : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    suite_ = std::make_unique<testing::LoweredGroups<Case>>();
    // Every case in both block shapes: the GPU's (32-multiple threads) and
    // the CPU's (threads spanning the tile's innermost extent), id "_cpu".
    for (Case c : make_cases()) {
      for (bool cpu : {false, true}) {
        if (cpu) c.id += "_cpu";
        Graph g = canonicalize(parse_module(c.text).graphs.front());
        FusionGroup group = whole_graph_group(g);
        ASSERT_EQ(tile_group_lowering_problem(g, group), "") << c.id;
        kir::Kernel k = lower_tile_group(g, group, "tile_" + c.id, cpu);
        suite_->add(c, std::move(g), std::move(group), std::move(k));
      }
    }
    suite_->compile();
  }
  static void TearDownTestSuite() { suite_.reset(); }

  static const Lowered& find(const std::string& id) {
    for (const Lowered& l : suite_->all()) {
      if (l.c.id == id) return l;
    }
    throw std::runtime_error("no case " + id);
  }

  // The kernel's outputs for `inputs`, one per graph output.
  static std::vector<Tensor> run(const Lowered& l, const std::vector<Tensor>& inputs) {
    return suite_->run(l, inputs);
  }

  static std::unique_ptr<testing::LoweredGroups<Case>> suite_;
};

std::unique_ptr<testing::LoweredGroups<Case>> TileLowering::suite_;

TEST_F(TileLowering, MatchesInterpreter) {
  for (const Lowered& l : suite_->all()) {
    for (int64_t batch : l.c.batches) {
      SCOPED_TRACE(l.c.id + " B = " + std::to_string(batch));
      std::vector<Tensor> inputs;
      uint64_t seed = 41;
      for (ValueId p : l.graph.params()) {
        Tensor t(l.graph.type(p).dtype, concrete_shape(l.graph.type(p).shape, {{"B", batch}}));
        fill_random(t, seed++);
        inputs.push_back(std::move(t));
      }
      const std::vector<Tensor> want = interpret(l.graph, inputs);
      const std::vector<Tensor> got = run(l, inputs);
      ASSERT_EQ(got.size(), want.size());
      for (size_t k = 0; k < got.size(); ++k) {
        EXPECT_TRUE(stitch::testing::matches_interpreter(got[k], want[k], l.c.transcendental, l.c.reduction_length))
            << "output " << k;
      }
    }
  }
}

// One block per outer index; each phase's results go to shared memory and a
// barrier separates them from their readers.
TEST_F(TileLowering, KernelShape) {
  const std::string center = kir::print_kernel(find("center_symbolic").kernel);
  EXPECT_NE(center.find("launch(grid=sym_B, block=256)"), std::string::npos) << center;
  EXPECT_NE(center.find("shared red0: f32[32]"), std::string::npos) << center;
  EXPECT_NE(center.find("shared red1: f32[48]"), std::string::npos) << center;
  EXPECT_NE(center.find("barrier"), std::string::npos) << center;
  const std::string sums = kir::print_kernel(find("sums_2d").kernel);
  EXPECT_NE(sums.find("launch(grid=1, block=128)"), std::string::npos) << sums;
  // Two phases, two barriers.
  const std::string chain = kir::print_kernel(find("chain").kernel);
  size_t barriers = 0;
  for (size_t at = chain.find("barrier"); at != std::string::npos; at = chain.find("barrier", at + 1)) ++barriers;
  EXPECT_EQ(barriers, 2u) << chain;
}

// The CPU's block: threads span the tile's innermost extent (48, or 45 rounded
// up to 48; 100 to 112), and where they span it exactly a step of the store
// phase is one row of the tile, indexed by the step and the thread directly.
TEST_F(TileLowering, CpuBlockSpansTheInnermostExtent) {
  const std::string center = kir::print_kernel(find("center_symbolic_cpu").kernel);
  EXPECT_NE(center.find("launch(grid=sym_B, block=48)"), std::string::npos) << center;
  EXPECT_NE(center.find("out_y[o0, j6, thr] = "), std::string::npos) << center;
  const std::string wide = kir::print_kernel(find("center_wide_cpu").kernel);
  EXPECT_NE(wide.find("block=112)"), std::string::npos) << wide;
}

TEST(TileLoweringRefusal, TileTooLarge) {
  Graph g = canonicalize(parse_module(R"(graph big(x: f32[B, 128, 128]) -> (f32[B, 128, 128]) {
  y = sub(sub(x, reduce_mean(x, axes=[2], keepdims=true)), reduce_mean(x, axes=[1], keepdims=true))
  return y
})")
                             .graphs.front());
  EXPECT_EQ(tile_group_lowering_problem(g, whole_graph_group(g)),
            "the tile [128, 128] and its results take 66560 bytes, over the 49152 a block holds");
}

// Through the stitch planner and the CPU executable: double centering (three
// kernels under xla) and sibling reductions over a tile (two) run as one tile
// kernel each, for several batch sizes on the same compiled kernel.
TEST(TilePlanned, StitchPlansOneTileKernel) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("stitch_tile_planned_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  runtime::cpu::KernelCache cache(dir);
  const std::vector<Graph> sources = {
      parse_module(kCenter).graphs.front(),
      parse_module(R"(graph sibling_sums(x: f32[B, 30, 45]) -> (f32[B, 30], f32[B, 45]) {
  r = reduce_sum(x, axes=[2])
  c = reduce_min(x, axes=[1])
  return r, c
})")
          .graphs.front(),
  };
  std::vector<Graph> graphs;
  for (const Graph& g : sources) graphs.push_back(canonicalize(g));
  std::vector<runtime::cpu::CpuExecutable> exes =
      pipeline::compile_cpu_batch(graphs, PlannerKind::Stitch, cache);
  for (size_t i = 0; i < sources.size(); ++i) {
    SCOPED_TRACE(sources[i].name());
    EXPECT_EQ(exes[i].kernel_count(), 1) << print_plan(exes[i].graph(), exes[i].plan());
    EXPECT_GT(plan(graphs[i], PlannerKind::Xla).groups.size(), 1u);
    for (int64_t batch : {1, 3, 300}) {
      SCOPED_TRACE("B = " + std::to_string(batch));
      std::vector<Tensor> inputs;
      Tensor x(DType::f32, concrete_shape(sources[i].type(sources[i].params()[0]).shape, {{"B", batch}}));
      fill_random(x, 7 + static_cast<uint64_t>(batch));
      inputs.push_back(std::move(x));
      const std::vector<Tensor> want = interpret(sources[i], inputs);
      const std::vector<Tensor> got = exes[i].run(inputs);
      ASSERT_EQ(got.size(), want.size());
      for (size_t k = 0; k < got.size(); ++k) {
        EXPECT_TRUE(stitch::testing::matches_interpreter(got[k], want[k], false, 48)) << "output " << k;
      }
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace stitch::lower
