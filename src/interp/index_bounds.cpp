// Index bounds of user-kernel calls: see index_bounds.h.
#include "interp/index_bounds.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace stitch::interp {

namespace {

struct Interval {
  bool known = false;
  int64_t lo = 0;
  int64_t hi = 0;
  static Interval of(int64_t lo, int64_t hi) { return {true, lo, hi}; }
  static Interval unknown() { return {}; }
  bool operator==(const Interval& o) const { return known == o.known && (!known || (lo == o.lo && hi == o.hi)); }
};

Interval join(const Interval& a, const Interval& b) {
  if (!a.known || !b.known) return Interval::unknown();
  return Interval::of(std::min(a.lo, b.lo), std::max(a.hi, b.hi));
}

Interval add(const Interval& a, const Interval& b) {
  Interval r = Interval::of(0, 0);
  if (!a.known || !b.known || __builtin_add_overflow(a.lo, b.lo, &r.lo) || __builtin_add_overflow(a.hi, b.hi, &r.hi)) {
    return Interval::unknown();
  }
  return r;
}

Interval sub(const Interval& a, const Interval& b) {
  Interval r = Interval::of(0, 0);
  if (!a.known || !b.known || __builtin_sub_overflow(a.lo, b.hi, &r.lo) || __builtin_sub_overflow(a.hi, b.lo, &r.hi)) {
    return Interval::unknown();
  }
  return r;
}

Interval mul(const Interval& a, const Interval& b) {
  if (!a.known || !b.known) return Interval::unknown();
  int64_t p[4];
  if (__builtin_mul_overflow(a.lo, b.lo, &p[0]) || __builtin_mul_overflow(a.lo, b.hi, &p[1]) ||
      __builtin_mul_overflow(a.hi, b.lo, &p[2]) || __builtin_mul_overflow(a.hi, b.hi, &p[3])) {
    return Interval::unknown();
  }
  return Interval::of(*std::min_element(p, p + 4), *std::max_element(p, p + 4));
}

bool fits(const Interval& v, DType dtype) {
  switch (dtype) {
    case DType::i64: return true;
    case DType::i32: return v.lo >= INT32_MIN && v.hi <= INT32_MAX;
    case DType::i8: return v.lo >= INT8_MIN && v.hi <= INT8_MAX;
    case DType::boolean: return v.lo >= 0 && v.hi <= 1;
    default: return false;
  }
}

class Prover {
 public:
  Prover(const UserKernel& k, const KernelBinding& b, const std::vector<KernelArg>& args) : k_(k), args_(args) {
    for (size_t d = 0; d < k.range.size(); ++d) env_[k.range[d].name] = Interval::of(0, b.extents[d] - 1);
    for (size_t p = 0; p < k.params.size(); ++p) {
      const KernelParam& param = k.params[p];
      if (param.is_array) continue;
      if (is_bool(param.dtype)) {
        env_[param.name] = Interval::of(0, 1);
      } else if (!is_float(param.dtype)) {
        env_[param.name] = Interval::of(b.scalars[p].i, b.scalars[p].i);
      }
    }
    for (const auto& [name, value] : b.symbols) env_[name] = Interval::of(value, value);
  }

  bool proven() {
    // Locals and loop variables, flow-insensitively: joined over every
    // assignment until nothing changes; what still changes is unknown.
    constexpr int kRounds = 8;
    bool changed = true;
    for (int round = 0; round < kRounds && changed; ++round) {
      changed = false;
      assign_block(k_.body, &changed);
    }
    if (changed) {
      for (auto& [name, value] : locals_) value = Interval::unknown();
    }
    return block_in_range(k_.body);
  }

 private:
  void note(const std::string& name, const Interval& v, bool* changed) {
    auto [it, fresh] = locals_.try_emplace(name, v);
    if (fresh) {
      *changed = true;
      return;
    }
    Interval joined = join(it->second, v);
    if (!(joined == it->second)) {
      it->second = joined;
      *changed = true;
    }
  }

  void assign_block(const std::vector<KStmt>& body, bool* changed) {
    for (const KStmt& s : body) {
      switch (s.kind) {
        case KernelStmtKind::Let:
        case KernelStmtKind::Assign: note(s.name, eval(s.value), changed); break;
        case KernelStmtKind::For: {
          Interval extent = eval(s.value);
          note(s.name, extent.known ? Interval::of(0, std::max<int64_t>(extent.hi - 1, 0)) : Interval::unknown(), changed);
          const bool fact = push_loop_fact(s);
          assign_block(s.body, changed);
          if (fact) facts_.pop_back();
          break;
        }
        case KernelStmtKind::If:
          assign_block(s.body, changed);
          assign_block(s.else_body, changed);
          break;
        case KernelStmtKind::Store:
        case KernelStmtKind::Yield: break;
      }
    }
  }

  Interval eval(const KExpr& e) const {
    const KernelExprNode& n = e.node();
    switch (n.kind) {
      case KernelExprKind::Literal:
        if (n.is_bool_literal) return Interval::of(n.int_value != 0, n.int_value != 0);
        if (is_float(n.dtype)) return Interval::unknown();
        return Interval::of(n.int_value, n.int_value);
      case KernelExprKind::Name: {
        for (auto it = refined_.rbegin(); it != refined_.rend(); ++it) {
          if (it->first == n.name) return it->second;
        }
        if (auto it = locals_.find(n.name); it != locals_.end()) return it->second;
        if (auto it = env_.find(n.name); it != env_.end()) return it->second;
        return Interval::unknown();  // a local not assigned yet in this round, or a float
      }
      case KernelExprKind::Load: return Interval::unknown();
      case KernelExprKind::Op: break;
    }
    if (is_float(n.dtype)) return Interval::unknown();
    std::vector<Interval> v;
    for (const KExpr& o : n.operands) v.push_back(eval(o));
    switch (n.op) {
      case OpKind::Add: return with_loop_facts(n, add(v[0], v[1]));
      case OpKind::Sub: return sub(v[0], v[1]);
      case OpKind::Mul: return mul(v[0], v[1]);
      case OpKind::Neg: return sub(Interval::of(0, 0), v[0]);
      case OpKind::Min:
        return v[0].known && v[1].known ? Interval::of(std::min(v[0].lo, v[1].lo), std::min(v[0].hi, v[1].hi))
                                        : Interval::unknown();
      case OpKind::Max:
        return v[0].known && v[1].known ? Interval::of(std::max(v[0].lo, v[1].lo), std::max(v[0].hi, v[1].hi))
                                        : Interval::unknown();
      case OpKind::And: {
        if (is_bool(n.dtype)) return Interval::of(0, 1);
        // A bitwise and with a non-negative operand lies in [0, that operand].
        const bool a = v[0].known && v[0].lo >= 0;
        const bool b = v[1].known && v[1].lo >= 0;
        if (a && b) return Interval::of(0, std::min(v[0].hi, v[1].hi));
        if (a) return Interval::of(0, v[0].hi);
        if (b) return Interval::of(0, v[1].hi);
        return Interval::unknown();
      }
      case OpKind::Rem: {
        if (!v[0].known || !v[1].known || v[1].lo <= 0) return Interval::unknown();
        const int64_t m = v[1].hi - 1;
        if (v[0].lo >= 0) return Interval::of(0, std::min(v[0].hi, m));
        if (v[0].hi <= 0) return Interval::of(std::max(v[0].lo, -m), 0);
        return Interval::of(-m, m);
      }
      case OpKind::Div:
        if (!v[0].known || !v[1].known || v[1].lo <= 0 || v[0].lo < 0) return Interval::unknown();
        return Interval::of(v[0].lo / v[1].hi, v[0].hi / v[1].lo);
      case OpKind::Select: return join(v[1], v[2]);
      case OpKind::Cast: {
        const KernelExprNode& from = n.operands[0].node();
        if (is_float(from.dtype) || !v[0].known) return Interval::unknown();
        return fits(v[0], n.cast_to) ? v[0] : Interval::unknown();
      }
      case OpKind::Or:
      case OpKind::Not: return Interval::of(0, 1);
      default: return is_comparison(n.op) ? Interval::of(0, 1) : Interval::unknown();
    }
  }

  bool access_in_range(const std::string& array, const std::vector<KExpr>& index) const {
    const KernelParam* p = k_.find_param(array);
    if (p == nullptr) return false;
    const ArrayView& view = args_[static_cast<size_t>(p - k_.params.data())].array;
    if (static_cast<int>(index.size()) != view.rank) return false;
    for (size_t d = 0; d < index.size(); ++d) {
      Interval i = eval(index[d]);
      if (!i.known || i.lo < 0 || i.hi >= view.shape[d]) return false;
    }
    return true;
  }

  bool expr_in_range(const KExpr& e) const {
    const KernelExprNode& n = e.node();
    for (const KExpr& o : n.operands) {
      if (!expr_in_range(o)) return false;
    }
    return n.kind != KernelExprKind::Load || access_in_range(n.name, n.operands);
  }

  // Narrows the names a condition bounds (v < e, v <= e, e > v, ... and
  // conjunctions of them) for the body it guards; returns how many it pushed.
  size_t refine(const KExpr& cond) {
    const KernelExprNode& n = cond.node();
    if (n.kind != KernelExprKind::Op) return 0;
    if (n.op == OpKind::And && is_bool(n.dtype)) return refine(n.operands[0]) + refine(n.operands[1]);
    const bool lt = n.op == OpKind::Lt || n.op == OpKind::Gt;
    if (!lt && n.op != OpKind::Le && n.op != OpKind::Ge) return 0;
    // small <= big - (lt ? 1 : 0)
    const bool flipped = n.op == OpKind::Gt || n.op == OpKind::Ge;
    const KExpr& small = n.operands[flipped ? 1 : 0];
    const KExpr& big = n.operands[flipped ? 0 : 1];
    const int64_t gap = lt ? 1 : 0;
    size_t pushed = 0;
    const Interval a = eval(small);
    const Interval b = eval(big);
    if (!a.known || !b.known) return 0;
    std::string name;
    int64_t offset = 0;
    // v + c <= big - gap: v <= big.hi - gap - c.
    if (name_plus_constant(small, &name, &offset)) {
      const Interval v = eval(kernel_name(name));
      int64_t top = 0;
      if (v.known && !__builtin_sub_overflow(b.hi, gap, &top) && !__builtin_sub_overflow(top, offset, &top)) {
        refined_.emplace_back(name, Interval::of(v.lo, std::min(v.hi, top)));
        ++pushed;
      }
    }
    // small + gap <= w + c: w >= small.lo + gap - c.
    if (name_plus_constant(big, &name, &offset)) {
      const Interval w = eval(kernel_name(name));
      int64_t bottom = 0;
      if (w.known && !__builtin_add_overflow(a.lo, gap, &bottom) && !__builtin_sub_overflow(bottom, offset, &bottom)) {
        refined_.emplace_back(name, Interval::of(std::max(w.lo, bottom), w.hi));
        ++pushed;
      }
    }
    return pushed;
  }

  // `e` is a name, or a name plus or minus an integer literal.
  static bool name_plus_constant(const KExpr& e, std::string* name, int64_t* offset) {
    const KernelExprNode& n = e.node();
    if (n.kind == KernelExprKind::Name) {
      *name = n.name;
      *offset = 0;
      return true;
    }
    if (n.kind != KernelExprKind::Op || n.operands.size() != 2 || (n.op != OpKind::Add && n.op != OpKind::Sub)) return false;
    auto literal = [](const KernelExprNode& v) {
      return v.kind == KernelExprKind::Literal && !v.is_float_literal && !v.is_bool_literal;
    };
    const KernelExprNode& l = n.operands[0].node();
    const KernelExprNode& r = n.operands[1].node();
    if (l.kind == KernelExprKind::Name && literal(r)) {
      if (n.op == OpKind::Sub && r.int_value == INT64_MIN) return false;
      *name = l.name;
      *offset = n.op == OpKind::Add ? r.int_value : -r.int_value;
      return true;
    }
    if (n.op == OpKind::Add && literal(l) && r.kind == KernelExprKind::Name) {
      *name = r.name;
      *offset = l.int_value;
      return true;
    }
    return false;
  }

  bool block_in_range(const std::vector<KStmt>& body) {
    for (const KStmt& s : body) {
      if (s.value.defined() && !expr_in_range(s.value)) return false;
      for (const KExpr& i : s.index) {
        if (!expr_in_range(i)) return false;
      }
      if (s.kind == KernelStmtKind::Store && !access_in_range(s.name, s.index)) return false;
      if (s.kind == KernelStmtKind::If) {
        const size_t pushed = refine(s.value);
        const bool ok = block_in_range(s.body);
        refined_.resize(refined_.size() - pushed);
        if (!ok) return false;
      } else {
        const bool fact = s.kind == KernelStmtKind::For && push_loop_fact(s);
        const bool ok = block_in_range(s.body);
        if (fact) facts_.pop_back();
        if (!ok) return false;
      }
      if (!block_in_range(s.else_body)) return false;
    }
    return true;
  }

  // A loop `for t < a - b`, with b a range index, scalar or symbol (fixed
  // for the call) and t never assigned in its body, keeps t + b < a: the one
  // relation between two values the intervals keep (`for t < m - i { x[i + t] }`).
  struct LoopFact {
    std::string var;
    KExpr minuend;
    std::string subtrahend;
  };

  static bool assigns(const std::vector<KStmt>& body, const std::string& name) {
    for (const KStmt& s : body) {
      if ((s.kind == KernelStmtKind::Assign || s.kind == KernelStmtKind::Let) && s.name == name) return true;
      if (assigns(s.body, name) || assigns(s.else_body, name)) return true;
    }
    return false;
  }

  bool push_loop_fact(const KStmt& loop) {
    const KernelExprNode& e = loop.value.node();
    if (e.kind != KernelExprKind::Op || e.op != OpKind::Sub || e.operands.size() != 2) return false;
    const KernelExprNode& b = e.operands[1].node();
    if (b.kind != KernelExprKind::Name || !env_.count(b.name) || locals_.count(b.name)) return false;
    if (assigns(loop.body, loop.name)) return false;
    facts_.push_back(LoopFact{loop.name, e.operands[0], b.name});
    return true;
  }

  Interval with_loop_facts(const KernelExprNode& n, Interval sum) const {
    if (!sum.known) return sum;
    const KernelExprNode& x = n.operands[0].node();
    const KernelExprNode& y = n.operands[1].node();
    if (x.kind != KernelExprKind::Name || y.kind != KernelExprKind::Name) return sum;
    for (const LoopFact& f : facts_) {
      const bool match = (x.name == f.var && y.name == f.subtrahend) || (y.name == f.var && x.name == f.subtrahend);
      const Interval a = match ? eval(f.minuend) : Interval::unknown();
      if (a.known && a.hi > INT64_MIN) sum.hi = std::min(sum.hi, a.hi - 1);
    }
    return sum;
  }

  const UserKernel& k_;
  const std::vector<KernelArg>& args_;
  std::vector<LoopFact> facts_;
  std::map<std::string, Interval> env_;
  std::map<std::string, Interval> locals_;
  // Names narrowed by the conditions of the branches being checked, innermost last.
  std::vector<std::pair<std::string, Interval>> refined_;
};

bool mentions(const KExpr& e, const std::string& name) {
  return any_node(e, [&name](const KernelExprNode& n) { return n.kind == KernelExprKind::Name && n.name == name; });
}

bool mentions(const std::vector<KStmt>& body, const std::string& name) {
  for (const KStmt& s : body) {
    if (s.value.defined() && mentions(s.value, name)) return true;
    for (const KExpr& i : s.index) {
      if (mentions(i, name)) return true;
    }
    if (mentions(s.body, name) || mentions(s.else_body, name)) return true;
  }
  return false;
}

}  // namespace

bool indices_proven_in_range(const UserKernel& kernel, const KernelBinding& binding, const std::vector<KernelArg>& args) {
  if (binding.index_count == 0) return true;
  return Prover(kernel, binding, args).proven();
}

bool indices_read_scalars(const UserKernel& kernel) {
  for (const KernelParam& p : kernel.params) {
    if (p.is_array || is_float(p.dtype)) continue;
    if (mentions(kernel.body, p.name)) return true;
  }
  return false;
}

}  // namespace stitch::interp
