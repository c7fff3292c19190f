#include "codegen/cpu/streaming_store.h"

#include <algorithm>
#include <cstdint>

namespace stitch::codegen::cpu {

using kir::Expr;
using kir::ExprKind;

std::optional<int64_t> thread_coefficient(const Expr& e, const ThreadAxis& axis, const IndexFacts& facts) {
  switch (e->kind) {
    case ExprKind::Const: return 0;
    case ExprKind::Var: {
      if (e->name == axis.thread) return 1;
      if (e->name == axis.fixed) return 0;
      const Expr& definition = facts.resolve(e);
      if (&definition.node() != &e.node()) return thread_coefficient(definition, axis, facts);
      if (axis.varies(e->name)) return std::nullopt;
      return 0;
    }
    case ExprKind::Load:
    case ExprKind::Op: break;
  }
  std::vector<int64_t> k;
  for (const Expr& operand : e->operands) {
    std::optional<int64_t> c = thread_coefficient(operand, axis, facts);
    if (!c) return std::nullopt;
    k.push_back(*c);
  }
  // Loads of global memory at a thread-independent index are the same for
  // every thread; shared memory and local arrays may hold per-thread data.
  if (e->kind == ExprKind::Load) {
    if (axis.varies(e->name)) return std::nullopt;
    for (int64_t c : k) {
      if (c != 0) return std::nullopt;
    }
    return 0;
  }
  const bool uniform = std::all_of(k.begin(), k.end(), [](int64_t c) { return c == 0; });
  if (uniform) return 0;
  if (e->dtype != DType::i64 || k.size() != 2) return std::nullopt;
  int64_t literal = 0;
  switch (e->op) {
    case OpKind::Add: return k[0] + k[1];
    case OpKind::Sub: return k[0] - k[1];
    case OpKind::Mul:
      if (k[0] == 0 && kir::is_int_constant(e->operands[0], &literal)) return literal * k[1];
      if (k[1] == 0 && kir::is_int_constant(e->operands[1], &literal)) return literal * k[0];
      return std::nullopt;
    default: return std::nullopt;
  }
}

Expr element_offset(const kir::BufferParam& b, const std::vector<Expr>& index, const IndexFacts& facts) {
  if (index.empty()) return kir::int_const(0);
  if (!b.strides.empty()) {
    Expr sum = kir::op(OpKind::Mul, {index[0], b.strides[0]});
    for (size_t d = 1; d < index.size(); ++d) {
      sum = kir::op(OpKind::Add, {sum, kir::op(OpKind::Mul, {index[d], b.strides[d]})});
    }
    return sum;
  }
  if (std::optional<Expr> linear = facts.cancelled_offset(b, index)) return *linear;
  Expr offset = index[0];
  for (size_t d = 1; d < index.size(); ++d) {
    offset = kir::op(OpKind::Add, {kir::op(OpKind::Mul, {offset, b.shape[d]}), index[d]});
  }
  return offset;
}

bool streams(const kir::BufferParam& b) {
  return b.streaming && (b.dtype == DType::f32 || b.dtype == DType::f64);
}

}  // namespace stitch::codegen::cpu
