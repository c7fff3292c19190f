// The device copies of lazy arrays (docs/lazy.md, Back ends) with real
// kernels and no GPU: a back end that says its kernels take device memory,
// whose "device" is separate host memory filled with NaN bytes when made, and
// which runs the CPU's compiled kernels there. A missing upload shows as NaN,
// a missing download as an old value, so random programs (views, reads in the
// middle, reductions feeding calls, dropped temporaries), host writes and
// graph calls between kernels must still equal the reference interpreter.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <random>

#include "lazy/lazy_backend.h"
#include "lazy/trace.h"
#include "lazy_programs.h"
#include "stitch/lazy.h"
#include "stitch/text.h"
#include "tensor/compare.h"

namespace stitch {
namespace {

namespace fs = std::filesystem;

struct Counts {
  int64_t uploads = 0;
  int64_t downloads = 0;
  int64_t copies_made = 0;
};

class HostCopy final : public lazy::DeviceCopy {
 public:
  HostCopy(size_t bytes, Counts& counts) : bytes_(bytes, std::byte{0xff}), counts_(counts) { ++counts_.copies_made; }
  uint64_t address() const override { return reinterpret_cast<uint64_t>(bytes_.data()); }
  void upload(const std::byte* host, size_t bytes) override {
    ASSERT_EQ(bytes, bytes_.size());
    std::memcpy(bytes_.data(), host, bytes);
    ++counts_.uploads;
  }
  void download(std::byte* host, size_t bytes) override {
    ASSERT_EQ(bytes, bytes_.size());
    std::memcpy(host, bytes_.data(), bytes);
    ++counts_.downloads;
  }

 private:
  std::vector<std::byte> bytes_;
  Counts& counts_;
};

// The CPU back end, except that kernels run on the copies it allocates.
class MirrorBackend final : public lazy::LazyBackend {
 public:
  MirrorBackend(const std::string& cache_dir, Counts& counts) : cpu_(lazy::make_cpu_backend(cache_dir)), counts_(counts) {}
  Backend kind() const override { return Backend::Cpu; }
  bool on_device() const override { return true; }
  std::unique_ptr<lazy::DeviceCopy> allocate(size_t bytes) override { return std::make_unique<HostCopy>(bytes, counts_); }
  std::shared_ptr<const lazy::BackendKernel> compile(const UserKernel& kernel, const kir::UserKernelShape& shape) override {
    return cpu_->compile(kernel, shape);
  }
  std::unique_ptr<lazy::BackendGraph> compile_graph(const Graph& canonical) override { return cpu_->compile_graph(canonical); }
  TargetModel target() const override { return cpu_->target(); }
  void synchronize() override {}

 private:
  std::unique_ptr<lazy::LazyBackend> cpu_;
  Counts& counts_;
};

class DeviceMirror : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() / ("stitch-lazy-mirror-" + std::to_string(::getpid())));
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }
  static LazyOptions options(LazyOptions::Mode mode) {
    LazyOptions o;
    o.mode = mode;
    o.cache_dir = (*dir_ / "cache").string();
    return o;
  }
  std::unique_ptr<LazyRuntime> mirrored(LazyOptions::Mode mode) {
    return lazy::RuntimeFactory::make(options(mode), std::make_unique<MirrorBackend>(options(mode).cache_dir, counts_));
  }
  static fs::path* dir_;
  Counts counts_;
};

fs::path* DeviceMirror::dir_ = nullptr;

TEST_F(DeviceMirror, RandomProgramsMatchTheInterpreter) {
  const std::map<std::string, KernelRef> pool = share_kernels(parse_module(lazy_programs::kPool, "pool.stitch"));
  std::mt19937_64 rng(777);
  int programs = 0;
  for (int attempt = 0; programs < 40 && attempt < 800; ++attempt) {
    lazy_programs::Program p = lazy_programs::random_program(rng);
    const uint64_t seed = 300 + static_cast<uint64_t>(attempt);
    lazy_programs::Outcome reference;
    try {
      reference = lazy_programs::run(p, options(LazyOptions::Mode::Reference), seed, pool);
    } catch (const UserError&) {
      continue;  // a call races with itself: not a valid program
    }
    ++programs;
    SCOPED_TRACE(lazy_programs::describe(p));
    for (LazyOptions::Mode mode : {LazyOptions::Mode::Fused, LazyOptions::Mode::Unfused, LazyOptions::Mode::Eager,
                                   LazyOptions::Mode::FusedReference}) {
      std::unique_ptr<LazyRuntime> rt = mirrored(mode);
      lazy_programs::expect_same(lazy_programs::run_on(p, *rt, seed, pool), reference, "mirrored");
    }
    if (HasFailure()) return;
  }
  EXPECT_EQ(programs, 40);
  EXPECT_GT(counts_.uploads, 0);
  EXPECT_GT(counts_.downloads, 0);
}

TEST_F(DeviceMirror, HostWritesAndGraphCallsBetweenKernels) {
  const std::map<std::string, KernelRef> k = share_kernels(parse_module(lazy_programs::kScaleAdd, "mirror.stitch"));
  const Graph negate = parse_module(R"(
graph negate(x: f32[N]) {
  y = neg(x)
  return y
}
)", "g.stitch").graphs[0];
  Tensor a(DType::f32, {500});
  fill_random(a, 1);
  Tensor b(DType::f32, {200});
  fill_random(b, 2);
  auto program = [&](LazyRuntime& rt) {
    Array x = rt.array(a);
    Array y = rt.zeros(DType::f32, {500});
    rt.call(k.at("scale"), {2.0, x, y});            // y = 2a, on the device
    Array n = rt.apply(negate, {y}).at(0);           // on the host: y comes down, n is written there
    rt.call(k.at("add"), {n, x, y});                 // n goes up: y = -2a + a
    x.slice(100, 300).assign(b);                     // a host write to part of x, which the device holds too
    rt.call(k.at("add"), {x, y, n});                 // x goes up whole: n = x + y
    std::vector<Tensor> out;
    for (const Array& v : {x, y, n}) out.push_back(v.to_host());
    return out;
  };
  LazyRuntime reference_rt(options(LazyOptions::Mode::Reference));
  const std::vector<Tensor> want = program(reference_rt);
  for (LazyOptions::Mode mode : {LazyOptions::Mode::Fused, LazyOptions::Mode::Unfused}) {
    std::unique_ptr<LazyRuntime> rt = mirrored(mode);
    const std::vector<Tensor> got = program(*rt);
    for (size_t i = 0; i < want.size(); ++i) {
      TensorComparison c = compare_with_interpreter(got[i], want[i], ErrorAllowance{});
      EXPECT_TRUE(c.ok) << "array " << i << ": " << c.describe();
    }
  }
}

TEST_F(DeviceMirror, AnArrayGoesUpOnceAndComesDownOnlyAfterAKernelWroteIt) {
  const std::map<std::string, KernelRef> k = share_kernels(parse_module(lazy_programs::kScaleAdd, "mirror.stitch"));
  std::unique_ptr<LazyRuntime> rt = mirrored(LazyOptions::Mode::Fused);
  Tensor a(DType::f32, {1000});
  fill_random(a, 3);
  Array x = rt->array(a);
  Array y = rt->zeros(DType::f32, {1000});
  for (int i = 0; i < 5; ++i) {
    rt->call(k.at("scale"), {0.5, x, y});
    rt->call(k.at("add"), {x, y, y});
    rt->flush();
  }
  EXPECT_EQ(counts_.uploads, 1);  // x; y's fill ran on the device
  EXPECT_EQ(counts_.copies_made, 2);
  EXPECT_EQ(counts_.downloads, 0);
  (void)x.to_host();  // only read by kernels: the host copy is current
  EXPECT_EQ(counts_.downloads, 0);
  Tensor got = y.to_host();
  EXPECT_EQ(counts_.downloads, 1);
  (void)y.to_host();
  EXPECT_EQ(counts_.downloads, 1);
  for (int64_t i = 0; i < 1000; ++i) {
    const float v = static_cast<float>(a.get_f64(i));
    const float half = 0.5f * v;
    ASSERT_EQ(got.get_f64(i), static_cast<double>(v + half)) << i;
  }
}

}  // namespace
}  // namespace stitch
