// The block-tile column schedule (docs/lowering.md, Column schedules) forced
// on column reductions: sums, means, products, max/min and any/all over
// leading axes, several roots, f16, columns and rows that are not multiples
// of the tile, a symbolic batch and a reduction over a middle axis. All in
// one translation unit, compared with the interpreter; argmax keeps a thread
// per column.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "fusion/planner.h"
#include "ir/canonicalize.h"
#include "kir/printer.h"
#include "lower/lower_plan.h"
#include "pipeline/cpu_route.h"
#include "runtime/cpu/executable.h"
#include "stitch/interpreter.h"
#include "stitch/text.h"
#include "tensor_compare.h"
#include "lower_scheduled.h"

namespace stitch::lower {
namespace {

namespace fs = std::filesystem;
using runtime::cpu::CpuExecutable;
using runtime::cpu::KernelCache;
using schedule::RowScheduleTarget;

struct Case {
  std::string text;
  std::vector<SymbolBindings> bindings{{}};
  int64_t reduction_length = 0;
};

std::vector<Case> cases() {
  return {
      {R"(graph sums(x: f32[100, 45]) -> (f32[45], f32[45], f32[45], f32[45]) {
  s = reduce_sum(x, axes=[0])
  m = reduce_mean(x, axes=[0])
  a = reduce_max(x, axes=[0])
  b = reduce_min(x, axes=[0])
  return s, m, a, b
})",
       {{}}, 100},
      {R"(graph big(x: f32[1000, 70]) -> (f32[70]) {
  s = reduce_sum(mul(x, x), axes=[0])
  return s
})",
       {{}}, 1000},
      {R"(graph prod(x: f32[7, 33]) -> (f32[33], bool[33]) {
  p = reduce_prod(x, axes=[0])
  h = constant(value=0.5, shape=[7, 33], dtype=f32)
  g = reduce_any(gt(x, h), axes=[0])
  return p, g
})",
       {{}}, 7},
      {R"(graph half(x: f16[64, 40]) -> (f16[40]) {
  s = reduce_sum(x, axes=[0])
  return s
})",
       {{}}, 64},
      {R"(graph batch(x: f32[B, 3, 20]) -> (f32[3, 20]) {
  s = reduce_sum(x, axes=[0])
  return s
})",
       {{{"B", 1}}, {{"B", 50}}, {{"B", 0}}}, 50},
      {R"(graph middle(x: f32[4, 30, 5]) -> (f32[4, 5]) {
  s = reduce_sum(x, axes=[1])
  return s
})",
       {{}}, 30},
  };
}

RowScheduleTarget tiles(int64_t groups) {
  RowScheduleTarget t = RowScheduleTarget::cpu();
  t.forced_column_groups = groups;
  return t;
}

void expect_matches_interpreter(const RowScheduleTarget& target) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("stitch_column_schedule_test_{}", ::getpid());
  fs::remove_all(dir);
  {
    KernelCache cache(dir);
    // One copy: a range-for over cases()[i].bindings would outlive the temporary (ASan found it).
    const std::vector<Case> all = cases();
    std::vector<Graph> graphs;
    for (const Case& c : all) graphs.push_back(canonicalize(parse_module(c.text).graphs.front()));
    std::vector<CpuExecutable> exes = pipeline::compile_cpu_batch(graphs, PlannerKind::Xla, cache, {}, target);
    for (size_t i = 0; i < graphs.size(); ++i) {
      for (const SymbolBindings& b : all[i].bindings) {
        SCOPED_TRACE(graphs[i].name() + (b.empty() ? "" : fmt::format(" B={}", b.at("B"))));
        std::vector<Tensor> inputs;
        uint64_t seed = 7;
        for (ValueId p : graphs[i].params()) {
          Tensor t(graphs[i].type(p).dtype, concrete_shape(graphs[i].type(p).shape, b));
          fill_random(t, seed++);
          inputs.push_back(std::move(t));
        }
        const std::vector<Tensor> want = interpret(graphs[i], inputs);
        const std::vector<Tensor> got = exes[i].run(inputs);
        ASSERT_EQ(got.size(), want.size());
        for (size_t k = 0; k < got.size(); ++k) {
          EXPECT_TRUE(stitch::testing::matches_interpreter(got[k], want[k], false, all[i].reduction_length))
              << "output " << k;
        }
      }
    }
  }
  fs::remove_all(dir);
}

TEST(ColumnScheduleOnCpu, BlockTilesMatchInterpreter) { expect_matches_interpreter(tiles(8)); }

// The CPU's own choice: a block of every kept column where they are at most
// 2048 and not a multiple of 256 (45, 70, 33, 40 and 3 x 20 here), else 256.
TEST(ColumnScheduleOnCpu, TheCpusBlocksMatchInterpreter) { expect_matches_interpreter(RowScheduleTarget::cpu()); }

kir::Kernel lowered(const std::string& text, const RowScheduleTarget& target) {
  const Graph g = canonicalize(parse_module(text).graphs.front());
  std::vector<LoweredGroup> groups = stitch::testing::lower_with_default_schedules(g, plan(g, PlannerKind::Xla), "k", target);
  EXPECT_EQ(groups.size(), 1u);
  EXPECT_TRUE(groups.at(0).kernel) << groups.at(0).not_lowered_reason;
  return *groups.at(0).kernel;
}

// 45 columns in tiles of 32: 2 blocks of 8 x 32 threads, partials in shared
// memory, one barrier, the first row group combines in group order.
TEST(ColumnScheduleShape, BlockTileColumns) {
  const kir::Kernel k = lowered(cases()[0].text, tiles(8));
  EXPECT_EQ(k.launch.block_size, 256);
  EXPECT_EQ(kir::print_expr(k.launch.grid), "2");
  ASSERT_EQ(k.shared.size(), 4u);
  EXPECT_EQ(k.shared[0].count, 256);
  const std::string text = kir::print_kernel(k);
  EXPECT_NE(text.find("barrier"), std::string::npos) << text;
  EXPECT_NE(text.find("if lt(thr, 32)"), std::string::npos) << text;
  EXPECT_NE(k.note.find("block-tile-column [THREAD-CTA_8,GRID-CTA_32]; 256 threads"), std::string::npos) << k.note;
}

// Argmax keeps a thread per column even when tiles are asked for; the CPU's
// own choice is a thread per column; sm_90 ranks a tile first at this shape.
TEST(ColumnScheduleShape, WhoGetsATile) {
  const std::string argmax = R"(graph am(x: f32[100, 45]) -> (i64[45]) {
  y = argmax(x, axes=[0])
  return y
})";
  EXPECT_TRUE(lowered(argmax, tiles(8)).shared.empty());
  const std::string sum = R"(graph s(x: f32[8192, 2048]) -> (f32[2048]) {
  y = reduce_sum(x, axes=[0])
  return y
})";
  EXPECT_NE(lowered(sum, RowScheduleTarget::cpu()).note.find("thread-per-column"), std::string::npos);
  const kir::Kernel gpu = lowered(sum, RowScheduleTarget::gpu("sm_90"));
  EXPECT_NE(gpu.note.find("block-tile-column"), std::string::npos) << gpu.note;
  EXPECT_NE(gpu.note.find("rank 1 of"), std::string::npos) << gpu.note;
}

// The CPU reads an [L, 196] column sum in rows: one block of 196 threads,
// no clamp of the column and no remainder by 196 (each thread's column is
// its index); [L, 3, 20] over L: 60 threads; 2048 columns stay in blocks of
// 256.
TEST(ColumnScheduleShape, TheCpusBlockIsTheKeptColumns) {
  const kir::Kernel k = lowered(R"(graph s(x: f32[6144, 196]) -> (f32[196]) {
  y = reduce_sum(x, axes=[0])
  return y
})",
                                RowScheduleTarget::cpu());
  EXPECT_EQ(k.launch.block_size, 196);
  EXPECT_EQ(kir::print_expr(k.launch.grid), "1");
  const std::string text = kir::print_kernel(k);
  EXPECT_EQ(text.find("min("), std::string::npos) << text;
  EXPECT_EQ(text.find("rem("), std::string::npos) << text;
  EXPECT_EQ(lowered(cases()[4].text, RowScheduleTarget::cpu()).launch.block_size, 60);
  EXPECT_EQ(lowered(R"(graph s(x: f32[8192, 2048]) -> (f32[2048]) {
  y = reduce_sum(x, axes=[0])
  return y
})",
                    RowScheduleTarget::cpu())
                .launch.block_size,
            256);
}

}  // namespace
}  // namespace stitch::lower
