#include "kir/printer.h"

#include <fmt/format.h>

#include <cmath>
#include <string_view>

#include "stitch/error.h"

namespace stitch::kir {

namespace {

// i64 literals print bare (index arithmetic is all i64); every other literal
// carries its dtype so the text never depends on inference.
std::string print_const(const ExprNode& n) {
  if (is_bool(n.dtype)) return n.int_value ? "true" : "false";
  if (n.dtype == DType::i64) return fmt::format("{}", n.int_value);
  if (is_integer(n.dtype)) return fmt::format("{}:{}", n.int_value, dtype_name(n.dtype));
  double v = n.float_value;
  std::string digits;
  if (std::isnan(v)) {
    digits = "nan";
  } else if (std::isinf(v)) {
    digits = v < 0 ? "-inf" : "inf";
  } else {
    // Shortest round-trip form, with a '.' or exponent so it reads as a float.
    digits = fmt::format("{}", v);
    if (digits.find_first_of(".e") == std::string::npos) digits += ".0";
  }
  return fmt::format("{}:{}", digits, dtype_name(n.dtype));
}

std::string join(const std::vector<Expr>& exprs) {
  std::string out;
  for (size_t i = 0; i < exprs.size(); ++i) out += (i ? ", " : "") + print_expr(exprs[i]);
  return out;
}

std::string print_type(DType dtype, const std::string& dims) {
  return fmt::format("{}[{}]", dtype_name(dtype), dims);
}

class StmtPrinter {
 public:
  explicit StmtPrinter(std::string& out) : out_(out) {}

  void list(const StmtList& stmts, int depth) {
    for (const Stmt& s : stmts) {
      std::visit([&](const auto& node) { print(node, depth); }, s.node);
    }
  }

 private:
  void line(int depth, const std::string& text) {
    out_.append(static_cast<size_t>(depth) * 2, ' ');
    out_ += text;
    out_ += '\n';
  }

  void print(const ForStmt& s, int depth) {
    line(depth, fmt::format("for {} in {}({}) {{", s.var, loop_level_name(s.level), print_expr(s.extent)));
    list(s.body, depth + 1);
    line(depth, "}");
  }
  void print(const IfStmt& s, int depth) {
    line(depth, fmt::format("if {} {{", print_expr(s.cond)));
    list(s.then_body, depth + 1);
    if (!s.else_body.empty()) {
      line(depth, "} else {");
      list(s.else_body, depth + 1);
    }
    line(depth, "}");
  }
  void print(const LetStmt& s, int depth) {
    std::string init = s.init.defined() ? " = " + print_expr(s.init) : "";
    line(depth, fmt::format("let {}: {}{}", s.name, dtype_name(s.dtype), init));
  }
  void print(const AssignStmt& s, int depth) {
    line(depth, fmt::format("{} = {}", s.name, print_expr(s.value)));
  }
  void print(const LocalArrayStmt& s, int depth) {
    line(depth, fmt::format("local {}: {}", s.name, print_type(s.dtype, std::to_string(s.count))));
  }
  void print(const StoreStmt& s, int depth) {
    line(depth, fmt::format("{}[{}] = {}", s.buffer, join(s.index), print_expr(s.value)));
  }
  void print(const PrefetchStmt& s, int depth) {
    line(depth, fmt::format("prefetch {}[{} +: {}]", s.buffer, print_expr(s.first), print_expr(s.count)));
  }
  void print(const VectorMoveStmt& s, int depth) {
    const std::string global = fmt::format("{}[{} +: {}]", s.buffer, join(s.index), s.count);
    const std::string local = fmt::format("{}[{} +: {}]", s.array, print_expr(s.array_first), s.count);
    line(depth, fmt::format("vector {} = {}", s.store ? global : local, s.store ? local : global));
  }
  void print(const BarrierStmt&, int depth) { line(depth, "barrier"); }
  void print(const TransposeTileStmt& s, int depth) {
    line(depth, fmt::format("transpose_tile {}[{}x{}]", s.buffer, s.size, s.size));
  }
  void print(const ReduceStmt& s, int depth) {
    std::string results = s.result;
    std::string operands = print_expr(s.value);
    if (!s.index_result.empty()) results += ", " + s.index_result;
    if (s.index.defined()) operands += ", " + print_expr(s.index);
    if (!s.scratch.empty()) operands += ", scratch=" + s.scratch;
    if (!s.index_scratch.empty()) operands += ", index_scratch=" + s.index_scratch;
    if (s.width != kWarpSize) operands += fmt::format(", width={}", s.width);
    line(depth, fmt::format("{} = {}.{}({})", results, reduce_scope_name(s.scope), op_name(s.op), operands));
  }

  std::string& out_;
};

}  // namespace

std::string print_expr(const Expr& e) {
  if (!e.defined()) return "<absent>";
  const ExprNode& n = e.node();
  switch (n.kind) {
    case ExprKind::Const: return print_const(n);
    case ExprKind::Var: return n.name;
    case ExprKind::Load: return fmt::format("{}[{}]", n.name, join(n.operands));
    case ExprKind::Op:
      if (n.op == OpKind::Cast) {
        return fmt::format("cast({}, to={}{})", join(n.operands), dtype_name(n.dtype), n.in_range ? ", in_range" : "");
      }
      return fmt::format("{}({})", op_name(n.op), join(n.operands));
  }
  STITCH_ASSERT(false, "unknown expression kind");
}

std::string print_kernel(const Kernel& k) {
  std::string out = fmt::format("kernel {}(", k.name);
  bool first = true;
  for (const BufferParam& b : k.buffers) {
    out += fmt::format("{}{}: global {}", first ? "" : ", ", b.name, print_type(b.dtype, join(b.shape)));
    if (!b.strides.empty()) out += fmt::format(" strides[{}]", join(b.strides));
    out += fmt::format(" {}", access_name(b.access));
    if (b.streaming) out += " streaming";
    if (b.may_alias) out += " may_alias";
    first = false;
  }
  for (const ScalarParam& s : k.scalars) {
    out += fmt::format("{}{}: {}", first ? "" : ", ", s.name, dtype_name(s.dtype));
    first = false;
  }
  out += fmt::format(") launch(grid={}, block={}) {{\n", print_expr(k.launch.grid), k.launch.block_size);
  if (k.shared_arena_bytes > 0) out += fmt::format("  shared arena: {} bytes\n", k.shared_arena_bytes);
  if (k.panel_elements > 0) out += fmt::format("  dot epilogue: block ranges, {} elements of the dot a block\n", k.panel_elements);
  for (const SharedBuffer& s : k.shared) {
    out += fmt::format("  shared {}: {}", s.name, print_type(s.dtype, std::to_string(s.count)));
    out += s.offset >= 0 ? fmt::format(" at {}\n", s.offset) : "\n";
  }
  StmtPrinter(out).list(k.body, 1);
  return out + "}\n";
}

}  // namespace stitch::kir
