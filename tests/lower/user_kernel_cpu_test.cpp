// User kernels lowered to the Kernel IR and run on the CPU, against the
// reference interpreter: every construct of the language, 1-D to 3-D ranges,
// reductions of each kind, bodies cut into phases, and calls whose arrays alias.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>

#include "interp/kernel_binding.h"
#include "kir/printer.h"
#include "kir/verifier.h"
#include "lower/lower_user_kernel.h"
#include "pipeline/user_kernel_route.h"
#include "runtime/cpu/user_kernel_call.h"
#include "tensor/compare.h"
#include "stitch/text.h"

namespace stitch {
namespace {

constexpr const char* kCorpus = R"(
kernel saxpy(a: f32, x: f32[n], y: f32[n]) over i < n {
  y[i] = a * x[i] + y[i]
}
kernel dot(x: f32[n], y: f32[n]) -> sum f32 over i < n {
  yield x[i] * y[i]
}
kernel maxabs(x: f64[n, m]) -> max f64 over i < n, j < m {
  yield abs(x[i, j])
}
kernel transpose(a: f32[n, m], b: f32[m, n]) over i < n, j < m {
  b[j, i] = a[i, j]
}
kernel jacobi(a: f64[n], b: f64[n]) over i < n - 2 {
  b[i + 1] = 0.33333 * (a[i] + a[i+1] + a[i + 2])
}
kernel rowsum(a: f32[n, m], out: f32[n]) over i < n {
  let s: f32 = 0
  for j < m {
    s += a[i, j]
  }
  out[i] = s
}
kernel clampint(x: i32[n], lo: i32) over i < n {
  if x[i] < lo {
    x[i] = lo
  } else if x[i] > 5 {
    x[i] = 5 - x[i] % 3
  }
}
kernel count(x: f32[n]) -> sum i64 over i < n {
  if x[i] > 0.5 {
    yield 1
  }
}
kernel narrow(x: f16[n], y: bf16[n], z: f32[n], w: f16[n]) over i < n {
  z[i] = f32(x[i]) * f32(y[i]) + exp(f32(x[i]))
  w[i] = x[i] * x[i] - f16(1.5)
}
kernel syrk(alpha: f64, beta: f64, C: f64[N, N], A: f64[N, M]) over i < N {
  for j < i + 1 {
    C[i, j] *= beta
  }
  for k < M {
    for j < i + 1 {
      C[i, j] += alpha * A[i, k] * A[j, k]
    }
  }
}
kernel minval(x: i8[n]) -> min i8 over i < n {
  yield x[i]
}
kernel cube(a: f32[p, q, r], b: f32[p, q, r]) over i < p, j < q, k < r {
  b[i, j, k] = a[i, j, k] * f32(i + j * k) + select(a[i, j, k] > 0.0, 1.0, -1.0)
}
kernel flags(x: f32[n], f: bool[n]) over i < n {
  f[i] = x[i] > 0.0 && !(x[i] > 1.0) || isnan(x[i])
}
kernel halfsum(x: f16[n]) -> sum f16 over i < n {
  yield x[i]
}
# Three serial loops at the top level: three phases, with locals that live
# across them (one element per lane), a loop inside an if, a name two loop
# bodies reuse, and yields in two phases.
kernel phases(a: f64[n, m], y: f64[m], out: f64[n, m]) -> sum f64 over i < n, j < m {
  let s: f64 = 0
  let t: f64 = a[i, j]
  for k < m {
    let p = a[i, k]
    s += p * y[k]
  }
  yield s
  let u: f64 = 1
  if j > 1 {
    for k < n {
      u = u + a[k, j] * 0.5
    }
  }
  let s2 = s
  for k < 3 {
    let p: f64 = 2.0
    s2 += p * u
  }
  out[i, j] = s2 + t + u
  yield t
}
# Serial loops whose accesses run along the lanes (column walks) run outside
# the vector loop: with an if, locals before and after, a 2-D range whose
# rows pick a class, a yield inside, and a loop that must stay inside (its
# extent differs per lane).
kernel vecmat(y: f64[n], A: f64[n, m], z: f64[m]) over i < m {
  let s: f64 = 0
  for j < n {
    s += y[j] * A[j, i]
  }
  z[i] = s
}
kernel classmean(labels: i64[s], x: f64[s, f], out: f64[c, f]) over k < c, j < f {
  let total: f64 = 0
  let count: f64 = 0
  for r < s {
    if labels[r] == k {
      total += x[r, j]
      count += 1.0
    }
  }
  out[k, j] = total / (count + 1.0)
}
kernel colyield(x: f32[n, m], w: f32[m]) -> sum f32 over j < m {
  let scale = w[j]
  for i < n {
    let v = x[i, j] * scale
    yield v
  }
  for t < j + 1 {
    yield w[t] * 0.25
  }
}
)";

struct Call {
  std::string kernel;
  std::vector<std::vector<int64_t>> shapes;  // one per array parameter, in order
  std::vector<double> scalars;               // one per scalar parameter, in order
};

std::vector<Call> calls() {
  return {
      {"saxpy", {{1000}, {1000}}, {1.5}},
      {"saxpy", {{3}, {3}}, {-2.0}},
      {"dot", {{10007}, {10007}}, {}},
      {"dot", {{0}, {0}}, {}},
      {"maxabs", {{37, 129}}, {}},
      {"transpose", {{33, 65}, {65, 33}}, {}},
      {"jacobi", {{2050}, {2050}}, {}},
      {"rowsum", {{50, 77}, {50}}, {}},
      {"clampint", {{999}}, {-3}},
      {"count", {{4099}}, {}},
      {"narrow", {{515}, {515}, {515}, {515}}, {}},
      {"syrk", {{40, 40}, {40, 9}}, {0.5, 1.5}},
      {"minval", {{3001}}, {}},
      {"minval", {{0}}, {}},
      {"cube", {{3, 5, 7}, {3, 5, 7}}, {}},
      {"cube", {{2, 1, 2000}, {2, 1, 2000}}, {}},
      {"flags", {{1031}, {1031}}, {}},
      {"halfsum", {{64}}, {}},
      {"phases", {{37, 21}, {21}, {37, 21}}, {}},
      {"phases", {{3, 1100}, {1100}, {3, 1100}}, {}},
      {"vecmat", {{77}, {77, 301}, {301}}, {}},
      {"classmean", {{999}, {999, 19}, {3, 19}}, {}},
      {"colyield", {{45, 130}, {130}}, {}},
  };
}

// The tolerance of docs/testing.md: transcendental math may differ by a few
// ulps, and a float reduction of n terms is summed in another order.
ErrorAllowance allowance(const UserKernel& k, int64_t index_count) {
  ErrorAllowance a;
  a.transcendental = print_kernel(k).find("exp(") != std::string::npos;
  if (k.is_reduction() && is_float(k.result_dtype)) a.reduction_length = index_count;
  return a;
}

class UserKernelCpu : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    Module m = parse_module(kCorpus, "corpus.stitch");
    module_ = new Module(std::move(m));
    dir_ = std::filesystem::temp_directory_path() / ("stitch-user-kernel-" + std::to_string(::getpid()));
    cache_ = new runtime::cpu::KernelCache(dir_);
  }
  static void TearDownTestSuite() {
    delete cache_;
    delete module_;
    std::filesystem::remove_all(dir_);
  }

  static std::vector<Tensor> arguments(const UserKernel& k, const Call& c, uint64_t seed) {
    std::vector<Tensor> arrays;
    size_t a = 0;
    for (const KernelParam& p : k.params) {
      if (!p.is_array) continue;
      arrays.emplace_back(p.dtype, c.shapes.at(a++));
      fill_random(arrays.back(), seed++);
    }
    return arrays;
  }

  static std::vector<KernelArg> bind(const UserKernel& k, const Call& c, std::vector<Tensor>& arrays) {
    std::vector<KernelArg> args;
    size_t a = 0;
    size_t s = 0;
    for (const KernelParam& p : k.params) {
      if (p.is_array) {
        args.emplace_back(arrays.at(a++));
      } else if (is_float(p.dtype)) {
        args.emplace_back(c.scalars.at(s++));
      } else {
        args.emplace_back(static_cast<int64_t>(c.scalars.at(s++)));
      }
    }
    return args;
  }

  static Module* module_;
  static std::filesystem::path dir_;
  static runtime::cpu::KernelCache* cache_;
};

Module* UserKernelCpu::module_ = nullptr;
std::filesystem::path UserKernelCpu::dir_;
runtime::cpu::KernelCache* UserKernelCpu::cache_ = nullptr;

TEST_F(UserKernelCpu, EveryCallMatchesTheInterpreter) {
  const std::vector<Call> all = calls();
  // One translation unit for the whole suite (one compiler run).
  std::vector<UserKernel> kernels;
  std::vector<kir::UserKernelShape> shapes;
  for (const Call& c : all) {
    const UserKernel& k = *module_->find_kernel(c.kernel);
    std::vector<Tensor> arrays = arguments(k, c, 1);
    std::vector<KernelArg> args = bind(k, c, arrays);
    kir::UserKernelShape shape = lower::user_kernel_shape(interp::bind_kernel(k, args).extents);
    shape.restrict_array = runtime::cpu::restrict_flags(k, args);
    // Each call twice: as lowered, and with every index checked at run time
    // (which must not change an in-range call's result).
    for (bool checked : {false, true}) {
      shape.check_indices = checked;
      kernels.push_back(k);
      shapes.push_back(shape);
    }
  }
  auto compiled = pipeline::compile_user_kernels_cpu(kernels, shapes, *cache_);
  for (size_t i = 0; i < kernels.size(); ++i) {
    const Call& c = all[i / 2];
    const UserKernel& k = kernels[i];
    SCOPED_TRACE(c.kernel + " " + std::to_string(i / 2) + (shapes[i].check_indices ? " checked" : ""));
    EXPECT_TRUE(kir::verify_kernel(compiled[i]->kir()).empty());
    std::vector<Tensor> want_arrays = arguments(k, c, 100 + i / 2);
    std::vector<Tensor> got_arrays = want_arrays;
    std::vector<KernelArg> want_args = bind(k, c, want_arrays);
    std::vector<KernelArg> got_args = bind(k, c, got_arrays);
    Tensor want = interpret_kernel(k, want_args);
    Tensor got = compiled[i]->run(k, got_args);
    const ErrorAllowance a = allowance(k, interp::bind_kernel(k, want_args).index_count);
    if (k.is_reduction()) {
      TensorComparison r = compare_with_interpreter(got, want, a);
      EXPECT_TRUE(r.ok) << r.describe();
    }
    for (size_t j = 0; j < want_arrays.size(); ++j) {
      TensorComparison r = compare_with_interpreter(got_arrays[j], want_arrays[j], a);
      EXPECT_TRUE(r.ok) << "array " << j << ": " << r.describe();
    }
  }
}

TEST_F(UserKernelCpu, AnIndexOutOfRangeIsAUserErrorAtItsAccessNotACrash) {
  Module m = parse_module(R"(
kernel shift(x: f32[n], y: f32[n]) over i < n {
  y[i] = x[i + 100000000]
}
kernel scatter(idx: i64[n], y: f32[m]) over i < n {
  y[idx[i]] = 1.0
}
kernel total(idx: i64[n], x: f64[m]) -> sum f64 over i < n {
  yield x[idx[i]]
}
)", "oob.stitch");
  Tensor x(DType::f32, {1000});
  Tensor y(DType::f32, {1000});
  try {
    pipeline::run_user_kernel_cpu(*m.find_kernel("shift"), {x, y}, *cache_);
    ADD_FAILURE() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(e.formatted().find("oob.stitch:3:10"), std::string::npos) << e.formatted();
    EXPECT_NE(e.formatted().find("reads x"), std::string::npos) << e.formatted();
    EXPECT_NE(e.formatted().find("outside axis 0 of extent 1000"), std::string::npos) << e.formatted();
  }
  // Data-dependent indices: in range runs (and matches the interpreter), out of range is an error.
  Tensor idx(DType::i64, {64});
  for (int64_t i = 0; i < 64; ++i) idx.set_i64(i, (i * 7) % 10);
  Tensor out(DType::f32, {10});
  pipeline::run_user_kernel_cpu(*m.find_kernel("scatter"), {idx, out}, *cache_);
  for (int64_t i = 0; i < 10; ++i) EXPECT_EQ(out.get_f64(i), 1.0);
  Tensor values(DType::f64, {10});
  fill_random(values, 3);
  Tensor want = interpret_kernel(*m.find_kernel("total"), {idx, values});
  Tensor got = pipeline::run_user_kernel_cpu(*m.find_kernel("total"), {idx, values}, *cache_);
  EXPECT_NEAR(got.get_f64(0), want.get_f64(0), 1e-12);
  idx.set_i64(17, 10);
  EXPECT_THROW(pipeline::run_user_kernel_cpu(*m.find_kernel("scatter"), {idx, out}, *cache_), UserError);
  idx.set_i64(17, -1);
  EXPECT_THROW(pipeline::run_user_kernel_cpu(*m.find_kernel("total"), {idx, values}, *cache_), UserError);
}

TEST_F(UserKernelCpu, AliasedArraysAreNotRestrictAndStillMatch) {
  const UserKernel& k = *module_->find_kernel("saxpy");
  Tensor x(DType::f32, {4096});
  fill_random(x, 5);
  Tensor y = x;
  std::vector<KernelArg> aliased = {KernelArg(2.0), KernelArg(x), KernelArg(x)};
  EXPECT_EQ(runtime::cpu::restrict_flags(k, aliased), (std::vector<bool>{false, false, false}));
  Tensor z(DType::f32, {4096});
  std::vector<KernelArg> distinct = {KernelArg(2.0), KernelArg(z), KernelArg(y)};
  EXPECT_EQ(runtime::cpu::restrict_flags(k, distinct), (std::vector<bool>{false, true, true}));
  Tensor want = x;
  interpret_kernel(k, {2.0, want, want});
  pipeline::run_user_kernel_cpu(k, aliased, *cache_);
  TensorComparison r = compare_with_interpreter(x, want, ErrorAllowance{});
  EXPECT_TRUE(r.ok) << r.describe();
}

TEST_F(UserKernelCpu, ASecondCallOfTheSameShapeReusesTheCompiledKernel) {
  const UserKernel& k = *module_->find_kernel("dot");
  Tensor x(DType::f32, {100});
  Tensor y(DType::f32, {100});
  pipeline::run_user_kernel_cpu(k, {x, y}, *cache_);
  runtime::cpu::CacheStats before = cache_->stats();
  Tensor x2(DType::f32, {120});
  Tensor y2(DType::f32, {120});
  pipeline::run_user_kernel_cpu(k, {x2, y2}, *cache_);
  runtime::cpu::CacheStats after = cache_->stats();
  EXPECT_EQ(after.misses, before.misses);
  EXPECT_EQ(after.hits, before.hits);  // found in memory, not even on disk
}

// A serial loop whose accesses run along the lanes (a column per lane) runs
// outside the vector loop; one whose accesses run across them (a row per
// lane) stays inside, where it reads consecutive elements.
TEST_F(UserKernelCpu, AColumnWalkRunsItsLoopOutsideTheLanesAndARowWalkInside) {
  kir::UserKernelShape shape;
  shape.lanes = 64;
  auto line_after = [](const std::string& text, const std::string& marker) {
    const size_t at = text.find(marker);
    if (at == std::string::npos) return std::string("(no " + marker + ")");
    const size_t begin = text.find('\n', at) + 1;
    return text.substr(begin, text.find('\n', begin) - begin);
  };
  const std::string column = kir::print_kernel(lower::lower_user_kernel_cpu(*module_->find_kernel("vecmat"), shape, "k").kernel);
  EXPECT_NE(line_after(column, "for u_j in serial(").find("in vector("), std::string::npos) << column;
  const std::string row = kir::print_kernel(lower::lower_user_kernel_cpu(*module_->find_kernel("rowsum"), shape, "k").kernel);
  EXPECT_EQ(line_after(row, "for u_j in serial(").find("in vector("), std::string::npos) << row;
  EXPECT_NE(row.find("for lane in vector("), std::string::npos) << row;
}

}  // namespace
}  // namespace stitch
