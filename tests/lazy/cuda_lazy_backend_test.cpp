// Lazy arrays on Backend::Cuda (docs/lazy.md, Back ends) on the fake CUDA
// driver, whose device memory is host memory and which runs no kernel: what
// is launched (one launch per kernel the trace counts, fused as on the CPU),
// with which device addresses (a storage keeps one device copy, a view points
// into it), which copies move (an array goes up once and comes down only when
// the host reads what a kernel wrote), and that every kernel of random
// programs compiles with NVRTC. Results on a real GPU: tests/gpu/lazy_gpu_test.cpp.
#ifdef STITCH_FAKE_CUDA_DRIVER

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <random>

#include "fake_cuda_driver.h"
#include "lazy/cuda_lazy_backend.h"
#include "lazy/trace.h"
#include "lazy_programs.h"
#include "runtime/cuda/context.h"
#include "stitch/lazy.h"
#include "stitch/text.h"

namespace stitch {
namespace {

namespace fs = std::filesystem;

class LazyCudaFake : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() / ("stitch-lazy-cuda-fake-" + std::to_string(::getpid())));
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }
  void SetUp() override {
    std::string why;
    context_ = runtime::cuda::CudaContext::open(&why, 0, STITCH_FAKE_CUDA_DRIVER);
    ASSERT_TRUE(context_) << why;
    ASSERT_TRUE(fake_.open(STITCH_FAKE_CUDA_DRIVER, &why)) << why;
    kernels_ = share_kernels(parse_module(lazy_programs::kScaleAdd, "lazy_cuda.stitch"));
  }
  // Later launches record no argument bytes (another kernel's list differs).
  void TearDown() override { fake_.stitch_fake_cuda_record_param_sizes(nullptr, 0); }

  std::unique_ptr<LazyRuntime> runtime(LazyOptions::Mode mode = LazyOptions::Mode::Fused) {
    LazyOptions o;
    o.mode = mode;
    o.cache_dir = (*dir_ / "cache").string();
    return lazy::RuntimeFactory::make(o, lazy::make_cuda_backend(context_, o.cache_dir));
  }
  int64_t uploads() { return fake_.stitch_fake_cuda_host_to_device_copies(); }
  int64_t downloads() { return fake_.stitch_fake_cuda_device_to_host_copies(); }
  int launches() { return fake_.stitch_fake_cuda_launch_count(); }
  // Argument `param` of launch `launch`, 8 bytes (a device address or an i64).
  uint64_t word(int launch, int param) {
    uint64_t w = 0;
    EXPECT_EQ(fake_.stitch_fake_cuda_get_launch_param(launch, param, &w, 8), 1) << "launch " << launch << " param " << param;
    return w;
  }
  static Tensor ramp(int64_t n, float step) {
    Tensor t(DType::f32, {n});
    for (int64_t i = 0; i < n; ++i) t.set_f64(i, static_cast<double>(i) * step);
    return t;
  }

  static fs::path* dir_;
  std::shared_ptr<runtime::cuda::CudaContext> context_;
  fake_cuda::Inspection fake_;
  std::map<std::string, KernelRef> kernels_;
};

fs::path* LazyCudaFake::dir_ = nullptr;

TEST_F(LazyCudaFake, ArraysMoveOnlyWhenTheOtherSideIsStale) {
  std::unique_ptr<LazyRuntime> rt = runtime();
  const size_t sizes[] = {8, 8, 4, 8};  // scale's launch: x, y, a (float), n
  fake_.stitch_fake_cuda_record_param_sizes(sizes, 4);
  const Tensor xs = ramp(1000, 1.0f);
  Array x = rt->array(xs);
  Array y = rt->array(Tensor(DType::f32, {1000}));
  const int64_t up = uploads();
  const int64_t down = downloads();
  const int first = launches();
  rt->call(kernels_.at("scale"), {2.0, x, y});
  EXPECT_EQ(launches(), first);  // recorded, not run
  rt->flush();
  ASSERT_EQ(launches(), first + 1);
  EXPECT_EQ(uploads(), up + 2);  // x and y, each once
  EXPECT_EQ(downloads(), down);
  const uint64_t x_device = word(first, 0);
  const uint64_t y_device = word(first, 1);
  EXPECT_NE(x_device, y_device);
  EXPECT_EQ(word(first, 3), 1000u);

  // What the kernel wrote to y is what the host reads: the fake ran nothing,
  // so the test writes y's device copy (host memory on the fake) itself.
  const Tensor written = ramp(1000, 0.5f);
  std::memcpy(reinterpret_cast<void*>(y_device), written.raw(), written.nbytes());
  Tensor got = y.to_host();
  EXPECT_EQ(downloads(), down + 1);
  EXPECT_EQ(std::memcmp(got.raw(), written.raw(), written.nbytes()), 0);
  // x was only read on the device: its host copy is current.
  got = x.to_host();
  EXPECT_EQ(downloads(), down + 1);
  EXPECT_EQ(std::memcmp(got.raw(), xs.raw(), xs.nbytes()), 0);
  // Reading y again moves nothing.
  (void)y.to_host();
  EXPECT_EQ(downloads(), down + 1);

  // Both current on the device: a second call uploads nothing, and each
  // storage keeps its device copy.
  rt->call(kernels_.at("scale"), {3.0, y, x});
  rt->flush();
  ASSERT_EQ(launches(), first + 2);
  EXPECT_EQ(uploads(), up + 2);
  EXPECT_EQ(word(first + 1, 0), y_device);
  EXPECT_EQ(word(first + 1, 1), x_device);

  // A host write to x, which the device wrote last: x comes down first (a
  // region of it keeps the device's value), then goes up before the next kernel.
  const Tensor ones = ramp(1000, 0.0f);
  x.assign(ones);
  EXPECT_EQ(downloads(), down + 2);
  rt->call(kernels_.at("scale"), {2.0, x, y});
  rt->flush();
  EXPECT_EQ(uploads(), up + 3);
  EXPECT_EQ(std::memcmp(reinterpret_cast<const void*>(x_device), ones.raw(), ones.nbytes()), 0);

  // A view is an address inside its storage's device copy.
  Array head = x.slice(10, 510);
  Array tail = y.slice(500, 1000);
  rt->call(kernels_.at("scale"), {2.0, head, tail});
  rt->flush();
  ASSERT_EQ(launches(), first + 4);
  EXPECT_EQ(word(first + 3, 0), x_device + 10 * sizeof(float));
  EXPECT_EQ(word(first + 3, 1), y_device + 500 * sizeof(float));
  EXPECT_EQ(word(first + 3, 3), 500u);
  EXPECT_EQ(rt->stats().kernels, 4);
}

TEST_F(LazyCudaFake, CallsFuseAsOnTheCpuAndTemporariesNeverReachTheDevice) {
  std::unique_ptr<LazyRuntime> rt = runtime();
  Array x = rt->array(ramp(4096, 1.0f));
  Array z = rt->array(ramp(4096, 2.0f));
  const int first = launches();
  const int64_t up = uploads();
  const int64_t allocated = fake_.stitch_fake_cuda_bytes_allocated();
  {
    Array t = rt->zeros(DType::f32, {4096});
    rt->call(kernels_.at("scale"), {2.0, x, t});
    rt->call(kernels_.at("add"), {t, x, z});
  }  // t dropped: a temporary
  rt->flush();
  EXPECT_EQ(launches(), first + 1);
  EXPECT_EQ(rt->stats().kernels, 1);
  EXPECT_EQ(rt->stats().arrays_in_registers, 1);
  EXPECT_EQ(uploads(), up + 2);  // x and z; t has no memory anywhere
  // The device holds x and z (the allocator rounds each up), not t.
  EXPECT_LT(fake_.stitch_fake_cuda_bytes_allocated() - allocated, 3 * 4096 * 4);
}

TEST_F(LazyCudaFake, EveryKernelOfRandomProgramsCompilesAndLaunchesOncePerCountedKernel) {
  const std::map<std::string, KernelRef> pool =
      share_kernels(parse_module(lazy_programs::kPool, "pool.stitch"));
  std::mt19937_64 rng(4242);
  int programs = 0;
  int64_t fused_away = 0;
  for (int attempt = 0; programs < 40 && attempt < 800; ++attempt) {
    lazy_programs::Program p = lazy_programs::random_program(rng);
    LazyOptions reference;
    reference.mode = LazyOptions::Mode::Reference;
    try {
      (void)lazy_programs::run(p, reference, 9 + static_cast<uint64_t>(attempt), pool);
    } catch (const UserError&) {
      continue;  // a call races with itself: not a valid program
    }
    ++programs;
    SCOPED_TRACE(lazy_programs::describe(p));
    for (LazyOptions::Mode mode : {LazyOptions::Mode::Fused, LazyOptions::Mode::Unfused}) {
      LazyOptions o;
      o.mode = mode;
      o.cache_dir = (*dir_ / "cache").string();
      o.backend = Backend::Cuda;
      const int before = launches();
      // The fake runs no kernel (values are not checked here), so a reduction's
      // value is whatever its partials' memory held; reads still download.
      lazy_programs::Outcome got;
      std::unique_ptr<LazyRuntime> rt = lazy::RuntimeFactory::make(o, lazy::make_cuda_backend(context_, o.cache_dir));
      ASSERT_NO_THROW(got = lazy_programs::run_on(p, *rt, 9 + static_cast<uint64_t>(attempt), pool));
      EXPECT_EQ(launches() - before, got.stats.kernels);
      if (mode == LazyOptions::Mode::Fused) fused_away += got.stats.calls - got.stats.kernels;
      if (mode == LazyOptions::Mode::Unfused) {
        EXPECT_EQ(got.stats.kernels, got.stats.calls);
      }
    }
  }
  EXPECT_EQ(programs, 40);
  EXPECT_GT(fused_away, 0);
}

TEST(LazyCuda, ARuntimeOnCudaWithoutAGpuSaysWhy) {
  std::string why;
  std::shared_ptr<runtime::cuda::CudaContext> gpu = runtime::cuda::CudaContext::shared(&why);
  LazyOptions o;
  o.backend = Backend::Cuda;
  if (gpu) {
    LazyRuntime rt(o);  // a GPU is there: the runtime opens on it
    EXPECT_EQ(rt.options().backend, Backend::Cuda);
  } else {
    try {
      LazyRuntime rt(o);
      ADD_FAILURE() << "a lazy runtime on CUDA opened without a GPU";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("no usable NVIDIA GPU"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace stitch

#endif  // STITCH_FAKE_CUDA_DRIVER
