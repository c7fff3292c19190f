// effects_of and the latency tables (docs/goptx.md, Dependencies and Latency
// tables): what each kind of instruction reads, writes and orders.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ptx/parser.h"
#include "ptx/weave/effects.h"
#include "ptx/weave/latency.h"

namespace stitch::ptx {
namespace {

using Strings = std::vector<std::string>;

// The instructions of `body` (one .entry with no parameters but `p`), in order, scopes flattened.
struct Parsed {
  Module module;
  std::vector<const Instruction*> instructions;
};

void flatten(const std::vector<Statement>& body, std::vector<const Instruction*>& out) {
  for (const Statement& s : body) {
    if (const auto* in = std::get_if<Instruction>(&s.node)) out.push_back(in);
    if (const auto* b = std::get_if<Block>(&s.node)) flatten(b->body, out);
  }
}

Parsed parse_body(const std::string& body) {
  Parsed p;
  p.module = parse_module(".version 8.0\n.target sm_90\n.address_size 64\n.entry k(.param .u64 p)\n{\n" + body + "}\n",
                          "t.ptx");
  flatten(std::get<Function>(p.module.items.at(0)).body, p.instructions);
  return p;
}

InstructionEffects effects(const std::string& line) {
  Parsed p = parse_body(line + "\n");
  EXPECT_EQ(p.instructions.size(), 1u) << line;
  return effects_of(*p.instructions.at(0));
}

TEST(PtxWeaveEffects, ArithmeticWritesOperandZeroAndReadsTheRest) {
  InstructionEffects e = effects("@!%p3 add.s32 %r1, %r2, %tid.x;");
  EXPECT_EQ(e.writes, Strings{"%r1"});
  EXPECT_EQ(e.reads, (Strings{"%p3", "%r2"}));  // the guard; %tid.x is no register
  EXPECT_EQ(e.memory, MemoryEffect::None);
  EXPECT_EQ(e.sync, SyncKind::None);
  EXPECT_FALSE(e.is_control);
}

TEST(PtxWeaveEffects, TwoDestinationsAndSinks) {
  InstructionEffects setp = effects("setp.lt.s32 %p1|%p2, %r1, 4;");
  EXPECT_EQ(setp.writes, (Strings{"%p1", "%p2"}));
  EXPECT_EQ(setp.reads, Strings{"%r1"});
  InstructionEffects shfl = effects("shfl.sync.down.b32 %r5|%p1, %r2, 16, 31, -1;");
  EXPECT_EQ(shfl.writes, (Strings{"%r5", "%p1"}));
  EXPECT_EQ(shfl.sync, SyncKind::Warp);
  InstructionEffects sink = effects("atom.global.add.u32 _, [%rd1], 1;");
  EXPECT_TRUE(sink.writes.empty());
  EXPECT_EQ(sink.reads, Strings{"%rd1"});
  EXPECT_EQ(sink.memory, MemoryEffect::ReadWrite);
  EXPECT_EQ(sink.space, "global");
}

TEST(PtxWeaveEffects, VectorLoadsAndStores) {
  InstructionEffects ld = effects("ld.global.nc.v2.f32 {%f1, %f2}, [%rd4+8];");
  EXPECT_EQ(ld.writes, (Strings{"%f1", "%f2"}));
  EXPECT_EQ(ld.reads, Strings{"%rd4"});
  EXPECT_EQ(ld.memory, MemoryEffect::Read);
  EXPECT_EQ(ld.space, "global");
  InstructionEffects st = effects("st.shared.v4.f32 [%r9], {%f1, %f2, %f3, %f4};");
  EXPECT_TRUE(st.writes.empty());
  EXPECT_EQ(st.reads, (Strings{"%r9", "%f1", "%f2", "%f3", "%f4"}));
  EXPECT_EQ(st.memory, MemoryEffect::Write);
  EXPECT_EQ(st.space, "shared");
}

TEST(PtxWeaveEffects, AddressesReadTheirBaseRegisterNotSymbols) {
  InstructionEffects e = effects("ld.shared.f32 %f1, [smem+4];");
  EXPECT_TRUE(e.reads.empty());
  EXPECT_EQ(e.writes, Strings{"%f1"});
  EXPECT_EQ(effects("mov.u64 %rd1, smem;").reads, Strings{});
  InstructionEffects generic = effects("ld.u32 %r1, [%rd2];");
  EXPECT_EQ(generic.memory, MemoryEffect::Read);
  EXPECT_EQ(generic.space, "");
}

TEST(PtxWeaveEffects, KernelParameterLoadsAreNoMemoryAccess) {
  InstructionEffects e = effects("ld.param.u64 %rd1, [p];");
  EXPECT_EQ(e.memory, MemoryEffect::None);
  EXPECT_EQ(e.writes, Strings{"%rd1"});
  EXPECT_EQ(effects("ld.const.f32 %f1, [table+4];").memory, MemoryEffect::Read);
  EXPECT_EQ(effects("ld.const.f32 %f1, [table+4];").space, "const");
}

TEST(PtxWeaveEffects, InstructionsWithoutADestination) {
  for (const char* line : {"st.global.u32 [%rd1], %r1;", "red.global.add.u32 [%rd1], %r1;",
                           "prefetch.global.L2 [%rd1];", "cp.async.ca.shared.global [%r1], [%rd1], 4;"}) {
    InstructionEffects e = effects(line);
    EXPECT_TRUE(e.writes.empty()) << line;
    EXPECT_FALSE(e.reads.empty()) << line;
  }
  EXPECT_EQ(effects("red.global.add.u32 [%rd1], %r1;").memory, MemoryEffect::Write);
  EXPECT_EQ(effects("cp.async.ca.shared.global [%r1], [%rd1], 4;").memory, MemoryEffect::Write);
  EXPECT_EQ(effects("prefetch.global.L2 [%rd1];").memory, MemoryEffect::Read);
  EXPECT_EQ(effects("cp.async.wait_all;").memory, MemoryEffect::Fence);
  EXPECT_EQ(effects("membar.gl;").memory, MemoryEffect::Fence);
  EXPECT_EQ(effects("fence.acq_rel.gpu;").memory, MemoryEffect::Fence);
}

TEST(PtxWeaveEffects, SyncKindsAndControl) {
  EXPECT_EQ(effects("bar.sync 0;").sync, SyncKind::Cta);
  EXPECT_EQ(effects("barrier.sync.aligned 1;").sync, SyncKind::Cta);
  EXPECT_EQ(effects("bar.warp.sync -1;").sync, SyncKind::Warp);
  EXPECT_EQ(effects("vote.sync.ballot.b32 %r1, %p1, -1;").sync, SyncKind::Warp);
  EXPECT_EQ(effects("vote.sync.ballot.b32 %r1, %p1, -1;").writes, Strings{"%r1"});
  EXPECT_EQ(effects("activemask.b32 %r1;").sync, SyncKind::Warp);
  EXPECT_EQ(effects("redux.sync.add.u32 %r1, %r2, -1;").sync, SyncKind::Warp);
  EXPECT_EQ(effects("match.any.sync.b32 %r1, %r2, -1;").sync, SyncKind::Warp);
  EXPECT_EQ(effects("add.s32 %r1, %r1, 1;").sync, SyncKind::None);
  Parsed p = parse_body("@%p1 bra L;\nL:\nret;\n");
  InstructionEffects bra = effects_of(*p.instructions.at(0));
  EXPECT_TRUE(bra.is_control);
  EXPECT_EQ(bra.reads, Strings{"%p1"});
  EXPECT_TRUE(bra.writes.empty());
  EXPECT_TRUE(effects_of(*p.instructions.at(1)).is_control);
  InstructionEffects trap = effects("trap;");
  EXPECT_TRUE(trap.is_control);
  EXPECT_EQ(trap.memory, MemoryEffect::Fence);
}

TEST(PtxWeaveEffects, CallReadsArgumentsAndWritesReturns) {
  Parsed p = parse_body(
      "{\n.param .b32 param0;\n.param .b32 retval0;\nst.param.f32 [param0+0], %f1;\n"
      "call.uni (retval0), f, (param0);\nld.param.f32 %f2, [retval0+0];\n}\n");
  ASSERT_EQ(p.instructions.size(), 3u);
  InstructionEffects call = effects_of(*p.instructions[1]);
  EXPECT_TRUE(call.is_control);
  EXPECT_EQ(call.memory, MemoryEffect::Fence);
  EXPECT_TRUE(call.reads.empty());  // .param names are no registers
  EXPECT_TRUE(call.writes.empty());
  InstructionEffects st = effects_of(*p.instructions[0]);
  EXPECT_EQ(st.memory, MemoryEffect::Write);
  EXPECT_EQ(st.space, "param");
  EXPECT_EQ(st.reads, Strings{"%f1"});
}

TEST(PtxWeaveEffects, SpecialRegisters) {
  for (const char* name : {"%tid.x", "%ntid.y", "%ctaid.z", "%nctaid.x", "%laneid", "%warpid", "%clock", "%clock64",
                           "%envreg3", "%dynamic_smem_size", "%lanemask_lt", "%smid", "%globaltimer", "%pm0"}) {
    EXPECT_TRUE(is_special_register(name)) << name;
  }
  for (const char* name : {"%r1", "%rd12", "%p1", "%f3", "%tidx", "%fd1", "%rs2", "retval0", ""}) {
    EXPECT_FALSE(is_special_register(name)) << name;
  }
}

int latency(const std::string& line, WeaveArch arch = WeaveArch::Sm80) {
  Parsed p = parse_body(line + "\n");
  return instruction_latency(*p.instructions.at(0), arch);
}

TEST(PtxWeaveLatency, ClassesAreOrderedAsTheSourcesSay) {
  for (WeaveArch arch : {WeaveArch::Sm80, WeaveArch::Sm90}) {
    const int alu = latency("add.s32 %r1, %r2, 1;", arch);
    const int fma = latency("fma.rn.f32 %f1, %f2, %f3, %f4;", arch);
    const int dfma = latency("fma.rn.f64 %fd1, %fd2, %fd3, %fd4;", arch);
    const int sfu = latency("ex2.approx.ftz.f32 %f1, %f2;", arch);
    const int div = latency("div.rn.f32 %f1, %f2, %f3;", arch);
    const int shared = latency("ld.shared.f32 %f1, [%r1];", arch);
    const int global = latency("ld.global.nc.f32 %f1, [%rd1];", arch);
    const int param = latency("ld.param.u64 %rd1, [p];", arch);
    const int store = latency("st.global.f32 [%rd1], %f1;", arch);
    EXPECT_EQ(alu, 4);
    EXPECT_EQ(fma, 4);
    EXPECT_GT(dfma, fma);
    EXPECT_GT(sfu, fma);
    EXPECT_GT(div, sfu);
    EXPECT_GT(shared, alu);
    EXPECT_GT(global, 10 * shared);
    EXPECT_LE(param, alu);
    EXPECT_LE(store, alu);
    EXPECT_EQ(latency("ld.local.f32 %f1, [%rd1];", arch), global);
    EXPECT_GT(latency("atom.global.add.u32 %r1, [%rd1], 1;", arch), shared);
    EXPECT_GT(latency("shfl.sync.bfly.b32 %r1, %r2, 1, 31, -1;", arch), alu);
    EXPECT_GT(latency("mov.u32 %r1, %tid.x;", arch), latency("mov.u32 %r1, %r2;", arch));
    EXPECT_GT(latency("sqrt.rn.f64 %fd1, %fd2;", arch), div);
    EXPECT_EQ(latency("sqrt.approx.f32 %f1, %f2;", arch), sfu + fma);
  }
  EXPECT_EQ(latency("ld.shared.f32 %f1, [%r1];", WeaveArch::Sm80), 28);
  EXPECT_EQ(latency("ld.global.f32 %f1, [%rd1];", WeaveArch::Sm80), 424);
  EXPECT_EQ(latency("ld.shared.f32 %f1, [%r1];", WeaveArch::Sm90), 29);
  EXPECT_EQ(latency("ld.global.f32 %f1, [%rd1];", WeaveArch::Sm90), 472);
  EXPECT_EQ(latency("fma.rn.f64 %fd1, %fd2, %fd3, %fd4;", WeaveArch::Sm80), 6);
  EXPECT_EQ(latency("fma.rn.f64 %fd1, %fd2, %fd3, %fd4;", WeaveArch::Sm90), 8);
  EXPECT_EQ(latency("div.rn.f32 %f1, %f2, %f3;"), 39);
  EXPECT_EQ(latency("div.u32 %r1, %r2, %r3;"), 21);
  EXPECT_EQ(latency("rem.s32 %r1, %r2, %r3;"), 21);
  EXPECT_EQ(latency("rcp.approx.ftz.f64 %fd1, %fd2;"), 330);
  EXPECT_EQ(latency("rcp.approx.f32 %f1, %f2;"), 23);
  EXPECT_EQ(latency("div.full.f32 %f1, %f2, %f3;"), 23 + 4);
  EXPECT_EQ(latency("ld.u32 %r1, [%rd1];"), 424);  // generic: taken as global
  EXPECT_EQ(latency("cvt.rn.f32.s32 %f1, %r1;"), 6);
  EXPECT_EQ(latency("setp.lt.s32 %p1, %r1, 4;"), 4);
}

TEST(PtxWeaveLatency, ArchFromTarget) {
  EXPECT_EQ(weave_arch_for_target({"sm_80"}), WeaveArch::Sm80);
  EXPECT_EQ(weave_arch_for_target({"sm_86"}), WeaveArch::Sm80);
  EXPECT_EQ(weave_arch_for_target({"sm_89", "texmode_independent"}), WeaveArch::Sm80);
  EXPECT_EQ(weave_arch_for_target({"sm_90"}), WeaveArch::Sm90);
  EXPECT_EQ(weave_arch_for_target({"sm_90a"}), WeaveArch::Sm90);
  EXPECT_EQ(weave_arch_for_target({"sm_75"}), WeaveArch::Sm90);
  EXPECT_EQ(weave_arch_for_target({}), WeaveArch::Sm90);
}

}  // namespace
}  // namespace stitch::ptx
