#include "ptx/parser.h"

#include <fmt/format.h>

#include <cctype>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "ptx/lexer.h"

namespace stitch::ptx {

namespace {

std::optional<StateSpace> state_space(std::string_view d) {
  if (d == "reg") return StateSpace::Reg;
  if (d == "sreg") return StateSpace::Sreg;
  if (d == "const") return StateSpace::Const;
  if (d == "global") return StateSpace::Global;
  if (d == "local") return StateSpace::Local;
  if (d == "param") return StateSpace::Param;
  if (d == "shared") return StateSpace::Shared;
  if (d == "tex") return StateSpace::Tex;
  return std::nullopt;
}

std::optional<Linkage> linkage(std::string_view d) {
  if (d == "visible") return Linkage::Visible;
  if (d == "extern") return Linkage::Extern;
  if (d == "weak") return Linkage::Weak;
  if (d == "common") return Linkage::Common;
  return std::nullopt;
}

bool is_debug_directive(std::string_view d) { return d == "file" || d == "loc" || d == "section"; }

// Directives between a function's parameter list and its body (PTX ISA,
// Performance-Tuning Directives, and the cluster directives of sm_90).
bool is_performance_directive(std::string_view d) {
  static constexpr const char* kNames[] = {"maxntid", "reqntid", "minnctapersm", "maxnctapersm", "maxnreg",
                                           "noreturn", "explicitcluster", "reqnctapercluster", "maxclusterrank"};
  for (const char* n : kNames) {
    if (d == n) return true;
  }
  return false;
}

uint32_t single_bits(double value) {
  // Converting a double beyond float's range is undefined in C++; IEEE
  // round-to-nearest gives infinity from FLT_MAX plus half an ulp up.
  constexpr double kRoundsToInfinity = 0x1.ffffffp127;
  if (std::isfinite(value) && std::fabs(value) > FLT_MAX) {
    float limit = std::fabs(value) >= kRoundsToInfinity ? INFINITY : FLT_MAX;
    value = std::signbit(value) ? -limit : limit;
  }
  auto f = static_cast<float>(value);
  uint32_t bits = 0;
  std::memcpy(&bits, &f, sizeof f);
  return bits;
}

class Parser {
 public:
  Parser(std::string_view text, const std::string& file) : file_(file), tokens_(lex(text, file_)) {}

  Module parse() {
    Module m;
    bool seen_version = false, seen_address_size = false;
    while (peek().kind != TokenKind::End) {
      const Token& t = peek();
      if (t.kind != TokenKind::Directive) {
        throw error_at(t, fmt::format("expected a directive at module scope, found {}", describe(t)));
      }
      if (t.text == "version") {
        if (seen_version) throw error_at(t, "duplicate .version directive");
        seen_version = true;
        next();
        const Token& v = next();
        if (v.kind != TokenKind::Float || v.hex_float || v.text.find('.') == std::string::npos ||
            v.text.find_first_of("eE") != std::string::npos) {
          throw error_at(v, fmt::format("expected a version such as 8.5 after .version, found {}", describe(v)));
        }
        m.version = v.text;
      } else if (t.text == "target") {
        if (!m.target.empty()) throw error_at(t, "duplicate .target directive");
        next();
        do {
          m.target.push_back(expect_identifier("a target such as sm_90").text);
        } while (accept_punct(','));
      } else if (t.text == "address_size") {
        if (seen_address_size) throw error_at(t, "duplicate .address_size directive");
        seen_address_size = true;
        next();
        const Token& n = peek();
        int64_t size = expect_integer("32 or 64 after .address_size");
        if (size != 32 && size != 64) throw error_at(n, fmt::format(".address_size must be 32 or 64, not {}", size));
        m.address_size = static_cast<int>(size);
      } else {
        parse_module_item(m);
      }
    }
    return m;
  }

 private:
  const Token& peek(size_t ahead = 0) const { return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)]; }
  const Token& next() {
    const Token& t = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return t;
  }
  SourceLoc loc(const Token& t) const { return SourceLoc{file_, t.line, t.col}; }
  UserError error_at(const Token& t, const std::string& message) const { return UserError(message, loc(t)); }

  bool accept_punct(char c) {
    if (!peek().is_punct(c)) return false;
    next();
    return true;
  }
  void expect_punct(char c, std::string_view context) {
    if (!accept_punct(c)) throw error_at(peek(), fmt::format("expected '{}' {}, found {}", c, context, describe(peek())));
  }
  const Token& expect_identifier(std::string_view what) {
    if (peek().kind != TokenKind::Identifier) {
      throw error_at(peek(), fmt::format("expected {}, found {}", what, describe(peek())));
    }
    return next();
  }
  // An integer, with an optional leading minus.
  int64_t expect_integer(std::string_view what) {
    bool negative = peek().is_punct('-');
    size_t minus = pos_;
    if (negative) next();
    if (peek().kind != TokenKind::Integer) {
      throw error_at(negative ? tokens_[minus] : peek(), fmt::format("expected {}, found {}", what, describe(peek())));
    }
    uint64_t v = next().integer;
    return static_cast<int64_t>(negative ? 0 - v : v);
  }

  void check_debug_free(const Token& t) const {
    if (is_debug_directive(t.text)) {
      throw error_at(t, fmt::format("debug directive .{} is not supported (compile without -G or -lineinfo)", t.text));
    }
  }

  void parse_module_item(Module& m) {
    const Token& first = peek();
    Linkage link = Linkage::None;
    if (std::optional<Linkage> l = linkage(first.text)) {
      link = *l;
      next();
    }
    const Token& t = peek();
    if (t.kind != TokenKind::Directive) {
      throw error_at(t, fmt::format("expected .entry, .func or a variable declaration, found {}", describe(t)));
    }
    if (t.text == "entry" || t.text == "func") {
      m.items.emplace_back(parse_function(link));
      return;
    }
    check_debug_free(t);
    std::optional<StateSpace> space = state_space(t.text);
    if (!space || (*space != StateSpace::Global && *space != StateSpace::Shared && *space != StateSpace::Const &&
                   *space != StateSpace::Local)) {
      throw error_at(t, fmt::format("unexpected directive {} at module scope", describe(t)));
    }
    next();
    for (VarDecl& v : parse_var_decls(*space, link, loc(first), /*allow_initializer=*/true, /*single=*/false)) {
      m.items.emplace_back(std::move(v));
    }
    expect_punct(';', "after a declaration");
  }

  // After the state-space directive: modifiers, type, then one or more names.
  std::vector<VarDecl> parse_var_decls(StateSpace space, Linkage link, const SourceLoc& start, bool allow_initializer,
                                       bool single) {
    VarDecl base;
    base.space = space;
    base.linkage = link;
    base.loc = start;
    bool typed = false, in_ptr = false;
    while (peek().kind == TokenKind::Directive) {
      const Token& d = next();
      if (d.text == "align") {
        const Token& n = peek();
        int64_t a = expect_integer("an alignment after .align");
        if (a <= 0 || (a & (a - 1)) != 0 || a > (1 << 20)) {
          throw error_at(n, fmt::format(".align needs a power of two, not {}", a));
        }
        (in_ptr ? base.ptr_align : base.align) = static_cast<int>(a);
      } else if (d.text == "v2" || d.text == "v4" || d.text == "v8") {
        base.vector_width = d.text[1] - '0';
      } else if (d.text == "ptr" && space == StateSpace::Param) {
        in_ptr = true;
      } else if (std::optional<StateSpace> s = state_space(d.text); s && in_ptr) {
        base.ptr_space = *s;
      } else if (std::optional<Type> type = parse_type(d.text)) {
        if (typed) throw error_at(d, fmt::format("a second type {} in one declaration", describe(d)));
        base.type = *type;
        typed = true;
      } else {
        throw error_at(d, fmt::format("unexpected {} in a declaration", describe(d)));
      }
    }
    if (!typed) throw error_at(peek(), fmt::format("expected a type such as .b32 in a declaration, found {}", describe(peek())));
    std::vector<VarDecl> decls;
    do {
      VarDecl v = base;
      const Token& name = expect_identifier("a name in a declaration");
      v.name = name.text;
      if (v.name == "_") throw error_at(name, "'_' cannot be declared");
      if (accept_punct('<')) {
        const Token& n = peek();
        int64_t count = expect_integer("a register count after '<'");
        if (count <= 0 || count > (1 << 24)) throw error_at(n, fmt::format("register count {} is out of range", count));
        v.parameterized_count = static_cast<int>(count);
        expect_punct('>', "after a register count");
      }
      while (accept_punct('[')) {
        if (accept_punct(']')) {
          v.array_dims.push_back(-1);
          continue;
        }
        const Token& n = peek();
        int64_t extent = expect_integer("an array extent");
        if (extent <= 0) throw error_at(n, fmt::format("array extent must be positive, not {}", extent));
        v.array_dims.push_back(extent);
        expect_punct(']', "after an array extent");
      }
      if (v.parameterized_count >= 0 && v.is_array()) throw error_at(name, "a parameterized register name cannot be an array");
      if (peek().is_punct('=')) {
        if (!allow_initializer) throw error_at(peek(), "this declaration cannot have an initializer");
        next();
        v.has_initializer = true;
        parse_initializer(v, 0);
      }
      decls.push_back(std::move(v));
    } while (!single && accept_punct(','));
    return decls;
  }

  void parse_initializer(VarDecl& v, int depth) {
    if (!accept_punct('{')) {
      v.initializer.push_back(parse_initial_value(v.type));
      return;
    }
    if (depth > 8) throw error_at(peek(), "initializer nested too deeply");
    do {
      if (peek().is_punct('{')) {
        parse_initializer(v, depth + 1);
      } else {
        v.initializer.push_back(parse_initial_value(v.type));
      }
    } while (accept_punct(','));
    expect_punct('}', "to close an initializer list");
  }

  Operand parse_initial_value(Type type) {
    const Token& t = peek();
    if (t.kind == TokenKind::Identifier && t.text[0] != '%') {
      Operand o;
      o.kind = Operand::Kind::Symbol;
      o.name = next().text;
      o.loc = loc(t);
      return o;
    }
    return parse_number(type == Type::F32);
  }

  // An integer or float literal with an optional leading minus. A decimal
  // float is binary32 where the context is f32 (PTX ISA: decimal literals are
  // doubles converted to the instruction's type), else binary64.
  Operand parse_number(bool decimal_is_single) {
    Operand o;
    const Token& start = peek();
    o.loc = loc(start);
    bool negative = accept_punct('-');
    const Token& t = next();
    if (t.kind == TokenKind::Integer) {
      o.kind = Operand::Kind::Integer;
      o.integer = static_cast<int64_t>(negative ? 0 - t.integer : t.integer);
    } else if (t.kind == TokenKind::Float) {
      uint64_t bits = t.bits;
      bool single = t.hex_float ? t.single : decimal_is_single;
      if (!t.hex_float && single) {
        double value = 0;
        std::memcpy(&value, &bits, sizeof value);
        bits = single_bits(value);
      }
      if (negative) bits ^= single ? (uint64_t{1} << 31) : (uint64_t{1} << 63);
      o.kind = single ? Operand::Kind::Float32 : Operand::Kind::Float64;
      o.bits = bits;
    } else {
      throw error_at(t, fmt::format("expected a number, found {}", describe(t)));
    }
    return o;
  }

  Function parse_function(Linkage link) {
    Function f;
    f.linkage = link;
    const Token& kw = next();
    f.is_entry = kw.text == "entry";
    f.loc = loc(kw);
    if (!f.is_entry && peek().is_punct('(')) f.returns = parse_param_list(false);
    f.name = expect_identifier(f.is_entry ? "a kernel name after .entry" : "a function name after .func").text;
    if (peek().is_punct('(')) f.params = parse_param_list(f.is_entry);
    while (peek().kind == TokenKind::Directive) {
      const Token& d = peek();
      if (!is_performance_directive(d.text)) {
        throw error_at(d, fmt::format("unexpected {} between a function's parameters and its body", describe(d)));
      }
      next();
      PerformanceDirective pd;
      pd.name = d.text;
      if (peek().kind == TokenKind::Integer) {
        do {
          pd.values.push_back(expect_integer(fmt::format("a value for .{}", pd.name)));
        } while (accept_punct(','));
      }
      f.directives.push_back(std::move(pd));
    }
    if (accept_punct(';')) return f;
    if (!peek().is_punct('{')) {
      throw error_at(peek(), fmt::format("expected '{{' or ';' after the declaration of {}, found {}", f.name,
                                         describe(peek())));
    }
    f.has_body = true;
    parse_block_body(f.body);
    return f;
  }

  std::vector<VarDecl> parse_param_list(bool entry) {
    expect_punct('(', "to open a parameter list");
    std::vector<VarDecl> params;
    if (accept_punct(')')) return params;
    do {
      const Token& d = peek();
      std::optional<StateSpace> space =
          d.kind == TokenKind::Directive ? state_space(d.text) : std::nullopt;
      if (!space || (*space != StateSpace::Param && (entry || *space != StateSpace::Reg))) {
        throw error_at(d, fmt::format("expected {} for a parameter, found {}", entry ? ".param" : ".param or .reg",
                                      describe(d)));
      }
      next();
      params.push_back(std::move(parse_var_decls(*space, Linkage::None, loc(d), false, true).front()));
    } while (accept_punct(','));
    expect_punct(')', "to close a parameter list");
    return params;
  }

  // From '{' through the matching '}'.
  void parse_block_body(std::vector<Statement>& body) {
    const Token& open = next();
    ++depth_;
    if (depth_ > 64) throw error_at(open, "blocks nested too deeply");
    while (!accept_punct('}')) {
      const Token& t = peek();
      if (t.kind == TokenKind::End) throw error_at(open, "this '{' is never closed");
      if (t.is_punct('{')) {
        Block b;
        b.loc = loc(t);
        parse_block_body(b.body);
        body.push_back(Statement{std::move(b)});
      } else if (t.kind == TokenKind::Directive) {
        parse_body_directive(body);
      } else if (t.kind == TokenKind::Identifier && peek(1).is_punct(':')) {
        if (t.text[0] == '%') throw error_at(t, fmt::format("a label cannot start with '%': {}", describe(t)));
        body.push_back(Statement{Label{t.text, loc(t)}});
        next();
        next();
      } else {
        body.push_back(Statement{parse_instruction()});
      }
    }
    --depth_;
  }

  void parse_body_directive(std::vector<Statement>& body) {
    const Token& d = peek();
    check_debug_free(d);
    if (d.text == "pragma") {
      next();
      const Token& s = next();
      if (s.kind != TokenKind::String) throw error_at(s, fmt::format("expected a string after .pragma, found {}", describe(s)));
      body.push_back(Statement{Pragma{s.text, loc(d)}});
      expect_punct(';', "after .pragma");
      return;
    }
    std::optional<StateSpace> space = state_space(d.text);
    if (!space || (*space != StateSpace::Reg && *space != StateSpace::Local && *space != StateSpace::Shared &&
                   *space != StateSpace::Param)) {
      throw error_at(d, fmt::format("unexpected directive {} in a function body", describe(d)));
    }
    next();
    for (VarDecl& v : parse_var_decls(*space, Linkage::None, loc(d), false, false)) body.push_back(Statement{std::move(v)});
    expect_punct(';', "after a declaration");
  }

  Instruction parse_instruction() {
    Instruction in;
    in.loc = loc(peek());
    if (accept_punct('@')) {
      Guard g;
      g.negated = accept_punct('!');
      const Token& p = expect_identifier("a predicate register after '@'");
      if (p.text[0] != '%') throw error_at(p, fmt::format("a guard needs a predicate register, found {}", describe(p)));
      g.predicate = p.text;
      in.guard = g;
    }
    const Token& op = peek();
    if (op.kind != TokenKind::Identifier || !std::isalpha(static_cast<unsigned char>(op.text[0]))) {
      throw error_at(op, fmt::format("expected an instruction, found {}", describe(op)));
    }
    in.opcode = next().text;
    while (peek().kind == TokenKind::Directive && peek().touches_previous) in.modifiers.push_back(next().text);
    if (accept_punct(';')) return in;
    single_context_ = in.has_modifier("f32") && !in.has_modifier("f64");
    do {
      in.operands.push_back(parse_operand(0));
    } while (accept_punct(','));
    expect_punct(';', fmt::format("after the operands of {}", in.opcode));
    return in;
  }

  Operand parse_register() {
    const Token& t = next();
    Operand o = Operand::reg(t.text);
    o.loc = loc(t);
    // %tid.x, %ctaid.y: a special register's component touches its name.
    while (peek().kind == TokenKind::Directive && peek().touches_previous) o.name += "." + next().text;
    return o;
  }

  Operand parse_operand(int depth) {
    const Token& t = peek();
    if (depth > 8) throw error_at(t, "operand nested too deeply");
    if (t.is_punct('!')) {
      next();
      if (peek().kind != TokenKind::Identifier || peek().text[0] != '%') {
        throw error_at(peek(), fmt::format("expected a predicate register after '!', found {}", describe(peek())));
      }
      Operand o = parse_register();
      o.negated = true;
      o.loc = loc(t);
      return o;
    }
    if (t.is_punct('-') || t.kind == TokenKind::Integer || t.kind == TokenKind::Float) return parse_number(single_context_);
    if (t.is_punct('[')) return parse_address();
    if (t.is_punct('{') || t.is_punct('(')) {
      Operand o;
      o.loc = loc(t);
      bool vector = t.is_punct('{');
      o.kind = vector ? Operand::Kind::Vector : Operand::Kind::List;
      next();
      char close = vector ? '}' : ')';
      if (!vector && accept_punct(')')) return o;
      do {
        o.elements.push_back(parse_operand(depth + 1));
      } while (accept_punct(','));
      expect_punct(close, vector ? "to close a vector operand" : "to close an operand list");
      if (vector && o.elements.empty()) throw error_at(t, "empty vector operand");
      return o;
    }
    if (t.kind != TokenKind::Identifier) throw error_at(t, fmt::format("expected an operand, found {}", describe(t)));
    if (t.text == "_") {
      Operand o;
      o.kind = Operand::Kind::Sink;
      o.loc = loc(next());
      return o;
    }
    if (t.text[0] == '%') {
      Operand o = parse_register();
      if (accept_punct('|')) {
        if (peek().kind != TokenKind::Identifier || peek().text[0] != '%') {
          throw error_at(peek(), fmt::format("expected a predicate register after '|', found {}", describe(peek())));
        }
        o.second = parse_register().name;
      }
      return o;
    }
    Operand o;
    o.kind = Operand::Kind::Symbol;
    o.name = t.text;
    o.loc = loc(next());
    return o;
  }

  // [%rd1], [%rd1+8], [%rd1+-8], [%rd1-8], [sym], [sym+4], [1024]
  Operand parse_address() {
    Operand o;
    o.kind = Operand::Kind::Address;
    o.loc = loc(next());
    if (peek().kind == TokenKind::Identifier) {
      const Token& base = peek();
      if (base.text == "_") throw error_at(base, "'_' cannot be an address");
      o.name = base.text[0] == '%' ? parse_register().name : next().text;
      if (accept_punct('+')) {
        o.integer = expect_integer("an offset after '+'");
      } else if (peek().is_punct('-')) {
        o.integer = expect_integer("an offset after '-'");
      }
    } else {
      o.integer = expect_integer("a register, symbol or address inside '[ ]'");
    }
    expect_punct(']', "to close an address");
    return o;
  }

  SourceFile file_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
  bool single_context_ = false;
};

}  // namespace

Module parse_module(std::string_view text, const std::string& file) { return Parser(text, file).parse(); }

}  // namespace stitch::ptx
