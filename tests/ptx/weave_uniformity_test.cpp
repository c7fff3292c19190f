// analyze_uniformity and check_barriers_reached_uniformly (docs/goptx.md,
// Barrier safety): the usual barrier patterns pass, an early return of some
// threads before a barrier is refused with its location.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kernel_files.h"
#include "ptx/cfg.h"
#include "ptx/parser.h"
#include "ptx/weave/uniformity.h"

namespace stitch::ptx {
namespace {

namespace fs = std::filesystem;
using testing::kernel_ptx_files;
using testing::read_file;

constexpr const char* kHeader = ".version 8.0\n.target sm_80\n.address_size 64\n";

struct Analyzed {
  Module module;
  ControlFlowGraph cfg;
  Uniformity uniformity;
};

Analyzed analyze(const std::string& body) {
  Analyzed a;
  a.module = parse_module(std::string(kHeader) + ".entry k(.param .u32 n)\n{\n" + body + "}\n", "k.ptx");
  a.cfg = build_cfg(std::get<Function>(a.module.items.at(0)));
  a.uniformity = analyze_uniformity(a.cfg);
  return a;
}

// "(passes)" or the formatted UserError.
std::string check(const Analyzed& a) {
  try {
    check_barriers_reached_uniformly(a.cfg, a.uniformity, "kernel A 'k'");
  } catch (const UserError& e) {
    return e.formatted();
  }
  return "(passes)";
}

bool divergent(const Analyzed& a, const std::string& reg) { return a.uniformity.divergent_registers.count(reg) > 0; }

// if (tid < n) { ... } __syncthreads(); out = ...
TEST(PtxWeaveUniformity, GuardedWorkBeforeABarrierPasses) {
  Analyzed a = analyze(
      "ld.param.u32 %r1, [n];\nmov.u32 %r2, %tid.x;\nsetp.ge.u32 %p1, %r2, %r1;\n@%p1 bra SKIP;\n"
      "st.shared.u32 [%r2], %r1;\nSKIP:\nbar.sync 0;\nld.shared.u32 %r3, [0];\nret;\n");
  EXPECT_EQ(check(a), "(passes)");
  EXPECT_FALSE(divergent(a, "%r1"));
  EXPECT_TRUE(divergent(a, "%r2"));
  EXPECT_TRUE(divergent(a, "%p1"));
  EXPECT_TRUE(divergent(a, "%r3"));  // a shared-memory load
  EXPECT_EQ(a.uniformity.divergent_branches, (std::set<int>{0}));
}

// if (i >= n) return; ... __syncthreads();
TEST(PtxWeaveUniformity, EarlyReturnBeforeABarrierIsRefused) {
  Analyzed a = analyze(
      "ld.param.u32 %r1, [n];\nmov.u32 %r2, %ctaid.x;\nmov.u32 %r3, %tid.x;\nmad.lo.s32 %r4, %r2, 256, %r3;\n"
      "setp.ge.s32 %p1, %r4, %r1;\n@%p1 bra DONE;\nst.shared.u32 [%r3], %r4;\nbar.sync 0;\n"
      "ld.shared.u32 %r5, [0];\nDONE:\nret;\n");
  EXPECT_EQ(check(a),
            "k.ptx:11:1: error: kernel A 'k' cannot be woven: this branch on %p1 may go different ways for threads "
            "of one CTA, and the threads that leave the kernel at line 16 never reach the CTA barrier at line 13 "
            "that the others reach; in the woven kernel those threads still run the other kernel, so the barrier "
            "would wait for them forever (deadlock)");
}

TEST(PtxWeaveUniformity, GuardedReturnBeforeABarrierIsRefused) {
  Analyzed a = analyze(
      "mov.u32 %r3, %tid.x;\nsetp.gt.u32 %p1, %r3, 31;\n@%p1 ret;\nbar.sync 0;\nret;\n");
  std::string message = check(a);
  EXPECT_NE(message.find("k.ptx:8:1: error: kernel A 'k' cannot be woven"), std::string::npos) << message;
}

TEST(PtxWeaveUniformity, UniformEarlyReturnPasses) {
  // if (n == 0) return; a parameter is the same for every thread.
  Analyzed a = analyze(
      "ld.param.u32 %r1, [n];\nsetp.eq.s32 %p1, %r1, 0;\n@%p1 bra DONE;\nbar.sync 0;\nDONE:\nret;\n");
  EXPECT_EQ(check(a), "(passes)");
  EXPECT_TRUE(a.uniformity.divergent_branches.empty());
}

// for (s = ntid / 2; s > 0; s >>= 1) { if (tid < s) ...; __syncthreads(); } if (tid == 0) out = ...;
TEST(PtxWeaveUniformity, TreeReductionPasses) {
  Analyzed a = analyze(
      "mov.u32 %r1, %ntid.x;\nmov.u32 %r3, %tid.x;\nshr.u32 %r14, %r1, 1;\nsetp.eq.s32 %p2, %r14, 0;\n"
      "@%p2 bra END;\nLOOP:\nsetp.ge.u32 %p3, %r3, %r14;\n@%p3 bra SKIP;\nld.shared.f32 %f4, [%r3];\n"
      "st.shared.f32 [%r3], %f4;\nSKIP:\nbar.sync 0;\nshr.u32 %r14, %r14, 1;\nsetp.ne.s32 %p4, %r14, 0;\n"
      "@%p4 bra LOOP;\nEND:\nsetp.ne.s32 %p5, %r3, 0;\n@%p5 bra OUT;\nld.shared.f32 %f7, [0];\n"
      "st.global.f32 [%rd8], %f7;\nOUT:\nret;\n");
  EXPECT_EQ(check(a), "(passes)");
  EXPECT_FALSE(divergent(a, "%r14"));
  EXPECT_FALSE(divergent(a, "%p4"));
  EXPECT_TRUE(divergent(a, "%p3"));
  EXPECT_TRUE(divergent(a, "%f4"));
  EXPECT_EQ(a.uniformity.divergent_branches.size(), 2u);  // the tid < s and tid == 0 branches
}

TEST(PtxWeaveUniformity, ParameterBoundLoopWithABarrierPasses) {
  Analyzed a = analyze(
      "ld.param.u32 %r1, [n];\nmov.u32 %r2, 0;\nLOOP:\nbar.sync 0;\nadd.s32 %r2, %r2, 1;\n"
      "setp.lt.u32 %p1, %r2, %r1;\n@%p1 bra LOOP;\nret;\n");
  EXPECT_EQ(check(a), "(passes)");
  EXPECT_TRUE(a.uniformity.divergent_registers.empty());
}

TEST(PtxWeaveUniformity, ValuesAssignedUnderADivergentBranchAreDivergent) {
  // r5 = tid < 4 ? 1 : 0 as a branch; then a loop bounded by r5 holding a
  // barrier and an exit: some threads may leave the loop and the kernel early.
  Analyzed a = analyze(
      "mov.u32 %r1, %laneid;\nmov.u32 %r5, 0;\nsetp.lt.u32 %p1, %r1, 4;\n@!%p1 bra JOIN;\nmov.u32 %r5, 1;\n"
      "JOIN:\nsetp.eq.s32 %p2, %r5, 0;\n@%p2 bra DONE;\nbar.sync 0;\nDONE:\nret;\n");
  EXPECT_TRUE(divergent(a, "%r5"));
  EXPECT_TRUE(divergent(a, "%p2"));
  EXPECT_FALSE(divergent(a, "%p9"));
  EXPECT_NE(check(a).find("branch on %p2"), std::string::npos);
}

TEST(PtxWeaveUniformity, SourcesOfDivergence) {
  Analyzed a = analyze(
      "ld.param.u32 %r1, [n];\nmov.u32 %r2, %ctaid.x;\nmov.u32 %r3, %ntid.x;\nld.const.u32 %r4, [table];\n"
      "mov.u32 %r5, %clock;\nld.global.u32 %r6, [%rd1];\natom.shared.add.u32 %r7, [%r2], 1;\n"
      "shfl.sync.idx.b32 %r8, %r1, 0, 31, -1;\nvote.sync.any.pred %p1, %p9, -1;\nadd.s32 %r9, %r1, %r2;\n"
      "mov.u32 %r10, %warpid;\nret;\n");
  for (const char* uniform : {"%r1", "%r2", "%r3", "%r4", "%r9"}) EXPECT_FALSE(divergent(a, uniform)) << uniform;
  for (const char* varying : {"%r5", "%r6", "%r7", "%r8", "%p1", "%r10"}) EXPECT_TRUE(divergent(a, varying)) << varying;
}

#ifdef STITCH_PTX_KERNEL_DIR

TEST(PtxWeaveUniformity, EveryNvccKernelReachesItsBarriersUniformly) {
  std::vector<fs::path> files = kernel_ptx_files();
  ASSERT_GE(files.size(), 12u);
  int with_barriers = 0;
  for (const fs::path& file : files) {
    SCOPED_TRACE(file.string());
    Module m = parse_module(read_file(file), file.string());
    for (const auto& item : m.items) {
      const auto* f = std::get_if<Function>(&item);
      if (f == nullptr || !f->has_body) continue;
      ControlFlowGraph cfg = build_cfg(*f);
      Uniformity u = analyze_uniformity(cfg);
      EXPECT_NO_THROW(check_barriers_reached_uniformly(cfg, u, "kernel A '" + f->name + "'")) << f->name;
      bool barrier = std::any_of(cfg.blocks.begin(), cfg.blocks.end(), [](const BasicBlock& b) { return !b.barriers.empty(); });
      if (barrier) {
        ++with_barriers;
        EXPECT_FALSE(u.divergent_branches.empty()) << f->name << ": every kernel here has a divergent guard";
      }
    }
  }
  EXPECT_GE(with_barriers, 8);  // block_reduce_sum, device_calls, histogram_atomic, transpose_tiled on two archs
}

// block_reduce_sum with its `i < n` guard turned into an early return: refused.
TEST(PtxWeaveUniformity, NvccReductionWithAnEarlyReturnIsRefused) {
  for (const char* arch : {"sm_75", "sm_90"}) {
    fs::path file = fs::path(STITCH_PTX_KERNEL_DIR) / (std::string("block_reduce_sum.") + arch + ".ptx");
    Module m = parse_module(read_file(file), file.string());
    Function* f = nullptr;
    for (auto& item : m.items) {
      if (auto* g = std::get_if<Function>(&item); g != nullptr && g->is_entry) f = g;
    }
    ASSERT_NE(f, nullptr);
    {
      ControlFlowGraph cfg = build_cfg(*f);
      EXPECT_NO_THROW(check_barriers_reached_uniformly(cfg, analyze_uniformity(cfg), "kernel B"));
    }
    bool replaced = false;
    for (Statement& s : f->body) {
      auto* in = std::get_if<Instruction>(&s.node);
      if (in == nullptr || in->opcode != "bra" || !in->guard) continue;
      in->opcode = "ret";
      in->operands.clear();
      replaced = true;
      break;
    }
    ASSERT_TRUE(replaced);
    ControlFlowGraph cfg = build_cfg(*f);
    try {
      check_barriers_reached_uniformly(cfg, analyze_uniformity(cfg), "kernel B 'block_reduce_sum'");
      ADD_FAILURE() << arch << ": the early return was not refused";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("kernel B 'block_reduce_sum' cannot be woven"), std::string::npos);
      EXPECT_TRUE(e.loc().known());
    }
  }
}

#endif  // STITCH_PTX_KERNEL_DIR

}  // namespace
}  // namespace stitch::ptx
