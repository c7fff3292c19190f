#include "codegen/cpu/region_analysis.h"

#include <algorithm>

#include "codegen/cpu/kir_scan.h"

namespace stitch::codegen::cpu {

using kir::Expr;
using kir::ExprKind;
using kir::Stmt;
using kir::StmtList;

// A fixpoint: a local assigned a varying value, or under varying control,
// varies. Then the remat candidates (varying integer and bool lets) that
// read no load, are never reassigned and read only remat lets, thread
// variables and uniform names.
void RegionAnalysis::analyse(const kir::Kernel& k, const StmtList& body, const std::vector<std::string>& thread_vars) {
  kernel_ = &k;
  thread_vars_.clear();
  varying_.clear();
  remat_.clear();
  remat_order_.clear();
  for (const std::string& v : thread_vars) {
    if (v.empty()) continue;
    thread_vars_.insert(v);
    varying_.insert(v);
  }
  for (bool changed = true; changed;) {
    changed = false;
    mark_varying(body, false, changed);
  }
  std::set<std::string> assigned;
  collect_lets(body, assigned);
  for (bool changed = true; changed;) {
    changed = false;
    for (auto it = remat_.begin(); it != remat_.end();) {
      std::set<std::string> used;
      collect_names(it->second->init, used);
      bool ok = !assigned.count(it->first) && !kir::has_load(it->second->init);
      for (const std::string& n : used) ok = ok && (!varying_.count(n) || remat_.count(n) || thread_vars_.count(n));
      if (ok) {
        ++it;
      } else {
        it = remat_.erase(it);
        changed = true;
      }
    }
  }
  std::erase_if(remat_order_, [&](const kir::LetStmt* let) { return !remat_.count(let->name); });
}

// Varying lets of integer or bool type are remat candidates; `assigned`
// collects every assigned name (those are never recomputed).
void RegionAnalysis::collect_lets(const StmtList& stmts, std::set<std::string>& assigned) {
  for (const Stmt& s : stmts) {
    if (const auto* let = std::get_if<kir::LetStmt>(&s.node)) {
      if (let->init.defined() && varying_.count(let->name) && !is_float(let->dtype)) {
        remat_[let->name] = let;
        remat_order_.push_back(let);
      }
    } else if (const auto* a = std::get_if<kir::AssignStmt>(&s.node)) {
      assigned.insert(a->name);
    } else if (const auto* f = std::get_if<kir::ForStmt>(&s.node)) {
      collect_lets(f->body, assigned);
    } else if (const auto* i = std::get_if<kir::IfStmt>(&s.node)) {
      collect_lets(i->then_body, assigned);
      collect_lets(i->else_body, assigned);
    }
  }
}

bool RegionAnalysis::expr_varies(const Expr& e) const {
  if (!e.defined()) return false;
  if (e->kind == ExprKind::Var) return varying_.count(e->name) > 0;
  // Shared buffers and local arrays hold per-thread data; treat loads from them as varying.
  if (e->kind == ExprKind::Load && !kernel_->find_buffer(e->name)) return true;
  for (const Expr& operand : e->operands) {
    if (expr_varies(operand)) return true;
  }
  return false;
}

void RegionAnalysis::mark(const std::string& name, bool varies, bool& changed) {
  if (varies && varying_.insert(name).second) changed = true;
}

void RegionAnalysis::mark_varying(const StmtList& stmts, bool control, bool& changed) {
  for (const Stmt& s : stmts) {
    if (const auto* f = std::get_if<kir::ForStmt>(&s.node)) {
      const bool c = control || expr_varies(f->extent);
      mark(f->var, c, changed);
      mark_varying(f->body, c, changed);
    } else if (const auto* i = std::get_if<kir::IfStmt>(&s.node)) {
      const bool c = control || expr_varies(i->cond);
      mark_varying(i->then_body, c, changed);
      mark_varying(i->else_body, c, changed);
    } else if (const auto* let = std::get_if<kir::LetStmt>(&s.node)) {
      mark(let->name, control || expr_varies(let->init), changed);
    } else if (const auto* a = std::get_if<kir::AssignStmt>(&s.node)) {
      mark(a->name, control || expr_varies(a->value), changed);
    } else if (const auto* arr = std::get_if<kir::LocalArrayStmt>(&s.node)) {
      mark(arr->name, true, changed);
    } else if (const auto* r = std::get_if<kir::ReduceStmt>(&s.node); r && r->scope == kir::ReduceScope::Warp) {
      mark(r->result, true, changed);
      if (!r->index_result.empty()) mark(r->index_result, true, changed);
    }
  }
}

void RegionAnalysis::expand_remat(std::set<std::string>& names) const {
  std::vector<std::string> work(names.begin(), names.end());
  while (!work.empty()) {
    std::string n = work.back();
    work.pop_back();
    auto it = remat_.find(n);
    if (it == remat_.end()) continue;
    std::set<std::string> used;
    collect_names(it->second->init, used);
    for (const std::string& u : used) {
      if (names.insert(u).second) work.push_back(u);
    }
  }
}

}  // namespace stitch::codegen::cpu
