// Weaving (docs/goptx.md): every pair of the nvcc-compiled kernels of
// tests/ptx/kernels (barriers, shuffles and ballots, divergent loops, atomics,
// calls, dynamic shared memory, the GoPTX poster's first/second pair), woven
// by both strategies, must give bit-identical buffers to running the two
// kernels one after the other on the interpreter, and ptxas must accept the
// woven module. Pairs with different grids are woven with grid guards.
#include <gtest/gtest.h>

#include <functional>

#include "ptx/printer.h"
#include "ptx/weave/weave.h"
#include "weave_cases.h"

namespace stitch::ptx::testing {
namespace {

#ifdef STITCH_PTX_KERNEL_DIR

std::array<uint32_t, 3> larger(const std::array<uint32_t, 3>& x, const std::array<uint32_t, 3>& y) {
  return {std::max(x[0], y[0]), std::max(x[1], y[1]), std::max(x[2], y[2])};
}

// Weaves a with b, runs the woven kernel and both alone, and compares every buffer.
// The weaver's report on the pair, for tests that look at how it was woven.
WeaveReport check_pair(const KernelCase& a, const KernelCase& b, WeaveStrategy strategy, bool grid_params = false) {
  SCOPED_TRACE(a.name + " + " + b.name + (strategy == WeaveStrategy::Concat ? " (concat)" : " (latency)") +
               (grid_params ? " (grids as parameters)" : ""));
  const Module ma = load_kernel_module(a.file);
  const Module mb = load_kernel_module(b.file);
  WeaveOptions options;
  options.kernel_a = a.kernel;
  options.kernel_b = b.kernel;
  options.strategy = strategy;
  if (grid_params) {
    options.grid_params = true;
  } else if (a.launch.grid != b.launch.grid) {
    options.grid_a = a.launch.grid;
    options.grid_b = b.launch.grid;
  }
  WeaveReport report;
  const Module woven = weave(ma, mb, options, &report);
  const std::string text = print_module(woven);
  // The woven text must parse back and pass ptxas as printed.
  const Module reparsed = parse_module(text, "woven.ptx");
  EXPECT_EQ(print_module(reparsed), text);
  EXPECT_EQ(ptxas_messages(text, a.name + "_" + b.name), "");

  std::vector<KernelArg> grids;
  if (grid_params) {
    for (const LaunchConfig* c : {&a.launch, &b.launch}) {
      for (uint32_t extent : c->grid) grids.push_back(KernelArg::scalar<uint32_t>(extent));
    }
  }
  LaunchConfig launch = a.launch;
  launch.grid = larger(a.launch.grid, b.launch.grid);
  launch.dynamic_shared_bytes = std::max(a.launch.dynamic_shared_bytes, b.launch.dynamic_shared_bytes);
  expect_same_as_alone(ma, mb, a, b, woven, a.kernel + "_" + b.kernel + "_woven", launch, grids);
  return report;
}

class WeavePairs : public ::testing::TestWithParam<WeaveStrategy> {};

TEST_P(WeavePairs, EveryPairMatchesTheKernelsRunAlone) {
  const std::vector<KernelCase> cases = kernel_cases();
  for (const KernelCase& a : cases) {
    for (const KernelCase& b : cases) {
      // Only one kernel of a pair may use dynamic shared memory.
      if (a.launch.dynamic_shared_bytes > 0 && b.launch.dynamic_shared_bytes > 0) continue;
      check_pair(a, b, GetParam());
    }
  }
}

TEST_P(WeavePairs, GridsKnownOnlyAtLaunchArePassedAsParameters) {
  const std::vector<KernelCase> cases = kernel_cases();
  for (size_t i = 0; i < cases.size(); ++i) {
    const KernelCase& b = cases[(i + 2) % cases.size()];
    if (cases[i].launch.dynamic_shared_bytes > 0 && b.launch.dynamic_shared_bytes > 0) continue;
    check_pair(cases[i], b, GetParam(), true);
  }
}

TEST(Weave, ALongBlockIsSlicedAndStillMatches) {
  // long_polynomial's 49 FMAs are one block; collatz_steps has several.
  const std::vector<KernelCase> cases = kernel_cases();
  auto find = [&](const std::string& name) {
    return *std::find_if(cases.begin(), cases.end(), [&](const KernelCase& c) { return c.name == name; });
  };
  const WeaveReport sliced = check_pair(find("long_polynomial"), find("block_reduce_sum"), WeaveStrategy::Latency);
  EXPECT_GE(sliced.sliced_blocks, 1);
  EXPECT_GT(sliced.interleavable_statements, 0);
  // The concat strategy never slices.
  EXPECT_EQ(check_pair(find("long_polynomial"), find("block_reduce_sum"), WeaveStrategy::Concat).sliced_blocks, 0);
}

TEST_P(WeavePairs, TiledTransposeWithItself) { check_pair(transpose_case(8), transpose_case(9), GetParam()); }

INSTANTIATE_TEST_SUITE_P(Strategies, WeavePairs, ::testing::Values(WeaveStrategy::Concat, WeaveStrategy::Latency),
                         [](const auto& info) { return info.param == WeaveStrategy::Concat ? "concat" : "latency"; });

TEST(Weave, BothKernelsUsingDynamicSharedMemoryIsRefused) {
  const Module m = load_kernel_module("device_calls");
  const std::string message = error_of([&] { weave(m, m, {}); });
  EXPECT_NE(message.find("dynamic shared memory"), std::string::npos) << message;
}

#endif  // STITCH_PTX_KERNEL_DIR

TEST(Weave, AnEarlyExitBeforeABarrierIsRefused) {
  // Threads past n leave before the barrier: woven, they would still be
  // running the other kernel and never arrive.
  const std::string text = kernel_text(".param .u32 n", std::string(kRegs) + R"(
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %tid.x;
    setp.ge.u32 %p1, %r2, %r1;
    @%p1 bra $L_done;
    bar.sync 0;
  $L_done:
    ret;)");
  const Module m = parse_module(text, "early.ptx");
  const std::string message = error_of([&] { weave(m, m, {}); });
  EXPECT_NE(message.find("barrier"), std::string::npos) << message;
}

TEST(Weave, AMissingOrAmbiguousKernelIsNamed) {
  const std::string two = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k1()\n{\nret;\n}\n"
                          ".visible .entry k2()\n{\nret;\n}\n";
  const Module m = parse_module(two, "two.ptx");
  EXPECT_NE(error_of([&] { weave(m, m, {}); }).find("--kernel-a"), std::string::npos);
  WeaveOptions options;
  options.kernel_a = "k1";
  options.kernel_b = "nope";
  EXPECT_NE(error_of([&] { weave(m, m, options); }).find("'nope'"), std::string::npos);
  options.kernel_b = "k2";
  const Module woven = weave(m, m, options);
  EXPECT_NE(woven.find_function("k1_k2_woven"), nullptr);
}

}  // namespace
}  // namespace stitch::ptx::testing
