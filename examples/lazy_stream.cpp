// BabelStream on lazy arrays (docs/lazy.md): copy, mul, add, triad and dot per
// iteration are recorded, and reading the dot's value runs them as one fused
// kernel. The same program unfused (one kernel per call) must give the same
// dot, and the fused one must launch fewer kernels. Exits 1 otherwise.
#include <stitch/stitch.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <string>

namespace {

constexpr const char* kKernels = R"(
kernel copy(a: f64[n], c: f64[n]) over i < n {
  c[i] = a[i]
}
kernel mul(s: f64, b: f64[n], c: f64[n]) over i < n {
  b[i] = s * c[i]
}
kernel add(a: f64[n], b: f64[n], c: f64[n]) over i < n {
  c[i] = a[i] + b[i]
}
kernel triad(s: f64, a: f64[n], b: f64[n], c: f64[n]) over i < n {
  a[i] = b[i] + s * c[i]
}
kernel dot(a: f64[n], b: f64[n]) -> sum f64 over i < n {
  yield a[i] * b[i]
}
)";

struct Result {
  double dot = 0;
  double seconds = 0;
  stitch::LazyStats stats;
};

Result stream(stitch::LazyOptions::Mode mode, const std::map<std::string, stitch::KernelRef>& k) {
  stitch::LazyOptions options;
  options.mode = mode;
  stitch::LazyRuntime rt(options);
  const int64_t n = int64_t{1} << 20;
  stitch::Tensor init(stitch::DType::f64, {n});
  for (int64_t i = 0; i < n; ++i) init.set_f64(i, 0.1);
  stitch::Array a = rt.array(init);
  for (int64_t i = 0; i < n; ++i) init.set_f64(i, 0.2);
  stitch::Array b = rt.array(init);
  stitch::Array c = rt.zeros(stitch::DType::f64, {n});
  Result r;
  auto start = std::chrono::steady_clock::now();
  for (int it = 0; it < 10; ++it) {
    rt.call(k.at("copy"), {a, c});
    rt.call(k.at("mul"), {0.4, b, c});
    rt.call(k.at("add"), {a, b, c});
    rt.call(k.at("triad"), {0.4, a, b, c});
    r.dot = rt.reduce(k.at("dot"), {a, b}).to_double();  // runs this iteration's calls
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.stats = rt.stats();
  return r;
}

}  // namespace

int main() {
  try {
    std::map<std::string, stitch::KernelRef> k = stitch::share_kernels(stitch::parse_module(kKernels, "stream.stitch"));
    Result unfused = stream(stitch::LazyOptions::Mode::Unfused, k);
    Result fused = stream(stitch::LazyOptions::Mode::Fused, k);
    std::printf("unfused: %lld calls, %lld kernels, dot %.6e, %.1f ms (first compiles included)\n",
                static_cast<long long>(unfused.stats.calls), static_cast<long long>(unfused.stats.kernels), unfused.dot,
                unfused.seconds * 1e3);
    std::printf("fused:   %lld calls, %lld kernels, dot %.6e, %.1f ms (first compiles included)\n",
                static_cast<long long>(fused.stats.calls), static_cast<long long>(fused.stats.kernels), fused.dot,
                fused.seconds * 1e3);
    if (std::fabs(fused.dot - unfused.dot) > 1e-9 * std::fabs(unfused.dot)) return 1;
    if (fused.stats.kernels >= unfused.stats.kernels) return 1;
  } catch (const stitch::UserError& e) {
    std::fprintf(stderr, "%s\n", e.formatted().c_str());
    return 2;
  }
  return 0;
}
