#include "codegen/cpu/tail_guard.h"

#include <set>

#include "codegen/cpu/kir_scan.h"

namespace stitch::codegen::cpu {

namespace {

bool is_var(const kir::Expr& e, const std::string& name) {
  return e->kind == kir::ExprKind::Var && e->name == name;
}

bool mentions(const kir::Expr& e, const std::string& name) {
  std::set<std::string> names;
  collect_names(e, names);
  return names.count(name) > 0;
}

// Only lets read within the run, assignments and stores: nothing whose effect
// a test must guard beyond the writes.
bool plain(const kir::StmtList& body, const std::set<std::string>& read_after) {
  for (const kir::Stmt& s : body) {
    if (const auto* let = std::get_if<kir::LetStmt>(&s.node)) {
      if (read_after.count(let->name)) return false;
    } else if (!std::holds_alternative<kir::AssignStmt>(s.node) && !std::holds_alternative<kir::StoreStmt>(s.node)) {
      return false;
    }
  }
  return true;
}

void collect_load_buffers(const kir::Expr& e, std::set<std::string>& out) {
  if (!e.defined()) return;
  if (e->kind == kir::ExprKind::Load) out.insert(e->name);
  for (const kir::Expr& o : e->operands) collect_load_buffers(o, out);
}

// The buffers a guarded body (lets, assignments and stores: plain) loads from.
void collect_load_buffers(const kir::StmtList& body, std::set<std::string>& out) {
  for (const kir::Stmt& s : body) {
    if (const auto* l = std::get_if<kir::LetStmt>(&s.node)) collect_load_buffers(l->init, out);
    if (const auto* a = std::get_if<kir::AssignStmt>(&s.node)) collect_load_buffers(a->value, out);
    if (const auto* st = std::get_if<kir::StoreStmt>(&s.node)) {
      collect_load_buffers(st->value, out);
      for (const kir::Expr& i : st->index) collect_load_buffers(i, out);
    }
  }
}

}  // namespace

std::optional<TailGuard> tail_guard(const std::vector<const kir::Stmt*>& run, const RegionAnalysis& analysis,
                                    const std::string& thread_var, const std::set<std::string>& used,
                                    const std::set<std::string>& read_after, int64_t threads) {
  if (run.size() != 1) return std::nullopt;
  const auto* guard = std::get_if<kir::IfStmt>(&run[0]->node);
  if (!guard || !guard->else_body.empty() || !plain(guard->then_body, read_after)) return std::nullopt;
  const kir::Expr& cond = guard->cond;
  if (cond->kind != kir::ExprKind::Op || cond->op != OpKind::Lt || cond->operands.size() != 2) return std::nullopt;
  const kir::Expr& index = cond->operands[0];
  int64_t limit = 0;
  if (index->kind != kir::ExprKind::Var || !kir::is_int_constant(cond->operands[1], &limit) || limit < threads) {
    return std::nullopt;
  }
  // The index is a recomputed let: the thread plus an offset that does not vary.
  const auto let = analysis.remat().find(index->name);
  if (let == analysis.remat().end() || !let->second->init.defined()) return std::nullopt;
  const kir::Expr& init = let->second->init;
  if (init->kind != kir::ExprKind::Op || init->op != OpKind::Add || init->operands.size() != 2) return std::nullopt;
  kir::Expr offset;
  for (size_t i = 0; i < 2; ++i) {
    if (is_var(init->operands[i], thread_var) && !analysis.expr_varies(init->operands[1 - i])) {
      offset = init->operands[1 - i];
    }
  }
  if (!offset.defined()) return std::nullopt;
  // The offset is computed before the thread loop: no recomputed let in it.
  std::set<std::string> offset_names;
  collect_names(offset, offset_names);
  for (const std::string& n : offset_names)
    if (analysis.is_remat(n) || n == thread_var) return std::nullopt;
  // Every index the body reads through the thread goes through r, which the
  // partial step shifts.
  for (const kir::LetStmt* other : analysis.remat_order()) {
    if (other->name == index->name || !used.count(other->name) || !other->init.defined()) continue;
    if (mentions(other->init, index->name) || mentions(other->init, thread_var)) return std::nullopt;
  }
  std::set<std::string> names;
  collect_names(guard->then_body, names);
  if (names.count(thread_var)) return std::nullopt;
  // Nor through a per-thread array (lower/batch_loads.h's, filled by one loop
  // and read by the next): the shift would not move its elements.
  std::set<std::string> arrays;
  collect_load_buffers(guard->then_body, arrays);
  for (const kir::Stmt& s : guard->then_body) {
    if (const auto* st = std::get_if<kir::StoreStmt>(&s.node)) arrays.insert(st->buffer);
  }
  for (const std::string& a : arrays) {
    if (analysis.varies(a)) return std::nullopt;
  }
  return TailGuard{guard, index->name, offset, limit};
}

}  // namespace stitch::codegen::cpu
