// The part of a kernel emitter both targets share (docs/architecture.md,
// Code generation): statement dispatch, braces, loops and ifs, declarations,
// and the printing of expressions, ops and a global buffer's element offset.
// A target's emitter derives from it (EmitterSkeleton<ItsEmitter>) and
// supplies, by name, what differs:
//
//   void emit(const kir::XStmt&)          one per statement kind
//   void emit_grid_loop(const kir::ForStmt&)   the grid loop
//   std::string var_text(name)            how a name reads (a per-thread array's slot)
//   std::string load(const kir::Expr&)    a load
//   std::string offset_term(const kir::Expr&)   one index term of an offset
//   std::optional<std::string> own_index_op(const kir::Expr&)   an i64 op the target writes its own way
//   std::optional<IndexRange> index_range(const kir::Expr&)     what it proves of an i64 value
//   const IndexFacts& facts()
#pragma once

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "codegen/common/c_text.h"
#include "codegen/common/index_facts.h"
#include "codegen/common/source_writer.h"
#include "kir/kernel.h"
#include "stitch/error.h"

namespace stitch::codegen::common {

template <class Emitter>
class EmitterSkeleton : protected SourceWriter {
 protected:
  EmitterSkeleton(const kir::Kernel& k, const TargetText& text) : k_(k), text_(text) {}

  Emitter& self() { return static_cast<Emitter&>(*this); }

  // ---- the text interface ----

  [[noreturn]] void unsupported(const std::string& what) const { text_.unsupported(what); }
  void check_identifier(const std::string& name) const { text_.check_identifier(name); }
  std::string storage_type(DType t) const { return text_.storage_type(t); }

  // ---- statements ----

  // The kernel's top-level statements (its grid loop by the target's
  // emit_grid_loop) and the closing brace of its function, opened by the
  // target one level deep: the kernel's text.
  std::string finish_kernel() {
    for (const kir::Stmt& s : k_.body) {
      if (const auto* f = std::get_if<kir::ForStmt>(&s.node); f && f->level == kir::LoopLevel::Grid) {
        self().emit_grid_loop(*f);
      } else {
        emit_stmt(s);
      }
    }
    --depth_;
    line("}");
    return std::move(out_);
  }

  void emit_body(const kir::StmtList& body) {
    for (const kir::Stmt& s : body) emit_stmt(s);
  }

  void emit_stmt(const kir::Stmt& s) {
    std::visit([&](const auto& n) { self().emit(n); }, s.node);
  }

  // `header {`, the body one level deeper, `}`.
  template <class Body>
  void braced(const std::string& header, Body&& body) {
    line(header + " {");
    ++depth_;
    body();
    --depth_;
    line("}");
  }

  static std::string for_header(const std::string& var, const std::string& extent) {
    return fmt::format("for (int64_t {0} = 0; {0} < {1}; ++{0})", var, extent);
  }

  // `if (cond) { then } else { otherwise }`, the else only where `has_else`.
  template <class Then, class Else>
  void if_else(const std::string& cond, Then&& then_body, bool has_else, Else&& else_body) {
    line(fmt::format("if ({}) {{", cond));
    ++depth_;
    then_body();
    --depth_;
    if (has_else) {
      line("} else {");
      ++depth_;
      else_body();
      --depth_;
    }
    line("}");
  }

  void emit_if(const kir::IfStmt& s, const std::string& cond) {
    if_else(cond, [&] { emit_body(s.then_body); }, !s.else_body.empty(), [&] { emit_body(s.else_body); });
  }

  // `T name = init;`, or `T name{};` for a let without a value.
  void declare(DType t, const std::string& name, const kir::Expr& init) {
    if (init.defined()) {
      line(fmt::format("{} {} = {};", compute_type(t), name, expr(init)));
    } else {
      line(fmt::format("{} {}{{}};", compute_type(t), name));
    }
  }

  // ---- expressions ----

  std::string expr(const kir::Expr& e) {
    switch (e->kind) {
      case kir::ExprKind::Const:
        return is_float(e->dtype) ? text_.float_literal(e->float_value, e->dtype)
                                  : text_.int_literal(e->int_value, e->dtype);
      case kir::ExprKind::Var: return self().var_text(e->name);
      case kir::ExprKind::Load: return self().load(e);
      case kir::ExprKind::Op: return op(e);
    }
    STITCH_ASSERT(false, "unknown expression kind");
  }

  // A literal whose C type must be its dtype's (a bare i64 literal may be an
  // int): reduction operands, whose helpers deduce their type, and offset terms.
  std::string typed(const kir::Expr& e) {
    if (e->kind == kir::ExprKind::Const) return fmt::format("{}({})", compute_type(e->dtype), expr(e));
    return expr(e);
  }

  std::string op(const kir::Expr& e) {
    const DType result = e->dtype;
    if (e->op == OpKind::Cast) {
      return text_.cast_text(expr(e->operands[0]), e->operands[0].dtype(), result, e->in_range);
    }
    std::vector<std::string> a;
    for (const kir::Expr& operand : e->operands) a.push_back(expr(operand));
    const DType in = e->operands[0].dtype();
    if (std::optional<std::string> own = self().own_index_op(e)) return *own;
    if (std::optional<std::string> narrow = narrow_division_text(e, a[0], self().index_range(e->operands[0]))) {
      return *narrow;
    }
    if (in == DType::i64 && (e->op == OpKind::Add || e->op == OpKind::Sub || e->op == OpKind::Mul)) {
      if (std::optional<IndexRange> range = self().index_range(e)) {
        // Provably no overflow: plain signed arithmetic, which the compiler's
        // induction analysis sees through (a wrapping helper turned contiguous
        // loads into gathers). Two literals fold (the range is exact): two bare
        // ones would multiply as int.
        if (e->operands[0]->kind == kir::ExprKind::Const && e->operands[1]->kind == kir::ExprKind::Const) {
          return text_.int_literal(static_cast<int64_t>(range->first), DType::i64);
        }
        const char* sign = e->op == OpKind::Add ? "+" : e->op == OpKind::Sub ? "-" : "*";
        return fmt::format("({} {} {})", a[0], sign, a[1]);
      }
    }
    std::string text = text_.op_text(e->op, in, compute_type(in), a, e);
    // Each f16/bf16 op rounds once to its dtype; comparisons yield bool.
    if (is_narrow_float(result)) return round_to_narrow(result, text);
    return text;
  }

  // Row-major (or explicitly strided) element offset of a global buffer access.
  std::string global_offset(const kir::BufferParam& b, const std::vector<kir::Expr>& index) {
    if (index.empty()) return "0";  // a rank-0 buffer holds one element
    std::string offset;
    if (!b.strides.empty()) {
      for (size_t d = 0; d < index.size(); ++d) {
        if (d > 0) offset += " + ";
        offset += fmt::format("({}) * ({})", self().offset_term(index[d]), expr(b.strides[d]));
      }
      return offset;
    }
    // An index that delinearises one linear value in the buffer's own shape
    // (an elementwise loop's access) is that value: no i64 divisions.
    if (std::optional<kir::Expr> linear = self().facts().cancelled_offset(b, index)) return self().offset_term(*linear);
    offset = self().offset_term(index.at(0));
    for (size_t d = 1; d < index.size(); ++d) {
      offset = fmt::format("({}) * ({}) + ({})", offset, expr(b.shape[d]), expr(index[d]));
    }
    return offset;
  }

  const kir::Kernel& k_;
  const TargetText& text_;
};

}  // namespace stitch::codegen::common
