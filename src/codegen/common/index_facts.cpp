#include "codegen/common/index_facts.h"

#include <algorithm>
#include <cstdint>
#include <numeric>

#include <fmt/format.h>

#include "codegen/common/index_range.h"

namespace stitch::codegen::common {
namespace {

using kir::Expr;
using kir::ExprKind;

// `e` is `x OP c` for the literal c: returns x.
std::optional<Expr> literal_operand(const Expr& e, OpKind op, int64_t c) {
  int64_t value = 0;
  if (e->kind != ExprKind::Op || e->op != op || !kir::is_int_constant(e->operands[1], &value) || value != c) {
    return std::nullopt;
  }
  return e->operands[0];
}

}  // namespace

// Bounds of an i64 index expression over loop variables of constant extent,
// literals and recomputed lets, when every intermediate stays within 2^62.
std::optional<IndexFacts::Range> IndexFacts::value_range(const Expr& e) const {
  constexpr __int128 kLimit = static_cast<__int128>(1) << 62;
  std::optional<Range> r;
  int64_t c = 0;
  if (kir::is_int_constant(e, &c)) {
    r = Range{c, c};
  } else if (e->kind == ExprKind::Var) {
    if (auto it = loop_extent_.find(e->name); it != loop_extent_.end()) r = Range{0, it->second - 1};
    if (const kir::LetStmt* let = let_of(e->name)) r = value_range(let->init);
  } else if (e->kind == ExprKind::Op && e->dtype == DType::i64 && e->operands.size() == 2) {
    std::optional<Range> a = value_range(e->operands[0]), b = value_range(e->operands[1]);
    if (!a || !b) return std::nullopt;
    switch (e->op) {
      case OpKind::Min: r = Range{std::min(a->first, b->first), std::min(a->second, b->second)}; break;
      case OpKind::Max: r = Range{std::max(a->first, b->first), std::max(a->second, b->second)}; break;
      default: r = common::arithmetic_range(e->op, *a, *b); break;
    }
  }
  if (!r || r->first <= -kLimit || r->second >= kLimit) return std::nullopt;
  return r;
}

// A number known to divide `e`: 1 when nothing is known, 0 when `e` is 0.
int64_t IndexFacts::known_multiple(const Expr& e) const {
  int64_t c = 0;
  if (kir::is_int_constant(e, &c)) return c < 0 ? (c == INT64_MIN ? int64_t{1} << 62 : -c) : c;
  if (e->kind == ExprKind::Var) {
    if (const kir::LetStmt* let = let_of(e->name)) return known_multiple(let->init);
    return 1;
  }
  if (e->kind != ExprKind::Op || e->operands.size() != 2) return 1;
  const int64_t a = known_multiple(e->operands[0]), b = known_multiple(e->operands[1]);
  if (e->op == OpKind::Mul) {
    if (a == 0 || b == 0) return 0;
    const __int128 product = static_cast<__int128>(a) * b;
    return product < (static_cast<__int128>(1) << 62) ? static_cast<int64_t>(product) : std::max(a, b);
  }
  if (e->op == OpKind::Add || e->op == OpKind::Sub) return std::gcd(a, b);
  return 1;
}

void IndexFacts::note_loop_extent(const std::string& var, const Expr& extent) {
  int64_t n = 0;
  if (kir::is_int_constant(extent, &n) && n > 0) loop_extent_[var] = n;
}

// The definition behind a remat let, or `e` itself.
const Expr& IndexFacts::resolve(const Expr& e) const {
  if (e->kind == ExprKind::Var) {
    if (const kir::LetStmt* let = let_of(e->name)) return resolve(let->init);
  }
  return e;
}

const kir::LetStmt* IndexFacts::let_of(const std::string& name) const {
  if (held_.count(name)) return nullptr;
  auto it = lets_.find(name);
  return it == lets_.end() ? nullptr : it->second;
}

// A row-major index that delinearises one linear value X in the buffer's
// own shape, index k = (X / S_k) % d_k (X / S_0 for k = 0, S_k the product
// of the inner static dims): the offset is X itself (X >= 0), which keeps a
// loop group's access contiguous instead of a div/mod gather.
std::optional<Expr> IndexFacts::cancelled_offset(const kir::BufferParam& b, const std::vector<Expr>& index) const {
  if (index.size() < 2 || !b.strides.empty()) return std::nullopt;
  std::optional<Expr> x;
  int64_t stride = 1;
  for (size_t k = index.size(); k-- > 0;) {
    const Expr& e = resolve(index[k]);
    int64_t dim = 0;
    const bool static_dim = kir::is_int_constant(b.shape[k], &dim);
    if (k > 0 && static_dim && dim == 1 && kir::is_int_constant(e, &dim) && dim == 0) continue;
    Expr q = e;
    if (k > 0) {
      if (!static_dim || dim <= 0) return std::nullopt;
      std::optional<Expr> inner = literal_operand(e, OpKind::Rem, dim);
      if (!inner) return std::nullopt;
      q = *inner;
    }
    std::optional<Expr> base = q;
    if (stride != 1) base = literal_operand(resolve(q), OpKind::Div, stride);
    if (!base) return std::nullopt;
    if (x && !(resolve(*x) == resolve(*base))) return std::nullopt;
    if (!x) x = base;
    if (k > 0) stride *= dim;
  }
  return x;
}

std::optional<std::string> narrow_division_text(const Expr& e, const std::string& dividend,
                                                const std::optional<IndexRange>& r) {
  constexpr int64_t kLimit = int64_t{1} << 32;
  int64_t c = 0;
  if (e->kind != ExprKind::Op || (e->op != OpKind::Div && e->op != OpKind::Rem) || e->dtype != DType::i64 ||
      !kir::is_int_constant(e->operands[1], &c) || c <= 0 || c >= kLimit) {
    return std::nullopt;
  }
  if (!r || r->first < 0 || r->second >= kLimit) return std::nullopt;
  return fmt::format("int64_t(uint32_t({}) {} {}u)", dividend, e->op == OpKind::Div ? '/' : '%', c);
}

}  // namespace stitch::codegen::common
