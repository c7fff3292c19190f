// Read-only scans of Kernel IR statements that the C++ emitter's phase
// splitting and thread-loop placement need (docs/cpu-backend.md).
#pragma once

#include <set>
#include <string>

#include "kir/kernel.h"

namespace stitch::codegen::cpu {

// Every Var name, assigned local, loaded and stored buffer mentioned.
void collect_names(const kir::Expr& e, std::set<std::string>& names);
void collect_names(const kir::Stmt& s, std::set<std::string>& names);
void collect_names(const kir::StmtList& stmts, std::set<std::string>& names);

// True when a barrier or reduction sits anywhere in `stmts`.
bool has_nested_sync(const kir::StmtList& stmts);
// Every let and local array defined in `s`, at any depth.
void collect_definitions(const kir::Stmt& s, std::set<std::string>& names);
// Names a statement sets after their definition (assignments, reduction
// results), and lets defined more than once, at any depth of `stmts`.
std::set<std::string> redefined_names(const kir::StmtList& stmts);
// True when a `vector` loop sits inside: OpenMP forbids a simd loop in a simd loop.
bool has_vector_loop(const kir::StmtList& stmts);

}  // namespace stitch::codegen::cpu
