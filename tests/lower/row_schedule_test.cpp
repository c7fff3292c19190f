// Every row schedule (docs/lowering.md, Row schedules) forced on every kind of
// row group: stitched softmax, LayerNorm, RMSNorm, log-softmax, and reduction
// groups (reduce_sum, argmax), at rows shorter than a warp (5, 17), not a
// multiple of a block's rows (37, 100), long rows (4 x 4096), a symbolic batch
// and a symbolic row length. Each kind's kernels are compiled in one
// translation unit (one ctest process per kind, so ctest -j2 runs two at once)
// and compared with the interpreter at docs/lowering.md's tolerances.
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
using schedule::RowScheduleKind;
using schedule::RowScheduleTarget;

struct Case {
  std::string id;
  Graph graph;
  bool transcendental = true;
  int64_t reduction_length = 0;  // the longest reduction: 2 x the row for two-pass norms
  std::vector<SymbolBindings> bindings{{}};
};

// One graph per (op, shape): `body` reads x of [rows, cols] (and gamma/beta of [cols]).
struct Op {
  const char* name;
  const char* params;  // after x
  const char* result;  // the result type's element type and shape form
  const char* body;
  bool transcendental;
  int passes;          // reductions over the row in sequence
  const char* planner_note;
};

std::vector<Case> make_cases() {
  const std::vector<Op> ops = {
      {"softmax", "", "f32[{0}, {1}]", "y = softmax(x, axis=-1)", true, 1, ""},
      {"layernorm", ", gamma: f32[{1}], beta: f32[{1}]", "f32[{0}, {1}]",
       "y = layer_norm(x, gamma, beta, axes=[-1], eps=1e-5)", true, 2, ""},
      {"rmsnorm", ", gamma: f32[{1}]", "f32[{0}, {1}]", "y = rms_norm(x, gamma, axes=[-1], eps=1e-6)", true, 1, ""},
      {"log_softmax", "", "f32[{0}, {1}]", "y = log_softmax(x, axis=-1)", true, 1, ""},
      {"reduce_sum", "", "f32[{0}]", "y = reduce_sum(mul(x, x), axes=[1])", false, 1, ""},
      {"argmax", "", "i64[{0}]", "y = argmax(x, axes=[1])", false, 1, ""},
  };
  struct ShapeCase {
    std::string rows, cols;
    std::vector<SymbolBindings> bindings;
  };
  const std::vector<ShapeCase> shapes = {
      {"37", "5", {{}}},
      {"37", "17", {{}}},
      {"100", "100", {{}}},
      {"4", "4096", {{}}},
      {"B", "70", {{{"B", 1}}, {{"B", 9}}, {{"B", 300}}}},
      {"6", "N", {{{"N", 3}}, {{"N", 100}}}},
  };
  std::vector<Case> cases;
  for (const Op& op : ops) {
    for (const ShapeCase& s : shapes) {
      const std::string id = fmt::format("{}_{}x{}", op.name, s.rows, s.cols);
      const std::string text =
          fmt::format("graph {0}(x: f32[{1}, {2}]{3}) -> ({4}) {{\n  {5}\n  return y\n}}\n", id, s.rows, s.cols,
                      fmt::format(fmt::runtime(op.params), s.rows, s.cols),
                      fmt::format(fmt::runtime(op.result), s.rows, s.cols), op.body);
      int64_t len = 0;
      for (const SymbolBindings& b : s.bindings) {
        len = std::max<int64_t>(len, b.count("N") ? b.at("N") : std::stoll(s.cols));
      }
      cases.push_back({id, canonicalize(parse_module(text).graphs.front()), op.transcendental, op.passes * len,
                       s.bindings});
    }
  }
  return cases;
}

// Compiles every case with `kind` forced, in one translation unit, and runs
// each at each binding against the interpreter.
void check_kind(RowScheduleKind kind) {
  const fs::path dir = fs::temp_directory_path() /
                       fmt::format("stitch_row_schedule_test_{}_{}", schedule::row_schedule_kind_name(kind), ::getpid());
  fs::remove_all(dir);
  {
    KernelCache cache(dir);
    const std::vector<Case> cases = make_cases();
    std::vector<Graph> graphs;
    for (const Case& c : cases) graphs.push_back(c.graph);
    RowScheduleTarget rows = RowScheduleTarget::cpu();
    rows.forced = kind;
    std::vector<CpuExecutable> exes = pipeline::compile_cpu_batch(graphs, PlannerKind::Stitch, cache, {}, rows);
    for (size_t i = 0; i < cases.size(); ++i) {
      const Case& c = cases[i];
      for (const SymbolBindings& b : c.bindings) {
        std::string trace = c.id;
        for (const auto& [symbol, extent] : b) trace += fmt::format(" {}={}", symbol, extent);
        SCOPED_TRACE(trace);
        std::vector<Tensor> inputs;
        uint64_t seed = 41;
        for (ValueId p : c.graph.params()) {
          Tensor t(c.graph.type(p).dtype, concrete_shape(c.graph.type(p).shape, b));
          fill_random(t, seed++);
          inputs.push_back(std::move(t));
        }
        EXPECT_TRUE(stitch::testing::outputs_match_interpreter(exes[i].run(inputs), interpret(c.graph, inputs),
                                                               c.transcendental, c.reduction_length));
      }
    }
  }
  fs::remove_all(dir);
}

TEST(RowScheduleOnCpu, BlockPerRowMatchesInterpreter) { check_kind(RowScheduleKind::BlockPerRow); }
TEST(RowScheduleOnCpu, WarpPerRowMatchesInterpreter) { check_kind(RowScheduleKind::WarpPerRow); }
TEST(RowScheduleOnCpu, MultiRowPerWarpMatchesInterpreter) { check_kind(RowScheduleKind::MultiRowPerWarp); }

// The lowered kernel of `text` (one row group) under `kind`.
// Rows are not held in registers here, so the shared-memory row cache shows
// (held rows: held_rows_test.cpp).
kir::Kernel lowered(const std::string& text, RowScheduleKind kind) {
  const Graph g = canonicalize(parse_module(text).graphs.front());
  RowScheduleTarget rows = RowScheduleTarget::gpu();
  rows.forced = kind;
  rows.held_rows = false;
  std::vector<LoweredGroup> groups = stitch::testing::lower_with_default_schedules(g, plan(g, PlannerKind::Stitch), "k", rows);
  EXPECT_EQ(groups.size(), 1u);
  EXPECT_TRUE(groups.at(0).kernel) << groups.at(0).not_lowered_reason;
  return *groups.at(0).kernel;
}

constexpr const char* kSoftmax37x100 = R"(graph s(x: f32[37, 100]) -> (f32[37, 100]) {
  y = softmax(x, axis=-1)
  return y
})";

// Warp per row: 8 warps per block, 5 blocks for 37 rows; the owners of rows
// 37..39 read row 36 and skip the store phase. Warp reductions, no scratch;
// the row cache keeps one slice of 100 per warp.
TEST(RowScheduleShape, WarpPerRowSoftmax) {
  const kir::Kernel k = lowered(kSoftmax37x100, RowScheduleKind::WarpPerRow);
  EXPECT_EQ(k.launch.block_size, 256);
  EXPECT_EQ(kir::print_expr(k.launch.grid), "5");
  const std::string text = kir::print_kernel(k);
  EXPECT_NE(text.find("for lane in warp(32)"), std::string::npos) << text;
  EXPECT_NE(text.find("warp.reduce_max(acc0)"), std::string::npos) << text;
  EXPECT_NE(text.find("warp.reduce_sum(acc1)"), std::string::npos) << text;
  EXPECT_NE(text.find("let row_read: i64 = min(row, 36)"), std::string::npos) << text;
  EXPECT_NE(text.find("if lt(row, 37)"), std::string::npos) << text;
  EXPECT_EQ(text.find("block.reduce"), std::string::npos) << text;
  EXPECT_EQ(text.find("scratch"), std::string::npos) << text;
  ASSERT_EQ(k.shared.size(), 1u);
  EXPECT_EQ(k.shared[0].count, 8 * 100);
  EXPECT_NE(k.note.find("warp-per-row [GRID-WARP_8,CTA];"), std::string::npos) << k.note;
}

// Multi-row per warp on rows of 5: segments of 8 lanes, 4 rows per warp, 32
// rows per block; a segmented warp reduction of width 8.
TEST(RowScheduleShape, MultiRowPerWarpReduction) {
  const kir::Kernel k = lowered(R"(graph s(x: f32[37, 5]) -> (f32[37]) {
  y = reduce_sum(x, axes=[1])
  return y
})", RowScheduleKind::MultiRowPerWarp);
  EXPECT_EQ(kir::print_expr(k.launch.grid), "2");
  const std::string text = kir::print_kernel(k);
  EXPECT_NE(text.find("warp.reduce_sum(acc0, width=8)"), std::string::npos) << text;
  EXPECT_NE(text.find("let seg: i64 = div(lane, 8)"), std::string::npos) << text;
  EXPECT_NE(k.note.find("[GRID-WARP_8-CTA_4,CTA];"), std::string::npos) << k.note;
  EXPECT_TRUE(k.shared.empty());
}

// Block per row keeps today's kernel: one block of 128 threads per row.
TEST(RowScheduleShape, BlockPerRowSoftmax) {
  const kir::Kernel k = lowered(kSoftmax37x100, RowScheduleKind::BlockPerRow);
  EXPECT_EQ(k.launch.block_size, 128);
  EXPECT_EQ(kir::print_expr(k.launch.grid), "37");
  const std::string text = kir::print_kernel(k);
  EXPECT_NE(text.find("block.reduce_max(acc0, scratch=scratch0)"), std::string::npos) << text;
  EXPECT_EQ(text.find("warp("), std::string::npos) << text;
}

}  // namespace
}  // namespace stitch::lower
