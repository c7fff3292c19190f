// End to end: the PTX nvcc makes from tests/ptx/kernels/*.cu (sm_75 and
// sm_90) run on the interpreter and compared with CPU references (exact
// where the reference replays the kernel's order of float operations).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>

#include "interpreter_test_util.h"

namespace stitch::ptx::testing {
namespace {

#ifdef STITCH_PTX_KERNEL_DIR

class InterpreterKernels : public ::testing::TestWithParam<const char*> {
 protected:
  Interpreter load(const std::string& name) {
    const std::string path = std::string(STITCH_PTX_KERNEL_DIR) + "/" + name + "." + GetParam() + ".ptx";
    std::ifstream in(path);
    EXPECT_TRUE(in.good()) << path;
    std::stringstream s;
    s << in.rdbuf();
    return Interpreter(parse_module(s.str(), path));
  }
};

TEST_P(InterpreterKernels, BlockReduceSum) {
  const int n = 1000, blocks = 4;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-2, 2);
  std::vector<float> in(n), out(blocks, -1);
  for (float& v : in) v = dist(rng);
  Interpreter interp = load("block_reduce_sum");
  interp.run("block_reduce_sum", launch(blocks, 256), {buffer_arg(in), buffer_arg(out), KernelArg::scalar<int32_t>(n)});
  for (int b = 0; b < blocks; ++b) {
    std::vector<float> partial(256);
    for (int t = 0; t < 256; ++t) partial[t] = b * 256 + t < n ? in[b * 256 + t] : 0.0f;
    for (int stride = 128; stride > 0; stride /= 2) {
      for (int t = 0; t < stride; ++t) partial[t] += partial[t + stride];
    }
    EXPECT_EQ(out[b], partial[0]) << "block " << b;
  }
}

TEST_P(InterpreterKernels, CollatzStepsDivergentLoop) {
  const int n = 1000;
  std::mt19937 rng(2);
  std::vector<uint32_t> start(n);
  for (uint32_t& v : start) v = rng() % 100000;
  std::vector<int32_t> steps(n, -1);
  Interpreter interp = load("collatz_steps");
  interp.run("collatz_steps", launch(8, 128), {buffer_arg(start), buffer_arg(steps), KernelArg::scalar<int32_t>(n)});
  for (int i = 0; i < n; ++i) {
    uint64_t v = start[i];
    int count = 0;
    while (v > 1 && count < 1000) {
      v = (v & 1) ? 3 * v + 1 : v / 2;
      ++count;
    }
    ASSERT_EQ(steps[i], count) << "i = " << i;
  }
}

TEST_P(InterpreterKernels, DeviceCallsWithDynamicSharedMemory) {
  const int n = 200, block = 64, grid = 4;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-3, 3);
  std::vector<float> in(n), out(n, -1);
  for (float& v : in) v = dist(rng);
  Interpreter interp = load("device_calls");
  LaunchConfig config = launch(grid, block);
  config.dynamic_shared_bytes = block * sizeof(float);
  interp.run("device_calls", config, {buffer_arg(in), buffer_arg(out), KernelArg::scalar<int32_t>(n)});
  const double c[4] = {1.0, -0.5, 0.25, -0.125};
  for (int i = 0; i < n; ++i) {
    const double x = in[i];
    const double poly = c[0] + x * (c[1] + x * (c[2] + x * c[3]));
    const double fast = std::exp(x) * 0.25 + 1.0 / std::sqrt(std::fabs(x) + 1.0) + std::tanh(x);
    const int t = i % block, b = i / block;
    const int j = b * block + (t + 1) % block;
    const double next = j < n ? in[j] : 0.0;
    const double want = poly + fast + next;
    EXPECT_NEAR(out[i], want, 1e-5 * (1 + std::fabs(want))) << "i = " << i;
  }
}

TEST_P(InterpreterKernels, HistogramAtomics) {
  const int n = 5000, nbins = 256;
  std::mt19937 rng(4);
  std::vector<int32_t> values(n);
  for (int32_t& v : values) v = static_cast<int32_t>(rng() % 310) - 10;
  std::vector<uint32_t> bins(nbins, 0), first_negative{0xffffffffu};
  std::vector<int32_t> max_value{std::numeric_limits<int32_t>::min()};
  Interpreter interp = load("histogram_atomic");
  interp.run("histogram_atomic", launch(3, 256),
             {buffer_arg(values), KernelArg::scalar<int32_t>(n), buffer_arg(bins), KernelArg::scalar<int32_t>(nbins),
              buffer_arg(max_value), buffer_arg(first_negative)});
  std::vector<uint32_t> want(nbins, 0);
  uint32_t first = 0xffffffffu;
  for (int i = 0; i < n; ++i) {
    if (values[i] >= 0 && values[i] < nbins) ++want[values[i]];
    if (values[i] < 0) first = std::min<uint32_t>(first, static_cast<uint32_t>(i));
  }
  EXPECT_EQ(bins, want);
  EXPECT_EQ(max_value[0], *std::max_element(values.begin(), values.end()));
  EXPECT_EQ(first_negative[0], first);
}

TEST_P(InterpreterKernels, TransposeTiled) {
  const int rows = 45, cols = 70;
  std::vector<float> in(rows * cols), out(rows * cols, -1);
  for (int i = 0; i < rows * cols; ++i) in[i] = static_cast<float>(i);
  Interpreter interp = load("transpose_tiled");
  LaunchConfig config;
  config.grid = {(cols + 31) / 32, (rows + 31) / 32, 1};
  config.block = {32, 8, 1};
  interp.run("transpose_tiled", config,
             {buffer_arg(in), buffer_arg(out), KernelArg::scalar<int32_t>(rows), KernelArg::scalar<int32_t>(cols)});
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) ASSERT_EQ(out[c * rows + r], in[r * cols + c]);
  }
}

TEST_P(InterpreterKernels, WarpReduceShufflesAndBallot) {
  const int n = 100, warps = 4;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> in(n), max_out(warps), sum_out(warps);
  std::vector<uint32_t> positive(warps);
  for (float& v : in) v = dist(rng);
  Interpreter interp = load("warp_reduce");
  interp.run("warp_reduce", launch(2, 64),
             {buffer_arg(in), buffer_arg(max_out), buffer_arg(sum_out), buffer_arg(positive), KernelArg::scalar<int32_t>(n)});
  for (int w = 0; w < warps; ++w) {
    std::vector<float> s(32);
    float m = -std::numeric_limits<float>::infinity();
    uint32_t mask = 0;
    for (int l = 0; l < 32; ++l) {
      const int i = w * 32 + l;
      s[l] = i < n ? in[i] : 0.0f;
      if (i < n) m = std::max(m, in[i]);
      if (s[l] > 0) mask |= 1u << l;
    }
    for (int offset = 16; offset > 0; offset /= 2) {
      std::vector<float> next(32);
      for (int l = 0; l < 32; ++l) next[l] = s[l] + (l + offset < 32 ? s[l + offset] : s[l]);
      s = next;
    }
    EXPECT_EQ(max_out[w], m) << "warp " << w;
    EXPECT_EQ(sum_out[w], s[0]) << "warp " << w;
    EXPECT_EQ(positive[w], mask) << "warp " << w;
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, InterpreterKernels, ::testing::Values("sm_75", "sm_90"));

#endif

}  // namespace
}  // namespace stitch::ptx::testing
