// Kernel resources from ptxas -v, parsed from captured real output, and
// CUDA's occupancy calculation on Hopper's limits, each case worked by hand
// (and checked against cuda_occupancy.h's cudaOccMaxActiveBlocksPerMultiprocessor).
#include <gtest/gtest.h>

#include "gpu_model/resources.h"
#include "stitch/error.h"

namespace stitch::gpu_model {
namespace {

// ptxas 13.0 (V13.0.88) -v -arch=sm_90 on nvcc -ptx output: an entry that
// calls a non-inlined device function, one that spills under
// __launch_bounds__(1024, 2), one with a static __shared__ float[1024], and a
// plain one. ptxas reports entries in reverse order of definition.
constexpr const char* kPtxasSm90 =
    "ptxas info    : 0 bytes gmem\n"
    "ptxas info    : Compiling entry function 'calls' for 'sm_90'\n"
    "ptxas info    : Function properties for calls\n"
    "    256 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 36 registers, used 0 barriers, 256 bytes cumulative stack size\n"
    "ptxas info    : Compile time = 23.297 ms\n"
    "ptxas info    : Function properties for _Z12table_lookupPKii\n"
    "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Compiling entry function 'spills' for 'sm_90'\n"
    "ptxas info    : Function properties for spills\n"
    "    864 bytes stack frame, 964 bytes spill stores, 1332 bytes spill loads\n"
    "ptxas info    : Used 32 registers, used 0 barriers, 864 bytes cumulative stack size\n"
    "ptxas info    : Compile time = 49.417 ms\n"
    "ptxas info    : Compiling entry function 'tile_sum' for 'sm_90'\n"
    "ptxas info    : Function properties for tile_sum\n"
    "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 22 registers, used 1 barriers, 4096 bytes smem\n"
    "ptxas info    : Compile time = 3.664 ms\n"
    "ptxas info    : Compiling entry function 'add_one' for 'sm_90'\n"
    "ptxas info    : Function properties for add_one\n"
    "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 8 registers, used 0 barriers\n"
    "ptxas info    : Compile time = 1.316 ms\n";

// The same ptxas for sm_80 appends the kernel's constant bank after smem.
constexpr const char* kPtxasSm80TileSum =
    "ptxas info    : 0 bytes gmem\n"
    "ptxas info    : Compiling entry function 'tile_sum' for 'sm_80'\n"
    "ptxas info    : Function properties for tile_sum\n"
    "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 22 registers, used 1 barriers, 4096 bytes smem, 368 bytes cmem[0]\n";

constexpr const char* kAddOnePtx =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry add_one(.param .u64 x)\n{\n"
    "  .reg .b32 %r<2>;\n  .reg .f32 %f<3>;\n  .reg .b64 %rd<5>;\n"
    "  ld.param.u64 %rd1, [x];\n  cvta.to.global.u64 %rd2, %rd1;\n"
    "  mov.u32 %r1, %tid.x;\n  mul.wide.u32 %rd3, %r1, 4;\n  add.s64 %rd4, %rd2, %rd3;\n"
    "  ld.global.f32 %f1, [%rd4];\n  add.f32 %f2, %f1, 0f3F800000;\n  st.global.f32 [%rd4], %f2;\n"
    "  ret;\n}\n";


TEST(PtxasResources, ParsesRegistersOfEachKernelWithoutSharedOrSpills) {
  const KernelResources r = parse_ptxas_verbose(kPtxasSm90, "add_one");
  EXPECT_TRUE(r.known);
  EXPECT_EQ(r.registers, 8);
  EXPECT_EQ(r.static_shared_bytes, 0);
  EXPECT_EQ(r.stack_frame_bytes, 0);
  EXPECT_EQ(r.spill_store_bytes, 0);
  EXPECT_EQ(r.spill_load_bytes, 0);
}

TEST(PtxasResources, ParsesStaticSharedMemory) {
  const KernelResources r = parse_ptxas_verbose(kPtxasSm90, "tile_sum");
  EXPECT_TRUE(r.known);
  EXPECT_EQ(r.registers, 22);
  EXPECT_EQ(r.static_shared_bytes, 4096);
}

TEST(PtxasResources, ParsesSharedMemoryFollowedByConstantBank) {
  const KernelResources r = parse_ptxas_verbose(kPtxasSm80TileSum, "tile_sum");
  EXPECT_TRUE(r.known);
  EXPECT_EQ(r.registers, 22);
  EXPECT_EQ(r.static_shared_bytes, 4096);
}

TEST(PtxasResources, ParsesSpillsAndStackFrame) {
  const KernelResources r = parse_ptxas_verbose(kPtxasSm90, "spills");
  EXPECT_TRUE(r.known);
  EXPECT_EQ(r.registers, 32);
  EXPECT_EQ(r.stack_frame_bytes, 864);
  EXPECT_EQ(r.spill_store_bytes, 964);
  EXPECT_EQ(r.spill_load_bytes, 1332);
}

TEST(PtxasResources, LinesAfterACalleeBelongToTheCallee) {
  // The callee's all-zero properties follow the caller's report and must not overwrite it.
  const KernelResources r = parse_ptxas_verbose(kPtxasSm90, "calls");
  EXPECT_TRUE(r.known);
  EXPECT_EQ(r.registers, 36);
  EXPECT_EQ(r.stack_frame_bytes, 256);
}

TEST(PtxasResources, AbsentKernelIsUnknownWithReason) {
  const KernelResources r = parse_ptxas_verbose(kPtxasSm90, "missing");
  EXPECT_FALSE(r.known);
  EXPECT_EQ(r.registers, 0);
  EXPECT_NE(r.source.find("missing"), std::string::npos) << r.source;
}

TEST(PtxasResources, DeviceFunctionWithoutRegisterLineIsUnknown) {
  EXPECT_FALSE(parse_ptxas_verbose(kPtxasSm90, "_Z12table_lookupPKii").known);
}

TEST(PtxasResources, NamePrefixDoesNotMatch) {
  EXPECT_FALSE(parse_ptxas_verbose(kPtxasSm90, "add").known);
  EXPECT_FALSE(parse_ptxas_verbose(kPtxasSm90, "spill").known);
}

TEST(PtxasResources, EmptyOutputIsUnknown) { EXPECT_FALSE(parse_ptxas_verbose("", "add_one").known); }

TEST(PtxasResources, RunsPtxasOrSaysWhyNot) {
  const KernelResources r = ptxas_resources(kAddOnePtx, "add_one", "sm_90");
  if (r.known) {
    EXPECT_GT(r.registers, 0);
    EXPECT_NE(r.source.find("-arch="), std::string::npos) << r.source;
  } else {
    EXPECT_FALSE(r.source.empty());
  }
}

TEST(PtxasResources, RejectedPtxIsUserErrorWithPtxasOutput) {
  if (!ptxas_resources(kAddOnePtx, "add_one", "sm_90").known) GTEST_SKIP() << "no ptxas in this build";
  const std::string bad = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry bad()\n{\n  bogus;\n}\n";
  try {
    ptxas_resources(bad, "bad", "sm_90");
    FAIL() << "ptxas accepted an unknown instruction";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("bogus"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace stitch::gpu_model
