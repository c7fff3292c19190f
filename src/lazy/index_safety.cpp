// The safety check of user-kernel fusion: see index_safety.h.
#include "lazy/index_safety.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

namespace stitch::lazy {

namespace {

// What an integer expression is, relative to the range's indices.
struct Linear {
  enum class Kind : uint8_t { Literal, Constant, Affine, Other };
  Kind kind = Kind::Other;
  int dim = -1;
  int64_t scale = 0;
  int64_t value = 0;  // Literal: the value; Affine: the offset
};

// a op b for Add, Sub, Mul of literal and affine terms; nullopt when the
// result is not one (two indices, a product of two terms, an overflow).
std::optional<Linear> combine(OpKind op, const Linear& a, const Linear& b) {
  using K = Linear::Kind;
  auto add = [](int64_t x, int64_t y, int64_t sign, int64_t* out) {
    int64_t t = 0;
    return !__builtin_mul_overflow(sign, y, &t) && !__builtin_add_overflow(x, t, out);
  };
  Linear out;
  if (op == OpKind::Mul) {
    const Linear* term = a.kind == K::Affine ? &a : &b;
    const Linear* factor = a.kind == K::Affine ? &b : &a;
    if (a.kind == K::Literal && b.kind == K::Literal) {
      out.kind = K::Literal;
      return __builtin_mul_overflow(a.value, b.value, &out.value) ? std::nullopt : std::optional<Linear>(out);
    }
    if (term->kind != K::Affine || factor->kind != K::Literal || factor->value == 0) return std::nullopt;
    out = *term;
    if (__builtin_mul_overflow(term->scale, factor->value, &out.scale) ||
        __builtin_mul_overflow(term->value, factor->value, &out.value)) {
      return std::nullopt;
    }
    return out;
  }
  const int64_t sign = op == OpKind::Add ? 1 : -1;
  if (a.kind == K::Literal && b.kind == K::Literal) {
    out.kind = K::Literal;
    return add(a.value, b.value, sign, &out.value) ? std::optional<Linear>(out) : std::nullopt;
  }
  if ((a.kind != K::Affine && a.kind != K::Literal) || (b.kind != K::Affine && b.kind != K::Literal)) return std::nullopt;
  if (a.kind == K::Affine && b.kind == K::Affine && a.dim != b.dim) return std::nullopt;
  out.kind = K::Affine;
  out.dim = a.kind == K::Affine ? a.dim : b.dim;
  const int64_t a_scale = a.kind == K::Affine ? a.scale : 0;
  const int64_t b_scale = b.kind == K::Affine ? b.scale : 0;
  if (!add(a_scale, b_scale, sign, &out.scale) || !add(a.value, b.value, sign, &out.value) || out.scale == 0) {
    return std::nullopt;
  }
  return out;
}

class Classifier {
 public:
  explicit Classifier(const UserKernel& k) : k_(k) {
    for (size_t d = 0; d < k.range.size(); ++d) range_dim_[k.range[d].name] = static_cast<int>(d);
    for (const KernelParam& p : k.params) {
      if (!p.is_array) invariant_.insert(p.name);
    }
    for (const std::string& s : k.symbols()) invariant_.insert(s);
  }

  Linear classify(const KExpr& e) const {
    const KernelExprNode& n = e.node();
    switch (n.kind) {
      case KernelExprKind::Literal:
        if (is_integer(n.dtype)) return {Linear::Kind::Literal, -1, 0, n.int_value};
        return {Linear::Kind::Constant};
      case KernelExprKind::Name: {
        if (auto it = range_dim_.find(n.name); it != range_dim_.end()) return {Linear::Kind::Affine, it->second, 1, 0};
        if (invariant_.count(n.name)) return {Linear::Kind::Constant};
        return {};  // a local or loop variable
      }
      case KernelExprKind::Load: return {};
      case KernelExprKind::Op: break;
    }
    std::vector<Linear> ops;
    for (const KExpr& o : n.operands) ops.push_back(classify(o));
    bool all_invariant = true;
    for (const Linear& l : ops) all_invariant &= l.kind == Linear::Kind::Literal || l.kind == Linear::Kind::Constant;
    // Only i64 arithmetic is exact here (narrower integers wrap at their
    // width), and a coefficient that overflows makes the term "other".
    const bool wide = n.dtype == DType::i64;
    // Widening to i64 keeps the value; narrowing may wrap.
    if (n.op == OpKind::Cast && n.dtype == DType::i64 && is_integer(n.operands[0]->dtype)) return ops[0];
    if (wide && n.op == OpKind::Neg && (ops[0].kind == Linear::Kind::Affine || ops[0].kind == Linear::Kind::Literal)) {
      Linear out = ops[0];
      if (__builtin_sub_overflow(int64_t{0}, out.scale, &out.scale) || __builtin_sub_overflow(int64_t{0}, out.value, &out.value)) return {};
      return out;
    }
    if (wide && ops.size() == 2 && (n.op == OpKind::Add || n.op == OpKind::Sub || n.op == OpKind::Mul)) {
      if (std::optional<Linear> l = combine(n.op, ops[0], ops[1])) return *l;
    }
    if (all_invariant) return {Linear::Kind::Constant};
    return {};
  }

 private:
  const UserKernel& k_;
  std::map<std::string, int> range_dim_;
  std::set<std::string> invariant_;
};

IndexTerm term_of(const Linear& l) {
  IndexTerm t;
  switch (l.kind) {
    case Linear::Kind::Literal:
    case Linear::Kind::Constant: t.kind = IndexTerm::Kind::Constant; break;
    case Linear::Kind::Affine:
      t.kind = IndexTerm::Kind::Affine;
      t.dim = l.dim;
      t.scale = l.scale;
      t.offset = l.value;
      break;
    case Linear::Kind::Other: t.kind = IndexTerm::Kind::Other; break;
  }
  return t;
}

class AccessCollector {
 public:
  AccessCollector(const UserKernel& k) : k_(k), classify_(k) {}

  std::vector<ArrayAccessSite> run() {
    for (const KStmt& s : k_.body) stmt(s);
    return std::move(sites_);
  }

 private:
  void stmt(const KStmt& s) {
    for (const KExpr& i : s.index) expr(i);
    if (s.value.defined()) expr(s.value);
    if (s.kind == KernelStmtKind::Store) add(s.name, s.index, true);
    for (const KStmt& b : s.body) stmt(b);
    for (const KStmt& b : s.else_body) stmt(b);
  }

  void expr(const KExpr& e) {
    for (const KExpr& o : e->operands) expr(o);
    if (e->kind == KernelExprKind::Load) add(e->name, e->operands, false);
  }

  void add(const std::string& array, const std::vector<KExpr>& index, bool write) {
    ArrayAccessSite site;
    for (size_t p = 0; p < k_.params.size(); ++p) {
      if (k_.params[p].name == array) site.param = static_cast<int>(p);
    }
    STITCH_ASSERT(site.param >= 0, "access to an unknown array " + array);
    site.write = write;
    site.text = array + "[";
    for (size_t d = 0; d < index.size(); ++d) {
      site.index.push_back(term_of(classify_.classify(index[d])));
      site.text += (d ? ", " : "") + site.index.back().str(k_);
    }
    site.text += "]";
    sites_.push_back(std::move(site));
  }

  const UserKernel& k_;
  Classifier classify_;
  std::vector<ArrayAccessSite> sites_;
};

}  // namespace

std::string IndexTerm::str(const UserKernel& k) const {
  switch (kind) {
    case Kind::Constant: return "const";
    case Kind::Other: return "other";
    case Kind::Affine: break;
  }
  std::string v = k.range.at(static_cast<size_t>(dim)).name;
  std::string s = scale == 1 ? v : scale == -1 ? "-" + v : fmt::format("{}*{}", scale, v);
  if (offset > 0) s += fmt::format(" + {}", offset);
  if (offset < 0) s += fmt::format(" - {}", -offset);
  return s;
}

std::vector<ArrayAccessSite> collect_accesses(const UserKernel& kernel) { return AccessCollector(kernel).run(); }

int fusable_rank(const CallView& first, const CallView& second, SafetyVerdict* why) {
  for (int rank = std::min(first.rank(), second.rank()); rank >= 1; --rank) {
    SafetyVerdict v = fusion_safety(first, second, rank);
    if (v.safe) return rank;
    if (rank == 1 && why != nullptr) *why = std::move(v);
  }
  return 0;
}

SafetyVerdict fusion_safety(const CallView& first, const CallView& second, int rank) {
  if (rank <= 0) rank = std::min(first.rank(), second.rank());
  STITCH_ASSERT(rank <= first.rank() && rank <= second.rank(), "fusion_safety: rank beyond a call's range");
  // Per storage both calls touch: the sites of each call.
  struct Sites {
    std::vector<const ArrayAccessSite*> of[2];
    bool written = false;
    std::string name;
  };
  std::map<int, Sites> shared;
  const CallView* calls[2] = {&first, &second};
  for (int c = 0; c < 2; ++c) {
    for (const ArrayAccessSite& site : *calls[c]->accesses) {
      int storage = calls[c]->storage.at(static_cast<size_t>(site.param));
      Sites& s = shared[storage];
      s.of[c].push_back(&site);
      s.written |= site.write;
      if (s.name.empty()) s.name = calls[c]->kernel->params[static_cast<size_t>(site.param)].name;
    }
  }
  for (const auto& [storage, s] : shared) {
    if (s.of[0].empty() || s.of[1].empty() || !s.written) continue;
    const ArrayAccessSite& ref = *s.of[0].front();
    const size_t dims = ref.index.size();
    std::vector<bool> covered(static_cast<size_t>(rank), false);
    for (size_t d = 0; d < dims; ++d) {
      const IndexTerm& t = ref.index[d];
      if (t.kind != IndexTerm::Kind::Affine || t.dim >= rank) continue;
      bool agree = true;
      for (int c = 0; c < 2 && agree; ++c) {
        for (const ArrayAccessSite* other : s.of[c]) agree &= other->index[d] == t;
      }
      if (agree) covered[static_cast<size_t>(t.dim)] = true;
    }
    for (int d = 0; d < rank; ++d) {
      if (covered[static_cast<size_t>(d)]) continue;
      // Name the first pair of sites that disagree, for the verdict.
      const ArrayAccessSite* a = s.of[0].front();
      const ArrayAccessSite* b = s.of[1].front();
      for (const ArrayAccessSite* x : s.of[0]) {
        for (const ArrayAccessSite* y : s.of[1]) {
          if (x->index != y->index) {
            a = x;
            b = y;
          }
        }
      }
      return {false, fmt::format("array '{}': {} in {} and {} in {} may touch one element from different indices "
                                 "(range index {} is not fixed by an axis both use alike)",
                                 s.name, a->text, first.kernel->name, b->text, second.kernel->name,
                                 first.kernel->range[static_cast<size_t>(d)].name)};
    }
  }
  return {};
}

bool overwrites_before_reading(const UserKernel& k, size_t param) {
  const KernelParam& p = k.params[param];
  if (!p.is_array || p.shape.size() != k.range.size()) return false;
  auto loads = [&p](const KExpr& e) {
    return e.defined() &&
           any_node(e, [&p](const KernelExprNode& n) { return n.kind == KernelExprKind::Load && n.name == p.name; });
  };
  auto touches = [&](const KStmt& s) {
    return any_stmt({s}, [&](const KStmt& t) {
      if (t.kind == KernelStmtKind::Store && t.name == p.name) return true;
      if (loads(t.value)) return true;
      return std::any_of(t.index.begin(), t.index.end(), loads);
    });
  };
  for (const KStmt& s : k.body) {
    if (!touches(s)) continue;
    if (s.kind != KernelStmtKind::Store || s.name != p.name || loads(s.value)) return false;
    for (size_t d = 0; d < k.range.size(); ++d) {
      const KernelExprNode& n = s.index[d].node();
      if (n.kind != KernelExprKind::Name || n.name != k.range[d].name) return false;
    }
    return true;
  }
  return false;
}

}  // namespace stitch::lazy
