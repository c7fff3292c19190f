// Real compiler output: tests/ptx/kernels/*.cu compiled by nvcc -ptx -O3 for
// sm_75 and sm_90 at build time (tests/CMakeLists.txt) must parse, print as a
// fixed point, pass ptxas as printed, and give every function a CFG.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kernel_files.h"
#include "ptx/cfg.h"
#include "ptx/parser.h"
#include "ptx/printer.h"

namespace stitch::ptx {
namespace {

namespace fs = std::filesystem;
using testing::kernel_ptx_files;
using testing::read_file;

#ifdef STITCH_PTX_KERNEL_DIR

// "block_reduce_sum.sm_90.ptx" -> "sm_90"
std::string arch_of(const fs::path& p) { return p.stem().extension().string().substr(1); }

int count_instructions(const std::vector<Statement>& body) {
  int n = 0;
  for (const Statement& s : body) {
    if (std::holds_alternative<Instruction>(s.node)) ++n;
    if (const auto* b = std::get_if<Block>(&s.node)) n += count_instructions(b->body);
  }
  return n;
}

TEST(PtxNvccKernels, RoundTripThroughPrinterAndPtxas) {
  std::vector<fs::path> files = kernel_ptx_files();
  // Six kernels, two architectures each.
  ASSERT_GE(files.size(), 12u);
  for (const fs::path& file : files) {
    SCOPED_TRACE(file.string());
    Module m = parse_module(read_file(file), file.string());
    std::string printed = print_module(m);
    Module again = parse_module(printed, "printed.ptx");
    EXPECT_EQ(print_module(again), printed);
    ASSERT_EQ(again.items.size(), m.items.size());
    for (size_t i = 0; i < m.items.size(); ++i) {
      const auto* f = std::get_if<Function>(&m.items[i]);
      if (f == nullptr || !f->has_body) continue;
      EXPECT_EQ(count_instructions(std::get<Function>(again.items[i]).body), count_instructions(f->body));
      ControlFlowGraph cfg = build_cfg(*f);
      EXPECT_FALSE(cfg.blocks.empty());
    }
    fs::path out = fs::path(::testing::TempDir()) / ("printed_" + file.filename().string());
    std::ofstream(out) << printed;
    std::string command = std::string(STITCH_PTXAS) + " -arch=" + arch_of(file) + " " + out.string() + " -o /dev/null";
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
  }
}

const Function& kernel(const Module& m, const std::string& name) {
  const Function* f = m.find_function(name);
  STITCH_ASSERT(f != nullptr, "kernel not found: " + name);
  return *f;
}

Module load(const std::string& name) {
  fs::path p = fs::path(STITCH_PTX_KERNEL_DIR) / name;
  return parse_module(read_file(p), p.string());
}

TEST(PtxNvccKernels, BarriersAndLoopsInTheReduction) {
  for (const char* arch : {"sm_75", "sm_90"}) {
    Module m = load(std::string("block_reduce_sum.") + arch + ".ptx");
    ControlFlowGraph cfg = build_cfg(kernel(m, "block_reduce_sum"));
    size_t barriers = 0;
    bool has_back_edge = false;
    for (const BasicBlock& b : cfg.blocks) {
      barriers += b.barriers.size();
      for (int s : b.successors) has_back_edge |= s <= b.id;
    }
    EXPECT_GE(barriers, 2u) << arch;
    EXPECT_TRUE(has_back_edge) << arch;
  }
}

TEST(PtxNvccKernels, ShufflesWriteAPredicatePair) {
  Module m = load("warp_reduce.sm_90.ptx");
  int shuffles = 0;
  for (const Statement& s : kernel(m, "warp_reduce").body) {
    const auto* in = std::get_if<Instruction>(&s.node);
    if (in == nullptr || in->opcode != "shfl") continue;
    ++shuffles;
    EXPECT_TRUE(in->has_modifier("sync"));
  }
  EXPECT_EQ(shuffles, 10);
}

TEST(PtxNvccKernels, CallsSitInScopes) {
  Module m = load("device_calls.sm_90.ptx");
  const Function& k = kernel(m, "device_calls");
  int calls = 0;
  for (const Statement& s : k.body) {
    const auto* b = std::get_if<Block>(&s.node);
    if (b == nullptr) continue;
    for (const Statement& inner : b->body) {
      const auto* in = std::get_if<Instruction>(&inner.node);
      if (in != nullptr && in->opcode == "call") ++calls;
    }
  }
  EXPECT_EQ(calls, 2);
  EXPECT_NE(m.find_function("_Z4polyf"), nullptr);
}

#else

TEST(PtxNvccKernels, NeedsTheCudaToolkit) { GTEST_SKIP() << "nvcc not found at configure time: no kernels compiled to PTX"; }

#endif

}  // namespace
}  // namespace stitch::ptx
