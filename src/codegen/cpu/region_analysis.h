// What the C++ emitter knows about one thread region (docs/cpu-backend.md,
// Thread loops): which names differ between the region's threads, and which
// varying lets are index arithmetic cheap enough to recompute in every thread
// loop that reads them instead of keeping one value per thread.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "kir/kernel.h"

namespace stitch::codegen::cpu {

class RegionAnalysis {
 public:
  // Analyses `body`, the statements of a thread region of `k` whose thread
  // variables (thread, or warp and lane) are `thread_vars`.
  void analyse(const kir::Kernel& k, const kir::StmtList& body, const std::vector<std::string>& thread_vars);

  bool varies(const std::string& name) const { return varying_.count(name) > 0; }
  // Reads a varying name, or a shared buffer or local array (per-thread data).
  bool expr_varies(const kir::Expr& e) const;
  bool is_remat(const std::string& name) const { return remat_.count(name) > 0; }
  // The recomputed lets by name, and in program order.
  const std::map<std::string, const kir::LetStmt*>& remat() const { return remat_; }
  const std::vector<const kir::LetStmt*>& remat_order() const { return remat_order_; }
  // `names` plus everything the definitions of its remat lets read, transitively.
  void expand_remat(std::set<std::string>& names) const;

 private:
  void mark(const std::string& name, bool varies, bool& changed);
  void mark_varying(const kir::StmtList& stmts, bool control, bool& changed);
  void collect_lets(const kir::StmtList& stmts, std::set<std::string>& assigned);

  const kir::Kernel* kernel_ = nullptr;
  std::set<std::string> thread_vars_;
  std::set<std::string> varying_;
  std::map<std::string, const kir::LetStmt*> remat_;
  std::vector<const kir::LetStmt*> remat_order_;
};

}  // namespace stitch::codegen::cpu
