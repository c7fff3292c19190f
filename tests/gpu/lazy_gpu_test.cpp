// Lazy arrays on a real GPU (label gpu; skipped without one; docs/lazy.md,
// Back ends): random programs (tests/support/lazy_programs.h: aliasing views,
// neighbour and reversed accesses, reductions feeding later calls, reads in
// the middle, dropped temporaries) run on Backend::Cuda fused and unfused and
// compared with the CPU's reference interpreter; and programs of rank 2, a
// row join, a graph op between calls, a host write between kernels, and an
// index out of range, the same way.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <random>

#include "gpu_context.h"
#include "lazy_programs.h"
#include "stitch/lazy.h"
#include "stitch/text.h"
#include "tensor/compare.h"

namespace stitch {
namespace {

namespace fs = std::filesystem;
using gpu_testing::GpuTest;

class LazyGpu : public GpuTest {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() / ("stitch-lazy-gpu-" + std::to_string(::getpid())));
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }
  static LazyOptions options(LazyOptions::Mode mode, Backend backend) {
    LazyOptions o;
    o.mode = mode;
    o.backend = backend;
    o.cache_dir = (*dir_ / "cache").string();
    return o;
  }
  static fs::path* dir_;
};

fs::path* LazyGpu::dir_ = nullptr;

TEST_F(LazyGpu, RandomProgramsMatchTheInterpreter) {
  const std::map<std::string, KernelRef> pool = share_kernels(parse_module(lazy_programs::kPool, "pool.stitch"));
  std::mt19937_64 rng(31337);
  int programs = 0;
  int64_t fused_away = 0;
  for (int attempt = 0; programs < 60 && attempt < 1200; ++attempt) {
    lazy_programs::Program p = lazy_programs::random_program(rng);
    const uint64_t seed = 50 + static_cast<uint64_t>(attempt);
    lazy_programs::Outcome reference;
    try {
      reference = lazy_programs::run(p, options(LazyOptions::Mode::Reference, Backend::Cpu), seed, pool);
    } catch (const UserError&) {
      continue;  // a call races with itself: not a valid program
    }
    ++programs;
    SCOPED_TRACE(lazy_programs::describe(p));
    lazy_programs::Outcome fused = lazy_programs::run(p, options(LazyOptions::Mode::Fused, Backend::Cuda), seed, pool);
    lazy_programs::expect_same(fused, reference, "CUDA fused");
    lazy_programs::Outcome unfused = lazy_programs::run(p, options(LazyOptions::Mode::Unfused, Backend::Cuda), seed, pool);
    lazy_programs::expect_same(unfused, reference, "CUDA unfused");
    fused_away += fused.stats.calls - fused.stats.kernels;
    if (HasFailure()) return;
  }
  EXPECT_EQ(programs, 60);
  EXPECT_GT(fused_away, 30);
}

constexpr const char* kKernels = R"(
kernel scale2(a: f32, x: f32[n, m], y: f32[n, m]) over i < n, j < m {
  y[i, j] = a * x[i, j]
}
kernel rowtotal(x: f32[n, m], s: f32[n]) over i < n {
  let t: f32 = 0
  for j < m {
    t += x[i, j]
  }
  s[i] = t
}
kernel colmax(x: f32[n, m]) -> max f32 over i < n, j < m {
  yield x[i, j]
}
kernel gather(idx: i64[n], x: f32[m], y: f32[n]) over i < n {
  y[i] = x[idx[i]]
}
)";

struct ProgramRun {
  std::vector<Tensor> arrays;
  double value = 0;
  LazyStats stats;
};

TEST_F(LazyGpu, RowsGraphsAndHostWritesMatchTheInterpreter) {
  const std::map<std::string, KernelRef> k = share_kernels(parse_module(kKernels, "lazy_gpu.stitch"));
  const Graph softmax = parse_module(R"(
graph softmax_rows(x: f32[N, 77]) {
  y = softmax(x, axis=-1)
  return y
}
)", "g.stitch").graphs[0];
  Tensor a(DType::f32, {300, 77});
  fill_random(a, 5);
  Tensor replacement(DType::f32, {300, 77});
  fill_random(replacement, 6);
  auto program = [&](LazyRuntime& rt) {
    Array x = rt.array(a);
    Array y = rt.zeros(DType::f32, {300, 77});
    Array s = rt.zeros(DType::f32, {300});
    rt.call(k.at("scale2"), {2.0, x, y});
    rt.call(k.at("rowtotal"), {y, s});  // joins the row loop
    Scalar m = rt.reduce(k.at("colmax"), {y});
    Array soft = rt.apply(softmax, {y}).at(0);  // a graph between kernels
    rt.call(k.at("scale2"), {m, soft, y});      // reads the reduction's value
    x.assign(replacement);                      // a host write between kernels
    rt.call(k.at("scale2"), {0.5, x, x});
    ProgramRun r;
    r.value = m.to_double();
    for (const Array& out : {x, y, s, soft}) r.arrays.push_back(out.to_host());
    r.stats = rt.stats();
    return r;
  };
  LazyRuntime reference_rt(options(LazyOptions::Mode::Reference, Backend::Cpu));
  const ProgramRun reference = program(reference_rt);
  for (LazyOptions::Mode mode : {LazyOptions::Mode::Fused, LazyOptions::Mode::Unfused, LazyOptions::Mode::Eager}) {
    SCOPED_TRACE(static_cast<int>(mode));
    LazyRuntime rt(options(mode, Backend::Cuda));
    const ProgramRun got = program(rt);
    EXPECT_EQ(got.value, reference.value);  // a max is exact
    const ErrorAllowance allowance{true, 77};  // row sums in another order; softmax's exp
    for (size_t i = 0; i < got.arrays.size(); ++i) {
      TensorComparison c = compare_with_interpreter(got.arrays[i], reference.arrays[i], allowance);
      EXPECT_TRUE(c.ok) << "array " << i << ": " << c.describe();
    }
  }
}

TEST_F(LazyGpu, AnIndexOutOfRangeOnTheDeviceFailsTheRead) {
  const std::map<std::string, KernelRef> k = share_kernels(parse_module(kKernels, "lazy_gpu.stitch"));
  LazyRuntime rt(options(LazyOptions::Mode::Fused, Backend::Cuda));
  Tensor idx(DType::i64, {100});
  for (int64_t i = 0; i < 100; ++i) idx.set_i64(i, i == 63 ? 10 : i % 10);
  Array indices = rt.array(idx);
  Array x = rt.array(Tensor(DType::f32, {10}));
  Array y = rt.zeros(DType::f32, {100});
  rt.call(k.at("gather"), {indices, x, y});
  try {
    (void)y.to_host();
    ADD_FAILURE() << "an index out of range on the device was not reported";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("outside axis 0 of extent 10"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace stitch
