// The kernel cases of the weaving tests (weave_test.cpp, weave_pack_test.cpp):
// the nvcc-compiled kernels of tests/ptx/kernels with their inputs and
// launches, the modules loaded from the build tree, and ptxas's verdict.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>

#include "interpreter_test_util.h"
#include "run_command.h"

namespace stitch::ptx::testing {

// One kernel argument: a buffer's initial bytes, or a scalar's bytes.
struct Arg {
  bool buffer = false;
  std::vector<std::byte> bytes;
};

template <class T>
inline Arg buffer_of(const std::vector<T>& v) {
  Arg a;
  a.buffer = true;
  a.bytes.resize(v.size() * sizeof(T));
  std::memcpy(a.bytes.data(), v.data(), a.bytes.size());
  return a;
}

template <class T>
inline Arg scalar_of(T v) {
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
inline constexpr uint32_t kBlock = 128;

inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

inline std::vector<KernelCase> kernel_cases() {
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
    const int n = 600;
    cases.push_back({"long_polynomial", "long_polynomial", "long_polynomial", one_d(5),
                     {buffer_of(random_floats(n, 10, -1, 1)), buffer_of(std::vector<float>(n, -1)),
                      scalar_of<int32_t>(n)}});
  }
  {
    const int n = 450;
    cases.push_back({"fma_chain", "fma_chain", "fma_chain", one_d(4),
                     {buffer_of(random_floats(n, 9, -1, 1)), buffer_of(std::vector<float>(n, -1)), scalar_of<int32_t>(n),
                      scalar_of<int32_t>(37)}});
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
inline KernelCase transpose_case(uint32_t seed) {
  const int rows = 45, cols = 70;
  std::vector<float> in = random_floats(rows * cols, seed, -5, 5);
  LaunchConfig config{{(cols + 31) / 32, (rows + 31) / 32, 1}, {32, 8, 1}, 0};
  return {"transpose_tiled", "transpose_tiled", "transpose_tiled", config,
          {buffer_of(in), buffer_of(std::vector<float>(rows * cols, -1)), scalar_of<int32_t>(rows),
           scalar_of<int32_t>(cols)}};
}

#ifdef STITCH_PTX_KERNEL_DIR

inline Module load_kernel_module(const std::string& file) {
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

inline Bound bind(const std::vector<Arg>& args) {
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

inline std::string ptxas_messages(const std::string& text, const std::string& tag) {
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

// Runs a and b alone on the interpreter, then kernel `name` of `made` (a
// woven or packed pair) once with A's arguments, B's, then `extra`, and
// expects every buffer of both to be byte-identical to the runs alone.
inline void expect_same_as_alone(const Module& ma, const Module& mb, const KernelCase& a, const KernelCase& b,
                                 const Module& made, const std::string& name, const LaunchConfig& launch,
                                 const std::vector<KernelArg>& extra) {
  Bound alone_a = bind(a.args);
  Bound alone_b = bind(b.args);
  Interpreter(ma).run(a.kernel, a.launch, alone_a.args);
  Interpreter(mb).run(b.kernel, b.launch, alone_b.args);

  Bound together_a = bind(a.args);
  Bound together_b = bind(b.args);
  std::vector<KernelArg> args = together_a.args;
  args.insert(args.end(), together_b.args.begin(), together_b.args.end());
  args.insert(args.end(), extra.begin(), extra.end());
  try {
    Interpreter(made).run(name, launch, args);
  } catch (const UserError& e) {
    ADD_FAILURE() << name << " failed: " << e.what();
    return;
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

#endif  // STITCH_PTX_KERNEL_DIR

}  // namespace stitch::ptx::testing
