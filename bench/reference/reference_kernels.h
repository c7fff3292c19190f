// Hand-written fused C++ kernels for four bench workloads: the practical
// performance limit of the CPU back end on this machine (docs/cpu-backend.md,
// Benchmarks). OpenMP over rows, vectorised inner loops, and the same vector
// math as generated code (the declarations of stitch_cpu_runtime.h), compiled
// with the JIT's flags, so a comparison measures schedules, not libraries.
#pragma once

#include <cstdint>

namespace stitch::bench {

// y = (x - mean) / sqrt(var + eps) * gamma + beta per row (biased variance),
// the rounding order of the layer_norm composite.
void reference_layernorm(const float* x, const float* gamma, const float* beta, float* y, int64_t rows,
                         int64_t cols, float eps);

// y = exp(x - max) / sum(exp(x - max)) per row.
void reference_softmax(const float* x, float* y, int64_t rows, int64_t cols);

// y = x * sigmoid(x), sigmoid as docs/semantics.md defines it.
void reference_swish(const float* x, float* y, int64_t n);

// y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), the gelu composite's
// tanh approximation in its rounding order.
void reference_gelu_tanh(const float* x, float* y, int64_t n);

// y = x, the copy bandwidth on the same footprint.
void reference_copy(const float* x, float* y, int64_t n);

}  // namespace stitch::bench
