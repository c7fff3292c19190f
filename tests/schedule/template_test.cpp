// Schedule templates (docs/schedule.md): the grammar pinned as text, exact
// round trips, every parse error with its position, every validation rule.
#include <cstdint>

#include <gtest/gtest.h>

#include "schedule/template.h"
#include "stitch/error.h"

namespace stitch::schedule {
namespace {

std::string parse_error(std::string_view text) {
  try {
    parse_template(text);
  } catch (const UserError& e) {
    return e.formatted();
  }
  return "no error";
}

TEST(ScheduleTemplate, ParsesThePapersExample) {
  ScheduleTemplate t = parse_template("reduce_1[GRID_128-WARP_2,WARP,WARP,CTA]S;");
  ASSERT_EQ(t.schedules.size(), 1u);
  const Schedule& s = t.schedules[0];
  EXPECT_EQ(s.op, "reduce_1");
  EXPECT_TRUE(s.shared);
  ASSERT_EQ(s.dims.size(), 4u);
  EXPECT_EQ(s.dims[0].tiles, (std::vector<Tile>{{Level::Grid, 128}, {Level::Warp, 2}}));
  EXPECT_EQ(s.dims[1].tiles, (std::vector<Tile>{{Level::Warp, 0}}));
  EXPECT_EQ(s.dims[3].tiles, (std::vector<Tile>{{Level::Cta, 0}}));
  EXPECT_TRUE(s.has(Level::Warp));
  EXPECT_FALSE(s.has(Level::Thread));
}

TEST(ScheduleTemplate, RoundTripsExactly) {
  for (const char* text : {"[GRID,CTA];", "reduce_1[GRID_128-WARP_2,WARP,WARP,CTA]S;",
                           "[GRID-WARP_8,CTA]; exp.2[GRID-CTA_256-THREAD_4];", "[THREAD-CTA_4,GRID-CTA_64]S;",
                           "a[GRID,CTA_4,CTA,THREAD]; b[CTA]S; c[THREAD];"}) {
    EXPECT_EQ(print_template(parse_template(text)), text);
  }
}

TEST(ScheduleTemplate, PrintsCanonicalTextForLooseSpacing) {
  EXPECT_EQ(print_template(parse_template("  r [ GRID_4 - WARP_2 , CTA ] S ;\n[GRID,CTA] ;  ")),
            "r[GRID_4-WARP_2,CTA]S; [GRID,CTA];");
}

TEST(ScheduleTemplate, ValuesCompareByContent) {
  EXPECT_EQ(parse_template("[GRID,CTA];"), parse_template(" [GRID , CTA];"));
  EXPECT_NE(parse_template("[GRID,CTA];"), parse_template("[GRID,CTA]S;"));
}

TEST(ScheduleTemplate, ParseErrorsNameThePosition) {
  EXPECT_EQ(parse_error(""), "<template>:1:1: error: empty template: expected a schedule such as [GRID,CTA];");
  EXPECT_EQ(parse_error("(GRID)"), "<template>:1:1: error: expected '[' or an op name to start a schedule");
  EXPECT_EQ(parse_error("r GRID"), "<template>:1:3: error: expected '[' after the op name");
  EXPECT_EQ(parse_error("[BLOCK,CTA];"),
            "<template>:1:2: error: unknown attribute 'BLOCK': expected GRID, CTA, WARP or THREAD");
  EXPECT_EQ(parse_error("[GRID,];"), "<template>:1:7: error: expected an attribute: GRID, CTA, WARP or THREAD");
  EXPECT_EQ(parse_error("[GRID_x];"), "<template>:1:7: error: expected a tile size after '_'");
  EXPECT_EQ(parse_error("[GRID_0];"), "<template>:1:7: error: tile size must be positive");
  EXPECT_EQ(parse_error("[GRID_99999999999999999];"), "<template>:1:7: error: tile size is too large");
  EXPECT_EQ(parse_error("[GRID CTA];"), "<template>:1:7: error: expected ',', '-' or ']' after an attribute");
  EXPECT_EQ(parse_error("[GRID,CTA]"), "<template>:1:11: error: expected ';' to end the schedule");
  EXPECT_EQ(parse_error("[GRID,CTA]X;"), "<template>:1:11: error: expected ';' to end the schedule");
  EXPECT_EQ(parse_error("[GRID];\n[CTA]"), "<template>:2:6: error: expected ';' to end the schedule");
}

TEST(ScheduleTemplate, ParseErrorsCarryTheSourceName) {
  try {
    parse_template("[GRID", "--template");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(e.formatted(), "--template:1:6: error: expected ',', '-' or ']' after an attribute");
  }
}

OpDomain row_reduction(int64_t rows, int64_t cols) {
  return {"reduce_1", {LoopDim{rows, false}, LoopDim{cols, true}}, 4};
}

std::string problem(std::string_view text, const OpDomain& op, const ScheduleLimits& limits = {}) {
  return schedule_problem(parse_template(text).schedules.at(0), op, limits);
}

TEST(ScheduleValidation, AcceptsTheRowReductionStrategies) {
  const OpDomain op = row_reduction(1024, 128);
  for (const char* text : {"[GRID,CTA];", "[GRID-WARP_8,CTA];", "[GRID_128-WARP_8,CTA];", "[GRID-CTA_256,THREAD];",
                           "[GRID-WARP_2-CTA_4,CTA];", "[GRID,CTA]S;", "[GRID,WARP_4-CTA_32]S;"}) {
    EXPECT_EQ(problem(text, op), "") << text;
  }
}

TEST(ScheduleValidation, OneAttributePerDimension) {
  EXPECT_EQ(problem("[GRID];", row_reduction(4, 4)),
            "[GRID]; has 1 attributes but reduce_1 has 2 loop dimensions; give one attribute per dimension");
}

TEST(ScheduleValidation, ALevelOncePerDimension) {
  EXPECT_EQ(problem("[GRID_2-GRID_2,CTA];", row_reduction(4, 4)),
            "dim 0: GRID appears twice in GRID_2-GRID_2; merge the two tiles into one");
}

TEST(ScheduleValidation, OnlyTheOutermostTileMayBeUnsized) {
  EXPECT_EQ(problem("[GRID_2-WARP,CTA];", row_reduction(4, 4)),
            "dim 0: only the outermost tile of GRID_2-WARP may omit its size");
}

TEST(ScheduleValidation, SizedTilesMultiplyToTheExtent) {
  EXPECT_EQ(problem("[GRID_4-WARP_8,CTA];", row_reduction(64, 4)),
            "dim 0: GRID_4-WARP_8 covers 32 iterations but the extent is 64; sized tiles must multiply to the "
            "extent (leave the outermost tile unsized to cover the rest)");
  EXPECT_EQ(problem("[GRID-WARP_8,CTA];", row_reduction(4, 4)),
            "dim 0: the inner tiles of GRID-WARP_8 cover 8 iterations but the extent is 4");
  // A symbolic extent is not checked.
  EXPECT_EQ(problem("[GRID_4-WARP_8,CTA];", row_reduction(-1, 4)), "");
}

TEST(ScheduleValidation, AReducedDimensionStaysInOneBlock) {
  EXPECT_EQ(problem("[GRID,GRID-CTA_128];", row_reduction(4, 1024)),
            "dim 1 is reduced and cannot be split across blocks (GRID-CTA_128): combining the blocks' partial "
            "results needs another kernel");
}

TEST(ScheduleValidation, OneOpenBlockExtentPerLevel) {
  const OpDomain op{"add", {LoopDim{8, false}, LoopDim{8, false}, LoopDim{8, false}, LoopDim{8, true}}, 4};
  EXPECT_EQ(problem("[GRID,CTA,CTA,THREAD];", op),
            "[GRID,CTA,CTA,THREAD]; leaves the size of more than one CTA tile open; give all but one a size");
  EXPECT_EQ(problem("[GRID,WARP,WARP,CTA];", op),
            "[GRID,WARP,WARP,CTA]; leaves the size of more than one WARP tile open; give all but one a size");
  EXPECT_EQ(problem("[GRID,CTA_8,CTA,THREAD];", op), "");
}

TEST(ScheduleValidation, LanesOfAWarp) {
  EXPECT_EQ(problem("[GRID-WARP_2-CTA_64,CTA];", row_reduction(1024, 4)),
            "the CTA tiles of [GRID-WARP_2-CTA_64,CTA]; spread 64 threads over the lanes of a warp; they must "
            "multiply to a divisor of the warp size 32");
  EXPECT_EQ(problem("[GRID-WARP_2-CTA_3,CTA];", row_reduction(1024, 4)),
            "the CTA tiles of [GRID-WARP_2-CTA_3,CTA]; spread 3 threads over the lanes of a warp; they must "
            "multiply to a divisor of the warp size 32");
}

TEST(ScheduleValidation, ThreadsPerBlock) {
  EXPECT_EQ(problem("[GRID-WARP_64,CTA];", row_reduction(1024, 4)),
            "[GRID-WARP_64,CTA]; puts 64 warps of 32 threads in a block; the limit is 1024 threads");
  EXPECT_EQ(problem("[GRID-CTA_2048,THREAD];", row_reduction(4096, 4)),
            "the CTA tiles of [GRID-CTA_2048,THREAD]; put 2048 threads in a block; the limit is 1024");
}

TEST(ScheduleValidation, SharedResultFitsTheBlocksBudget) {
  // One row per block: one float cached.
  EXPECT_EQ(problem("[GRID,CTA]S;", row_reduction(1 << 20, 1024)), "");
  // No GRID on the kept dimension: one block holds all 16384 results.
  EXPECT_EQ(problem("[WARP,CTA]S;", row_reduction(16384, 4)),
            "[WARP,CTA]S; caches 65536 bytes per block in shared memory (16384 elements x 4 bytes); the limit is "
            "49152");
  EXPECT_EQ(problem("[WARP,CTA]S;", row_reduction(16384, 4), ScheduleLimits{32, 1024, 227 * 1024}), "");
  EXPECT_EQ(problem("[WARP,CTA]S;", row_reduction(-1, 4)),
            "[WARP,CTA]S; caches its result in shared memory (S) but a symbolic dimension leaves one block's share "
            "unbounded");
}

TEST(ScheduleValidation, TemplateHasOneSchedulePerOp) {
  const std::vector<OpDomain> ops = {row_reduction(64, 64), {"exp_1", {LoopDim{64, false}, LoopDim{64, false}}, 4}};
  EXPECT_EQ(template_problem(parse_template("reduce_1[GRID,CTA]S; exp_1[GRID,CTA];"), ops), "");
  EXPECT_EQ(template_problem(parse_template("[GRID,CTA]S;"), ops),
            "the template has 1 schedules but 2 ops write shared or global memory; give one schedule per op");
  EXPECT_EQ(template_problem(parse_template("reduce_1[GRID,CTA]S; exp_2[GRID,CTA];"), ops),
            "schedule 1 names exp_2 but implements exp_1");
  EXPECT_EQ(template_problem(parse_template("[GRID,CTA]S; [GRID,GRID];"), ops), "");
  EXPECT_EQ(template_problem(parse_template("[GRID,GRID]S; [GRID,CTA];"), ops),
            "schedule 0 (reduce_1): dim 1 is reduced and cannot be split across blocks (GRID): combining the "
            "blocks' partial results needs another kernel");
  EXPECT_THROW(validate_template(parse_template("[GRID,CTA]S;"), ops), UserError);
  EXPECT_NO_THROW(validate_template(parse_template("[GRID,CTA]S; [GRID,CTA];"), ops));
}

}  // namespace
}  // namespace stitch::schedule
