// attention(q, k, v[, bias]) by its definition (docs/graph-ir.md, Attention):
// softmax(q kᵀ scale + bias + causal mask) v, row by row in double and
// rounded once to the result's dtype. The softmax shifts by the row's maximum
// as the composite does, so a row whose every score is -inf gives NaN.
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "interp/op_evaluators.h"
#include "interp/strided_loop.h"

namespace stitch::interp {

WideBuffer evaluate_attention(const OpCall& call) {
  const std::vector<int64_t>& qs = call.in(0).shape();
  const size_t r = qs.size();
  const int64_t tq = qs[r - 2], d = qs[r - 1];
  const int64_t tk = call.in(1).shape()[r - 2];
  const int64_t dv = call.in(2).shape()[r - 1];
  int64_t batches = 1;
  for (size_t i = 0; i + 2 < r; ++i) batches *= qs[i];
  const double scale = call.node.attrs.get("scale").as_number();
  const bool causal = call.node.attrs.get("causal").as_bool();
  const bool has_bias = call.inputs.size() == 4;
  // The bias's element for score (b, i, j): its strides over the scores' shape.
  std::vector<int64_t> scores_shape(qs.begin(), qs.end() - 1);
  scores_shape.push_back(tk);
  const std::vector<int64_t> bias_strides =
      has_bias ? broadcast_strides(call.in(3).shape(), scores_shape) : std::vector<int64_t>(r, 0);
  const double* q = call.in(0).floats();
  const double* k = call.in(1).floats();
  const double* v = call.in(2).floats();
  const double* bias = has_bias ? call.in(3).floats() : nullptr;
  WideBuffer out = call.make_output();
  double* o = out.floats();
  const double minus_inf = -std::numeric_limits<double>::infinity();
  std::vector<double> s(static_cast<size_t>(tk));
  for (int64_t b = 0; b < batches; ++b) {
    // The bias offset of batch b: its leading indices in row-major order.
    int64_t bias_base = 0;
    for (int64_t rest = b, axis = static_cast<int64_t>(r) - 3; axis >= 0; --axis) {
      bias_base += (rest % qs[axis]) * bias_strides[axis];
      rest /= qs[axis];
    }
    const double* qb = q + b * tq * d;
    const double* kb = k + b * tk * d;
    const double* vb = v + b * tk * dv;
    for (int64_t i = 0; i < tq; ++i) {
      double m = minus_inf;
      for (int64_t j = 0; j < tk; ++j) {
        double dotp = 0;
        for (int64_t c = 0; c < d; ++c) dotp += qb[i * d + c] * kb[j * d + c];
        double x = dotp * scale;
        if (bias) x += bias[bias_base + i * bias_strides[r - 2] + j * bias_strides[r - 1]];
        if (causal && j > i + (tk - tq)) x = minus_inf;
        s[j] = x;
        m = std::fmax(m, x);
      }
      double sum = 0;
      for (int64_t j = 0; j < tk; ++j) {
        s[j] = std::exp(s[j] - m);
        sum += s[j];
      }
      double* orow = o + (b * tq + i) * dv;
      for (int64_t c = 0; c < dv; ++c) orow[c] = 0;
      for (int64_t j = 0; j < tk; ++j) {
        const double p = s[j] / sum;
        for (int64_t c = 0; c < dv; ++c) orow[c] += p * vb[j * dv + c];
      }
    }
  }
  round_to_dtype(out);
  return out;
}

}  // namespace stitch::interp
