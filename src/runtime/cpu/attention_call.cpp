#include "runtime/cpu/attention_call.h"

#include <fmt/format.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "stitch/error.h"
#include "tensor/narrow_float.h"

namespace stitch::runtime::cpu {

namespace {

// Keys a block: a [64 x 256] f32 score block is 64 KiB, which stays in L2
// beside the output accumulator and the K and V blocks it reads.
constexpr int64_t kKeyBlock = 256;
constexpr int64_t kQueryBlock = 64;

// C[m x n] = alpha * A[m x k] * op(B) + beta * C, row-major; op(B) is B[k x n]
// or, with `transpose_b`, B stored [n x k]. f32: oneDNN's sgemm, which runs on
// the calling thread alone inside an OpenMP parallel region.
void block_gemm(bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (k == 0) {
    // oneDNN rejects an empty contraction (D = 0): the product is zero.
    for (int64_t i = 0; i < m && beta == 0; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
    return;
  }
  const dnnl_status_t status = dnnl_sgemm('N', transpose_b ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  STITCH_ASSERT(status == dnnl_success, fmt::format("oneDNN sgemm failed (status {})", static_cast<int>(status)));
}

// f64: loops the compiler vectorises (the j loop innermost on a contiguous row).
void block_gemm(bool transpose_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
                const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    double* crow = c + i * ldc;
    if (beta == 0) std::fill(crow, crow + n, 0.0);
    if (transpose_b) {
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t kk = 0; kk < k; ++kk) sum += a[i * lda + kk] * b[j * ldb + kk];
        crow[j] += alpha * sum;
      }
      continue;
    }
    for (int64_t kk = 0; kk < k; ++kk) {
      const double x = alpha * a[i * lda + kk];
      const double* brow = b + kk * ldb;
      for (int64_t j = 0; j < n; ++j) crow[j] += x * brow[j];
    }
  }
}

// exp(x) for the shifted scores (x <= 0, -inf or NaN): Cephes' expf (range
// reduction by ln 2 in two parts, a degree-6 polynomial, 2^n from the
// exponent bits), within about 1 ulp; below -87 it gives 0 (the exact value
// is under 2^-125, where the softmax's sum is at least 1). Written for a
// scalar and for the lanes of GCC's vector extension, since the
// auto-vectoriser left these loops scalar and libm's expf made the BERT-base
// block slower than the unfused graph: 4 lanes (SSE, every x86-64) and 8
// (AVX2, chosen at run time).
typedef float F32x4 __attribute__((vector_size(16)));
typedef int32_t I32x4 __attribute__((vector_size(16)));
typedef float F32x8 __attribute__((vector_size(32)));
typedef int32_t I32x8 __attribute__((vector_size(32)));

// In place, so that no 8-lane vector is passed by value outside AVX2 code.
template <class V, class I>
[[gnu::always_inline]] inline void exp_shifted_lanes(V& x) {
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const V xc = x < -87.0f ? V{} - 87.0f : x;
  const V n = (xc * 1.44269504088896341f + kRound) - kRound;
  const V r = (xc - n * 0.693359375f) + n * 2.12194440e-4f;
  V p = V{} + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  I n_int;
  if constexpr (std::is_same_v<V, float>) {
    n_int = static_cast<int32_t>(n);
  } else {
    n_int = __builtin_convertvector(n, I);
  }
  const I bits = (n_int + 127) << 23;
  V two_n;
  std::memcpy(&two_n, &bits, sizeof two_n);
  x = x < -87.0f ? V{} : p * two_n;
}

// The largest of row[0, n) (-inf for none), `V` lanes at a time.
template <class V>
[[gnu::always_inline]] inline float row_max_lanes(const float* row, int64_t n) {
  constexpr int kLanes = sizeof(V) / sizeof(float);
  V m = V{} - std::numeric_limits<float>::infinity();
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    V x;
    std::memcpy(&x, row + j, sizeof x);
    m = x > m ? x : m;
  }
  float out = -std::numeric_limits<float>::infinity();
  for (int lane = 0; lane < kLanes; ++lane) out = std::max(out, m[lane]);
  for (; j < n; ++j) out = std::max(out, row[j]);
  return out;
}

// row[j] = exp(row[j] - max), `V` lanes at a time; returns their sum.
template <class V, class I>
[[gnu::always_inline]] inline float exp_row_lanes(float* row, int64_t n, float max) {
  constexpr int kLanes = sizeof(V) / sizeof(float);
  V sums{};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    V x;
    std::memcpy(&x, row + j, sizeof x);
    x -= max;
    exp_shifted_lanes<V, I>(x);
    std::memcpy(row + j, &x, sizeof x);
    sums += x;
  }
  float sum = 0;
  for (int lane = 0; lane < kLanes; ++lane) sum += sums[lane];
  for (; j < n; ++j) {
    float x = row[j] - max;
    exp_shifted_lanes<float, int32_t>(x);
    row[j] = x;
    sum += x;
  }
  return sum;
}

[[gnu::target("avx2,fma")]] float row_max_avx2(const float* row, int64_t n) { return row_max_lanes<F32x8>(row, n); }
[[gnu::target("avx2,fma")]] float exp_row_avx2(float* row, int64_t n, float max) {
  return exp_row_lanes<F32x8, I32x8>(row, n, max);
}

bool has_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes;
}

float row_max(const float* row, int64_t n) { return has_avx2() ? row_max_avx2(row, n) : row_max_lanes<F32x4>(row, n); }
double row_max(const double* row, int64_t n) {
  double out = -std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j < n; ++j) out = std::max(out, row[j]);
  return out;
}

// row[j] = exp(row[j] - max); returns their sum.
float exp_row(float* row, int64_t n, float max) {
  return has_avx2() ? exp_row_avx2(row, n, max) : exp_row_lanes<F32x4, I32x4>(row, n, max);
}
double exp_row(double* row, int64_t n, double max) {
  double sum = 0;
  for (int64_t j = 0; j < n; ++j) {
    row[j] = std::exp(row[j] - max);
    sum += row[j];
  }
  return sum;
}

// One thread's scratch: a block of scores (then probabilities), the output
// accumulator, and each row's running maximum and sum.
template <class T>
struct Scratch {
  std::vector<T> scores, acc, row_max, row_sum;
  Scratch(int64_t bq, int64_t bk, int64_t dv)
      : scores(static_cast<size_t>(bq * bk)), acc(static_cast<size_t>(bq * dv)), row_max(static_cast<size_t>(bq)),
        row_sum(static_cast<size_t>(bq)) {}
};

// The bias offset of batch `b` (its leading indices in row-major order).
int64_t bias_base(const AttentionProblem& p, int64_t b) {
  int64_t base = 0;
  for (int64_t axis = static_cast<int64_t>(p.lead_shape.size()) - 1; axis >= 0; --axis) {
    base += (b % p.lead_shape[axis]) * p.bias_strides[axis];
    b /= p.lead_shape[axis];
  }
  return base;
}

// Rows [i0, i0 + bq) of batch b.
template <class T>
void attention_rows(const AttentionProblem& p, const T* q, const T* k, const T* v, const T* bias, T* out, int64_t b,
                    int64_t i0, int64_t bq, Scratch<T>& s) {
  constexpr T kMinusInf = -std::numeric_limits<T>::infinity();
  const T* qb = q + (b * p.tq + i0) * p.d;
  const T* kb = k + b * p.tk * p.d;
  const T* vb = v + b * p.tk * p.dv;
  const size_t lead = p.lead_shape.size();
  const T* bias_b = bias ? bias + bias_base(p, b) : nullptr;
  const int64_t bias_row = bias ? p.bias_strides[lead] : 0, bias_col = bias ? p.bias_strides[lead + 1] : 0;
  const int64_t offset = p.tk - p.tq;  // causal: key j is visible to query i when j <= i + offset
  std::fill(s.acc.begin(), s.acc.begin() + bq * p.dv, T{0});
  std::fill(s.row_max.begin(), s.row_max.begin() + bq, kMinusInf);
  std::fill(s.row_sum.begin(), s.row_sum.begin() + bq, T{0});
  // With a causal mask, keys past the block's last visible one are never read.
  const int64_t key_end = p.causal ? std::clamp<int64_t>(i0 + bq - 1 + offset + 1, 0, p.tk) : p.tk;
  for (int64_t j0 = 0; j0 < key_end; j0 += kKeyBlock) {
    const int64_t bk = std::min(kKeyBlock, key_end - j0);
    T* sc = s.scores.data();
    block_gemm(true, bq, bk, p.d, static_cast<T>(p.scale), qb, p.d, kb + j0 * p.d, p.d, T{0}, sc, bk);
    for (int64_t r = 0; r < bq; ++r) {
      T* row = sc + r * bk;
      if (bias_b) {
        const T* brow = bias_b + (i0 + r) * bias_row + j0 * bias_col;
        if (bias_col == 1) {
          for (int64_t j = 0; j < bk; ++j) row[j] += brow[j];
        } else {
          for (int64_t j = 0; j < bk; ++j) row[j] += brow[j * bias_col];
        }
      }
      if (p.causal) {
        const int64_t first_masked = std::max<int64_t>(i0 + r + offset + 1 - j0, 0);
        for (int64_t j = first_masked; j < bk; ++j) row[j] = kMinusInf;
      }
      const T old_max = s.row_max[r];
      const T new_max = std::max(old_max, row_max(row, bk));
      if (new_max == kMinusInf) {
        // Nothing visible yet: no weight, and no -inf - -inf.
        std::fill(row, row + bk, T{0});
        continue;
      }
      const T correction = std::exp(old_max - new_max);
      const T sum = exp_row(row, bk, new_max);
      s.row_max[r] = new_max;
      s.row_sum[r] = s.row_sum[r] * correction + sum;
      if (correction != T{1}) {
        T* acc = s.acc.data() + r * p.dv;
        for (int64_t c = 0; c < p.dv; ++c) acc[c] *= correction;
      }
    }
    block_gemm(false, bq, p.dv, bk, T{1}, sc, bk, vb + j0 * p.dv, p.dv, T{1}, s.acc.data(), p.dv);
  }
  // A row with no visible key divides 0 by 0: NaN, as the softmax of an all -inf row.
  for (int64_t r = 0; r < bq; ++r) {
    const T inv = T{1} / s.row_sum[r];
    const T* acc = s.acc.data() + r * p.dv;
    T* orow = out + (b * p.tq + i0 + r) * p.dv;
    for (int64_t c = 0; c < p.dv; ++c) orow[c] = acc[c] * inv;
  }
}

template <class T>
void run_typed(const AttentionProblem& p, const T* q, const T* k, const T* v, const T* bias, T* out) {
  if (p.batches == 0 || p.tq == 0 || p.dv == 0) return;
  if (p.tk == 0) {
    // Products over no key: zeros, as dot(softmax(empty), v) gives.
    std::fill(out, out + p.batches * p.tq * p.dv, T{0});
    return;
  }
  // Blocks of query rows, smaller when there are too few for every thread twice.
  const int64_t threads = omp_get_max_threads();
  int64_t bq = std::min(kQueryBlock, p.tq);
  while (bq > 8 && p.batches * ((p.tq + bq - 1) / bq) < 2 * threads) bq /= 2;
  const int64_t blocks = (p.tq + bq - 1) / bq;
  const int64_t tasks = p.batches * blocks;
  const int64_t bk = std::max<int64_t>(1, std::min(kKeyBlock, p.tk));
#pragma omp parallel if (tasks > 1)
  {
    Scratch<T> scratch(bq, bk, p.dv);
#pragma omp for schedule(dynamic, 1)
    for (int64_t t = 0; t < tasks; ++t) {
      const int64_t b = t / blocks, i0 = (t % blocks) * bq;
      attention_rows(p, q, k, v, bias, out, b, i0, std::min(bq, p.tq - i0), scratch);
    }
  }
}

std::vector<float> widen(DType dtype, const void* data, int64_t count) {
  const auto* bits = static_cast<const uint16_t*>(data);
  std::vector<float> out(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    out[i] = dtype == DType::f16 ? stitch_f16_bits_to_f32(bits[i]) : stitch_bf16_bits_to_f32(bits[i]);
  }
  return out;
}

int64_t bias_elements(const AttentionProblem& p) {
  // The largest offset the strides reach, plus one.
  int64_t last = 0;
  for (size_t a = 0; a < p.lead_shape.size(); ++a) last += (p.lead_shape[a] - 1) * p.bias_strides[a];
  last += (p.tq - 1) * p.bias_strides[p.lead_shape.size()] + (p.tk - 1) * p.bias_strides[p.lead_shape.size() + 1];
  return last + 1;
}

}  // namespace

AttentionProblem attention_problem(DType dtype, const std::vector<int64_t>& q_shape, const std::vector<int64_t>& k_shape,
                                   const std::vector<int64_t>& v_shape, bool has_bias,
                                   const std::vector<int64_t>& bias_shape, double scale, bool causal) {
  const size_t r = q_shape.size();
  STITCH_ASSERT(r >= 2 && k_shape.size() == r && v_shape.size() == r, "attention operands of unequal rank");
  AttentionProblem p;
  p.dtype = dtype;
  p.lead_shape.assign(q_shape.begin(), q_shape.end() - 2);
  for (int64_t d : p.lead_shape) p.batches *= d;
  p.tq = q_shape[r - 2];
  p.d = q_shape[r - 1];
  p.tk = k_shape[r - 2];
  p.dv = v_shape[r - 1];
  p.scale = scale;
  p.causal = causal;
  if (has_bias) {
    // numpy broadcasting, right-aligned: a missing or unit axis reads stride 0.
    p.bias_strides.assign(r, 0);
    int64_t stride = 1;
    for (size_t i = 0; i < bias_shape.size(); ++i) {
      const size_t from = bias_shape.size() - 1 - i, to = r - 1 - i;
      p.bias_strides[to] = bias_shape[from] == 1 ? 0 : stride;
      stride *= bias_shape[from];
    }
  }
  return p;
}

void run_attention(const AttentionProblem& p, const void* q, const void* k, const void* v, const void* bias, void* out) {
  switch (p.dtype) {
    case DType::f32:
      return run_typed(p, static_cast<const float*>(q), static_cast<const float*>(k), static_cast<const float*>(v),
                       static_cast<const float*>(bias), static_cast<float*>(out));
    case DType::f64:
      return run_typed(p, static_cast<const double*>(q), static_cast<const double*>(k), static_cast<const double*>(v),
                       static_cast<const double*>(bias), static_cast<double*>(out));
    case DType::f16:
    case DType::bf16: {
      if (p.batches == 0 || p.tq == 0 || p.dv == 0) return;
      const std::vector<float> wq = widen(p.dtype, q, p.batches * p.tq * p.d);
      const std::vector<float> wk = widen(p.dtype, k, p.batches * p.tk * p.d);
      const std::vector<float> wv = widen(p.dtype, v, p.batches * p.tk * p.dv);
      const std::vector<float> wb = bias && p.tk > 0 ? widen(p.dtype, bias, bias_elements(p)) : std::vector<float>();
      std::vector<float> wo(static_cast<size_t>(p.batches * p.tq * p.dv));
      run_typed(p, wq.data(), wk.data(), wv.data(), bias ? wb.data() : nullptr, wo.data());
      auto* bits = static_cast<uint16_t*>(out);
      for (size_t i = 0; i < wo.size(); ++i) {
        bits[i] = p.dtype == DType::f16 ? stitch_f64_to_f16_bits(wo[i]) : stitch_f64_to_bf16_bits(wo[i]);
      }
      return;
    }
    default:
      throw InternalError(fmt::format("attention library call: no implementation for dtype {}", dtype_name(p.dtype)),
                          __FILE__, __LINE__);
  }
}

}  // namespace stitch::runtime::cpu
