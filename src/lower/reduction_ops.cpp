#include "lower/reduction_ops.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "lower/group_expr.h"
#include "schedule/row_schedule.h"
#include "stitch/error.h"

namespace stitch::lower {

using kir::Expr;

RowGeometry row_geometry(const Expr& len, int64_t max_threads) {
  RowGeometry r;
  kir::is_int_constant(len, &r.static_len);
  r.threads = max_threads;
  STITCH_ASSERT(schedule::block_per_row_threads(r.static_len, max_threads) == max_threads,
                "a block-per-row schedule of " + std::to_string(max_threads) + " threads for a row of " +
                    std::to_string(r.static_len) + ": the schedule stage narrows it (pipeline::complete_schedule)");
  r.steps = r.static_len >= 0 ? kir::int_const((r.static_len + r.threads - 1) / r.threads)
                              : (len + (r.threads - 1)) / r.threads;
  r.guard = r.static_len < 0 || r.static_len % r.threads != 0;
  return r;
}

ColumnGeometry column_geometry(const Expr& count, int64_t threads) {
  ColumnGeometry c;
  int64_t static_count = 0;
  const bool is_static = kir::is_int_constant(count, &static_count);
  c.guard = !is_static || static_count % threads != 0;
  c.blocks = is_static ? kir::int_const((static_count + threads - 1) / threads) : (count + (threads - 1)) / threads;
  return c;
}

void column_threads(kir::KernelBuilder& kb, const Expr& count, int64_t threads,
                    const std::function<void(const ColumnThread&)>& body) {
  const ColumnGeometry geometry = column_geometry(count, threads);
  kb.launch(geometry.blocks, threads);
  kb.grid("blk", geometry.blocks, [&](const Expr& b) {
    kb.block("thr", threads, [&](const Expr& t) {
      ColumnThread thread;
      thread.guard = geometry.guard;
      thread.lin = kb.let("lin", add_i(mul_i(b, kir::int_const(threads)), t));
      // No block is launched when count is 0, so count - 1 >= 0 here.
      thread.read =
          geometry.guard ? kb.let("lin_read", kir::op(OpKind::Min, {thread.lin, sub_i(count, kir::int_const(1))})) : thread.lin;
      body(thread);
    });
  });
}

DType accumulator_dtype(DType t) { return (t == DType::f16 || t == DType::bf16) ? DType::f32 : t; }

OpKind combine_op(OpKind op) {
  switch (op) {
    case OpKind::ReduceProd: return OpKind::Mul;
    case OpKind::ReduceMax: return OpKind::Max;
    case OpKind::ReduceMin: return OpKind::Min;
    case OpKind::ReduceAny: return OpKind::Or;
    case OpKind::ReduceAll: return OpKind::And;
    default: return OpKind::Add;
  }
}

OpKind block_op(OpKind op) { return op == OpKind::ReduceMean ? OpKind::ReduceSum : op; }

Expr reduction_identity(OpKind op, DType t) {
  switch (op) {
    case OpKind::ReduceAny: return kir::bool_const(false);
    case OpKind::ReduceAll: return kir::bool_const(true);
    case OpKind::ReduceProd: return literal(1.0, t);
    case OpKind::ReduceMax:
    case OpKind::ReduceMin: {
      bool max = op == OpKind::ReduceMax;
      if (is_float(t)) return kir::float_const(max ? -INFINITY : INFINITY, t);
      int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
      if (t == DType::i8) lo = -128, hi = 127;
      if (t == DType::i32) lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max();
      return kir::int_const(max ? lo : hi, t);
    }
    default: return is_float(t) ? kir::float_const(-0.0, t) : literal(0.0, t);
  }
}

Expr finish_reduction(const Graph& g, const Node& n, const Expr& total, const Expr& count) {
  Expr v = total;
  if (n.op == OpKind::ReduceMean) v = kir::op(OpKind::Div, {v, kir::cast(count, v.dtype())});
  DType t = g.type(n.output).dtype;
  return v.dtype() == t ? v : kir::cast(v, t);
}

}  // namespace stitch::lower
