#include "codegen/common/index_simplify.h"

#include "codegen/common/index_sums.h"

#include <algorithm>
#include <memory>
#include <numeric>
#include <optional>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "kir/printer.h"
#include "stitch/error.h"

namespace stitch::codegen::common {
namespace {

using namespace index_sums;

using kir::Expr;
using kir::ExprKind;
using kir::Stmt;
using kir::StmtList;

// What a name means where an expression uses it.
struct Binding {
  std::optional<Sum> sum;  // an index let the rewrite looks through
  std::string key;         // otherwise: the leaf's key
  Bounds bounds;
};

// The node's own cost, its operands' apart.
int own_cost(const Expr& e) {
  if (e->kind == ExprKind::Load) return 1;
  if (e->kind != ExprKind::Op) return 0;
  return (e->op == OpKind::Div || e->op == OpKind::Rem) ? 8 : e->op == OpKind::Mul ? 2 : 1;
}

int cost(const Expr& e) {
  int c = own_cost(e);
  for (const Expr& o : e->operands) c += cost(o);
  return c;
}

class Simplifier {
 public:
  Simplifier(std::map<std::string, const kir::BufferParam*> buffers, std::set<std::string> scalars,
             std::set<std::string> assigned, std::set<std::string> defined_once)
      : buffers_(std::move(buffers)), scalars_(std::move(scalars)), assigned_(std::move(assigned)),
        defined_once_(std::move(defined_once)) {
    scopes_.emplace_back();
  }
  ~Simplifier() {
    if (tl_facts == &facts_) tl_facts = nullptr;
  }
  Simplifier(const Simplifier&) = delete;
  Simplifier& operator=(const Simplifier&) = delete;

  // Opens loop `var`'s body (end_loop closes it): the names it defines vary
  // there, and what reads none of them costs nothing inside (it is hoisted).
  // With `same_level`, `var` joins the innermost open loop's names instead.
  void note_loop(const std::string& var, const Expr& extent, bool same_level = false) {
    if (same_level && !loops_.empty()) {
      loops_.back().insert(var);
    } else {
      loops_.push_back({var});
    }
    int64_t n = 0;
    Binding b;
    b.key = "loop:" + var;
    b.bounds = kir::is_int_constant(extent, &n) && n > 0 ? Bounds{0, n - 1} : Bounds{0, kInf};
    scopes_.back().names[var] = b;
  }

  // `written`: the init as it was before simplify rewrote it, whose sum keeps
  // the digits' bases (a digit written out without the multiples of its
  // divisor, t % 16 for lin % 16, is another base's digit, which would no
  // longer join lin's other digits).
  void note_let(const kir::LetStmt& let, const Expr& written) {
    if (!loops_.empty()) loops_.back().insert(let.name);
    Binding b;
    b.key = fmt::format("let:{}#{}", let.name, ++fresh_);
    if (let.dtype == DType::i64 && written.defined() && !assigned_.count(let.name)) {
      try {
        b.sum = to_sum(written);
        b.bounds = sum_bounds(*b.sum);
      } catch (const GiveUp&) {
        b.sum.reset();
      }
      if (b.sum && defined_once_.count(let.name) && !find_let(b.sum->key())) {
        scopes_.back().lets_by_key[b.sum->key()] = let.name;
        if (b.sum->terms.size() >= 2) scopes_.back().let_parts.emplace_back(let.name, *b.sum);
      }
    }
    scopes_.back().names[let.name] = b;
  }

  void end_loop() { loops_.pop_back(); }

  // Within an `if`'s then-body: what its condition proves, for a conjunct
  // `k x + c OP n` (OP one of < <= > >=, n a literal) of one atom x.
  void push_facts(const Expr& cond) {
    std::map<std::string, Bounds> facts;
    collect_facts(cond, facts);
    facts_.push_back(std::move(facts));
    tl_facts = &facts_;
  }
  void pop_facts() {
    facts_.pop_back();
    tl_facts = facts_.empty() ? nullptr : &facts_;
  }
  void push() { scopes_.emplace_back(); }
  void pop() { scopes_.pop_back(); }

  // `e` with every i64 part replaced by a cheaper equal expression where one exists.
  Expr simplify(const Expr& e) {
    if (e->kind == ExprKind::Var && e->dtype == DType::i64) {
      // An index let of one known value is that value (a unit dimension's
      // index); one equal to an earlier index let is that let (a copy).
      const Binding* b = find_name(e->name);
      if (b && b->sum && b->sum->terms.empty()) return kir::int_const(b->sum->constant);
      if (b && b->sum) {
        if (std::optional<std::string> first = find_let(b->sum->key()); first && *first != e->name) {
          return kir::var(*first);
        }
      }
    }
    if (e->kind == ExprKind::Const || e->kind == ExprKind::Var) return e;
    Expr same = with_simplified_operands(e);
    if (e->kind == ExprKind::Load) return kir::load(e->name, e->dtype, linearized(e->name, same->operands));
    if (e->kind != ExprKind::Op || e->dtype != DType::i64) return same;
    try {
      Expr rewritten = build(to_sum(same));
      return cost_in_loop(rewritten) < cost_in_loop(same) ? rewritten : same;
    } catch (const GiveUp&) {
      return same;
    }
  }

  // The indices of an access to global buffer `buffer` (simplified already):
  // where the row-major offset they make simplifies to a cheaper X, the
  // indices that delinearise X in the buffer's shape, [X / S0, (X / S1) % d1,
  // ..., X % dn], which both emitters read back as the offset X
  // (IndexFacts::cancelled_offset); else as given. A reshape read in another
  // shape so reads at one linear offset.
  std::vector<Expr> linearized(const std::string& buffer, const std::vector<Expr>& index) {
    auto it = buffers_.find(buffer);
    if (it == buffers_.end() || index.size() < 2 || !it->second->strides.empty()) return index;
    std::vector<int64_t> dims;
    for (const Expr& d : it->second->shape) {
      int64_t n = 0;
      if (!kir::is_int_constant(d, &n) || n <= 0) return index;
      dims.push_back(n);
    }
    try {
      Sum offset;
      int stride_cost = 0;
      int64_t stride = 1;
      for (size_t k = index.size(); k-- > 0;) {
        offset = add(std::move(offset), scaled(to_sum(index[k]), stride));
        stride = checked(Wide{stride} * dims[k]);
        stride_cost += cost(index[k]) + (k > 0 ? 3 : 0);
      }
      const Expr x = build(offset);
      if (cost(x) >= stride_cost) return index;
      std::vector<Expr> out;
      stride = 1;
      for (size_t k = index.size(); k-- > 0;) {
        Expr digit = stride == 1 ? x : x / stride;
        if (k > 0) digit = dims[k] == 1 ? kir::int_const(0) : digit % dims[k];
        out.insert(out.begin(), digit);
        stride *= dims[k];
      }
      return out;
    } catch (const GiveUp&) {
      return index;
    }
  }

 private:
  struct Scope {
    std::map<std::string, Binding> names;
    std::map<std::string, std::string> lets_by_key;  // an index let's sum -> its name
    // Index lets of two terms or more, for build to use where a sum holds one
    // (a row's index inside a reshaped row's digits: 64 o1 + (16 (b % 32) / 8 + t)
    // is 64 o1 + r, where r is that let).
    std::vector<std::pair<std::string, Sum>> let_parts;
  };

  // A let whose terms `s` holds, each times one factor k: (name, k).
  std::optional<std::pair<std::string, int64_t>> find_let_part(const Sum& s) const {
    for (auto scope = scopes_.rbegin(); scope != scopes_.rend(); ++scope) {
      for (auto it = scope->let_parts.rbegin(); it != scope->let_parts.rend(); ++it) {
        const auto& [name, part] = *it;
        int64_t k = 0;  // each of part's terms is k times s's: the rest has fewer terms
        bool holds = part.terms.size() <= s.terms.size();
        for (const auto& [key, t] : part.terms) {
          if (!holds) break;
          auto f = s.terms.find(key);
          holds = f != s.terms.end() && f->second.coef % t.coef == 0 && (k == 0 || f->second.coef / t.coef == k);
          if (holds) k = f->second.coef / t.coef;
        }
        if (holds && k != 0) return std::pair{name, k};
      }
    }
    return std::nullopt;
  }

  const Binding* find_name(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      if (auto f = it->names.find(name); f != it->names.end()) return &f->second;
    }
    return nullptr;
  }
  void collect_facts(const Expr& cond, std::map<std::string, Bounds>& facts) {
    if (cond->kind != ExprKind::Op) return;
    if (cond->op == OpKind::And) {
      for (const Expr& o : cond->operands) collect_facts(o, facts);
      return;
    }
    const OpKind op = cond->op;
    if ((op != OpKind::Lt && op != OpKind::Le && op != OpKind::Gt && op != OpKind::Ge) ||
        cond->operands[0]->dtype != DType::i64) {
      return;
    }
    int64_t n = 0;
    if (!kir::is_int_constant(cond->operands[1], &n)) return;
    try {
      const Sum x = to_sum(cond->operands[0]);
      if (x.terms.size() != 1) return;
      const Term& t = x.terms.begin()->second;
      // k a + c OP n: a bound of k a, then of a.
      const Wide k = t.coef, rest = Wide{n} - x.constant;
      Bounds ka;
      if (op == OpKind::Ge) ka.lo = rest;
      if (op == OpKind::Gt) ka.lo = rest + 1;
      if (op == OpKind::Le) ka.hi = rest;
      if (op == OpKind::Lt) ka.hi = rest - 1;
      auto floor_div = [](Wide a, Wide b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0)) ? 1 : 0); };
      auto ceil_div = [&](Wide a, Wide b) { return -floor_div(-a, b); };
      Bounds a;
      if (k > 0) {
        if (ka.lo > -kInf) a.lo = ceil_div(ka.lo, k);
        if (ka.hi < kInf) a.hi = floor_div(ka.hi, k);
      } else {
        if (ka.hi < kInf) a.lo = ceil_div(ka.hi, k);
        if (ka.lo > -kInf) a.hi = floor_div(ka.lo, k);
      }
      Bounds& f = facts.try_emplace(t.atom.key, Bounds{}).first->second;
      f.lo = std::max(f.lo, a.lo);
      f.hi = std::min(f.hi, a.hi);
    } catch (const GiveUp&) {
    }
  }

  bool varies(const Expr& e) const {
    if (e->kind == ExprKind::Var) return loops_.back().count(e->name) > 0;
    if (e->kind == ExprKind::Load) return true;  // a store in the loop may change it
    return std::any_of(e->operands.begin(), e->operands.end(), [this](const Expr& o) { return varies(o); });
  }

  // cost(e) inside the innermost loop: a part that reads nothing the loop
  // defines is computed once before it (`(blk / 8) % 48` in a thread loop).
  int cost_in_loop(const Expr& e) const {
    if (loops_.empty()) return cost(e);
    if (!varies(e)) return 0;
    int c = own_cost(e);
    for (const Expr& o : e->operands) c += cost_in_loop(o);
    return c;
  }

  const Sum* find_let_sum(const std::string& name) const {
    const Binding* b = find_name(name);
    return b && b->sum ? &*b->sum : nullptr;
  }
  std::optional<std::string> find_let(const std::string& key) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      if (auto f = it->lets_by_key.find(key); f != it->lets_by_key.end()) return f->second;
    }
    return std::nullopt;
  }

  Sum leaf(const Expr& e, std::string key, Bounds bounds = {}) {
    Atom a;
    a.leaf = e;
    a.leaf_bounds = bounds;
    a.key = std::move(key);
    Sum s;
    add_term(s, 1, a);
    return s;
  }

  Sum var_sum(const Expr& e) {
    const Binding* b = find_name(e->name);
    if (b && b->sum) return *b->sum;
    if (b) return leaf(e, b->key, b->bounds);
    // A scalar parameter is one value for the whole kernel; anything else
    // unbound (a reduction's result, an assigned local) may change, so each
    // use is a value of its own.
    if (scalars_.count(e->name)) return leaf(e, "scalar:" + e->name);
    return leaf(e, fmt::format("free:{}#{}", e->name, ++fresh_));
  }

  // `e` itself, its operands simplified.
  Expr with_simplified_operands(const Expr& e) {
    if (e->kind == ExprKind::Const || e->kind == ExprKind::Var) return e;
    std::vector<Expr> operands;
    for (const Expr& o : e->operands) operands.push_back(simplify(o));
    return kir::with_operands(e, std::move(operands));
  }

  Sum opaque(const Expr& e) {
    const Expr s = with_simplified_operands(e);
    return leaf(s, kir::has_load(s) ? fmt::format("load#{}", ++fresh_) : "expr:" + kir::print_expr(s));
  }

  Sum to_sum(const Expr& e) {
    int64_t c = 0;
    if (kir::is_int_constant(e, &c) && e->dtype == DType::i64) return constant_sum(c);
    if (e->kind == ExprKind::Var) return var_sum(e);
    if (e->kind != ExprKind::Op || e->dtype != DType::i64) return opaque(e);
    switch (e->op) {
      case OpKind::Add: return add(to_sum(e->operands[0]), to_sum(e->operands[1]));
      case OpKind::Sub: return add(to_sum(e->operands[0]), scaled(to_sum(e->operands[1]), -1));
      case OpKind::Neg: return scaled(to_sum(e->operands[0]), -1);
      case OpKind::Mul: return product(e);
      case OpKind::Div:
      case OpKind::Rem: return quotient(e);
      default: return opaque(e);
    }
  }

  Sum product(const Expr& e) {
    const Sum a = to_sum(e->operands[0]), b = to_sum(e->operands[1]);
    if (a.terms.empty()) return scaled(b, a.constant);
    if (b.terms.empty()) return scaled(a, b.constant);
    return opaque(e);
  }

  Sum quotient(const Expr& e) {
    const Sum x = to_sum(e->operands[0]), d = to_sum(e->operands[1]);
    if (!d.terms.empty() || d.constant <= 0 || !sum_bounds(x).nonneg()) return opaque(e);
    return e->op == OpKind::Div ? make_div(x, d.constant) : make_rem(x, d.constant);
  }

  Expr build_atom(const Atom& a) {
    if (!a.digit()) return a.leaf;
    Sum alone;
    add_term(alone, 1, a);
    if (std::optional<std::string> name = find_let(alone.key())) return kir::var(*name);
    if (std::optional<Sum> smaller = without_multiples(a)) return build(*smaller);
    Expr x = build(*a.base);
    if (a.lo > 1) x = x / a.lo;
    if (a.hi != 0) x = x % (a.hi / a.lo);
    return x;
  }

  // The digit with the multiples of its divisor out of its base, where the
  // rest stays non-negative: (q hi + r) % hi = r % hi, then (q lo + r) / lo =
  // q + r / lo (a column index in a strip whose first column is a multiple
  // of 64: (768 y + 256 x + t) % 64 = t % 64). Only as written out, so that
  // the digits of one base still join while sums are made.
  static std::optional<Sum> without_multiples(const Atom& a) {
    auto drop = [](const Sum& s, int64_t d) -> std::optional<std::pair<Sum, Sum>> {
      for (auto [q, r] : {split(s, d), split_constant_low(s, d)}) {
        if (!q.terms.empty() && sum_bounds(q).nonneg() && sum_bounds(r).nonneg()) return std::pair{q, r};
      }
      return std::nullopt;
    };
    if (a.hi != 0) {
      if (std::optional<std::pair<Sum, Sum>> qr = drop(*a.base, a.hi)) return make_digit(qr->second, a.lo, a.hi);
    } else if (std::optional<std::pair<Sum, Sum>> qr = drop(*a.base, a.lo)) {
      return add(qr->first, make_digit(qr->second, a.lo, 0));
    }
    return std::nullopt;
  }

  // The sum as an expression: a let of the same value by name, else the terms
  // by decreasing coefficient (row-major order), then the constant.
  Expr build(const Sum& s) {
    if (std::optional<std::string> name = find_let(s.key())) return kir::var(*name);
    if (std::optional<std::pair<std::string, int64_t>> part = find_let_part(s)) {
      const auto& [name, k] = *part;
      const Sum& let_sum = *find_let_sum(name);
      Sum rest = s;
      for (const auto& [key, t] : let_sum.terms) add_term(rest, checked(Wide{-k} * t.coef), t.atom);
      rest.constant = checked(Wide{rest.constant} - Wide{k} * let_sum.constant);
      Expr x = kir::var(name);
      if (k != 1) x = x * (k < 0 ? -k : k);
      if (rest.terms.empty() && rest.constant == 0) return k < 0 ? kir::int_const(0) - x : x;
      const Expr r = build(rest);
      return k < 0 ? r - x : r + x;
    }
    std::vector<const Term*> order;
    for (const auto& [key, t] : s.terms) order.push_back(&t);
    std::stable_sort(order.begin(), order.end(), [](const Term* a, const Term* b) {
      const Wide ma = a->coef < 0 ? -Wide{a->coef} : a->coef, mb = b->coef < 0 ? -Wide{b->coef} : b->coef;
      return (a->coef > 0) != (b->coef > 0) ? a->coef > 0 : ma > mb;
    });
    Expr out;
    for (const Term* t : order) {
      Expr x = build_atom(t->atom);
      const int64_t m = t->coef < 0 ? -t->coef : t->coef;
      if (m != 1) x = x * m;
      if (!out.defined()) {
        out = t->coef < 0 ? kir::int_const(0) - x : x;  // KIR's index arithmetic has no i64 neg
      } else {
        out = t->coef < 0 ? out - x : out + x;
      }
    }
    if (!out.defined()) return kir::int_const(s.constant);
    if (s.constant > 0) out = out + s.constant;
    if (s.constant < 0) out = out - (-s.constant);
    return out;
  }

  std::map<std::string, const kir::BufferParam*> buffers_;  // global buffers, by name
  std::set<std::string> scalars_;
  std::set<std::string> assigned_;
  std::set<std::string> defined_once_;
  std::vector<Scope> scopes_;
  std::vector<std::set<std::string>> loops_;  // per open loop: its variable and the lets in its body
  std::vector<std::map<std::string, Bounds>> facts_;  // per enclosing then-body: push_facts
  int fresh_ = 0;
};

void collect_names(const StmtList& stmts, std::set<std::string>& assigned, std::map<std::string, int>& lets) {
  for (const Stmt& s : stmts) {
    if (const auto* a = std::get_if<kir::AssignStmt>(&s.node)) assigned.insert(a->name);
    if (const auto* l = std::get_if<kir::LetStmt>(&s.node)) ++lets[l->name];
    if (const auto* f = std::get_if<kir::ForStmt>(&s.node)) collect_names(f->body, assigned, lets);
    if (const auto* i = std::get_if<kir::IfStmt>(&s.node)) {
      collect_names(i->then_body, assigned, lets);
      collect_names(i->else_body, assigned, lets);
    }
  }
}

void simplify_body(StmtList& stmts, Simplifier& s);

void collect_vars(const Expr& e, std::set<std::string>& names) {
  if (e->kind == ExprKind::Var) names.insert(e->name);
  for (const Expr& o : e->operands) collect_vars(o, names);
}

void simplify_stmt(Stmt& stmt, Simplifier& s) {
  if (auto* f = std::get_if<kir::ForStmt>(&stmt.node)) {
    f->extent = s.simplify(f->extent);
    s.push();
    s.note_loop(f->var, f->extent);
    simplify_body(f->body, s);
    s.end_loop();
    s.pop();
  } else if (auto* i = std::get_if<kir::IfStmt>(&stmt.node)) {
    i->cond = s.simplify(i->cond);
    s.push_facts(i->cond);
    simplify_body(i->then_body, s);
    s.pop_facts();
    simplify_body(i->else_body, s);
  } else if (auto* l = std::get_if<kir::LetStmt>(&stmt.node)) {
    const Expr written = l->init;
    if (l->init.defined()) l->init = s.simplify(l->init);
    s.note_let(*l, written);
  } else if (auto* a = std::get_if<kir::AssignStmt>(&stmt.node)) {
    a->value = s.simplify(a->value);
  } else if (auto* st = std::get_if<kir::StoreStmt>(&stmt.node)) {
    for (Expr& e : st->index) e = s.simplify(e);
    st->index = s.linearized(st->buffer, st->index);
    st->value = s.simplify(st->value);
  } else if (auto* v = std::get_if<kir::VectorMoveStmt>(&stmt.node)) {
    for (Expr& e : v->index) e = s.simplify(e);
    v->index = s.linearized(v->buffer, v->index);
    v->array_first = s.simplify(v->array_first);
  } else if (auto* p = std::get_if<kir::PrefetchStmt>(&stmt.node)) {
    p->first = s.simplify(p->first);
    p->count = s.simplify(p->count);
  } else if (auto* r = std::get_if<kir::ReduceStmt>(&stmt.node)) {
    r->value = s.simplify(r->value);
    if (r->index.defined()) r->index = s.simplify(r->index);
  }
}

void simplify_body(StmtList& stmts, Simplifier& s) {
  s.push();
  for (Stmt& stmt : stmts) simplify_stmt(stmt, s);
  s.pop();
}

void count_uses(const Expr& e, std::map<std::string, int>& uses) {
  if (e->kind == ExprKind::Var) ++uses[e->name];
  for (const Expr& o : e->operands) count_uses(o, uses);
}

void count_uses(const StmtList& stmts, std::map<std::string, int>& uses) {
  auto use = [&uses](const Expr& e) {
    if (e.defined()) count_uses(e, uses);
  };
  for (const Stmt& stmt : stmts) {
    if (const auto* f = std::get_if<kir::ForStmt>(&stmt.node)) {
      use(f->extent);
      count_uses(f->body, uses);
    } else if (const auto* i = std::get_if<kir::IfStmt>(&stmt.node)) {
      use(i->cond);
      count_uses(i->then_body, uses);
      count_uses(i->else_body, uses);
    } else if (const auto* l = std::get_if<kir::LetStmt>(&stmt.node)) {
      use(l->init);
    } else if (const auto* a = std::get_if<kir::AssignStmt>(&stmt.node)) {
      ++uses[a->name];
      use(a->value);
    } else if (const auto* st = std::get_if<kir::StoreStmt>(&stmt.node)) {
      for (const Expr& e : st->index) use(e);
      use(st->value);
    } else if (const auto* v = std::get_if<kir::VectorMoveStmt>(&stmt.node)) {
      for (const Expr& e : v->index) use(e);
      use(v->array_first);
    } else if (const auto* p = std::get_if<kir::PrefetchStmt>(&stmt.node)) {
      use(p->first);
      use(p->count);
    } else if (const auto* r = std::get_if<kir::ReduceStmt>(&stmt.node)) {
      use(r->value);
      use(r->index);
    }
  }
}

// Drops the lets nothing reads any more (the copies and digits the rewrite
// made unused); true when one went. An emitter writes every let, and one left
// between a block's uniform and varying statements splits its thread loop.
bool drop_unused_lets(StmtList& stmts, const std::map<std::string, int>& uses) {
  bool dropped = false;
  for (auto it = stmts.begin(); it != stmts.end();) {
    if (const auto* l = std::get_if<kir::LetStmt>(&it->node); l && !uses.count(l->name)) {
      it = stmts.erase(it);
      dropped = true;
      continue;
    }
    if (auto* f = std::get_if<kir::ForStmt>(&it->node)) dropped |= drop_unused_lets(f->body, uses);
    if (auto* i = std::get_if<kir::IfStmt>(&it->node)) {
      dropped |= drop_unused_lets(i->then_body, uses);
      dropped |= drop_unused_lets(i->else_body, uses);
    }
    ++it;
  }
  return dropped;
}

}  // namespace

kir::Kernel simplify_indices(kir::Kernel kernel) {
  std::set<std::string> assigned;
  std::map<std::string, int> lets;
  collect_names(kernel.body, assigned, lets);
  std::set<std::string> once;
  for (const auto& [name, n] : lets) {
    if (n == 1) once.insert(name);
  }
  std::set<std::string> scalars;
  for (const kir::ScalarParam& p : kernel.scalars) scalars.insert(p.name);
  std::map<std::string, const kir::BufferParam*> buffers;
  for (const kir::BufferParam& b : kernel.buffers) buffers[b.name] = &b;
  Simplifier s(std::move(buffers), std::move(scalars), std::move(assigned), std::move(once));
  simplify_body(kernel.body, s);
  for (bool again = true; again;) {
    std::map<std::string, int> uses;
    count_uses(kernel.body, uses);
    again = drop_unused_lets(kernel.body, uses);
  }
  return kernel;
}

std::vector<kir::Kernel> simplify_indices(std::vector<kir::Kernel> kernels) {
  for (kir::Kernel& k : kernels) k = simplify_indices(std::move(k));
  return kernels;
}

kir::Expr simplify_index_expr(const kir::Expr& e, const std::map<std::string, int64_t>& loop_extents) {
  std::set<std::string> scalars;
  collect_vars(e, scalars);
  for (const auto& [var, n] : loop_extents) scalars.erase(var);
  Simplifier s({}, std::move(scalars), {}, {});
  // The loops as one level: every variable varies, as no order is given.
  for (const auto& [var, n] : loop_extents) s.note_loop(var, kir::int_const(n), true);
  return s.simplify(e);
}

}  // namespace stitch::codegen::common
