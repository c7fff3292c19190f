// Ops without operands: iota (the index along an axis) and constant (a splat).
#include <algorithm>
#include <cstdint>

#include "interp/op_evaluators.h"

namespace stitch::interp {

namespace {

WideBuffer iota(const OpCall& call) {
  WideBuffer out = call.make_output();
  const int64_t axis = call.node.attrs.get("axis").as_int();
  const int64_t extent = call.out_shape[axis];
  const int64_t stride = contiguous_strides(call.out_shape)[axis];
  // The index is exact in double (extents are far below 2^53); the round
  // below then gives the dtype's value, as a cast from i64 would.
  with_storage_type(out.dtype(), [&]<class T>() {
    T* v = out.data<T>();
    for (int64_t i = 0; i < out.numel(); ++i) v[i] = static_cast<T>((i / stride) % extent);
  });
  round_to_dtype(out);
  return out;
}

WideBuffer constant(const OpCall& call) {
  WideBuffer out = call.make_output();
  const AttrValue& value = call.node.attrs.get("value");
  if (out.holds_floats()) {
    std::fill_n(out.floats(), out.numel(), round_to_float_dtype(value.as_number(), out.dtype()));
  } else {
    std::fill_n(out.ints(), out.numel(), value.is_bool() ? int64_t{value.as_bool()} : value.as_int());
  }
  return out;
}

}  // namespace

WideBuffer evaluate_source(const OpCall& call) {
  if (call.op() == OpKind::Iota) return iota(call);
  STITCH_ASSERT(call.op() == OpKind::Constant, "evaluate_source: not iota or constant");
  return constant(call);
}

}  // namespace stitch::interp
