// Per-function CFGs (docs/ptx.md, CFG): blocks split at labels and after
// branches and exits, nested scopes flattened, dominators, post-dominators
// and barriers, pinned as golden text.
#include <gtest/gtest.h>

#include "ptx/cfg.h"
#include "ptx/parser.h"

namespace stitch::ptx {
namespace {

constexpr const char* kHeader = ".version 8.0\n.target sm_90\n.address_size 64\n";

std::string cfg_text(const std::string& functions) {
  Module m = parse_module(std::string(kHeader) + functions, "t.ptx");
  std::string out;
  for (const auto& item : m.items) {
    if (const auto* f = std::get_if<Function>(&item); f != nullptr && f->has_body) out += print_cfg(build_cfg(*f));
  }
  return out;
}

std::string cfg_error(const std::string& functions) {
  try {
    cfg_text(functions);
  } catch (const UserError& e) {
    return e.formatted();
  }
  return "(built)";
}

TEST(PtxCfg, DiamondLoopBarriersAndExits) {
  std::string text = cfg_text(
      ".entry k()\n{\n"
      "  mov.u32 %r1, %tid.x;\n  setp.eq.s32 %p1, %r1, 0;\n  @%p1 bra ELSE;\n"
      "  add.s32 %r2, %r1, 1;\n  bra.uni JOIN;\n"
      "ELSE:\n  mov.u32 %r2, 0;\n"
      "JOIN:\nLOOP:\n  {\n  add.s32 %r2, %r2, -1;\n  bar.sync 0;\n  }\n"
      "  setp.gt.s32 %p2, %r2, 0;\n  @%p2 bra LOOP;\n"
      "  @%p1 ret;\n  bar.warp.sync -1;\n  barrier.sync.aligned 1;\n  exit;\n}\n");
  EXPECT_EQ(text,
            "cfg k: 6 blocks, 14 instructions\n"
            "bb0: [0, 3) -> bb2 bb1; preds -; idom -; ipdom bb3\n"
            "bb1: [3, 5) -> bb3; preds bb0; idom bb0; ipdom bb3\n"
            "bb2 ELSE: [5, 6) -> bb3; preds bb0; idom bb0; ipdom bb3\n"
            "bb3 JOIN LOOP: [6, 10) barrier@7 -> bb3 bb4; preds bb1 bb2 bb3; idom bb0; ipdom bb4\n"
            "bb4: [10, 11) exits -> bb5; preds bb3; idom bb3; ipdom exit\n"
            "bb5: [11, 14) barrier@12 exits -> -; preds bb4; idom bb4; ipdom exit\n");
}

TEST(PtxCfg, EndlessLoopHasNoPostDominator) {
  EXPECT_EQ(cfg_text(".func spin()\n{\nL:\n  bra.uni L;\n}\n"),
            "cfg spin: 1 blocks, 1 instructions\n"
            "bb0 L: [0, 1) -> bb0; preds bb0; idom -; ipdom -\n");
}

TEST(PtxCfg, UnreachableBlockAndFallingOffTheEnd) {
  EXPECT_EQ(cfg_text(".entry k()\n{\n  bra.uni B;\n  mov.u32 %r1, 1;\nB:\n  mov.u32 %r1, 2;\nC:\n}\n"),
            "cfg k: 4 blocks, 3 instructions\n"
            "bb0: [0, 1) -> bb2; preds -; idom -; ipdom bb2\n"
            "bb1: [1, 2) -> bb2; preds -; idom -; ipdom bb2\n"
            "bb2 B: [2, 3) -> bb3; preds bb0 bb1; idom bb0; ipdom bb3\n"
            "bb3 C: [3, 3) exits -> -; preds bb2; idom bb2; ipdom exit\n");
}

TEST(PtxCfg, GuardedBranchToTheNextBlockHasOneSuccessor) {
  EXPECT_EQ(cfg_text(".entry k()\n{\n  @%p1 bra N;\nN:\n  trap;\n}\n"),
            "cfg k: 2 blocks, 2 instructions\n"
            "bb0: [0, 1) -> bb1; preds -; idom -; ipdom bb1\n"
            "bb1 N: [1, 2) exits -> -; preds bb0; idom bb0; ipdom exit\n");
}

TEST(PtxCfg, BlockOfInstruction) {
  Module m = parse_module(std::string(kHeader) + ".entry k()\n{\n  @%p1 bra L;\n  ret;\nL:\n  ret;\n}\n", "t.ptx");
  ControlFlowGraph cfg = build_cfg(std::get<Function>(m.items.at(0)));
  ASSERT_EQ(cfg.instructions.size(), 3u);
  EXPECT_EQ(cfg.block_of(0), 0);
  EXPECT_EQ(cfg.block_of(1), 1);
  EXPECT_EQ(cfg.block_of(2), 2);
  EXPECT_EQ(cfg.block_of_label.at("L"), 2);
}

TEST(PtxCfg, Errors) {
  EXPECT_EQ(cfg_error(".entry k()\n{\n  bra.uni NOWHERE;\n}\n"),
            "t.ptx:6:11: error: branch to NOWHERE, which k does not define");
  EXPECT_EQ(cfg_error(".entry k()\n{\nA:\n  ret;\nA:\n  ret;\n}\n"),
            "t.ptx:8:1: error: label A is defined twice in k");
  EXPECT_EQ(cfg_error(".entry k()\n{\n  brx.idx %r1, T;\n}\n"),
            "t.ptx:6:3: error: brx (an indirect branch) is not supported by the PTX CFG");
  EXPECT_EQ(cfg_error(".entry k()\n{\n  bra.uni;\n}\n"), "t.ptx:6:3: error: bra needs a label operand");
}

}  // namespace
}  // namespace stitch::ptx
