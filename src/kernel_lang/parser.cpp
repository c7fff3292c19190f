// The user-kernel parser: a recursive descent over the shared token stream,
// building the unchecked tree that check_kernel() then types
// (docs/kernel-language.md, Grammar).
#include "kernel_lang/parser.h"

#include "ir/token_cursor.h"

#include <algorithm>
#include <limits>
#include <optional>

#include <fmt/format.h>

namespace stitch {

namespace {

// As in graphs: nesting deeper than any real program, far from the stack's end.
constexpr int kMaxNesting = 200;

class KernelParser : private TokenCursor {
 public:
  KernelParser(const std::vector<Token>& toks, size_t& pos, const SourceFile& file) : TokenCursor(toks, pos, file) {}

  UserKernel parse() {
    UserKernel k;
    k.loc = loc(next());  // 'kernel'
    k.name = expect(TokenKind::Ident, "a kernel name after 'kernel'").text;
    expect(TokenKind::LParen, fmt::format("'(' after kernel name '{}'", k.name));
    if (!at(TokenKind::RParen)) {
      for (;;) {
        k.params.push_back(parse_param());
        if (!at(TokenKind::Comma)) break;
        next();
      }
    }
    expect(TokenKind::RParen, fmt::format("',' or ')' in the parameters of kernel '{}'", k.name));
    if (at(TokenKind::Arrow)) {
      next();
      Token op = expect(TokenKind::Ident, "a reduction (sum, max or min) after '->'");
      if (op.text == "sum") {
        k.reduction = KernelReduction::Sum;
      } else if (op.text == "max") {
        k.reduction = KernelReduction::Max;
      } else if (op.text == "min") {
        k.reduction = KernelReduction::Min;
      } else {
        fail(op, fmt::format("unknown reduction '{}'; a kernel reduces with sum, max or min", op.text));
      }
      k.result_dtype = expect_dtype(fmt::format("the dtype of the {} after '{}'", op.text, op.text));
    }
    if (!at_word("over")) fail(peek(), fmt::format("expected 'over' and the range of kernel '{}', got {}", k.name, describe(peek())));
    next();
    for (;;) {
      Token name = expect(TokenKind::Ident, "an index variable in the range");
      expect_operator("<", fmt::format("'<' after index variable '{}'", name.text));
      k.range.push_back(KernelIndex{name.text, parse_expr(), loc(name)});
      if (!at(TokenKind::Comma)) break;
      next();
    }
    k.body = parse_block(fmt::format("the body of kernel '{}'", k.name));
    return k;
  }

 private:
  void expect_operator(std::string_view op, std::string_view what) {
    if (!at_operator(op)) fail(peek(), fmt::format("expected {}, got {}", what, describe(peek())));
    next();
  }
  DType expect_dtype(std::string_view what) {
    Token t = expect(TokenKind::Ident, what);
    std::optional<DType> d = parse_dtype(t.text);
    if (!d) fail(t, fmt::format("unknown dtype '{}' (f16 bf16 f32 f64 i8 i32 i64 bool)", t.text));
    return *d;
  }

  KernelParam parse_param() {
    Token name = expect(TokenKind::Ident, "a parameter name");
    expect(TokenKind::Colon, fmt::format("':' and a type after parameter '{}'", name.text));
    KernelParam p;
    p.name = name.text;
    p.loc = loc(name);
    p.dtype = expect_dtype(fmt::format("the dtype of parameter '{}'", name.text));
    if (!at(TokenKind::LBracket)) return p;
    next();
    p.is_array = true;
    if (!at(TokenKind::RBracket)) {
      for (;;) {
        if (at(TokenKind::Int)) {
          Token d = next();
          if (d.int_value < 0) fail(d, fmt::format("array '{}' has negative extent {}", name.text, d.int_value));
          p.shape.push_back(Dim(d.int_value));
        } else {
          p.shape.push_back(Dim::symbol(expect(TokenKind::Ident, "an extent or a symbol").text));
        }
        if (!at(TokenKind::Comma)) break;
        next();
      }
    }
    expect(TokenKind::RBracket, fmt::format("',' or ']' in the shape of array '{}'", name.text));
    try {
      check_static_size(fmt::format("array '{}'", p.name), TensorType{p.dtype, p.shape});
    } catch (const UserError& e) {
      throw e.located(p.loc);
    }
    return p;
  }

  std::vector<KStmt> parse_block(const std::string& what) {
    expect(TokenKind::LBrace, fmt::format("'{{' to open {}", what));
    Nesting guard(*this, peek());
    std::vector<KStmt> body;
    while (!at(TokenKind::RBrace)) {
      if (at(TokenKind::End)) fail(peek(), fmt::format("expected '}}' to close {}, got end of input", what));
      body.push_back(parse_stmt());
    }
    next();
    return body;
  }

  KStmt parse_stmt() {
    Token first = peek();
    KStmt s;
    s.loc = loc(first);
    if (at_word("let")) {
      next();
      s.kind = KernelStmtKind::Let;
      s.name = expect(TokenKind::Ident, "a local's name after 'let'").text;
      if (at(TokenKind::Colon)) {
        next();
        s.has_declared_type = true;
        s.declared_type = expect_dtype(fmt::format("the dtype of '{}'", s.name));
      }
      expect(TokenKind::Equals, fmt::format("'=' and the value of '{}'", s.name));
      s.value = parse_expr();
      return s;
    }
    if (at_word("if")) return parse_if();
    if (at_word("for")) {
      next();
      s.kind = KernelStmtKind::For;
      s.name = expect(TokenKind::Ident, "a loop variable after 'for'").text;
      expect_operator("<", fmt::format("'<' and the extent after loop variable '{}'", s.name));
      s.value = parse_expr();
      s.body = parse_block(fmt::format("the body of loop '{}'", s.name));
      return s;
    }
    if (at_word("yield")) {
      next();
      s.kind = KernelStmtKind::Yield;
      s.value = parse_expr();
      return s;
    }
    if (!at(TokenKind::Ident)) fail(first, fmt::format("expected a statement, got {}", describe(first)));
    s.name = next().text;
    KExpr target = kernel_name(s.name, s.loc);
    s.kind = KernelStmtKind::Assign;
    if (at(TokenKind::LBracket)) {
      s.kind = KernelStmtKind::Store;
      s.index = parse_index_list();
      target = kernel_load(s.name, s.index, s.loc);
    }
    Token op = peek();
    std::optional<OpKind> compound;
    if (at(TokenKind::Equals)) {
      next();
    } else if (at(TokenKind::Operator) && op.text.size() == 2 && op.text[1] == '=' && op.text[0] != '=' &&
               op.text[0] != '!' && op.text[0] != '<' && op.text[0] != '>') {
      next();
      compound = op.text[0] == '+' ? OpKind::Add : op.text[0] == '-' ? OpKind::Sub : op.text[0] == '*' ? OpKind::Mul : OpKind::Div;
    } else {
      fail(op, fmt::format("expected '=' (or +=, -=, *=, /=) after '{}', got {}", s.name, describe(op)));
    }
    KExpr value = parse_expr();
    s.value = compound ? kernel_op(*compound, {target, value}, loc(op)) : value;
    return s;
  }

  KStmt parse_if() {
    KStmt s;
    s.loc = loc(next());  // 'if'
    s.kind = KernelStmtKind::If;
    s.value = parse_expr();
    s.body = parse_block("the body of 'if'");
    if (at_word("else")) {
      next();
      if (at_word("if")) {
        Nesting guard(*this, peek());
        s.else_body.push_back(parse_if());
      } else {
        s.else_body = parse_block("the body of 'else'");
      }
    }
    return s;
  }

  std::vector<KExpr> parse_index_list() {
    expect(TokenKind::LBracket, "'['");
    std::vector<KExpr> index;
    if (!at(TokenKind::RBracket)) {
      for (;;) {
        index.push_back(parse_expr());
        if (!at(TokenKind::Comma)) break;
        next();
      }
    }
    expect(TokenKind::RBracket, "',' or ']' after an index");
    return index;
  }

  // ------------------------------------------------------------ expressions

  KExpr parse_expr() {
    Nesting guard(*this, peek());
    return parse_binary(0);
  }

  struct BinaryOp {
    std::string_view text;
    int level;
    OpKind op;
  };

  // A '-' the lexer glued to a number ("x-1") is a binary minus here.
  bool at_glued_minus() const {
    return (at(TokenKind::Int) || at(TokenKind::Float)) && !peek().text.empty() && peek().text[0] == '-';
  }

  std::optional<BinaryOp> peek_binary() const {
    static constexpr BinaryOp kOps[] = {
        {"||", 0, OpKind::Or}, {"&&", 1, OpKind::And}, {"==", 2, OpKind::Eq}, {"!=", 2, OpKind::Ne},
        {"<", 2, OpKind::Lt},  {"<=", 2, OpKind::Le},  {">", 2, OpKind::Gt},  {">=", 2, OpKind::Ge},
        {"+", 3, OpKind::Add}, {"*", 4, OpKind::Mul},  {"/", 4, OpKind::Div}, {"%", 4, OpKind::Rem}};
    if (at(TokenKind::Minus) || at_glued_minus()) return BinaryOp{"-", 3, OpKind::Sub};
    if (!at(TokenKind::Operator)) return std::nullopt;
    for (const BinaryOp& b : kOps) {
      if (peek().text == b.text) return b;
    }
    return std::nullopt;
  }

  // Precedence climbing; comparisons do not chain (a < b < c is an error).
  KExpr parse_binary(int min_level) {
    KExpr lhs = parse_unary();
    for (;;) {
      std::optional<BinaryOp> b = peek_binary();
      if (!b || b->level < min_level) return lhs;
      Token op_tok = peek();
      KExpr rhs;
      if (at_glued_minus()) {
        // Split "-1" into the operator and the literal 1.
        Token lit = next();
        lit.text = lit.text.substr(1);
        if (lit.kind == TokenKind::Int && lit.int_value == std::numeric_limits<int64_t>::min()) {
          fail(lit, fmt::format("integer {} does not fit in 64 bits", lit.text));
        }
        lit.int_value = -lit.int_value;
        lit.float_value = -lit.float_value;
        rhs = continue_binary(literal_of(lit), b->level + 1);
      } else {
        next();
        rhs = parse_binary(b->level + 1);
      }
      lhs = kernel_op(b->op, {lhs, rhs}, loc(op_tok));
      if (b->level == 2) {
        if (std::optional<BinaryOp> again = peek_binary(); again && again->level == 2) {
          fail(peek(), "comparisons do not chain; write (a < b) && (b < c)");
        }
      }
    }
  }

  // The rest of a binary expression whose first operand is already parsed.
  KExpr continue_binary(KExpr lhs, int min_level) {
    for (;;) {
      std::optional<BinaryOp> b = peek_binary();
      if (!b || b->level < min_level) return lhs;
      Token op_tok = next();
      KExpr rhs = parse_binary(b->level + 1);
      lhs = kernel_op(b->op, {lhs, rhs}, loc(op_tok));
    }
  }

  KExpr parse_unary() {
    Token t = peek();
    if (at(TokenKind::Minus)) {
      next();
      Nesting guard(*this, t);
      return kernel_op(OpKind::Neg, {parse_unary()}, loc(t));
    }
    if (at_operator("!")) {
      next();
      Nesting guard(*this, t);
      return kernel_op(OpKind::Not, {parse_unary()}, loc(t));
    }
    return parse_primary();
  }

  KExpr literal_of(const Token& t) const {
    if (t.kind == TokenKind::Float) return kernel_literal(t.float_value, loc(t));
    return kernel_literal(t.int_value, loc(t));
  }

  KExpr parse_primary() {
    Token t = peek();
    if (at(TokenKind::Int) || at(TokenKind::Float)) {
      next();
      return literal_of(t);
    }
    if (at(TokenKind::LParen)) {
      next();
      KExpr e = parse_expr();
      expect(TokenKind::RParen, "')' to close '('");
      return e;
    }
    if (!at(TokenKind::Ident)) fail(t, fmt::format("expected an expression, got {}", describe(t)));
    next();
    if (t.text == "true" || t.text == "false") return kernel_bool(t.text == "true", loc(t));
    if (t.text == "inf") return kernel_literal(std::numeric_limits<double>::infinity(), loc(t));
    if (t.text == "nan") return kernel_literal(std::numeric_limits<double>::quiet_NaN(), loc(t));
    if (at(TokenKind::LBracket)) return kernel_load(t.text, parse_index_list(), loc(t));
    if (!at(TokenKind::LParen)) return kernel_name(t.text, loc(t));
    next();
    std::vector<KExpr> args;
    if (!at(TokenKind::RParen)) {
      for (;;) {
        args.push_back(parse_expr());
        if (!at(TokenKind::Comma)) break;
        next();
      }
    }
    expect(TokenKind::RParen, fmt::format("',' or ')' in the arguments of '{}'", t.text));
    if (std::optional<DType> to = parse_dtype(t.text)) {
      if (args.size() != 1) fail(t, fmt::format("the conversion {}(...) takes one value, got {}", t.text, args.size()));
      return kernel_cast(args[0], *to, loc(t));
    }
    std::optional<OpKind> op = parse_op_kind(t.text);
    if (!op || t.text == "cast") fail(t, fmt::format("unknown function '{}'", t.text));
    return kernel_op(*op, std::move(args), loc(t));
  }

  // Counts nesting so hostile input ends in an error, not a stack overflow.
  struct Nesting {
    Nesting(KernelParser& p, const Token& t) : p_(p) {
      if (++p_.depth_ > kMaxNesting) p_.fail(t, fmt::format("nesting deeper than {} levels", kMaxNesting));
    }
    ~Nesting() { --p_.depth_; }
    KernelParser& p_;
  };

  int depth_ = 0;
};

}  // namespace

UserKernel parse_kernel_tokens(const std::vector<Token>& tokens, size_t& pos, const SourceFile& file) {
  return KernelParser(tokens, pos, file).parse();
}

}  // namespace stitch
