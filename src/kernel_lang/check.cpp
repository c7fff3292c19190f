// The user-kernel checker (docs/kernel-language.md, Names and types): resolves
// names through block scopes, types every expression under the Graph IR's
// elementwise rules (type_inference.h), gives literals the dtype of the other
// operand, and records how each array is accessed.
#include <cctype>
#include <cstdint>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "ir/type_inference.h"
#include "stitch/attr.h"
#include "stitch/kernel.h"

namespace stitch {

namespace {

enum class NameKind : uint8_t { Index, Scalar, Symbol, Array, Loop, Local };

std::string_view name_kind_text(NameKind k) {
  switch (k) {
    case NameKind::Index: return "index variable";
    case NameKind::Scalar: return "scalar parameter";
    case NameKind::Symbol: return "shape symbol";
    case NameKind::Array: return "array";
    case NameKind::Loop: return "loop variable";
    case NameKind::Local: return "local";
  }
  return "name";
}

std::string with_article(NameKind k) {
  std::string_view t = name_kind_text(k);
  return std::string(t[0] == 'a' || t[0] == 'i' ? "an " : "a ") + std::string(t);
}

struct NameInfo {
  NameKind kind;
  DType dtype;
  int rank = 0;
  SourceLoc loc;
};

bool is_reserved_kernel_word(const std::string& w) {
  static const std::set<std::string> kWords = {"kernel", "graph", "over", "let", "if", "else", "for", "yield",
                                               "true", "false", "return", "inf", "nan"};
  return kWords.count(w) > 0 || parse_dtype(w).has_value();
}

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return true;
}

// Ops whose result dtype is their (shared) operand dtype, so an all-literal
// operand list may take the dtype the context wants.
bool result_is_operand_dtype(OpKind op) {
  return !is_comparison(op) && op != OpKind::IsNan && op != OpKind::IsInf && op != OpKind::Cast;
}

class KernelChecker {
 public:
  explicit KernelChecker(UserKernel& k) : k_(k) {}

  void run() {
    if (!is_identifier(k_.name) || is_reserved_kernel_word(k_.name)) {
      fail(k_.loc, fmt::format("'{}' cannot name a kernel", k_.name));
    }
    scopes_.emplace_back();
    declare_params();
    if (k_.is_reduction() && is_bool(k_.result_dtype)) {
      fail(k_.loc, fmt::format("a {} reduction needs a numeric dtype, not bool", kernel_reduction_name(k_.reduction)));
    }
    check_range();
    check_block(k_.body);
    for (KernelParam& p : k_.params) {
      if (p.is_array) p.access = access_[p.name];
    }
  }

 private:
  [[noreturn]] void fail(const SourceLoc& loc, const std::string& message) const {
    if (loc.known()) throw UserError(message, loc);
    throw UserError(fmt::format("kernel '{}': {}", k_.name, message));
  }

  const NameInfo* lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto found = it->find(name);
      if (found != it->end()) return &found->second;
    }
    return nullptr;
  }

  void define(const std::string& name, NameInfo info) {
    if (!is_identifier(name) || is_reserved_kernel_word(name)) {
      fail(info.loc, fmt::format("'{}' is a reserved word or not a name, and cannot name {}", name,
                                 with_article(info.kind)));
    }
    if (const NameInfo* old = lookup(name)) {
      std::string where = old->loc.known() ? fmt::format(" at line {}", old->loc.line) : "";
      fail(info.loc, fmt::format("'{}' is already defined as {}{}", name, with_article(old->kind), where));
    }
    scopes_.back()[name] = std::move(info);
  }

  void declare_params() {
    for (const KernelParam& p : k_.params) {
      define(p.name, NameInfo{p.is_array ? NameKind::Array : NameKind::Scalar, p.dtype,
                              static_cast<int>(p.shape.size()), p.loc});
    }
    for (const KernelParam& p : k_.params) {
      for (const Dim& d : p.shape) {
        if (!d.is_symbolic()) continue;
        const NameInfo* old = lookup(d.name());
        if (old == nullptr) {
          define(d.name(), NameInfo{NameKind::Symbol, DType::i64, 0, p.loc});
        } else if (old->kind != NameKind::Symbol) {
          fail(p.loc, fmt::format("shape symbol '{}' of array '{}' is also the name of {}", d.name(), p.name,
                                  with_article(old->kind)));
        }
      }
    }
  }

  void check_range() {
    if (k_.range.empty()) fail(k_.loc, "a kernel needs a range: 'over i < n'");
    if (k_.range.size() > 8) fail(k_.range[8].loc, "a kernel's range has at most 8 dimensions");
    in_extent_ = true;
    for (KernelIndex& ix : k_.range) ix.extent = index_expr(ix.extent, "a range extent");
    in_extent_ = false;
    // Literal extents are checked here; the rest when a call binds them
    // (bind_kernel), against the same limit on the indices of a range.
    std::vector<int64_t> literal_extents;
    for (const KernelIndex& ix : k_.range) {
      if (ix.extent->kind != KernelExprKind::Literal) continue;
      if (ix.extent->int_value > kMaxTensorBytes) {
        fail(ix.extent->loc.known() ? ix.extent->loc : ix.loc,
             fmt::format("the range of '{}' has extent {}; the limit on the indices of a range is {} (2^48)", ix.name,
                         ix.extent->int_value, kMaxTensorBytes));
      }
      if (ix.extent->int_value >= 0) literal_extents.push_back(ix.extent->int_value);
    }
    if (!tensor_span_bytes(DType::i8, literal_extents)) {
      fail(k_.range[0].loc, fmt::format("the range's literal extents alone give more than {} indices, the limit (2^48)",
                                        kMaxTensorBytes));
    }
    for (const KernelIndex& ix : k_.range) define(ix.name, NameInfo{NameKind::Index, DType::i64, 0, ix.loc});
  }

  void check_block(std::vector<KStmt>& body) {
    scopes_.emplace_back();
    for (KStmt& s : body) check_stmt(s);
    scopes_.pop_back();
  }

  void check_stmt(KStmt& s) {
    switch (s.kind) {
      case KernelStmtKind::Let: {
        KExpr v = s.has_declared_type ? settle(s.value, s.declared_type, fmt::format("the value of '{}'", s.name))
                                      : finalize(type(s.value, std::nullopt));
        s.value = v;
        s.declared_type = v->dtype;
        define(s.name, NameInfo{NameKind::Local, v->dtype, 0, s.loc});
        return;
      }
      case KernelStmtKind::Assign: {
        const NameInfo* info = lookup(s.name);
        if (info == nullptr) fail(s.loc, fmt::format("assignment to undefined '{}'; declare it with 'let'", s.name));
        if (info->kind != NameKind::Local) {
          fail(s.loc, fmt::format("cannot assign to {} '{}'; only locals (declared with 'let') change",
                                  name_kind_text(info->kind), s.name));
        }
        s.value = settle(s.value, info->dtype, fmt::format("the value assigned to '{}'", s.name));
        return;
      }
      case KernelStmtKind::Store: {
        const NameInfo& info = array_info(s.name, s.index.size(), s.loc);
        for (KExpr& i : s.index) i = index_expr(i, fmt::format("an index of '{}'", s.name));
        s.value = settle(s.value, info.dtype, fmt::format("the value stored to '{}'", s.name));
        note_access(s.name, ArrayAccess::Write);
        return;
      }
      case KernelStmtKind::If:
        s.value = settle(s.value, DType::boolean, "an 'if' condition");
        check_block(s.body);
        check_block(s.else_body);
        return;
      case KernelStmtKind::For:
        s.value = index_expr(s.value, "a 'for' extent");
        scopes_.emplace_back();
        define(s.name, NameInfo{NameKind::Loop, DType::i64, 0, s.loc});
        check_block(s.body);
        scopes_.pop_back();
        return;
      case KernelStmtKind::Yield:
        if (!k_.is_reduction()) {
          fail(s.loc, "'yield' outside a reduction kernel (declare one with '-> sum f32' before 'over')");
        }
        s.value = settle(s.value, k_.result_dtype, "a yielded value");
        return;
    }
  }

  const NameInfo& array_info(const std::string& name, size_t rank, const SourceLoc& loc) const {
    const NameInfo* info = lookup(name);
    if (info == nullptr) fail(loc, fmt::format("undefined array '{}'", name));
    if (info->kind != NameKind::Array) {
      fail(loc, fmt::format("'{}' is {}, not an array; only arrays are indexed", name, with_article(info->kind)));
    }
    if (in_extent_) fail(loc, fmt::format("a range extent cannot read array '{}'", name));
    if (static_cast<int>(rank) != info->rank) {
      fail(loc, fmt::format("array '{}' has rank {} but is indexed with {} index{}", name, info->rank, rank,
                            rank == 1 ? "" : "es"));
    }
    return *info;
  }

  void note_access(const std::string& array, ArrayAccess a) {
    ArrayAccess& have = access_[array];
    if (have == ArrayAccess::None || have == a) {
      have = a;
    } else {
      have = ArrayAccess::ReadWrite;
    }
  }

  // An integer expression, cast to i64 when narrower.
  KExpr index_expr(const KExpr& e, const std::string& what) {
    KExpr t = type(e, DType::i64);
    if (!t->typed) t = literal_as(t, DType::i64, what);
    if (!is_integer(t->dtype)) {
      fail(t->loc, fmt::format("{} must be an integer, got {}", what, dtype_name(t->dtype)));
    }
    if (t->dtype == DType::i64) return t;
    return typed_op(kernel_cast(t, DType::i64, t->loc), DType::i64);
  }

  // `e` with dtype `want`: a literal takes it, anything else must have it.
  KExpr settle(const KExpr& e, DType want, const std::string& what) {
    KExpr t = type(e, want);
    if (!t->typed) return literal_as(t, want, what);
    if (t->dtype != want) {
      fail(t->loc, fmt::format("{} must be {}, got {} (convert with {}(...))", what, dtype_name(want),
                               dtype_name(t->dtype), dtype_name(want)));
    }
    return t;
  }

  // An untyped literal gets its default dtype: i64, f64 or bool.
  KExpr finalize(const KExpr& e) {
    if (e->typed) return e;
    DType d = e->is_bool_literal ? DType::boolean : e->is_float_literal ? DType::f64 : DType::i64;
    return literal_as(e, d, "a literal");
  }

  KExpr literal_as(const KExpr& e, DType d, const std::string& what) const {
    const KernelExprNode& n = e.node();
    STITCH_ASSERT(n.kind == KernelExprKind::Literal, "literal_as on a non-literal");
    auto out = std::make_shared<KernelExprNode>(n);
    out->typed = true;
    out->dtype = d;
    std::string text = n.is_bool_literal ? (n.int_value ? "true" : "false")
                       : n.is_float_literal ? format_float(n.float_value)
                                            : std::to_string(n.int_value);
    if (is_bool(d)) {
      if (!n.is_bool_literal && (n.is_float_literal || (n.int_value != 0 && n.int_value != 1))) {
        fail(n.loc, fmt::format("{}: literal {} is not a bool", what, text));
      }
      out->is_bool_literal = true;
      out->is_float_literal = false;
    } else if (n.is_bool_literal) {
      fail(n.loc, fmt::format("{}: literal {} is a bool, not {}", what, text, dtype_name(d)));
    } else if (is_float(d)) {
      out->is_float_literal = true;
      out->int_value = 0;
    } else {
      if (n.is_float_literal) {
        fail(n.loc, fmt::format("{}: literal {} is not an integer, as {} needs", what, text, dtype_name(d)));
      }
      int64_t lo = d == DType::i8 ? -128 : d == DType::i32 ? INT32_MIN : INT64_MIN;
      int64_t hi = d == DType::i8 ? 127 : d == DType::i32 ? INT32_MAX : INT64_MAX;
      if (n.int_value < lo || n.int_value > hi) {
        fail(n.loc, fmt::format("{}: literal {} does not fit {}", what, text, dtype_name(d)));
      }
      out->float_value = static_cast<double>(n.int_value);
    }
    return KExpr(std::move(out));
  }

  // A copy of `e` with its dtype set.
  static KExpr typed_op(const KExpr& e, DType d) {
    auto out = std::make_shared<KernelExprNode>(e.node());
    out->typed = true;
    out->dtype = d;
    return KExpr(std::move(out));
  }

  // Types `e`; an untyped literal stays untyped (the caller settles it), and
  // `want` is only a hint for operands that are all literals.
  KExpr type(const KExpr& e, std::optional<DType> want) {
    const KernelExprNode& n = e.node();
    switch (n.kind) {
      case KernelExprKind::Literal: return n.typed ? e : KExpr(std::make_shared<KernelExprNode>(n));
      case KernelExprKind::Name: {
        const NameInfo* info = lookup(n.name);
        if (info == nullptr) fail(n.loc, fmt::format("undefined name '{}'", n.name));
        if (info->kind == NameKind::Array) {
          fail(n.loc, fmt::format("array '{}' is used as a value; index it: {}[...]", n.name, n.name));
        }
        if (in_extent_ && info->kind != NameKind::Scalar && info->kind != NameKind::Symbol) {
          fail(n.loc, fmt::format("a range extent may use only scalar parameters, shape symbols and literals, "
                                  "not {} '{}'", name_kind_text(info->kind), n.name));
        }
        return typed_op(e, info->dtype);
      }
      case KernelExprKind::Load: {
        const NameInfo& info = array_info(n.name, n.operands.size(), n.loc);
        auto out = std::make_shared<KernelExprNode>(n);
        for (KExpr& i : out->operands) i = index_expr(i, fmt::format("an index of '{}'", n.name));
        out->typed = true;
        out->dtype = info.dtype;
        note_access(n.name, ArrayAccess::Read);
        return KExpr(std::move(out));
      }
      case KernelExprKind::Op: return type_op(e, want);
    }
    STITCH_ASSERT(false, "unhandled kernel expression kind");
  }

  KExpr type_op(const KExpr& e, std::optional<DType> want) {
    const KernelExprNode& n = e.node();
    if (!is_elementwise(n.op)) {
      fail(n.loc, fmt::format("'{}' is not an elementwise function; a kernel body uses scalar math only", op_name(n.op)));
    }
    const OpInfo& info = op_info(n.op);
    if (static_cast<int>(n.operands.size()) != info.min_inputs) {
      fail(n.loc, fmt::format("{} takes {} operand{}, got {}", op_name(n.op), info.min_inputs,
                              info.min_inputs == 1 ? "" : "s", n.operands.size()));
    }
    auto out = std::make_shared<KernelExprNode>(n);
    std::vector<KExpr>& ops = out->operands;
    // select's condition is bool; its two values, like every other op's operands, share one dtype.
    size_t first_shared = n.op == OpKind::Select ? 1 : 0;
    if (n.op == OpKind::Select) ops[0] = settle(ops[0], DType::boolean, "select's condition");
    // Operands with a name or load in them decide the dtype; operands made of
    // literals alone (1, or (1 - 2)) then take it, as a single literal does.
    // The context's dtype is a hint for operands whose own literals decide
    // theirs (select(c, 1.0, -1.0)); an operand that still disagrees with the
    // first is typed again with the first one's dtype as the hint.
    std::optional<DType> hint = result_is_operand_dtype(n.op) ? want : std::nullopt;
    std::optional<DType> shared;
    for (size_t i = first_shared; i < ops.size(); ++i) {
      if (is_constant(ops[i])) continue;
      const KExpr original = ops[i];
      ops[i] = type(original, hint);
      if (!shared) {
        shared = ops[i]->dtype;
      } else if (ops[i]->dtype != *shared) {
        ops[i] = type(original, shared);
      }
    }
    if (!shared) {
      if (n.op == OpKind::Cast) {
        shared = finalize(type(ops[0], std::nullopt))->dtype;
      } else if (want && result_is_operand_dtype(n.op)) {
        shared = want;
      } else {
        bool any_float = false;
        bool all_bool = true;
        for (size_t i = first_shared; i < ops.size(); ++i) literal_kinds(ops[i], any_float, all_bool);
        shared = all_bool ? DType::boolean : any_float ? DType::f64 : DType::i64;
      }
    }
    for (size_t i = first_shared; i < ops.size(); ++i) {
      if (ops[i]->typed && ops[i]->kind != KernelExprKind::Literal) continue;
      if (is_constant(ops[i]) && ops[i]->kind != KernelExprKind::Literal) ops[i] = type(ops[i], shared);
      if (!ops[i]->typed) ops[i] = literal_as(ops[i], *shared, fmt::format("an operand of {}", op_name(n.op)));
    }
    std::vector<TensorType> scalars;
    for (const KExpr& o : ops) scalars.push_back(TensorType{o->dtype, {}});
    Attrs attrs;
    if (n.op == OpKind::Cast) attrs.set("to", n.cast_to);
    try {
      out->dtype = infer_type(n.op, scalars, attrs).dtype;
    } catch (const UserError& err) {
      fail(n.loc, err.what());
    }
    out->typed = true;
    return KExpr(std::move(out));
  }

  // Made of literals alone, so its dtype comes from the context.
  static bool is_constant(const KExpr& e) {
    if (e->kind == KernelExprKind::Literal) return true;
    if (e->kind != KernelExprKind::Op || e->op == OpKind::Cast) return false;
    for (const KExpr& o : e->operands) {
      if (!is_constant(o)) return false;
    }
    return true;
  }

  static void literal_kinds(const KExpr& e, bool& any_float, bool& all_bool) {
    if (e->kind == KernelExprKind::Literal) {
      any_float |= e->is_float_literal;
      all_bool &= e->is_bool_literal;
      return;
    }
    for (const KExpr& o : e->operands) literal_kinds(o, any_float, all_bool);
  }

  UserKernel& k_;
  std::vector<std::map<std::string, NameInfo>> scopes_;
  std::map<std::string, ArrayAccess> access_;
  bool in_extent_ = false;
};

}  // namespace

void check_kernel(UserKernel& kernel) { KernelChecker(kernel).run(); }

}  // namespace stitch
