#include "codegen/cpu/kir_scan.h"

#include <variant>

namespace stitch::codegen::cpu {

using kir::Expr;
using kir::ExprKind;
using kir::LoopLevel;
using kir::Stmt;
using kir::StmtList;

void collect_names(const Expr& e, std::set<std::string>& names) {
  if (!e.defined()) return;
  if (e->kind == ExprKind::Var || e->kind == ExprKind::Load) names.insert(e->name);
  for (const Expr& operand : e->operands) collect_names(operand, names);
}

void collect_names(const Stmt& s, std::set<std::string>& names) {
  std::visit(
      [&](const auto& n) {
        using T = std::decay_t<decltype(n)>;
        if constexpr (std::is_same_v<T, kir::ForStmt>) {
          collect_names(n.extent, names);
          collect_names(n.body, names);
        } else if constexpr (std::is_same_v<T, kir::IfStmt>) {
          collect_names(n.cond, names);
          collect_names(n.then_body, names);
          collect_names(n.else_body, names);
        } else if constexpr (std::is_same_v<T, kir::LetStmt>) {
          collect_names(n.init, names);
        } else if constexpr (std::is_same_v<T, kir::AssignStmt>) {
          names.insert(n.name);
          collect_names(n.value, names);
        } else if constexpr (std::is_same_v<T, kir::StoreStmt>) {
          names.insert(n.buffer);
          for (const Expr& i : n.index) collect_names(i, names);
          collect_names(n.value, names);
        } else if constexpr (std::is_same_v<T, kir::VectorMoveStmt>) {
          names.insert(n.buffer);
          names.insert(n.array);
          for (const Expr& i : n.index) collect_names(i, names);
          collect_names(n.array_first, names);
        } else if constexpr (std::is_same_v<T, kir::PrefetchStmt>) {
          names.insert(n.buffer);
          collect_names(n.first, names);
          collect_names(n.count, names);
        } else if constexpr (std::is_same_v<T, kir::TransposeTileStmt>) {
          names.insert(n.buffer);
        } else if constexpr (std::is_same_v<T, kir::ReduceStmt>) {
          collect_names(n.value, names);
          collect_names(n.index, names);
        }
      },
      s.node);
}

void collect_names(const StmtList& stmts, std::set<std::string>& names) {
  for (const Stmt& s : stmts) collect_names(s, names);
}

bool has_nested_sync(const StmtList& stmts) {
  for (const Stmt& s : stmts) {
    if (std::holds_alternative<kir::BarrierStmt>(s.node) || std::holds_alternative<kir::TransposeTileStmt>(s.node) ||
        std::holds_alternative<kir::ReduceStmt>(s.node)) {
      return true;
    }
    if (const auto* f = std::get_if<kir::ForStmt>(&s.node); f && has_nested_sync(f->body)) return true;
    if (const auto* i = std::get_if<kir::IfStmt>(&s.node)) {
      if (has_nested_sync(i->then_body) || has_nested_sync(i->else_body)) return true;
    }
  }
  return false;
}


void collect_definitions(const Stmt& s, std::set<std::string>& names) {
  if (const auto* let = std::get_if<kir::LetStmt>(&s.node)) names.insert(let->name);
  if (const auto* f = std::get_if<kir::ForStmt>(&s.node)) {
    for (const Stmt& b : f->body) collect_definitions(b, names);
  }
  if (const auto* i = std::get_if<kir::IfStmt>(&s.node)) {
    for (const Stmt& b : i->then_body) collect_definitions(b, names);
    for (const Stmt& b : i->else_body) collect_definitions(b, names);
  }
}

namespace {

void collect_redefined(const StmtList& stmts, std::set<std::string>& lets, std::set<std::string>& names) {
  for (const Stmt& s : stmts) {
    if (const auto* let = std::get_if<kir::LetStmt>(&s.node)) {
      if (!lets.insert(let->name).second) names.insert(let->name);
    } else if (const auto* a = std::get_if<kir::AssignStmt>(&s.node)) {
      names.insert(a->name);
    } else if (const auto* r = std::get_if<kir::ReduceStmt>(&s.node)) {
      names.insert(r->result);
      if (!r->index_result.empty()) names.insert(r->index_result);
    } else if (const auto* f = std::get_if<kir::ForStmt>(&s.node)) {
      collect_redefined(f->body, lets, names);
    } else if (const auto* i = std::get_if<kir::IfStmt>(&s.node)) {
      collect_redefined(i->then_body, lets, names);
      collect_redefined(i->else_body, lets, names);
    }
  }
}

}  // namespace

std::set<std::string> redefined_names(const StmtList& stmts) {
  std::set<std::string> lets, names;
  collect_redefined(stmts, lets, names);
  return names;
}

bool has_vector_loop(const StmtList& stmts) {
  for (const Stmt& s : stmts) {
    if (const auto* f = std::get_if<kir::ForStmt>(&s.node)) {
      if (f->level == LoopLevel::Vector || has_vector_loop(f->body)) return true;
    } else if (const auto* i = std::get_if<kir::IfStmt>(&s.node)) {
      if (has_vector_loop(i->then_body) || has_vector_loop(i->else_body)) return true;
    }
  }
  return false;
}

}  // namespace stitch::codegen::cpu
