// Compiled with the flags of the CPU JIT (bench/CMakeLists.txt), never -ffast-math.
#include "bench/reference/reference_kernels.h"

#include <cstdint>

#include "tensor/narrow_float.h"
// After narrow_float.h, as in every generated translation unit.
#include "codegen/cpu/stitch_cpu_runtime.h"

namespace stitch::bench {

void reference_layernorm(const float* x, const float* gamma, const float* beta, float* y, int64_t rows,
                         int64_t cols, float eps) {
  const float count = static_cast<float>(cols);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int64_t c = 0; c < cols; ++c) sum += xr[c];
    const float mean = sum / count;
    float squares = 0.0f;
#pragma omp simd reduction(+ : squares)
    for (int64_t c = 0; c < cols; ++c) {
      const float d = xr[c] - mean;
      squares += d * d;
    }
    const float rstd = 1.0f / std::sqrt(squares / count + eps);
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) yr[c] = (xr[c] - mean) * rstd * gamma[c] + beta[c];
  }
}

void reference_softmax(const float* x, float* y, int64_t rows, int64_t cols) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float max = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : max)
    for (int64_t c = 0; c < cols; ++c) max = xr[c] > max ? xr[c] : max;
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int64_t c = 0; c < cols; ++c) {
      const float e = std::exp(xr[c] - max);
      yr[c] = e;
      sum += e;
    }
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) yr[c] = yr[c] / sum;
  }
}

void reference_swish(const float* x, float* y, int64_t n) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * stitch_sigmoid<float>(x[i]);
}

void reference_gelu_tanh(const float* x, float* y, int64_t n) {
  const float k = 0.7978845608028654f;  // sqrt(2 / pi), rounded to f32 as the literal is
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float poly = v + (v * v) * v * 0.044715f;
    y[i] = (v * 0.5f) * (std::tanh(poly * k) + 1.0f);
  }
}

void reference_copy(const float* x, float* y, int64_t n) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) y[i] = x[i];
}

}  // namespace stitch::bench
