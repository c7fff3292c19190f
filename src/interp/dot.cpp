// dot(a, b) with numpy matmul semantics: 1-D operands are promoted to a row
// (a) or a column (b) and the added dim dropped from the result; leading dims
// are batch dims and broadcast.
#include <algorithm>
#include <cstdint>

#include "interp/op_evaluators.h"
#include "interp/scalar_semantics.h"
#include "interp/strided_loop.h"

namespace stitch::interp {

namespace {

struct MatmulShape {
  int64_t m, k, n;
  std::vector<int64_t> a_batch, b_batch, out_batch;
};

MatmulShape matmul_shape(const OpCall& call) {
  const std::vector<int64_t>& a = call.in(0).shape();
  const std::vector<int64_t>& b = call.in(1).shape();
  const bool a_is_vector = a.size() == 1;
  const bool b_is_vector = b.size() == 1;
  MatmulShape s;
  s.m = a_is_vector ? 1 : a[a.size() - 2];
  s.k = a.back();
  s.n = b_is_vector ? 1 : b.back();
  if (!a_is_vector) s.a_batch.assign(a.begin(), a.end() - 2);
  if (!b_is_vector) s.b_batch.assign(b.begin(), b.end() - 2);
  const size_t matrix_dims = (a_is_vector ? 0 : 1) + (b_is_vector ? 0 : 1);
  s.out_batch.assign(call.out_shape.begin(), call.out_shape.end() - matrix_dims);
  return s;
}

std::vector<int64_t> scaled(std::vector<int64_t> strides, int64_t factor) {
  for (int64_t& s : strides) s *= factor;
  return strides;
}

// C[m x n] = A[m x k] B[k x n]. The j loop innermost reads B by rows; each
// C[i][j] still sums its k products in increasing k, one rounding per step.
template <class T, class MulAdd>
void matmul(const T* a, const T* b, T* c, const MatmulShape& s, std::vector<T>& row, MulAdd mul_add) {
  for (int64_t i = 0; i < s.m; ++i) {
    std::fill(row.begin(), row.end(), T{0});
    for (int64_t kk = 0; kk < s.k; ++kk) {
      const T a_ik = a[i * s.k + kk];
      const T* b_row = b + kk * s.n;
      for (int64_t j = 0; j < s.n; ++j) row[j] = mul_add(row[j], a_ik, b_row[j]);
    }
    std::copy(row.begin(), row.end(), c + i * s.n);
  }
}

template <class T, class MulAdd>
WideBuffer batched_matmul(const OpCall& call, MulAdd mul_add) {
  const MatmulShape s = matmul_shape(call);
  WideBuffer out = call.make_output();
  const T* a = call.in(0).data<T>();
  const T* b = call.in(1).data<T>();
  T* c = out.data<T>();
  std::vector<T> row(s.n);
  for_each_strided<3>(s.out_batch,
                      {scaled(contiguous_strides(s.out_batch), s.m * s.n),
                       scaled(broadcast_strides(s.a_batch, s.out_batch), s.m * s.k),
                       scaled(broadcast_strides(s.b_batch, s.out_batch), s.k * s.n)},
                      {0, 0, 0}, [&](const Offsets<3>& o) { matmul(a + o[1], b + o[2], c + o[0], s, row, mul_add); });
  round_to_dtype(out);
  return out;
}

}  // namespace

WideBuffer evaluate_dot(const OpCall& call) {
  if (call.in(0).holds_floats()) {
    // A separate multiply and add, never fused: the product of two f32, f16 or
    // bf16 values is exact in double, so only the additions round.
    return batched_matmul<double>(call, [](double acc, double x, double y) { return acc + x * y; });
  }
  return batched_matmul<int64_t>(call, [](int64_t acc, int64_t x, int64_t y) {
    return scalar::wrapping_add(acc, scalar::wrapping_mul(x, y));
  });
}

}  // namespace stitch::interp
