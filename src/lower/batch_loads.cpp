#include "lower/batch_loads.h"

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "stitch/error.h"

namespace stitch::lower {
namespace {

using kir::Expr;
using kir::ExprKind;
using kir::Stmt;
using kir::StmtList;

void collect_vars(const Expr& e, std::set<std::string>& out) {
  if (!e.defined()) return;
  if (e->kind == ExprKind::Var) out.insert(e->name);
  for (const Expr& o : e->operands) collect_vars(o, out);
}

bool is_index_dtype(DType t) { return is_integer(t) || is_bool(t); }

// Buffers the kernel stores to: loads of them may not move past a store.
void collect_stored(const StmtList& body, std::set<std::string>& out) {
  for (const Stmt& s : body) {
    std::visit(
        [&](const auto& n) {
          using T = std::decay_t<decltype(n)>;
          if constexpr (std::is_same_v<T, kir::StoreStmt>) out.insert(n.buffer);
          if constexpr (std::is_same_v<T, kir::ForStmt>) collect_stored(n.body, out);
          if constexpr (std::is_same_v<T, kir::IfStmt>) {
            collect_stored(n.then_body, out);
            collect_stored(n.else_body, out);
          }
        },
        s.node);
  }
}

// One unrolled loop's rewrite: which locals may be computed ahead, and the
// loads that will be, each with its array.
class LoopSplit {
 public:
  LoopSplit(const kir::Kernel& k, const std::set<std::string>& stored, const kir::ForStmt& loop, int64_t trips)
      : k_(k), stored_(stored), loop_(loop), trips_(trips) {
    allowed_.insert(loop.var);
  }

  // Whether the body has only the statements the split understands.
  bool body_is_simple(const StmtList& body) {
    for (const Stmt& s : body) {
      if (const auto* l = std::get_if<kir::LetStmt>(&s.node)) {
        defined_.insert(l->name);
      } else if (const auto* i = std::get_if<kir::IfStmt>(&s.node)) {
        if (!body_is_simple(i->then_body) || !body_is_simple(i->else_body)) return false;
      } else if (const auto* a = std::get_if<kir::AssignStmt>(&s.node)) {
        assigned_.insert(a->name);  // an accumulator: never read ahead
      } else if (!std::holds_alternative<kir::StoreStmt>(s.node) && !std::holds_alternative<kir::PrefetchStmt>(s.node)) {
        return false;
      }
    }
    return true;
  }

  // Finds the candidate loads of `body` (a block reached under conditions
  // that may be evaluated ahead when `ahead`), in statement order.
  void find(const StmtList& body, bool ahead, int block) {
    for (const Stmt& s : body) {
      if (const auto* l = std::get_if<kir::LetStmt>(&s.node)) {
        if (ahead) take_loads(l->init, block);
        if (is_index_dtype(l->dtype) && l->init.defined() && !kir::has_load(l->init) && usable(l->init)) {
          allowed_.insert(l->name);
        }
      } else if (const auto* st = std::get_if<kir::StoreStmt>(&s.node)) {
        if (ahead) take_loads(st->value, block);
      } else if (const auto* a = std::get_if<kir::AssignStmt>(&s.node)) {
        if (ahead) take_loads(a->value, block);
      } else if (const auto* i = std::get_if<kir::IfStmt>(&s.node)) {
        const bool cond_ahead = ahead && !kir::has_load(i->cond) && usable(i->cond);
        find(i->then_body, cond_ahead, next_block_++);
        find(i->else_body, cond_ahead, next_block_++);
      }
    }
  }

  int64_t arrays() const { return static_cast<int64_t>(batched_.size()); }

  // The loop that loads: the body's integer locals and conditions, and one
  // store into its array for each candidate, where the candidate was read.
  StmtList load_body(const StmtList& body, int& block) const {
    StmtList out;
    const int here = block;
    for (const Stmt& s : body) {
      if (const auto* l = std::get_if<kir::LetStmt>(&s.node)) {
        if (allowed_.count(l->name)) out.push_back({kir::LetStmt{ahead_name(l->name), l->dtype, renamed(l->init)}});
        store_loads(l->init, here, out);
      } else if (const auto* st = std::get_if<kir::StoreStmt>(&s.node)) {
        store_loads(st->value, here, out);
      } else if (const auto* a = std::get_if<kir::AssignStmt>(&s.node)) {
        store_loads(a->value, here, out);
      } else if (const auto* i = std::get_if<kir::IfStmt>(&s.node)) {
        auto [then_body, else_body] = branches(*i, block, &LoopSplit::load_body);
        // A condition that cannot be evaluated ahead guards no candidate.
        if (!kir::has_load(i->cond) && usable(i->cond) && (!then_body.empty() || !else_body.empty())) {
          out.push_back({kir::IfStmt{renamed(i->cond), std::move(then_body), std::move(else_body)}});
        }
      }
    }
    return out;
  }

  // Kernel IR names are unique in a kernel (kir/verifier.h): the loading
  // loop's variable and locals are the computing loop's, renamed.
  std::string ahead_name(const std::string& name) const { return name + "_ahead"; }

  Expr renamed(const Expr& e) const {
    if (!e.defined()) return e;
    if (e->kind == ExprKind::Var) {
      if (e->name != loop_.var && !allowed_.count(e->name)) return e;
      kir::ExprNode copy = e.node();
      copy.name = ahead_name(e->name);
      return Expr(std::make_shared<const kir::ExprNode>(std::move(copy)));
    }
    if (e->operands.empty()) return e;
    std::vector<Expr> operands;
    for (const Expr& o : e->operands) operands.push_back(renamed(o));
    return kir::with_operands(e, std::move(operands));
  }

  // The loop that computes: the body with each candidate read from its array.
  StmtList compute_body(const StmtList& body, int& block) const {
    StmtList out;
    const int here = block;
    for (const Stmt& s : body) {
      if (const auto* l = std::get_if<kir::LetStmt>(&s.node)) {
        out.push_back({kir::LetStmt{l->name, l->dtype, from_arrays(l->init, here)}});
      } else if (const auto* st = std::get_if<kir::StoreStmt>(&s.node)) {
        out.push_back({kir::StoreStmt{st->buffer, st->index, from_arrays(st->value, here)}});
      } else if (const auto* a = std::get_if<kir::AssignStmt>(&s.node)) {
        out.push_back({kir::AssignStmt{a->name, from_arrays(a->value, here)}});
      } else if (const auto* i = std::get_if<kir::IfStmt>(&s.node)) {
        auto [then_body, else_body] = branches(*i, block, &LoopSplit::compute_body);
        out.push_back({kir::IfStmt{i->cond, std::move(then_body), std::move(else_body)}});
      } else {
        out.push_back(s);
      }
    }
    return out;
  }

  // An if's two bodies rewritten by `rewrite`, numbered as find numbers
  // blocks: the then-body and its ifs first, then the else-body.
  std::pair<StmtList, StmtList> branches(const kir::IfStmt& i, int& block,
                                         StmtList (LoopSplit::*rewrite)(const StmtList&, int&) const) const {
    int then_block = ++block;
    StmtList then_body = (this->*rewrite)(i.then_body, then_block);
    block = then_block;
    int else_block = ++block;
    StmtList else_body = (this->*rewrite)(i.else_body, else_block);
    block = else_block;
    return {std::move(then_body), std::move(else_body)};
  }

  StmtList declarations() const {
    StmtList out;
    for (const Batched& b : batched_) out.push_back({kir::LocalArrayStmt{b.array, b.load.dtype(), trips_}});
    return out;
  }

 private:
  struct Batched {
    int block;
    Expr load;
    std::string array;
  };

  // A name defined inside the loop may be used ahead only when it is one of
  // the loop's integer locals computed without loads.
  bool usable(const Expr& e) const {
    std::set<std::string> vars;
    collect_vars(e, vars);
    for (const std::string& v : vars) {
      if (assigned_.count(v) || (defined_.count(v) && !allowed_.count(v))) return false;
    }
    return true;
  }

  bool candidate(const Expr& load) const {
    const kir::BufferParam* b = k_.find_buffer(load->name);
    if (!b || b->access != kir::Access::Read || b->may_alias || stored_.count(load->name)) return false;
    for (const Expr& index : load->operands) {
      if (kir::has_load(index) || !usable(index)) return false;
    }
    return true;
  }

  const Batched* find_batched(const Expr& load, int block) const {
    for (const Batched& b : batched_) {
      if (b.block == block && b.load == load) return &b;
    }
    return nullptr;
  }

  void take_loads(const Expr& e, int block) {
    if (!e.defined()) return;
    if (e->kind == ExprKind::Load) {
      if (candidate(e) && !find_batched(e, block)) {
        batched_.push_back({block, e, loop_.var + "_ld" + std::to_string(batched_.size())});
      }
      return;
    }
    for (const Expr& o : e->operands) take_loads(o, block);
  }

  void store_loads(const Expr& e, int block, StmtList& out) const {
    if (!e.defined()) return;
    if (e->kind == ExprKind::Load) {
      const Batched* b = find_batched(e, block);
      if (b && !stored_here_.count(b->array)) {
        stored_here_.insert(b->array);
        out.push_back({kir::StoreStmt{b->array, {kir::var(ahead_name(loop_.var))}, renamed(e)}});
      }
      return;
    }
    for (const Expr& o : e->operands) store_loads(o, block, out);
  }

  Expr from_arrays(const Expr& e, int block) const {
    if (!e.defined()) return e;
    if (e->kind == ExprKind::Load) {
      if (const Batched* b = find_batched(e, block)) return kir::load(b->array, e.dtype(), {kir::var(loop_.var)});
      return e;
    }
    if (e->operands.empty()) return e;
    std::vector<Expr> operands;
    for (const Expr& o : e->operands) operands.push_back(from_arrays(o, block));
    return kir::with_operands(e, std::move(operands));
  }

  const kir::Kernel& k_;
  const std::set<std::string>& stored_;
  const kir::ForStmt& loop_;
  int64_t trips_;
  std::set<std::string> defined_;   // locals the body defines
  std::set<std::string> assigned_;  // names the body assigns (accumulators)
  std::set<std::string> allowed_;  // of those (and the loop variable), what may be computed ahead
  std::vector<Batched> batched_;
  mutable std::set<std::string> stored_here_;
  int next_block_ = 1;
};

// The statements that replace `loop`, or nothing when it stays.
std::optional<StmtList> split(const kir::Kernel& k, const std::set<std::string>& stored, const kir::ForStmt& loop) {
  int64_t trips = 0;
  if ((loop.level != kir::LoopLevel::Unroll && loop.level != kir::LoopLevel::Serial) ||
      !kir::is_int_constant(loop.extent, &trips) || trips < 2) {
    return std::nullopt;
  }
  LoopSplit s(k, stored, loop, trips);
  if (!s.body_is_simple(loop.body)) return std::nullopt;
  s.find(loop.body, true, 0);
  if (s.arrays() == 0 || s.arrays() * trips > kMaxBatchedElements) return std::nullopt;
  StmtList out = s.declarations();
  int block = 0;
  // Both loops unrolled, so the arrays stay in registers (an array indexed by
  // a loop variable the compiler keeps goes to local memory).
  out.push_back({kir::ForStmt{s.ahead_name(loop.var), loop.extent, kir::LoopLevel::Unroll, s.load_body(loop.body, block)}});
  block = 0;
  out.push_back({kir::ForStmt{loop.var, loop.extent, kir::LoopLevel::Unroll, s.compute_body(loop.body, block)}});
  return out;
}

int rewrite(const kir::Kernel& k, const std::set<std::string>& stored, StmtList& body) {
  int count = 0;
  StmtList out;
  for (Stmt& s : body) {
    if (auto* f = std::get_if<kir::ForStmt>(&s.node)) {
      if (std::optional<StmtList> replaced = split(k, stored, *f)) {
        for (Stmt& r : *replaced) out.push_back(std::move(r));
        ++count;
        continue;
      }
      count += rewrite(k, stored, f->body);
    } else if (auto* i = std::get_if<kir::IfStmt>(&s.node)) {
      count += rewrite(k, stored, i->then_body);
      count += rewrite(k, stored, i->else_body);
    }
    out.push_back(std::move(s));
  }
  body = std::move(out);
  return count;
}

}  // namespace

int batch_loads(kir::Kernel& k) {
  std::set<std::string> stored;
  collect_stored(k.body, stored);
  return rewrite(k, stored, k.body);
}

}  // namespace stitch::lower
