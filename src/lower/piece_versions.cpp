// Piece versions (docs/lowering.md, Piece versions): the affine form of a
// concat's coordinate and the block-uniform test of a version's guards.
#include "lower/piece_versions.h"


#include <algorithm>
#include <cstdint>

#include "lower/group_expr.h"

namespace stitch::lower {

using kir::Expr;

namespace {

std::optional<AffineCoord> combine(const AffineCoord& a, const AffineCoord& b, int64_t sign) {
  if (!a.var.empty() && !b.var.empty() && a.var != b.var) return std::nullopt;
  AffineCoord out;
  out.var = a.var.empty() ? b.var : a.var;
  out.scale = a.scale + sign * b.scale;
  out.offset = a.offset + sign * b.offset;
  if (out.scale == 0) out.var.clear();
  return out;
}

Expr all_of(const Expr& a, const Expr& b) { return a.defined() ? kir::op(OpKind::And, {a, b}) : b; }

}  // namespace

std::optional<AffineCoord> affine_in(const Expr& e, const std::map<std::string, int>& vars) {
  int64_t value = 0;
  if (kir::is_int_constant(e, &value)) return AffineCoord{"", 0, value};
  const kir::ExprNode& n = e.node();
  if (n.kind == kir::ExprKind::Var) {
    if (!vars.count(n.name)) return std::nullopt;
    return AffineCoord{n.name, 1, 0};
  }
  if (n.kind != kir::ExprKind::Op) return std::nullopt;
  if (n.op == OpKind::Neg) {
    auto a = affine_in(n.operands[0], vars);
    if (!a) return std::nullopt;
    return combine(AffineCoord{}, *a, -1);
  }
  if (n.op != OpKind::Add && n.op != OpKind::Sub && n.op != OpKind::Mul) return std::nullopt;
  auto a = affine_in(n.operands[0], vars);
  auto b = affine_in(n.operands[1], vars);
  if (!a || !b) return std::nullopt;
  if (n.op == OpKind::Add) return combine(*a, *b, 1);
  if (n.op == OpKind::Sub) return combine(*a, *b, -1);
  if (!a->var.empty() && !b->var.empty()) return std::nullopt;
  const AffineCoord& constant = a->var.empty() ? *a : *b;
  const AffineCoord& other = a->var.empty() ? *b : *a;
  AffineCoord out{other.var, other.scale * constant.offset, other.offset * constant.offset};
  if (out.scale == 0) out.var.clear();
  return out;
}

int64_t concat_piece_run(const Graph& g, const Node& concat, size_t piece) {
  const int64_t axis = concat.attrs.get("axis").as_int();
  const Shape& out = g.type(concat.output).shape;
  const Dim& extent = g.type(concat.inputs[piece]).shape[axis];
  if (!extent.is_static()) return -1;
  int64_t run = extent.extent();
  for (size_t d = axis + 1; d < out.size(); ++d) {
    if (!out[d].is_static()) return -1;
    run *= out[d].extent();
  }
  return run;
}

void PieceAssumption::add_guard(const PieceGuard& g) {
  for (const PieceGuard& h : guards) {
    if (h.coord.var == g.coord.var && h.coord.scale == g.coord.scale && h.coord.offset == g.coord.offset &&
        h.lo == g.lo && h.hi == g.hi) {
      return;
    }
  }
  guards.push_back(g);
}

void PieceAssumption::add_index(const std::vector<Expr>& idx, const Shape& shape) {
  for (size_t k = 0; k < idx.size(); ++k) {
    if (idx[k]->kind != kir::ExprKind::Var) continue;
    axes[idx[k]->name] = static_cast<int>(k);
    shapes[idx[k]->name] = shape;
  }
}

namespace {

// Whether `g` holds for every value of its coordinate's axis (a pad of 0 on
// that axis guards its whole static extent): such a guard asks nothing of a
// block, and its period condition would refuse every block that spans two
// values of the axis.
bool holds_everywhere(const PieceAssumption& a, const PieceGuard& g) {
  if (g.coord.var.empty()) return g.coord.offset >= g.lo && g.coord.offset < g.hi;
  const Shape& shape = a.shapes.at(g.coord.var);
  const Dim& extent = shape[static_cast<size_t>(a.axes.at(g.coord.var))];
  if (!extent.is_static() || extent.extent() < 1) return false;
  const int64_t first = g.coord.offset, last = g.coord.scale * (extent.extent() - 1) + g.coord.offset;
  return std::min(first, last) >= g.lo && std::max(first, last) < g.hi;
}

}  // namespace

Expr block_satisfies(const PieceAssumption& a, const Expr& lin_lo, const Expr& lin_hi) {
  Expr cond;
  for (const PieceGuard& g : a.guards) {
    if (holds_everywhere(a, g)) continue;
    Expr at_lo = kir::int_const(g.coord.offset);
    Expr at_hi = at_lo;
    if (!g.coord.var.empty()) {
      const int axis = a.axes.at(g.coord.var);
      const Shape& shape = a.shapes.at(g.coord.var);
      Expr stride = kir::int_const(1);
      for (size_t d = axis + 1; d < shape.size(); ++d) stride = mul_i(stride, dim_expr(shape[d]));
      Expr extent = dim_expr(shape[axis]);
      auto coord = [&](const Expr& lin) {
        int64_t one = 0;
        Expr q = kir::is_int_constant(stride, &one) && one == 1 ? lin : lin / stride;
        return axis == 0 ? q : q % extent;
      };
      // Past axis 0 the coordinate wraps: it grows with the linear index only
      // while the block stays inside one period of the axis.
      if (axis > 0) {
        Expr period = mul_i(stride, extent);
        cond = all_of(cond, kir::op(OpKind::Eq, {lin_lo / period, lin_hi / period}));
      }
      at_lo = add_i(mul_i(coord(lin_lo), kir::int_const(g.coord.scale)), kir::int_const(g.coord.offset));
      at_hi = add_i(mul_i(coord(lin_hi), kir::int_const(g.coord.scale)), kir::int_const(g.coord.offset));
      if (g.coord.scale < 0) std::swap(at_lo, at_hi);
    }
    cond = all_of(cond, kir::op(OpKind::Ge, {at_lo, kir::int_const(g.lo)}));
    cond = all_of(cond, kir::op(OpKind::Lt, {at_hi, kir::int_const(g.hi)}));
  }
  return cond;
}

Expr strip_satisfies(const PieceAssumption& a, const Expr& row_lo, const Expr& row_hi, const Expr& column_lo,
                     const Expr& column_hi) {
  // Guards on the last axis bound the columns; the others, over the leading
  // axes, bound the rows as block_satisfies bounds a linear range.
  PieceAssumption rows = a;
  rows.guards.clear();
  Expr cond;
  for (const PieceGuard& g : a.guards) {
    if (holds_everywhere(a, g)) continue;
    const bool column = !g.coord.var.empty() &&
                        a.axes.at(g.coord.var) + 1 == static_cast<int>(a.shapes.at(g.coord.var).size());
    if (!column) {
      rows.guards.push_back(g);
      continue;
    }
    Expr at_lo = add_i(mul_i(column_lo, kir::int_const(g.coord.scale)), kir::int_const(g.coord.offset));
    Expr at_hi = add_i(mul_i(column_hi, kir::int_const(g.coord.scale)), kir::int_const(g.coord.offset));
    if (g.coord.scale < 0) std::swap(at_lo, at_hi);
    cond = all_of(cond, kir::op(OpKind::Ge, {at_lo, kir::int_const(g.lo)}));
    cond = all_of(cond, kir::op(OpKind::Lt, {at_hi, kir::int_const(g.hi)}));
  }
  for (auto& [var, shape] : rows.shapes) {
    if (!shape.empty()) shape.pop_back();
  }
  const Expr by_rows = block_satisfies(rows, row_lo, row_hi);
  return by_rows.defined() ? all_of(cond, by_rows) : cond;
}

}  // namespace stitch::lower
