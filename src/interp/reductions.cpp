// reduce_* and argmax/argmin. The input is walked once in row-major order and
// each element is folded into its output's accumulator, so every output sees
// its reduced elements in increasing row-major order of the reduced indices
// (the order docs/semantics.md promises) while memory is read sequentially.
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "interp/op_evaluators.h"
#include "interp/scalar_semantics.h"
#include "interp/strided_loop.h"

namespace stitch::interp {

namespace {

struct ReductionLayout {
  std::vector<int64_t> accumulator_strides;  // per input dim: 0 on reduced dims
  int64_t reduced_count = 1;                 // elements folded into each output
};

ReductionLayout reduction_layout(const std::vector<int64_t>& in_shape, const std::vector<int64_t>& axes) {
  ReductionLayout layout;
  layout.accumulator_strides.assign(in_shape.size(), 0);
  int64_t stride = 1;
  size_t next_axis = axes.size();
  for (size_t d = in_shape.size(); d-- > 0;) {
    bool reduced = next_axis > 0 && axes[next_axis - 1] == static_cast<int64_t>(d);
    if (reduced) {
      --next_axis;
      layout.reduced_count *= in_shape[d];
    } else {
      layout.accumulator_strides[d] = stride;
      stride *= in_shape[d];
    }
  }
  return layout;
}

template <class T, class Combine>
WideBuffer fold(const OpCall& call, const ReductionLayout& layout, T init, Combine combine) {
  WideBuffer out = call.make_output();
  T* acc = out.data<T>();
  const int64_t outputs = out.numel();
  for (int64_t i = 0; i < outputs; ++i) acc[i] = init;
  const WideBuffer& in = call.in(0);
  const T* x = in.data<T>();
  for_each_strided<2>(in.shape(), {contiguous_strides(in.shape()), layout.accumulator_strides}, {0, 0},
                      [&](const Offsets<2>& o) { acc[o[1]] = combine(acc[o[1]], x[o[0]]); });
  return out;
}

WideBuffer float_reduction(const OpCall& call, const ReductionLayout& layout) {
  using D = double;
  constexpr D kInf = std::numeric_limits<D>::infinity();
  WideBuffer out;
  switch (call.op()) {
    case OpKind::ReduceSum:
    case OpKind::ReduceMean:
      // -0 is the identity of IEEE addition, so an all -0 slice sums to -0;
      // an empty slice is the empty sum, +0.
      out = fold<D>(call, layout, layout.reduced_count == 0 ? 0.0 : -0.0, [](D a, D b) { return a + b; });
      if (call.op() == OpKind::ReduceMean) {
        const D count = static_cast<D>(layout.reduced_count);
        for (int64_t i = 0; i < out.numel(); ++i) out.floats()[i] /= count;
      }
      break;
    case OpKind::ReduceProd: out = fold<D>(call, layout, 1.0, [](D a, D b) { return a * b; }); break;
    case OpKind::ReduceMax: out = fold<D>(call, layout, -kInf, scalar::maximum); break;
    case OpKind::ReduceMin: out = fold<D>(call, layout, kInf, scalar::minimum); break;
    default:
      STITCH_ASSERT(false, fmt::format("interpreter: {} on floats is not handled", op_name(call.op())));
  }
  round_to_dtype(out);
  return out;
}

WideBuffer int_reduction(const OpCall& call, const ReductionLayout& layout) {
  using I = int64_t;
  const DType t = call.in(0).dtype();
  WideBuffer out;
  switch (call.op()) {
    case OpKind::ReduceSum: out = fold<I>(call, layout, 0, scalar::wrapping_add); break;
    case OpKind::ReduceProd: out = fold<I>(call, layout, 1, scalar::wrapping_mul); break;
    case OpKind::ReduceMax:
      out = fold<I>(call, layout, scalar::int_min_of(t), [](I a, I b) { return a >= b ? a : b; });
      break;
    case OpKind::ReduceMin:
      out = fold<I>(call, layout, scalar::int_max_of(t), [](I a, I b) { return a <= b ? a : b; });
      break;
    case OpKind::ReduceAny: out = fold<I>(call, layout, 0, [](I a, I b) { return a | b; }); break;
    case OpKind::ReduceAll: out = fold<I>(call, layout, 1, [](I a, I b) { return a & b; }); break;
    default:
      STITCH_ASSERT(false, fmt::format("interpreter: {} on {} is not handled", op_name(call.op()), dtype_name(t)));
  }
  round_to_dtype(out);
  return out;
}

// `better(candidate, best)`: strictly better, so the first index wins ties.
// With NaN, the first NaN wins and ends the search (numpy's argmax/argmin).
template <class T, class Better>
WideBuffer arg_reduction(const OpCall& call, int64_t axis, Better better) {
  const WideBuffer& in = call.in(0);
  const std::vector<int64_t>& shape = in.shape();
  const int64_t extent = shape[axis];
  if (extent == 0) {
    throw UserError(fmt::format("{} '{}': axis {} has extent 0, and an empty axis has no {}", op_name(call.op()),
                                call.out_name, axis, call.op() == OpKind::ArgMax ? "maximum" : "minimum"));
  }
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  WideBuffer out = call.make_output();
  int64_t* index = out.ints();
  const T* x = in.data<T>();
  std::vector<T> best(inner);
  for (int64_t o = 0; o < outer; ++o) {
    const T* block = x + o * extent * inner;
    int64_t* block_index = index + o * inner;
    for (int64_t i = 0; i < inner; ++i) {
      best[i] = block[i];
      block_index[i] = 0;
    }
    for (int64_t j = 1; j < extent; ++j) {
      const T* row = block + j * inner;
      for (int64_t i = 0; i < inner; ++i) {
        if constexpr (std::is_floating_point_v<T>) {
          if (std::isnan(best[i])) continue;
          if (std::isnan(row[i])) {
            best[i] = row[i];
            block_index[i] = j;
            continue;
          }
        }
        if (better(row[i], best[i])) {
          best[i] = row[i];
          block_index[i] = j;
        }
      }
    }
  }
  return out;
}

}  // namespace

WideBuffer evaluate_reduction(const OpCall& call) {
  const std::vector<int64_t>& axes = call.node.attrs.get("axes").as_ints();
  const WideBuffer& in = call.in(0);
  if (call.op() == OpKind::ArgMax || call.op() == OpKind::ArgMin) {
    STITCH_ASSERT(axes.size() == 1, "argmax/argmin take one axis");
    const bool is_max = call.op() == OpKind::ArgMax;
    return with_storage_type(in.dtype(), [&]<class T>() {
      if (is_max) return arg_reduction<T>(call, axes[0], [](T a, T b) { return a > b; });
      return arg_reduction<T>(call, axes[0], [](T a, T b) { return a < b; });
    });
  }
  ReductionLayout layout = reduction_layout(in.shape(), axes);
  return in.holds_floats() ? float_reduction(call, layout) : int_reduction(call, layout);
}

}  // namespace stitch::interp
