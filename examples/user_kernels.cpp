// User-defined kernels (docs/kernel-language.md): one written in the text
// form, one built from C++, both run by the reference interpreter, which also
// reports an index out of range as an error. Exits 1 on a wrong value.
#include <stitch/stitch.h>

#include <cstdio>
#include <memory>

namespace {

constexpr const char* kText = R"(
# y <- a*x + y, one index per element
kernel saxpy(a: f32, x: f32[n], y: f32[n]) over i < n {
  y[i] = a * x[i] + y[i]
}
)";

// dot(x, y) = sum of x[i] * y[i], built from C++.
stitch::UserKernel dot_kernel() {
  stitch::UserKernelBuilder b("dot");
  b.array("x", stitch::DType::f32, {stitch::Dim::symbol("n")});
  b.array("y", stitch::DType::f32, {stitch::Dim::symbol("n")});
  b.reduce(stitch::KernelReduction::Sum, stitch::DType::f32);
  stitch::KExpr i = b.index("i", b.symbol("n"));
  b.yield(b.load("x", {i}) * b.load("y", {i}));
  return b.finish();
}

}  // namespace

int main() {
  try {
    stitch::Module m = stitch::parse_module(kText, "saxpy.stitch");
    const stitch::UserKernel& saxpy = *m.find_kernel("saxpy");
    std::printf("%s", stitch::print_kernel(saxpy).c_str());
    stitch::UserKernel dot = dot_kernel();
    std::printf("%s", stitch::print_kernel(dot).c_str());

    stitch::Tensor x(stitch::DType::f32, {1000});
    stitch::Tensor y(stitch::DType::f32, {1000});
    for (int64_t i = 0; i < 1000; ++i) {
      x.set_f64(i, 1.0);
      y.set_f64(i, static_cast<double>(i));
    }
    stitch::interpret_kernel(saxpy, {2.0, x, y});  // y[i] = 2 + i, in place
    double got = stitch::interpret_kernel(dot, {x, y}).get_f64(0);
    double want = 2.0 * 1000 + 999.0 * 1000 / 2;
    std::printf("dot = %.1f (want %.1f)\n", got, want);
    if (got != want) return 1;

    stitch::Tensor short_y(stitch::DType::f32, {999});
    try {
      stitch::interpret_kernel(saxpy, {2.0, x, short_y});
      return 1;  // the extents disagree: this must not run
    } catch (const stitch::UserError& e) {
      std::printf("refused as expected: %s\n", e.what());
    }
  } catch (const stitch::UserError& e) {
    std::fprintf(stderr, "%s\n", e.formatted().c_str());
    return 2;
  }
  return 0;
}
