#include "kir/expr.h"

#include <fmt/format.h>

#include <bit>
#include <cstdint>

#include "ir/type_inference.h"
#include "stitch/error.h"

namespace stitch::kir {

const ExprNode& Expr::node() const {
  STITCH_ASSERT(node_ != nullptr, "use of an absent kernel IR expression");
  return *node_;
}

DType Expr::dtype() const { return node().dtype; }

bool operator==(const Expr& a, const Expr& b) {
  if (!a.defined() || !b.defined()) return a.defined() == b.defined();
  const ExprNode& x = a.node();
  const ExprNode& y = b.node();
  if (x.kind != y.kind || x.dtype != y.dtype) return false;
  switch (x.kind) {
    case ExprKind::Const:
      // Bitwise on floats so that NaN literals compare equal to themselves.
      return x.int_value == y.int_value &&
             std::bit_cast<uint64_t>(x.float_value) == std::bit_cast<uint64_t>(y.float_value);
    case ExprKind::Var: return x.name == y.name;
    case ExprKind::Op: return x.op == y.op && x.in_range == y.in_range && x.operands == y.operands;
    case ExprKind::Load: return x.name == y.name && x.operands == y.operands;
  }
  STITCH_ASSERT(false, "unknown expression kind");
}

bool has_load(const Expr& e) {
  if (!e.defined()) return false;
  if (e->kind == ExprKind::Load) return true;
  for (const Expr& operand : e->operands) {
    if (has_load(operand)) return true;
  }
  return false;
}

bool is_int_constant(const Expr& e, int64_t* value) {
  if (!e.defined() || e->kind != ExprKind::Const || !is_integer(e->dtype)) return false;
  if (value) *value = e->int_value;
  return true;
}

namespace {

// A node is filled in before it is wrapped: an Expr never changes after that.
std::shared_ptr<ExprNode> new_node(ExprKind kind, DType dtype) {
  auto node = std::make_shared<ExprNode>();
  node->kind = kind;
  node->dtype = dtype;
  return node;
}

}  // namespace

Expr int_const(int64_t value, DType dtype) {
  STITCH_ASSERT(is_integer(dtype), "int_const needs an integer dtype");
  auto n = new_node(ExprKind::Const, dtype);
  n->int_value = value;
  return Expr(std::move(n));
}

Expr float_const(double value, DType dtype) {
  STITCH_ASSERT(is_float(dtype), "float_const needs a float dtype");
  auto n = new_node(ExprKind::Const, dtype);
  n->float_value = value;
  return Expr(std::move(n));
}

Expr bool_const(bool value) {
  auto n = new_node(ExprKind::Const, DType::boolean);
  n->int_value = value ? 1 : 0;
  return Expr(std::move(n));
}

Expr var(std::string name, DType dtype) {
  auto n = new_node(ExprKind::Var, dtype);
  n->name = std::move(name);
  return Expr(std::move(n));
}

Expr load(std::string buffer, DType dtype, std::vector<Expr> indices) {
  auto n = new_node(ExprKind::Load, dtype);
  n->name = std::move(buffer);
  n->operands = std::move(indices);
  return Expr(std::move(n));
}

bool infer_op_dtype(OpKind kind, const std::vector<DType>& operand_dtypes, DType cast_to,
                    DType* result, std::string* problem) {
  if (!is_elementwise(kind)) {
    *problem = fmt::format("{} is not an elementwise op", op_name(kind));
    return false;
  }
  const OpInfo& info = op_info(kind);
  if (static_cast<int>(operand_dtypes.size()) != info.min_inputs) {
    *problem = fmt::format("{} takes {} operands, got {}", op_name(kind), info.min_inputs,
                           operand_dtypes.size());
    return false;
  }
  std::vector<TensorType> scalars;
  for (DType t : operand_dtypes) scalars.push_back(TensorType{t, {}});
  Attrs attrs;
  if (kind == OpKind::Cast) attrs.set("to", cast_to);
  try {
    *result = infer_type(kind, scalars, attrs).dtype;
    return true;
  } catch (const UserError& e) {
    *problem = e.what();
    return false;
  }
}

Expr make_op_unchecked(OpKind kind, DType result, std::vector<Expr> operands) {
  auto n = new_node(ExprKind::Op, result);
  n->op = kind;
  n->operands = std::move(operands);
  return Expr(std::move(n));
}

Expr op(OpKind kind, std::vector<Expr> operands) {
  STITCH_ASSERT(kind != OpKind::Cast, "build casts with cast(), which names the target dtype");
  std::vector<DType> dtypes;
  for (const Expr& e : operands) dtypes.push_back(e.dtype());
  DType result = DType::i64;
  std::string problem;
  STITCH_ASSERT(infer_op_dtype(kind, dtypes, DType::i64, &result, &problem), problem);
  return make_op_unchecked(kind, result, std::move(operands));
}

Expr cast(Expr value, DType to) { return make_op_unchecked(OpKind::Cast, to, {std::move(value)}); }

Expr with_operands(const Expr& e, std::vector<Expr> operands) {
  auto n = std::make_shared<ExprNode>(e.node());
  n->operands = std::move(operands);
  return Expr(std::move(n));
}

Expr cast_in_range(Expr value, DType to) {
  STITCH_ASSERT(is_float(value.dtype()) && !is_float(to) && to != DType::boolean,
                "cast_in_range converts a float to an integer");
  auto n = new_node(ExprKind::Op, to);
  n->op = OpKind::Cast;
  n->operands = {std::move(value)};
  n->in_range = true;
  return Expr(std::move(n));
}

Expr operator+(Expr a, Expr b) { return op(OpKind::Add, {std::move(a), std::move(b)}); }
Expr operator-(Expr a, Expr b) { return op(OpKind::Sub, {std::move(a), std::move(b)}); }
Expr operator*(Expr a, Expr b) { return op(OpKind::Mul, {std::move(a), std::move(b)}); }
Expr operator/(Expr a, Expr b) { return op(OpKind::Div, {std::move(a), std::move(b)}); }
Expr operator%(Expr a, Expr b) { return op(OpKind::Rem, {std::move(a), std::move(b)}); }

namespace {

Expr literal_like(const Expr& other, int64_t value) {
  STITCH_ASSERT(is_integer(other.dtype()), "an integer literal needs an integer operand");
  return int_const(value, other.dtype());
}

}  // namespace

Expr operator+(Expr a, int64_t b) { Expr l = literal_like(a, b); return std::move(a) + l; }
Expr operator-(Expr a, int64_t b) { Expr l = literal_like(a, b); return std::move(a) - l; }
Expr operator*(Expr a, int64_t b) { Expr l = literal_like(a, b); return std::move(a) * l; }
Expr operator/(Expr a, int64_t b) { Expr l = literal_like(a, b); return std::move(a) / l; }
Expr operator%(Expr a, int64_t b) { Expr l = literal_like(a, b); return std::move(a) % l; }
Expr operator*(int64_t a, Expr b) { Expr l = literal_like(b, a); return l * std::move(b); }

}  // namespace stitch::kir
