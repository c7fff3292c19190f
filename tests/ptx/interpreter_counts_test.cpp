// InterpreterOptions::count_instructions (docs/ptx-interpreter.md): how often
// warps issued each instruction, keyed by its source location, and nothing
// counted when the option is off.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "interpreter_test_util.h"

namespace stitch::ptx::testing {
namespace {

// A loop that runs `n` times in every thread: with 2 CTAs of 64 threads
// (4 warps), each loop-body instruction is issued 4 * n times.
std::string loop_kernel() {
  return kernel_text(".param .u32 n", std::string(kRegs) +
                                          "ld.param.u32 %r1, [n];\n"
                                          "mov.u32 %r2, 0;\n"
                                          "$L_loop:\n"
                                          "add.u32 %r2, %r2, 1;\n"
                                          "setp.lt.u32 %p1, %r2, %r1;\n"
                                          "@%p1 bra $L_loop;\n"
                                          "ret;");
}

// The 1-based line of the first line of `text` that contains `what`.
int line_of(const std::string& text, const std::string& what) {
  const size_t at = text.find(what);
  EXPECT_NE(at, std::string::npos) << what;
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<ptrdiff_t>(at), '\n'));
}

TEST(InterpreterCounts, CountsWarpExecutionsPerInstruction) {
  InterpreterOptions options;
  options.count_instructions = true;
  const RunStats stats = run_text(loop_kernel(), launch(2, 64), {KernelArg::scalar<uint32_t>(5)}, "k", options);
  std::map<int, uint64_t> by_line;
  uint64_t total = 0;
  for (const InstructionCount& c : stats.instruction_counts) {
    EXPECT_EQ(c.function, "k");
    by_line[c.loc.line] += c.warp_executions;
    total += c.warp_executions;
  }
  EXPECT_EQ(total, stats.warp_instructions);
  const std::string text = loop_kernel();
  EXPECT_EQ(by_line[line_of(text, "ld.param")], 4u);
  EXPECT_EQ(by_line[line_of(text, "add.u32")], 20u);
  EXPECT_EQ(by_line[line_of(text, "setp.lt")], 20u);
  EXPECT_EQ(by_line[line_of(text, "bra $L_loop")], 20u);
  EXPECT_EQ(by_line[line_of(text, "ret;")], 4u);
}

TEST(InterpreterCounts, OffByDefault) {
  const RunStats stats = run_text(loop_kernel(), launch(1, 32), {KernelArg::scalar<uint32_t>(3)});
  EXPECT_GT(stats.warp_instructions, 0u);
  EXPECT_TRUE(stats.instruction_counts.empty());
}

}  // namespace
}  // namespace stitch::ptx::testing
