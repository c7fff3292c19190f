// User kernels: expression constructors, the C++ builder, the printer and
// structural equality (docs/kernel-language.md). The checker is check.cpp,
// the text parser parser.cpp (this folder).
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "stitch/attr.h"
#include "stitch/kernel.h"

namespace stitch {

namespace {

std::shared_ptr<KernelExprNode> new_node(KernelExprKind kind, SourceLoc loc) {
  auto n = std::make_shared<KernelExprNode>();
  n->kind = kind;
  n->loc = std::move(loc);
  return n;
}

}  // namespace

KExpr::KExpr(int64_t v) : KExpr(kernel_literal(v)) {}
KExpr::KExpr(int v) : KExpr(kernel_literal(int64_t{v})) {}
KExpr::KExpr(double v) : KExpr(kernel_literal(v)) {}

const KernelExprNode& KExpr::node() const {
  STITCH_ASSERT(node_ != nullptr, "use of an absent kernel expression");
  return *node_;
}

KExpr kernel_literal(int64_t v, SourceLoc loc) {
  auto n = new_node(KernelExprKind::Literal, std::move(loc));
  n->int_value = v;
  n->float_value = static_cast<double>(v);
  return KExpr(std::move(n));
}

KExpr kernel_literal(double v, SourceLoc loc) {
  auto n = new_node(KernelExprKind::Literal, std::move(loc));
  n->float_value = v;
  n->is_float_literal = true;
  return KExpr(std::move(n));
}

KExpr kernel_bool(bool v, SourceLoc loc) {
  auto n = new_node(KernelExprKind::Literal, std::move(loc));
  n->int_value = v ? 1 : 0;
  n->is_bool_literal = true;
  return KExpr(std::move(n));
}

KExpr kernel_name(std::string name, SourceLoc loc) {
  auto n = new_node(KernelExprKind::Name, std::move(loc));
  n->name = std::move(name);
  return KExpr(std::move(n));
}

KExpr kernel_load(std::string array, std::vector<KExpr> index, SourceLoc loc) {
  auto n = new_node(KernelExprKind::Load, std::move(loc));
  n->name = std::move(array);
  n->operands = std::move(index);
  return KExpr(std::move(n));
}

KExpr kernel_op(OpKind op, std::vector<KExpr> operands, SourceLoc loc) {
  auto n = new_node(KernelExprKind::Op, std::move(loc));
  n->op = op;
  n->operands = std::move(operands);
  return KExpr(std::move(n));
}

KExpr kernel_cast(KExpr value, DType to, SourceLoc loc) {
  auto n = new_node(KernelExprKind::Op, std::move(loc));
  n->op = OpKind::Cast;
  n->cast_to = to;
  n->operands = {std::move(value)};
  return KExpr(std::move(n));
}

KExpr operator+(KExpr a, KExpr b) { return kernel_op(OpKind::Add, {std::move(a), std::move(b)}); }
KExpr operator-(KExpr a, KExpr b) { return kernel_op(OpKind::Sub, {std::move(a), std::move(b)}); }
KExpr operator*(KExpr a, KExpr b) { return kernel_op(OpKind::Mul, {std::move(a), std::move(b)}); }
KExpr operator/(KExpr a, KExpr b) { return kernel_op(OpKind::Div, {std::move(a), std::move(b)}); }
KExpr operator%(KExpr a, KExpr b) { return kernel_op(OpKind::Rem, {std::move(a), std::move(b)}); }
KExpr operator-(KExpr a) { return kernel_op(OpKind::Neg, {std::move(a)}); }
KExpr operator<(KExpr a, KExpr b) { return kernel_op(OpKind::Lt, {std::move(a), std::move(b)}); }
KExpr operator<=(KExpr a, KExpr b) { return kernel_op(OpKind::Le, {std::move(a), std::move(b)}); }
KExpr operator>(KExpr a, KExpr b) { return kernel_op(OpKind::Gt, {std::move(a), std::move(b)}); }
KExpr operator>=(KExpr a, KExpr b) { return kernel_op(OpKind::Ge, {std::move(a), std::move(b)}); }
KExpr operator&&(KExpr a, KExpr b) { return kernel_op(OpKind::And, {std::move(a), std::move(b)}); }
KExpr operator||(KExpr a, KExpr b) { return kernel_op(OpKind::Or, {std::move(a), std::move(b)}); }
KExpr operator!(KExpr a) { return kernel_op(OpKind::Not, {std::move(a)}); }
KExpr eq(KExpr a, KExpr b) { return kernel_op(OpKind::Eq, {std::move(a), std::move(b)}); }
KExpr ne(KExpr a, KExpr b) { return kernel_op(OpKind::Ne, {std::move(a), std::move(b)}); }

std::string_view array_access_name(ArrayAccess a) {
  switch (a) {
    case ArrayAccess::None: return "unused";
    case ArrayAccess::Read: return "read";
    case ArrayAccess::Write: return "write";
    case ArrayAccess::ReadWrite: return "readwrite";
  }
  return "?";
}

std::string_view kernel_reduction_name(KernelReduction r) {
  switch (r) {
    case KernelReduction::None: return "none";
    case KernelReduction::Sum: return "sum";
    case KernelReduction::Max: return "max";
    case KernelReduction::Min: return "min";
  }
  return "?";
}

const KernelParam* UserKernel::find_param(const std::string& n) const {
  for (const KernelParam& p : params) {
    if (p.name == n) return &p;
  }
  return nullptr;
}

std::vector<std::string> UserKernel::symbols() const {
  std::vector<std::string> out;
  for (const KernelParam& p : params) {
    for (const Dim& d : p.shape) {
      if (d.is_symbolic() && std::find(out.begin(), out.end(), d.name()) == out.end()) out.push_back(d.name());
    }
  }
  return out;
}

// ---------------------------------------------------------------- builder

UserKernelBuilder::UserKernelBuilder(std::string name) {
  kernel_.name = std::move(name);
  blocks_.push_back(&kernel_.body);
}

KExpr UserKernelBuilder::scalar(const std::string& name, DType dtype) {
  kernel_.params.push_back(KernelParam{name, dtype, false, {}, ArrayAccess::None, {}});
  return kernel_name(name);
}

void UserKernelBuilder::array(const std::string& name, DType dtype, Shape shape) {
  kernel_.params.push_back(KernelParam{name, dtype, true, std::move(shape), ArrayAccess::None, {}});
}

KExpr UserKernelBuilder::index(const std::string& name, KExpr extent) {
  kernel_.range.push_back(KernelIndex{name, std::move(extent), {}});
  return kernel_name(name);
}

void UserKernelBuilder::reduce(KernelReduction op, DType dtype) {
  kernel_.reduction = op;
  kernel_.result_dtype = dtype;
}

KExpr UserKernelBuilder::let(const std::string& name, KExpr value) {
  KStmt s;
  s.kind = KernelStmtKind::Let;
  s.name = name;
  s.value = std::move(value);
  current().push_back(std::move(s));
  return kernel_name(name);
}

KExpr UserKernelBuilder::let(const std::string& name, DType dtype, KExpr value) {
  KStmt s;
  s.kind = KernelStmtKind::Let;
  s.name = name;
  s.has_declared_type = true;
  s.declared_type = dtype;
  s.value = std::move(value);
  current().push_back(std::move(s));
  return kernel_name(name);
}

void UserKernelBuilder::assign(const std::string& local, KExpr value) {
  KStmt s;
  s.kind = KernelStmtKind::Assign;
  s.name = local;
  s.value = std::move(value);
  current().push_back(std::move(s));
}

void UserKernelBuilder::store(const std::string& array, std::vector<KExpr> index, KExpr value) {
  KStmt s;
  s.kind = KernelStmtKind::Store;
  s.name = array;
  s.index = std::move(index);
  s.value = std::move(value);
  current().push_back(std::move(s));
}

void UserKernelBuilder::if_(KExpr cond, const std::function<void()>& then_body, const std::function<void()>& else_body) {
  KStmt s;
  s.kind = KernelStmtKind::If;
  s.value = std::move(cond);
  blocks_.push_back(&s.body);
  then_body();
  blocks_.back() = &s.else_body;
  if (else_body) else_body();
  blocks_.pop_back();
  current().push_back(std::move(s));
}

void UserKernelBuilder::for_(const std::string& var, KExpr extent, const std::function<void(KExpr)>& body) {
  KStmt s;
  s.kind = KernelStmtKind::For;
  s.name = var;
  s.value = std::move(extent);
  blocks_.push_back(&s.body);
  body(kernel_name(var));
  blocks_.pop_back();
  current().push_back(std::move(s));
}

void UserKernelBuilder::yield(KExpr value) {
  KStmt s;
  s.kind = KernelStmtKind::Yield;
  s.value = std::move(value);
  current().push_back(std::move(s));
}

UserKernel UserKernelBuilder::finish() {
  STITCH_ASSERT(blocks_.size() == 1, "UserKernelBuilder::finish inside an if or for body");
  check_kernel(kernel_);
  return std::move(kernel_);
}

// ---------------------------------------------------------------- printer

namespace {

// Binding strength of the infix forms; calls and atoms bind tightest.
int precedence(const KernelExprNode& n) {
  if (n.kind != KernelExprKind::Op) return 100;
  switch (n.op) {
    case OpKind::Or: return 1;
    case OpKind::And: return 2;
    case OpKind::Eq: case OpKind::Ne: case OpKind::Lt: case OpKind::Le: case OpKind::Gt: case OpKind::Ge: return 3;
    case OpKind::Add: case OpKind::Sub: return 4;
    case OpKind::Mul: case OpKind::Div: case OpKind::Rem: return 5;
    case OpKind::Neg: case OpKind::Not: return 6;
    default: return 100;
  }
}

std::string_view infix(OpKind op) {
  switch (op) {
    case OpKind::Or: return "||";
    case OpKind::And: return "&&";
    case OpKind::Eq: return "==";
    case OpKind::Ne: return "!=";
    case OpKind::Lt: return "<";
    case OpKind::Le: return "<=";
    case OpKind::Gt: return ">";
    case OpKind::Ge: return ">=";
    case OpKind::Add: return "+";
    case OpKind::Sub: return "-";
    case OpKind::Mul: return "*";
    case OpKind::Div: return "/";
    case OpKind::Rem: return "%";
    default: return "";
  }
}

// `&&`, `||` and `!` are the logical forms; on integers they print as calls
// (bitwise and, or, not), which is what the checker gives them.
bool prints_infix(const KernelExprNode& n) {
  if (n.kind != KernelExprKind::Op) return false;
  bool logical = n.op == OpKind::And || n.op == OpKind::Or || n.op == OpKind::Not;
  if (logical && n.typed && !is_bool(n.dtype)) return false;
  return n.op == OpKind::Neg || n.op == OpKind::Not || !infix(n.op).empty();
}

std::string print_literal(const KernelExprNode& n) {
  if (n.is_bool_literal) return n.int_value ? "true" : "false";
  if (n.typed ? is_float(n.dtype) : n.is_float_literal) return format_float(n.float_value);
  return std::to_string(n.int_value);
}

std::string print_expr(const KExpr& e, int outer = 0) {
  const KernelExprNode& n = e.node();
  switch (n.kind) {
    case KernelExprKind::Literal: {
      std::string s = print_literal(n);
      // A negative literal after a binary minus must not read as "x - -1" glued.
      return (s[0] == '-' && outer > 0) ? "(" + s + ")" : s;
    }
    case KernelExprKind::Name: return n.name;
    case KernelExprKind::Load: {
      std::string s = n.name + "[";
      for (size_t i = 0; i < n.operands.size(); ++i) s += (i ? ", " : "") + print_expr(n.operands[i]);
      return s + "]";
    }
    case KernelExprKind::Op: break;
  }
  if (n.op == OpKind::Cast) return fmt::format("{}({})", dtype_name(n.cast_to), print_expr(n.operands[0]));
  if (!prints_infix(n)) {
    std::string s = std::string(op_name(n.op)) + "(";
    for (size_t i = 0; i < n.operands.size(); ++i) s += (i ? ", " : "") + print_expr(n.operands[i]);
    return s + ")";
  }
  int p = precedence(n);
  std::string s;
  if (n.operands.size() == 1) {
    // -(2.5) stays a negation of a literal: "-2.5" would read back as the literal -2.5.
    const bool literal_operand = n.operands[0]->kind == KernelExprKind::Literal;
    s = std::string(n.op == OpKind::Neg ? "-" : "!") +
        (literal_operand ? "(" + print_expr(n.operands[0]) + ")" : print_expr(n.operands[0], p));
  } else {
    // Left-associative; comparisons do not chain, so both sides of one get the tighter level.
    int left = p == 3 ? p + 1 : p;
    s = print_expr(n.operands[0], left) + " " + std::string(infix(n.op)) + " " + print_expr(n.operands[1], p + 1);
  }
  return p < outer ? "(" + s + ")" : s;
}

void print_block(std::string& out, const std::vector<KStmt>& body, int depth);

void print_stmt(std::string& out, const KStmt& s, int depth) {
  std::string pad(static_cast<size_t>(depth) * 2, ' ');
  switch (s.kind) {
    case KernelStmtKind::Let:
      out += pad + "let " + s.name;
      if (s.has_declared_type) out += fmt::format(": {}", dtype_name(s.declared_type));
      out += " = " + print_expr(s.value) + "\n";
      return;
    case KernelStmtKind::Assign: out += pad + s.name + " = " + print_expr(s.value) + "\n"; return;
    case KernelStmtKind::Store: {
      out += pad + s.name + "[";
      for (size_t i = 0; i < s.index.size(); ++i) out += (i ? ", " : "") + print_expr(s.index[i]);
      out += "] = " + print_expr(s.value) + "\n";
      return;
    }
    case KernelStmtKind::If:
      out += pad + "if " + print_expr(s.value) + " {\n";
      print_block(out, s.body, depth + 1);
      if (!s.else_body.empty()) {
        out += pad + "} else {\n";
        print_block(out, s.else_body, depth + 1);
      }
      out += pad + "}\n";
      return;
    case KernelStmtKind::For:
      out += pad + "for " + s.name + " < " + print_expr(s.value) + " {\n";
      print_block(out, s.body, depth + 1);
      out += pad + "}\n";
      return;
    case KernelStmtKind::Yield: out += pad + "yield " + print_expr(s.value) + "\n"; return;
  }
}

void print_block(std::string& out, const std::vector<KStmt>& body, int depth) {
  for (const KStmt& s : body) print_stmt(out, s, depth);
}

}  // namespace

std::string print_kernel(const UserKernel& k) {
  std::string out = "kernel " + k.name + "(";
  for (size_t i = 0; i < k.params.size(); ++i) {
    const KernelParam& p = k.params[i];
    out += (i ? ", " : "") + p.name + ": ";
    out += p.is_array ? TensorType{p.dtype, p.shape}.str() : std::string(dtype_name(p.dtype));
  }
  out += ")";
  if (k.is_reduction()) out += fmt::format(" -> {} {}", kernel_reduction_name(k.reduction), dtype_name(k.result_dtype));
  out += " over ";
  for (size_t i = 0; i < k.range.size(); ++i) out += (i ? ", " : "") + k.range[i].name + " < " + print_expr(k.range[i].extent);
  out += " {\n";
  print_block(out, k.body, 1);
  return out + "}\n";
}

// ---------------------------------------------------------------- equality

namespace {

bool same_double(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || (a == b && std::signbit(a) == std::signbit(b));
}

bool same_expr(const KExpr& a, const KExpr& b) {
  if (a.defined() != b.defined()) return false;
  if (!a.defined()) return true;
  const KernelExprNode& x = a.node();
  const KernelExprNode& y = b.node();
  if (x.kind != y.kind || x.typed != y.typed || (x.typed && x.dtype != y.dtype)) return false;
  if (x.name != y.name || x.operands.size() != y.operands.size()) return false;
  if (x.kind == KernelExprKind::Literal) {
    if (x.is_bool_literal != y.is_bool_literal || x.int_value != y.int_value) return false;
    bool floats = x.typed ? is_float(x.dtype) : x.is_float_literal;
    if (floats && !same_double(x.float_value, y.float_value)) return false;
  }
  if (x.kind == KernelExprKind::Op && (x.op != y.op || (x.op == OpKind::Cast && x.cast_to != y.cast_to))) return false;
  for (size_t i = 0; i < x.operands.size(); ++i) {
    if (!same_expr(x.operands[i], y.operands[i])) return false;
  }
  return true;
}

bool same_block(const std::vector<KStmt>& a, const std::vector<KStmt>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const KStmt& x = a[i];
    const KStmt& y = b[i];
    if (x.kind != y.kind || x.name != y.name || x.declared_type != y.declared_type) return false;
    if (x.index.size() != y.index.size() || !same_expr(x.value, y.value)) return false;
    for (size_t j = 0; j < x.index.size(); ++j) {
      if (!same_expr(x.index[j], y.index[j])) return false;
    }
    if (!same_block(x.body, y.body) || !same_block(x.else_body, y.else_body)) return false;
  }
  return true;
}

}  // namespace

bool any_node(const KExpr& e, const std::function<bool(const KernelExprNode&)>& pred) {
  const KernelExprNode& n = e.node();
  if (pred(n)) return true;
  for (const KExpr& o : n.operands) {
    if (any_node(o, pred)) return true;
  }
  return false;
}

bool any_stmt(const std::vector<KStmt>& body, const std::function<bool(const KStmt&)>& pred) {
  for (const KStmt& s : body) {
    if (pred(s) || any_stmt(s.body, pred) || any_stmt(s.else_body, pred)) return true;
  }
  return false;
}

bool same_kernel(const UserKernel& a, const UserKernel& b) {
  if (a.name != b.name || a.reduction != b.reduction || a.params.size() != b.params.size()) return false;
  if (a.is_reduction() && a.result_dtype != b.result_dtype) return false;
  for (size_t i = 0; i < a.params.size(); ++i) {
    const KernelParam& x = a.params[i];
    const KernelParam& y = b.params[i];
    if (x.name != y.name || x.dtype != y.dtype || x.is_array != y.is_array || x.shape != y.shape ||
        x.access != y.access) {
      return false;
    }
  }
  if (a.range.size() != b.range.size()) return false;
  for (size_t i = 0; i < a.range.size(); ++i) {
    if (a.range[i].name != b.range[i].name || !same_expr(a.range[i].extent, b.range[i].extent)) return false;
  }
  return same_block(a.body, b.body);
}

}  // namespace stitch
