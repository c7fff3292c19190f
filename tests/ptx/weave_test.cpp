// Weaving (docs/goptx.md): every pair of the nvcc-compiled kernels of
// tests/ptx/kernels (barriers, shuffles and ballots, divergent loops, atomics,
// calls, dynamic shared memory, the GoPTX poster's first/second pair), woven
// by both strategies, must give bit-identical buffers to running the two
// kernels one after the other on the interpreter, and ptxas must accept the
// woven module. Pairs with different grids are woven with grid guards.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <sstream>

#include "interpreter_test_util.h"
#include "ptx/printer.h"
#include "ptx/weave/weave.h"
#include "run_command.h"

namespace stitch::ptx::testing {
namespace {

// One kernel argument: a buffer's initial bytes, or a scalar's bytes.
struct Arg {
  bool buffer = false;
  std::vector<std::byte> bytes;
};

template <class T>
Arg buffer_of(const std::vector<T>& v) {
  Arg a;
  a.buffer = true;
  a.bytes.resize(v.size() * sizeof(T));
  std::memcpy(a.bytes.data(), v.data(), a.bytes.size());
  return a;
}

template <class T>
Arg scalar_of(T v) {
  Arg a;
  a.bytes.resize(sizeof(T));
  std::memcpy(a.bytes.data(), &v, sizeof(T));
  return a;
}

struct KernelCase {
  std::string name;    // for messages
  std::string file;    // tests/ptx/kernels/<file>.cu, compiled for sm_90
  std::string kernel;  // the .entry
  LaunchConfig launch;
  std::vector<Arg> args;
};

// Threads per CTA for the one-dimensional kernels, so any two of them can be woven.
constexpr uint32_t kBlock = 128;

std::vector<float> random_floats(size_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

std::vector<KernelCase> kernel_cases() {
  std::vector<KernelCase> cases;
  auto one_d = [](uint32_t grid) { return LaunchConfig{{grid, 1, 1}, {kBlock, 1, 1}, 0}; };
  {
    const int n = 1000;
    cases.push_back({"block_reduce_sum", "block_reduce_sum", "block_reduce_sum", one_d(8),
                     {buffer_of(random_floats(n, 1, -2, 2)), buffer_of(std::vector<float>(8, -1)), scalar_of<int32_t>(n)}});
  }
  {
    const int n = 700;
    std::mt19937 rng(2);
    std::vector<uint32_t> start(n);
    for (uint32_t& v : start) v = rng() % 5000;
    cases.push_back({"collatz_steps", "collatz_steps", "collatz_steps", one_d(6),
                     {buffer_of(start), buffer_of(std::vector<int32_t>(n, -1)), scalar_of<int32_t>(n)}});
  }
  {
    const int n = 300;
    LaunchConfig config = one_d(3);
    config.dynamic_shared_bytes = kBlock * sizeof(float);
    cases.push_back({"device_calls", "device_calls", "device_calls", config,
                     {buffer_of(random_floats(n, 3, -3, 3)), buffer_of(std::vector<float>(n, -1)), scalar_of<int32_t>(n)}});
  }
  {
    const int n = 2000, nbins = 200;
    std::mt19937 rng(4);
    std::vector<int32_t> values(n);
    for (int32_t& v : values) v = static_cast<int32_t>(rng() % 230) - 10;
    cases.push_back({"histogram_atomic", "histogram_atomic", "histogram_atomic", one_d(3),
                     {buffer_of(values), scalar_of<int32_t>(n), buffer_of(std::vector<uint32_t>(nbins, 0)),
                      scalar_of<int32_t>(nbins), buffer_of(std::vector<int32_t>{std::numeric_limits<int32_t>::min()}),
                      buffer_of(std::vector<uint32_t>{0xffffffffu})}});
  }
  {
    const int n = 500, grid = 4;
    const int warps = grid * static_cast<int>(kBlock) / 32;
    cases.push_back({"warp_reduce", "warp_reduce", "warp_reduce", one_d(grid),
                     {buffer_of(random_floats(n, 5, -1, 1)), buffer_of(std::vector<float>(warps, -1)),
                      buffer_of(std::vector<float>(warps, -1)), buffer_of(std::vector<uint32_t>(warps, 7)),
                      scalar_of<int32_t>(n)}});
  }
  for (const char* which : {"first", "second"}) {
    const int n = 333;
    cases.push_back({which, "weave_first_second", which, one_d(3),
                     {buffer_of(random_floats(n, which[0] == 'f' ? 6 : 7, -1, 1)), buffer_of(std::vector<float>(2 * n, -1)),
                      scalar_of<int32_t>(n)}});
  }
  return cases;
}

// The transpose needs its 32 x 8 block, so it is only woven with itself.
KernelCase transpose_case(uint32_t seed) {
  const int rows = 45, cols = 70;
  std::vector<float> in = random_floats(rows * cols, seed, -5, 5);
  LaunchConfig config{{(cols + 31) / 32, (rows + 31) / 32, 1}, {32, 8, 1}, 0};
  return {"transpose_tiled", "transpose_tiled", "transpose_tiled", config,
          {buffer_of(in), buffer_of(std::vector<float>(rows * cols, -1)), scalar_of<int32_t>(rows),
           scalar_of<int32_t>(cols)}};
}

#ifdef STITCH_PTX_KERNEL_DIR

Module load_kernel_module(const std::string& file) {
  const std::string path = std::string(STITCH_PTX_KERNEL_DIR) + "/" + file + ".sm_90.ptx";
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream s;
  s << in.rdbuf();
  return parse_module(s.str(), path);
}

// Buffers (copies of the initial bytes) and the KernelArgs that point at them.
struct Bound {
  std::vector<std::vector<std::byte>> buffers;
  std::vector<KernelArg> args;
};

Bound bind(const std::vector<Arg>& args) {
  Bound b;
  b.buffers.reserve(args.size());
  for (const Arg& a : args) {
    b.buffers.push_back(a.bytes);
    if (a.buffer) {
      b.args.push_back(KernelArg::buffer(b.buffers.back().data(), b.buffers.back().size(), "buffer"));
    } else {
      KernelArg k;
      k.bytes = a.bytes;
      b.args.push_back(k);
    }
  }
  return b;
}

std::array<uint32_t, 3> larger(const std::array<uint32_t, 3>& x, const std::array<uint32_t, 3>& y) {
  return {std::max(x[0], y[0]), std::max(x[1], y[1]), std::max(x[2], y[2])};
}

std::string ptxas_messages(const std::string& text, const std::string& tag) {
#ifdef STITCH_PTXAS
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("stitch_weave_" + tag + "_" + std::to_string(::getpid()) + ".ptx");
  std::ofstream(file) << text;
  const stitch::testing::CommandRun r = stitch::testing::run_command(std::string(STITCH_PTXAS) + " -arch=sm_90 " + file.string() + " -o /dev/null");
  std::filesystem::remove(file);
  return r.status == 0 ? "" : r.output;
#else
  (void)text;
  (void)tag;
  return "";
#endif
}

// Weaves a with b, runs the woven kernel and both alone, and compares every buffer.
void check_pair(const KernelCase& a, const KernelCase& b, WeaveStrategy strategy, bool grid_params = false) {
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
  const Module woven = weave(ma, mb, options);
  const std::string text = print_module(woven);
  // The woven text must parse back and pass ptxas as printed.
  const Module reparsed = parse_module(text, "woven.ptx");
  EXPECT_EQ(print_module(reparsed), text);
  EXPECT_EQ(ptxas_messages(text, a.name + "_" + b.name), "");

  Bound alone_a = bind(a.args);
  Bound alone_b = bind(b.args);
  Interpreter(ma).run(a.kernel, a.launch, alone_a.args);
  Interpreter(mb).run(b.kernel, b.launch, alone_b.args);

  Bound together_a = bind(a.args);
  Bound together_b = bind(b.args);
  std::vector<KernelArg> args = together_a.args;
  args.insert(args.end(), together_b.args.begin(), together_b.args.end());
  if (grid_params) {
    for (const LaunchConfig* c : {&a.launch, &b.launch}) {
      for (uint32_t extent : c->grid) args.push_back(KernelArg::scalar<uint32_t>(extent));
    }
  }
  LaunchConfig launch = a.launch;
  launch.grid = larger(a.launch.grid, b.launch.grid);
  launch.dynamic_shared_bytes = std::max(a.launch.dynamic_shared_bytes, b.launch.dynamic_shared_bytes);
  const std::string name = a.kernel + "_" + b.kernel + "_woven";
  try {
    Interpreter(woven).run(name, launch, args);
  } catch (const UserError& e) {
    FAIL() << "the woven kernel failed: " << e.what();
  }

  for (size_t i = 0; i < a.args.size(); ++i) {
    if (a.args[i].buffer) {
      EXPECT_TRUE(alone_a.buffers[i] == together_a.buffers[i]) << "A's argument " << i;
    }
  }
  for (size_t i = 0; i < b.args.size(); ++i) {
    if (b.args[i].buffer) {
      EXPECT_TRUE(alone_b.buffers[i] == together_b.buffers[i]) << "B's argument " << i;
    }
  }
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
