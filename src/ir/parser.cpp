// The graph text format parser (DESIGN.md, "Graph text format").
//
// Two phases: the tokens are parsed into a small AST of the whole module, then
// each graph is built with GraphBuilder. Knowing every statement name before
// building lets the builder's generated names (for nested calls, literals and
// composite intermediates) avoid names the user defines further down, and lets
// an error say "used before its definition" rather than just "undefined".
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <filesystem>
#include <iterator>
#include <limits>
#include <optional>
#include <unordered_map>

#include "ir/composites.h"
#include "kernel_lang/parser.h"
#include "ir/lexer.h"
#include "ir/token_cursor.h"
#include "stitch/builder.h"
#include "stitch/text.h"

namespace stitch {

namespace {

// Deeper nesting than any real program has; the limit keeps both recursive
// phases far from the stack's end on hostile input.
constexpr int kMaxNesting = 200;

// ---------------------------------------------------------------- AST

struct AttrAst {
  std::string key;
  SourceLoc key_loc;
  AttrValue value;
};

struct Expr {
  enum class Kind { Value, Literal, Call };
  Kind kind = Kind::Value;
  SourceLoc loc;        // the value name, the literal, or the op name of a call
  std::string name;     // value name or op name
  AttrValue literal;    // int or float, for a literal
  std::vector<Expr> args;
  std::vector<AttrAst> attrs;
};

struct Stmt {
  std::string name;
  SourceLoc loc;
  Expr call;
};

struct TypeAst {
  TensorType type;
  SourceLoc loc;
};

struct ParamAst {
  std::string name;
  SourceLoc loc;
  TypeAst type;
};

struct NameRef {
  std::string name;
  SourceLoc loc;
};

struct GraphAst {
  std::string name;
  SourceLoc loc;
  std::vector<ParamAst> params;
  std::optional<std::vector<TypeAst>> result_types;
  std::vector<Stmt> stmts;
  SourceLoc return_loc;
  std::vector<NameRef> returns;
};

bool is_reserved_word(std::string_view s) { return s == "return" || s == "inf" || s == "nan"; }

// Optimal string alignment distance: a swap of neighbours counts as one edit,
// so "rdeuce_sum" is as close to "reduce_sum" as "reduce_summ" is.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

// The closest candidate within two edits, or "" if none is. Short names get
// one edit, and never one that rewrites every letter ('q' is not a typo of 'x').
std::string closest_name(std::string_view name, const std::vector<std::string>& candidates) {
  size_t limit = std::min<size_t>(name.size() <= 3 ? 1 : 2, name.size() - 1);
  std::string best;
  std::pair<size_t, size_t> best_score{limit + 1, 0};  // (edits, length gap): 'xd' is closer to 'xc' than to 'x'
  for (const std::string& c : candidates) {
    size_t gap = c.size() > name.size() ? c.size() - name.size() : name.size() - c.size();
    if (gap > limit) continue;
    std::pair<size_t, size_t> score{edit_distance(name, c), gap};
    if (score < best_score) {
      best_score = score;
      best = c;
    }
  }
  return best;
}

std::vector<std::string> all_op_names() {
  std::vector<std::string> names;
  for (int i = 0; i < op_kind_count(); ++i) names.emplace_back(op_name(static_cast<OpKind>(i)));
  for (std::string_view c : composite_op_names()) names.emplace_back(c);
  return names;
}

// ---------------------------------------------------------------- syntax

// What the parser reads: owned here, walked by the TokenCursor base.
struct ParserInput {
  std::vector<Token> tokens;
  size_t position = 0;
  SourceFile source;  // one shared name for every location
};

class Parser : private ParserInput, private TokenCursor {
 public:
  Parser(std::vector<Token> tokens, const std::string& file)
      : ParserInput{std::move(tokens), 0, SourceFile(file)}, TokenCursor(ParserInput::tokens, position, source) {}

  // Graphs and kernels (docs/kernel-language.md) in file order.
  std::vector<GraphAst> parse_graphs(std::vector<UserKernel>& kernels) {
    std::vector<GraphAst> graphs;
    if (at(TokenKind::End)) {
      fail(peek(), "no graph or kernel in the input (a file holds one or more 'graph' or 'kernel' definitions)");
    }
    std::string last;
    while (!at(TokenKind::End)) {
      if (at_word("kernel")) {
        kernels.push_back(parse_kernel_tokens(toks_, pos_, file_));
        last = "kernel '" + kernels.back().name + "'";
        continue;
      }
      if (!at_word("graph")) {
        fail(peek(), last.empty() ? fmt::format("expected 'graph' or 'kernel', got {}", describe(peek()))
                                  : fmt::format("expected 'graph', 'kernel' or end of input after {}, got {}", last,
                                                describe(peek())));
      }
      graphs.push_back(parse_graph());
      last = "graph '" + graphs.back().name + "'";
    }
    return graphs;
  }

 private:
  Token expect_name(std::string_view what) {
    Token t = expect(TokenKind::Ident, what);
    if (is_reserved_word(t.text)) fail(t, fmt::format("'{}' is a reserved word and cannot name a value", t.text));
    return t;
  }

  GraphAst parse_graph() {
    next();  // 'graph'
    GraphAst g;
    Token name = expect(TokenKind::Ident, "a graph name after 'graph'");
    g.name = name.text;
    g.loc = loc(name);
    expect(TokenKind::LParen, fmt::format("'(' after graph name '{}'", g.name));
    if (!at(TokenKind::RParen)) {
      for (;;) {
        g.params.push_back(parse_param());
        if (!at(TokenKind::Comma)) break;
        next();
      }
    }
    expect(TokenKind::RParen, "',' or ')' in the parameter list");
    if (at(TokenKind::Arrow)) {
      next();
      expect(TokenKind::LParen, "'(' after '->' (result types are written -> (f32[N], ...))");
      std::vector<TypeAst> types;
      if (!at(TokenKind::RParen)) {
        for (;;) {
          types.push_back(parse_type());
          if (!at(TokenKind::Comma)) break;
          next();
        }
      }
      expect(TokenKind::RParen, "',' or ')' in the result types");
      g.result_types = std::move(types);
    }
    expect(TokenKind::LBrace, fmt::format("'{{' to open the body of graph '{}'", g.name));
    for (;;) {
      if (at(TokenKind::RBrace)) fail(peek(), fmt::format("graph '{}' has no 'return' statement", g.name));
      if (at_word("return")) break;
      g.stmts.push_back(parse_stmt());
    }
    Token ret = next();
    g.return_loc = loc(ret);
    if (at(TokenKind::RBrace)) fail(ret, "'return' needs at least one value");
    for (;;) {
      Token r = expect(TokenKind::Ident, "a value name after 'return'");
      g.returns.push_back({r.text, loc(r)});
      if (!at(TokenKind::Comma)) break;
      next();
    }
    if (at(TokenKind::Ident) && at(TokenKind::Equals, 1)) {
      fail(peek(), fmt::format("'return' must be the last statement of graph '{}'", g.name));
    }
    expect(TokenKind::RBrace, fmt::format("',' or '}}' after the returned values of graph '{}'", g.name));
    return g;
  }

  ParamAst parse_param() {
    ParamAst p;
    Token name = expect_name("a parameter name");
    p.name = name.text;
    p.loc = loc(name);
    expect(TokenKind::Colon, fmt::format("':' and a type after parameter '{}'", p.name));
    p.type = parse_type();
    return p;
  }

  TypeAst parse_type() {
    Token t = expect(TokenKind::Ident, "a type such as f32[N, 4]");
    std::optional<DType> dtype = parse_dtype(t.text);
    if (!dtype) fail(t, fmt::format("unknown dtype '{}' (expected f16, bf16, f32, f64, i8, i32, i64 or bool)", t.text));
    TypeAst out;
    out.loc = loc(t);
    out.type.dtype = *dtype;
    expect(TokenKind::LBracket, fmt::format("'[' after dtype '{}' (a scalar is {}[])", t.text, t.text));
    if (!at(TokenKind::RBracket)) {
      for (;;) {
        out.type.shape.push_back(parse_dim());
        if (!at(TokenKind::Comma)) break;
        next();
      }
    }
    expect(TokenKind::RBracket, "',' or ']' in the dims");
    return out;
  }

  Dim parse_dim() {
    const Token& t = peek();
    if (t.kind == TokenKind::Int) {
      if (t.int_value < 0) fail(t, fmt::format("negative extent {} in a shape", t.int_value));
      return Dim(next().int_value);
    }
    if (t.kind == TokenKind::Ident && !is_reserved_word(t.text)) return Dim::symbol(next().text);
    fail(t, fmt::format("expected a dim (an integer or a symbol), got {}", describe(t)));
  }

  Stmt parse_stmt() {
    Stmt s;
    if (!at(TokenKind::Ident)) {
      fail(peek(), fmt::format("expected a statement (name = op(...)) or 'return', got {}", describe(peek())));
    }
    Token name = expect_name("a value name");
    s.name = name.text;
    s.loc = loc(name);
    if (!at(TokenKind::Equals)) fail(peek(), fmt::format("expected '=' after '{}', got {}", s.name, describe(peek())));
    next();
    Token op = expect(TokenKind::Ident, "an op call after '='");
    if (!at(TokenKind::LParen)) {
      fail(peek(), fmt::format("expected '(' after '{}' (a statement is name = op(...)), got {}", op.text,
                               describe(peek())));
    }
    s.call = parse_call(op, 1);
    return s;
  }

  // op '(' args ')' with the op name already taken; `depth` counts enclosing calls.
  Expr parse_call(const Token& op, int depth) {
    if (depth > kMaxNesting) fail(op, fmt::format("calls are nested more than {} deep", kMaxNesting));
    Expr call;
    call.kind = Expr::Kind::Call;
    call.name = op.text;
    call.loc = loc(op);
    next();  // '('
    std::unordered_map<std::string, SourceLoc> keys;
    if (at(TokenKind::RParen)) {
      next();
      return call;
    }
    for (;;) {
      if (at(TokenKind::Ident) && at(TokenKind::Equals, 1)) {
        Token key = next();
        next();  // '='
        auto [first, fresh] = keys.emplace(key.text, loc(key));
        if (!fresh) {
          fail(key, fmt::format("attribute '{}' is given twice (first at line {}, column {})", key.text,
                                first->second.line, first->second.col));
        }
        AttrValue v = parse_attr_value(key.text);
        call.attrs.push_back({key.text, loc(key), std::move(v)});
      } else {
        if (!call.attrs.empty()) {
          fail(peek(), fmt::format("positional argument after keyword arguments in the call to '{}'", op.text));
        }
        call.args.push_back(parse_arg(depth));
      }
      if (at(TokenKind::Comma)) {
        next();
        continue;
      }
      if (!at(TokenKind::RParen)) {
        fail(peek(), fmt::format("expected ',' or ')' in the arguments of '{}', got {}", op.text, describe(peek())));
      }
      next();
      return call;
    }
  }

  // A number, possibly with a separate '-' before it or before inf/nan.
  std::optional<AttrValue> parse_number() {
    bool negative = false;
    size_t ahead = 0;
    if (at(TokenKind::Minus)) {
      negative = true;
      ahead = 1;
    }
    const Token& t = peek(ahead);
    bool numeric = t.kind == TokenKind::Int || t.kind == TokenKind::Float;
    if (negative && numeric && t.text[0] == '-') fail(t, fmt::format("expected a number after '-', got {}", describe(t)));
    std::optional<AttrValue> v;
    if (t.kind == TokenKind::Int) {
      // The lexer already folded an adjacent '-'; "- 5" negates a non-negative value.
      v = AttrValue(negative ? -t.int_value : t.int_value);
    } else if (t.kind == TokenKind::Float) {
      v = AttrValue(negative ? -t.float_value : t.float_value);
    } else if (t.kind == TokenKind::Ident && (t.text == "inf" || t.text == "nan")) {
      double x = t.text == "inf" ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
      v = AttrValue(negative ? -x : x);
    }
    if (!v) {
      if (negative) fail(t, fmt::format("expected a number after '-', got {}", describe(t)));
      return std::nullopt;
    }
    next();
    if (negative) next();
    return v;
  }

  Expr parse_arg(int depth) {
    Expr e;
    e.loc = loc(peek());
    if (std::optional<AttrValue> n = parse_number()) {
      e.kind = Expr::Kind::Literal;
      e.literal = std::move(*n);
      return e;
    }
    if (!at(TokenKind::Ident)) {
      fail(peek(), fmt::format("expected an argument (a value name, a call or a number), got {}", describe(peek())));
    }
    if (at(TokenKind::LParen, 1)) return parse_call(next(), depth + 1);
    // The usual cause is a call left open on the line before.
    if (peek().text == "return") fail(peek(), "expected an argument, got 'return' (is a ')' missing?)");
    e.kind = Expr::Kind::Value;
    e.name = next().text;
    return e;
  }

  AttrValue parse_attr_value(const std::string& key) {
    if (std::optional<AttrValue> n = parse_number()) return *n;
    const Token& t = peek();
    if (t.kind == TokenKind::String) return AttrValue(next().text);
    if (t.kind == TokenKind::LBracket) return parse_list();
    if (t.kind == TokenKind::Ident) {
      if (t.text == "true" || t.text == "false") return AttrValue(next().text == "true");
      if (std::optional<DType> d = parse_dtype(t.text)) {
        next();
        return AttrValue(*d);
      }
      if (key == "to" || key == "dtype") {
        fail(t, fmt::format("unknown dtype '{}' (expected f16, bf16, f32, f64, i8, i32, i64 or bool)", t.text));
      }
      fail(t, fmt::format("'{}' is not a valid value for attribute '{}' (expected a number, true, false, a dtype, "
                          "a string or a list)", t.text, key));
    }
    fail(t, fmt::format("expected a value for attribute '{}', got {}", key, describe(t)));
  }

  // [ints] -> Ints, any float -> Floats, any symbol -> Shape; [] -> empty Ints.
  AttrValue parse_list() {
    next();  // '['
    std::vector<AttrValue> items;
    std::vector<SourceLoc> item_locs;
    if (!at(TokenKind::RBracket)) {
      for (;;) {
        item_locs.push_back(loc(peek()));
        if (std::optional<AttrValue> n = parse_number()) {
          items.push_back(std::move(*n));
        } else if (at(TokenKind::Ident) && !is_reserved_word(peek().text)) {
          items.push_back(AttrValue(Shape{Dim::symbol(next().text)}));
        } else {
          fail(peek(), fmt::format("expected a number or a symbol in the list, got {}", describe(peek())));
        }
        if (!at(TokenKind::Comma)) break;
        next();
      }
    }
    expect(TokenKind::RBracket, "',' or ']' in the list");
    bool any_float = false, any_symbol = false;
    for (const AttrValue& v : items) {
      any_float |= v.is_float();
      any_symbol |= v.is_shape();
    }
    if (any_symbol) {
      Shape shape;
      for (size_t i = 0; i < items.size(); ++i) {
        if (items[i].is_float()) throw UserError("a list of dims cannot hold a non-integer", item_locs[i]);
        shape.push_back(items[i].is_shape() ? items[i].as_shape()[0] : Dim(items[i].as_int()));
      }
      return AttrValue(std::move(shape));
    }
    if (any_float) {
      AttrValue::Floats floats;
      for (const AttrValue& v : items) floats.push_back(v.as_number());
      return AttrValue(std::move(floats));
    }
    AttrValue::Ints ints;
    for (const AttrValue& v : items) ints.push_back(v.as_int());
    return AttrValue(std::move(ints));
  }

};

// ---------------------------------------------------------------- building

class GraphBuild {
 public:
  GraphBuild(const GraphAst& ast, const std::unordered_map<std::string, SourceLoc>& graph_names)
      : ast_(ast), graph_names_(graph_names), b_(ast.name) {}

  Graph run() {
    for (const Stmt& s : ast_.stmts) {
      b_.reserve_name(s.name);
      declared_.emplace(s.name, s.loc);
    }
    for (const ParamAst& p : ast_.params) {
      check_new_name(p.name, p.loc);
      try {
        define(p.name, b_.param(p.name, p.type.type.dtype, p.type.type.shape), p.loc);
      } catch (const UserError& e) {
        throw e.located(p.loc);
      }
    }
    for (const Stmt& s : ast_.stmts) {
      check_new_name(s.name, s.loc);
      define(s.name, build_call(s.call, s.name), s.loc);
    }
    // A value may be returned twice: canonicalisation can merge two outputs
    // into one value, and its printed form must still parse.
    std::vector<ValueId> results;
    for (const NameRef& r : ast_.returns) {
      ValueId v = lookup(r.name, r.loc);
      results.push_back(v);
      b_.output(v, r.name);
    }
    check_result_types(results);
    try {
      return b_.finish();
    } catch (const UserError& e) {
      throw e.located(ast_.loc);
    }
  }

 private:
  void check_new_name(const std::string& name, const SourceLoc& loc) const {
    auto it = defined_.find(name);
    if (it != defined_.end()) {
      throw UserError(fmt::format("'{}' is already defined at line {}", name, it->second.loc.line), loc);
    }
  }

  void define(const std::string& name, ValueId v, const SourceLoc& loc) {
    defined_.emplace(name, Defined{v, loc});
    defined_order_.push_back(name);
  }

  ValueId lookup(const std::string& name, const SourceLoc& loc) const {
    auto it = defined_.find(name);
    if (it != defined_.end()) return it->second.value;
    auto later = declared_.find(name);
    if (later != declared_.end()) {
      throw UserError(fmt::format("'{}' is used before its definition at line {}", name, later->second.line), loc);
    }
    std::string guess = closest_name(name, defined_order_);
    throw UserError(guess.empty() ? fmt::format("undefined value '{}'", name)
                                  : fmt::format("undefined value '{}'; did you mean '{}'?", name, guess),
                    loc);
  }

  void check_op_name(const Expr& call) const {
    if (GraphBuilder::is_known_op(call.name)) return;
    if (graph_names_.count(call.name)) {
      throw UserError(fmt::format("'{}' is a graph; calling a graph from a graph is not supported", call.name),
                      call.loc);
    }
    if (defined_.count(call.name)) {
      throw UserError(fmt::format("'{}' is a value, not an op", call.name), call.loc);
    }
    static const std::vector<std::string> kOps = all_op_names();
    std::string guess = closest_name(call.name, kOps);
    throw UserError(guess.empty() ? fmt::format("unknown op '{}'", call.name)
                                  : fmt::format("unknown op '{}'; did you mean '{}'?", call.name, guess),
                    call.loc);
  }

  // Builds a call and its nested calls (operands first, left to right); the
  // result is named `name`, or gets a generated name when empty.
  ValueId build_call(const Expr& call, const std::string& name) {
    check_op_name(call);
    std::vector<Operand> operands;
    for (const Expr& arg : call.args) {
      switch (arg.kind) {
        case Expr::Kind::Value: operands.emplace_back(lookup(arg.name, arg.loc)); break;
        case Expr::Kind::Call: operands.emplace_back(build_call(arg, "")); break;
        case Expr::Kind::Literal:
          if (arg.literal.is_int()) {
            operands.emplace_back(arg.literal.as_int());
          } else {
            operands.emplace_back(arg.literal.as_float());
          }
          break;
      }
    }
    Attrs attrs;
    for (const AttrAst& a : call.attrs) attrs.set(a.key, a.value);
    b_.set_loc(call.loc);
    try {
      return b_.op(call.name, std::move(operands), std::move(attrs), name);
    } catch (const UserError& e) {
      throw e.located(call.loc);
    }
  }

  void check_result_types(const std::vector<ValueId>& results) const {
    if (!ast_.result_types) return;
    const std::vector<TypeAst>& declared = *ast_.result_types;
    if (declared.size() != results.size()) {
      throw UserError(fmt::format("graph '{}' returns {} value{} but its '->' clause declares {}", ast_.name,
                                  results.size(), results.size() == 1 ? "" : "s", declared.size()),
                      ast_.return_loc);
    }
    for (size_t i = 0; i < results.size(); ++i) {
      const TensorType& got = b_.graph().type(results[i]);
      if (got != declared[i].type) {
        throw UserError(fmt::format("'{}' has type {} but graph '{}' declares result {} as {}",
                                    ast_.returns[i].name, got.str(), ast_.name, i, declared[i].type.str()),
                        ast_.returns[i].loc);
      }
    }
  }

  struct Defined {
    ValueId value;
    SourceLoc loc;
  };

  const GraphAst& ast_;
  const std::unordered_map<std::string, SourceLoc>& graph_names_;
  GraphBuilder b_;
  std::unordered_map<std::string, Defined> defined_;
  std::vector<std::string> defined_order_;
  std::unordered_map<std::string, SourceLoc> declared_;  // statement name -> first definition
};

}  // namespace

Module parse_module(const std::string& text, const std::string& file) {
  Module m;
  std::vector<GraphAst> asts = Parser(tokenize(text, file), file).parse_graphs(m.kernels);
  std::unordered_map<std::string, SourceLoc> graph_names;
  for (const GraphAst& g : asts) {
    auto [it, fresh] = graph_names.emplace(g.name, g.loc);
    if (!fresh) {
      throw UserError(fmt::format("graph '{}' is already defined at line {}", g.name, it->second.line), g.loc);
    }
  }
  std::unordered_map<std::string, SourceLoc> kernel_names;
  for (UserKernel& k : m.kernels) {
    auto [it, fresh] = kernel_names.emplace(k.name, k.loc);
    if (!fresh) {
      throw UserError(fmt::format("kernel '{}' is already defined at line {}", k.name, it->second.line), k.loc);
    }
    if (auto g = graph_names.find(k.name); g != graph_names.end()) {
      throw UserError(fmt::format("'{}' is already defined as a graph at line {}", k.name, g->second.line), k.loc);
    }
    check_kernel(k);
  }
  for (const GraphAst& g : asts) m.graphs.push_back(GraphBuild(g, graph_names).run());
  return m;
}

Module parse_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw UserError("is a directory, not a file", SourceLoc{path, 0, 0});
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError("cannot open file", SourceLoc{path, 0, 0});
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw UserError("cannot read file", SourceLoc{path, 0, 0});
  return parse_module(text, path);
}

}  // namespace stitch
