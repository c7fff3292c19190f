#include "runtime/cpu/dot_call.h"

#include <cblas.h>
#include <fmt/format.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <mutex>

#include "stitch/error.h"
#include "tensor/narrow_float.h"

namespace stitch::runtime::cpu {

namespace {

struct MatmulProblem {
  int64_t m = 0, k = 0, n = 0;
  bool transpose_b = false;  // B's matrices stored [n, k]
  std::vector<int64_t> batch;  // the output's batch dims
  // Element offsets of each batch's matrices, in batch order (broadcast dims repeat).
  std::vector<int64_t> a_offsets, b_offsets;
};

// Element strides of `dims` (a batch prefix of a contiguous operand whose
// matrix holds `matrix` elements) broadcast against `out_batch`, right-aligned.
std::vector<int64_t> batch_strides(const std::vector<int64_t>& dims, const std::vector<int64_t>& out_batch,
                                   int64_t matrix) {
  std::vector<int64_t> strides(out_batch.size(), 0);
  int64_t stride = matrix;
  for (size_t i = 0; i < dims.size(); ++i) {
    const size_t d = dims.size() - 1 - i;
    const size_t o = out_batch.size() - 1 - i;
    strides[o] = dims[d] == 1 ? 0 : stride;
    stride *= dims[d];
  }
  return strides;
}

MatmulProblem matmul_problem(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                             const std::vector<int64_t>& out, bool transpose_b = false) {
  const bool a_vector = a.size() == 1;
  const bool b_vector = b.size() == 1;
  STITCH_ASSERT(!transpose_b || !b_vector, "a transposed dot operand of rank 1");
  MatmulProblem p;
  p.transpose_b = transpose_b;
  p.m = a_vector ? 1 : a[a.size() - 2];
  p.k = a.back();
  p.n = b_vector ? 1 : transpose_b ? b[b.size() - 2] : b.back();
  const size_t matrix_dims = (a_vector ? 0 : 1) + (b_vector ? 0 : 1);
  STITCH_ASSERT(out.size() >= matrix_dims, "dot result rank below its matrix dims");
  p.batch.assign(out.begin(), out.end() - static_cast<std::ptrdiff_t>(matrix_dims));
  std::vector<int64_t> a_batch(a.begin(), a.end() - (a_vector ? 1 : 2));
  std::vector<int64_t> b_batch(b.begin(), b.end() - (b_vector ? 1 : 2));
  STITCH_ASSERT(a_batch.size() <= p.batch.size() && b_batch.size() <= p.batch.size(), "dot operand batch rank above the result's");
  const std::vector<int64_t> a_strides = batch_strides(a_batch, p.batch, p.m * p.k);
  const std::vector<int64_t> b_strides = batch_strides(b_batch, p.batch, p.k * p.n);
  int64_t count = 1;
  for (int64_t d : p.batch) count *= d;
  std::vector<int64_t> index(p.batch.size(), 0);
  for (int64_t i = 0; i < count; ++i) {
    int64_t a_off = 0, b_off = 0;
    for (size_t d = 0; d < index.size(); ++d) {
      a_off += index[d] * a_strides[d];
      b_off += index[d] * b_strides[d];
    }
    p.a_offsets.push_back(a_off);
    p.b_offsets.push_back(b_off);
    for (size_t d = index.size(); d-- > 0;) {
      if (++index[d] < p.batch[d]) break;
      index[d] = 0;
    }
  }
  // A linear layer, [batch..., m, k] by one [k, n]: the batches of A lie one
  // after another and share B, so they are one matrix of batch * m rows, one
  // gemm instead of a gemm per batch that packs B again each time (the ViT
  // block's fc1, [8, 197, 768] by [768, 3072]: 55 ms in 8 calls, 35 in one;
  // BERT's and T5's layers 2-3% faster). Not where B is larger than a 32 MiB
  // cache: the LM head's [8, 128, 768] by [768, 32000] (98 MB) took 227 ms in
  // 8 calls and 248 in one (2-core EPYC, alternating runs; docs/executable.md).
  constexpr int64_t kStackedMaxBBytes = int64_t{32} << 20;
  bool stacked = count > 1 && p.k * p.n * 4 <= kStackedMaxBBytes;
  for (int64_t i = 0; stacked && i < count; ++i) {
    stacked = p.a_offsets[static_cast<size_t>(i)] == i * p.m * p.k && p.b_offsets[static_cast<size_t>(i)] == p.b_offsets[0];
  }
  if (stacked) {
    p.m *= count;
    p.a_offsets = {0};
    p.b_offsets = {p.b_offsets[0]};
  }
  return p;
}

// Rows [row_begin, row_end) of row-major C[m x n] = A[m x k] B[k x n] per
// batch, the batches stacked (batch i's row r is row i * m + r): one CBLAS
// gemm per batch the rows meet, on the rows it holds.
template <class T>
void gemm_rows(const MatmulProblem& p, const T* a, const T* b, T* c, int64_t row_begin, int64_t row_end) {
  if (p.n == 0 || row_begin >= row_end) return;
  const blasint n = static_cast<blasint>(p.n), k = static_cast<blasint>(p.k);
  for (int64_t batch = row_begin / p.m; batch * p.m < row_end; ++batch) {
    const int64_t first = std::max(row_begin, batch * p.m) - batch * p.m;
    const int64_t last = std::min(row_end, (batch + 1) * p.m) - batch * p.m;
    T* c_rows = c + (batch * p.m + first) * p.n;
    if (p.k == 0) {
      std::fill(c_rows, c_rows + (last - first) * p.n, T{0});
      continue;
    }
    const T* a_rows = a + p.a_offsets[static_cast<size_t>(batch)] + first * p.k;
    const T* b_batch = b + p.b_offsets[static_cast<size_t>(batch)];
    const blasint m = static_cast<blasint>(last - first);
    if constexpr (std::is_same_v<T, float>) {
      // oneDNN's sgemm (row-major): on OpenMP's threads, the generated
      // kernels' own, and faster than OpenBLAS's on this project's shapes
      // (docs/cpu-backend.md, Dots).
      const dnnl_status_t status =
          dnnl_sgemm('N', p.transpose_b ? 'T' : 'N', m, n, k, 1.0f, a_rows, k, b_batch, p.transpose_b ? k : n, 0.0f, c_rows, n);
      STITCH_ASSERT(status == dnnl_success, fmt::format("oneDNN sgemm failed (status {})", static_cast<int>(status)));
    } else {
      cblas_dgemm(CblasRowMajor, CblasNoTrans, p.transpose_b ? CblasTrans : CblasNoTrans, m, n, k, 1.0, a_rows, k, b_batch,
                  p.transpose_b ? k : n, 0.0, c_rows, n);
    }
  }
}

// Every row of every batch.
template <class T>
void gemm_batches(const MatmulProblem& p, const T* a, const T* b, T* c) {
  gemm_rows(p, a, b, c, 0, p.m * static_cast<int64_t>(p.a_offsets.size()));
}

// Integer products wrap in two's complement at 64 bits, then the sum is
// narrowed to T, exactly as the interpreter does (docs/semantics.md).
template <class T>
void integer_matmul(const MatmulProblem& p, const T* a, const T* b, T* c) {
  std::vector<uint64_t> row(static_cast<size_t>(p.n));
  for (size_t batch = 0; batch < p.a_offsets.size(); ++batch) {
    const T* ab = a + p.a_offsets[batch];
    const T* bb = b + p.b_offsets[batch];
    T* cb = c + static_cast<int64_t>(batch) * p.m * p.n;
    for (int64_t i = 0; i < p.m; ++i) {
      std::fill(row.begin(), row.end(), 0);
      for (int64_t kk = 0; kk < p.k; ++kk) {
        const uint64_t x = static_cast<uint64_t>(static_cast<int64_t>(ab[i * p.k + kk]));
        for (int64_t j = 0; j < p.n; ++j) row[j] += x * static_cast<uint64_t>(static_cast<int64_t>(bb[kk * p.n + j]));
      }
      for (int64_t j = 0; j < p.n; ++j) cb[i * p.n + j] = static_cast<T>(static_cast<int64_t>(row[j]));
    }
  }
}

// f16 / bf16: widen to f32 (exact), sgemm, round each result once.
void narrow_matmul(const MatmulProblem& p, DType dtype, const std::vector<int64_t>& a_shape,
                   const std::vector<int64_t>& b_shape, const uint16_t* a, const uint16_t* b, uint16_t* c) {
  auto widen = [&](const uint16_t* src, int64_t count) {
    std::vector<float> out(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) {
      out[i] = dtype == DType::f16 ? stitch_f16_bits_to_f32(src[i]) : stitch_bf16_bits_to_f32(src[i]);
    }
    return out;
  };
  auto numel = [](const std::vector<int64_t>& s) {
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    return n;
  };
  const std::vector<float> wa = widen(a, numel(a_shape));
  const std::vector<float> wb = widen(b, numel(b_shape));
  const int64_t c_count = p.m * p.n * static_cast<int64_t>(p.a_offsets.size());
  std::vector<float> wc(static_cast<size_t>(c_count));
  gemm_batches<float>(p, wa.data(), wb.data(), wc.data());
  for (int64_t i = 0; i < c_count; ++i) {
    c[i] = dtype == DType::f16 ? stitch_f64_to_f16_bits(wc[i]) : stitch_f64_to_bf16_bits(wc[i]);
  }
}

}  // namespace

void run_dot(DType dtype, const std::vector<int64_t>& a_shape, const std::vector<int64_t>& b_shape,
             const std::vector<int64_t>& out_shape, const void* a, const void* b, void* out, bool transpose_b) {
  STITCH_ASSERT(!transpose_b || dtype == DType::f32 || dtype == DType::f64, "a transposed operand of a non-float dot");
  const MatmulProblem p = matmul_problem(a_shape, b_shape, out_shape, transpose_b);
  switch (dtype) {
    case DType::f32:
      return gemm_batches(p, static_cast<const float*>(a), static_cast<const float*>(b), static_cast<float*>(out));
    case DType::f64:
      return gemm_batches(p, static_cast<const double*>(a), static_cast<const double*>(b), static_cast<double*>(out));
    case DType::f16:
    case DType::bf16:
      return narrow_matmul(p, dtype, a_shape, b_shape, static_cast<const uint16_t*>(a),
                           static_cast<const uint16_t*>(b), static_cast<uint16_t*>(out));
    case DType::i8:
      return integer_matmul(p, static_cast<const int8_t*>(a), static_cast<const int8_t*>(b), static_cast<int8_t*>(out));
    case DType::i32:
      return integer_matmul(p, static_cast<const int32_t*>(a), static_cast<const int32_t*>(b),
                            static_cast<int32_t*>(out));
    case DType::i64:
      return integer_matmul(p, static_cast<const int64_t*>(a), static_cast<const int64_t*>(b),
                            static_cast<int64_t*>(out));
    default:
      throw InternalError(fmt::format("dot library call: no implementation for dtype {}", dtype_name(dtype)),
                          __FILE__, __LINE__);
  }
}

void run_dot_panels(DType dtype, const std::vector<int64_t>& a_shape, const std::vector<int64_t>& b_shape,
                    const std::vector<int64_t>& out_shape, const void* a, const void* b, void* out,
                    const std::vector<DotPanel>& panels, const std::function<void(size_t panel)>& epilogue,
                    bool transpose_b) {
  STITCH_ASSERT(dtype == DType::f32 || dtype == DType::f64, "a dot epilogue on a " + std::string(dtype_name(dtype)) + " dot");
  STITCH_ASSERT(a_shape.size() >= 2 && b_shape.size() >= 2, "a dot epilogue on an operand of rank below 2");
  if (panels.size() < 2) {
    run_dot(dtype, a_shape, b_shape, out_shape, a, b, out, transpose_b);
    if (!panels.empty()) epilogue(0);
    return;
  }
  const MatmulProblem p = matmul_problem(a_shape, b_shape, out_shape, transpose_b);
  STITCH_ASSERT(panels.back().end_row == p.m * static_cast<int64_t>(p.a_offsets.size()), "dot panels do not end at the last row");
  // One pool of threads: BLAS runs single-threaded inside OpenMP's, so the
  // two never spin against each other on the same cores. Only a pthreads
  // build needs its thread count set (an OpenMP build runs one-threaded inside
  // a parallel region by itself, and its setter would set OpenMP's count for
  // the region below); that count is process state, hence one panelled dot
  // at a time.
  static std::mutex blas_state;
  const std::lock_guard<std::mutex> lock(blas_state);
  constexpr int kPthreadsBuild = 1;  // openblas_get_parallel(): 0 sequential, 1 pthreads, 2 OpenMP
  const bool own_threads = openblas_get_parallel() == kPthreadsBuild;
  const int blas_threads = openblas_get_num_threads();
  if (own_threads) openblas_set_num_threads(1);
  const int64_t count = static_cast<int64_t>(panels.size());
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t i = 0; i < count; ++i) {
    const DotPanel& panel = panels[static_cast<size_t>(i)];
    if (dtype == DType::f32) {
      gemm_rows(p, static_cast<const float*>(a), static_cast<const float*>(b), static_cast<float*>(out), panel.first_row,
                panel.end_row);
    } else {
      gemm_rows(p, static_cast<const double*>(a), static_cast<const double*>(b), static_cast<double*>(out),
                panel.first_row, panel.end_row);
    }
    epilogue(static_cast<size_t>(i));
  }
  if (own_threads) openblas_set_num_threads(blas_threads);
}

}  // namespace stitch::runtime::cpu
