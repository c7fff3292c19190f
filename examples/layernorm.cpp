// LayerNorm built with GraphBuilder, compiled by the `stitch` planner for the
// CPU (one fused kernel), run, and checked against the reference interpreter.
// Exits 1 when the largest difference exceeds kTolerance.
#include <stitch/stitch.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

constexpr int64_t kRows = 512;
constexpr int64_t kCols = 768;
// The kernels sum 768 f32 terms where the interpreter sums in f64; the worst
// case docs/semantics.md allows for such sums of inputs in [-2, 2), carried
// through the normalisation, is about 6.5e-4.
constexpr double kTolerance = 1e-3;

// y = (x - mean) / sqrt(var + eps) * gamma + beta over each row; `mean` and
// `var` keep their axis, so the binary ops broadcast them along the row.
stitch::Graph layer_norm_graph() {
  using stitch::DType;
  using stitch::OpKind;
  stitch::GraphBuilder b("layernorm");
  stitch::ValueId x = b.param("x", DType::f32, {kRows, kCols});
  stitch::ValueId gamma = b.param("gamma", DType::f32, {kCols});
  stitch::ValueId beta = b.param("beta", DType::f32, {kCols});
  stitch::ValueId mean = b.reduce(OpKind::ReduceMean, x, {1}, /*keepdims=*/true, "mean");
  stitch::ValueId centered = b.sub(x, mean, "centered");
  stitch::ValueId var = b.reduce(OpKind::ReduceMean, b.mul(centered, centered), {1}, true, "var");
  stitch::ValueId rstd = b.unary(OpKind::Rsqrt, b.add(var, 1e-5), "rstd");
  stitch::ValueId y = b.add(b.mul(b.mul(centered, rstd), gamma), beta, "y");
  b.output(y);
  return b.finish();
}

double max_abs_difference(const stitch::Tensor& a, const stitch::Tensor& b) {
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double d = std::abs(a.get_f64(i) - b.get_f64(i));
    if (!(d <= worst)) worst = d;  // a NaN sticks
  }
  return worst;
}

}  // namespace

int main() {
  try {
    const stitch::Graph graph = layer_norm_graph();

    stitch::CompileOptions options;
    options.backend = stitch::Backend::Cpu;
    options.planner = "stitch";
    stitch::Executable exe = stitch::Executable::compile(graph, options);

    // Inputs uniform in [-2, 2), the same on every machine for a seed.
    std::vector<stitch::Tensor> inputs = {stitch::Tensor(stitch::DType::f32, {kRows, kCols}),
                                          stitch::Tensor(stitch::DType::f32, {kCols}),
                                          stitch::Tensor(stitch::DType::f32, {kCols})};
    for (size_t i = 0; i < inputs.size(); ++i) stitch::fill_random(inputs[i], 42 + i);

    const std::vector<stitch::Tensor> outputs = exe.run(inputs);
    const std::vector<stitch::Tensor> expected = stitch::interpret(graph, inputs);
    const double error = max_abs_difference(outputs[0], expected[0]);

    std::printf("stitch %s, planner %s on %s: %d kernel(s)\n", stitch::version().c_str(), exe.planner().c_str(),
                stitch::backend_name(exe.backend()).c_str(), exe.kernel_count());
    std::printf("%s", exe.plan_text().c_str());
    std::printf("max abs error vs the interpreter: %.3g (tolerance %.0e)\n", error, kTolerance);
    return error <= kTolerance ? 0 : 1;
  } catch (const stitch::UserError& e) {
    std::fprintf(stderr, "%s\n", e.formatted().c_str());
    return 2;
  }
}
