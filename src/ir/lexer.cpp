#include "ir/lexer.h"

#include <fmt/format.h>

#include <charconv>

namespace stitch {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }

class Lexer {
 public:
  Lexer(std::string_view text, const std::string& file) : text_(text), file_(file) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    for (;;) {
      skip_space_and_comments();
      Token t = start_token();
      if (pos_ >= text_.size()) {
        out.push_back(std::move(t));
        return out;
      }
      lex_one(t);
      out.push_back(std::move(t));
    }
  }

 private:
  char peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }
  bool at_end(size_t ahead = 0) const { return pos_ + ahead >= text_.size(); }

  void advance() {
    if (text_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++pos_;
  }

  Token start_token() const {
    Token t;
    t.line = line_;
    t.col = col_;
    return t;
  }

  [[noreturn]] void fail(int line, int col, const std::string& message) const {
    throw UserError(message, SourceLoc{file_, line, col});
  }

  void skip_space_and_comments() {
    while (!at_end()) {
      char c = peek();
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
        advance();
      } else if (c == '#') {
        // Comments may hold any bytes (UTF-8 prose included) up to the newline.
        while (!at_end() && peek() != '\n') advance();
      } else {
        return;
      }
    }
  }

  void lex_one(Token& t) {
    char c = peek();
    if (is_ident_start(c)) {
      size_t begin = pos_;
      while (!at_end() && is_ident_char(peek())) advance();
      t.kind = TokenKind::Ident;
      t.text = std::string(text_.substr(begin, pos_ - begin));
      return;
    }
    bool starts_number = is_digit(c) || (c == '.' && is_digit(peek(1)));
    bool signed_number = c == '-' && (is_digit(peek(1)) || (peek(1) == '.' && is_digit(peek(2))));
    if (starts_number || signed_number) return lex_number(t);
    if (c == '"') return lex_string(t);
    if (c == '-' && peek(1) == '>') {
      advance();
      advance();
      t.kind = TokenKind::Arrow;
      t.text = "->";
      return;
    }
    if (lex_operator(t)) return;
    TokenKind kind;
    switch (c) {
      case '(': kind = TokenKind::LParen; break;
      case ')': kind = TokenKind::RParen; break;
      case '[': kind = TokenKind::LBracket; break;
      case ']': kind = TokenKind::RBracket; break;
      case '{': kind = TokenKind::LBrace; break;
      case '}': kind = TokenKind::RBrace; break;
      case ',': kind = TokenKind::Comma; break;
      case ':': kind = TokenKind::Colon; break;
      case '=': kind = TokenKind::Equals; break;
      case '-': kind = TokenKind::Minus; break;
      default:
        fail(t.line, t.col, fmt::format("unexpected character '{}'", printable_byte(static_cast<unsigned char>(c))));
    }
    t.kind = kind;
    t.text = std::string(1, c);
    advance();
  }

  // The operators of kernel bodies (docs/kernel-language.md); two-character
  // ones first so "<=" is one token.
  bool lex_operator(Token& t) {
    static constexpr std::string_view kTwo[] = {"<=", ">=", "==", "!=", "&&", "||", "+=", "-=", "*=", "/="};
    for (std::string_view op : kTwo) {
      if (peek() == op[0] && peek(1) == op[1]) {
        advance();
        advance();
        t.kind = TokenKind::Operator;
        t.text = std::string(op);
        return true;
      }
    }
    char c = peek();
    if (c == '+' || c == '*' || c == '/' || c == '%' || c == '<' || c == '>' || c == '!') {
      advance();
      t.kind = TokenKind::Operator;
      t.text = std::string(1, c);
      return true;
    }
    return false;
  }

  // [-] digits [. digits] [(e|E) [+-] digits], or the same starting at '.'.
  void lex_number(Token& t) {
    size_t begin = pos_;
    if (peek() == '-') advance();
    bool is_float = false;
    while (is_digit(peek())) advance();
    if (peek() == '.') {
      is_float = true;
      advance();
      while (is_digit(peek())) advance();
    }
    if ((peek() == 'e' || peek() == 'E') &&
        (is_digit(peek(1)) || ((peek(1) == '+' || peek(1) == '-') && is_digit(peek(2))))) {
      is_float = true;
      advance();
      if (peek() == '+' || peek() == '-') advance();
      while (is_digit(peek())) advance();
    }
    // "1abc", "1e", "1.2.3": one malformed literal, not a number glued to a name.
    if (is_ident_char(peek()) || peek() == '.') {
      while (is_ident_char(peek()) || peek() == '.') advance();
      fail(t.line, t.col, fmt::format("malformed number '{}'", shorten(text_.substr(begin, pos_ - begin))));
    }
    std::string_view s = text_.substr(begin, pos_ - begin);
    t.text = std::string(s);
    const char* first = s.data();
    const char* last = s.data() + s.size();
    if (is_float) {
      t.kind = TokenKind::Float;
      auto [ptr, ec] = std::from_chars(first, last, t.float_value);
      if (ec == std::errc::result_out_of_range) {
        fail(t.line, t.col, fmt::format("number {} is out of the range of a 64-bit float", shorten(s)));
      }
      STITCH_ASSERT(ec == std::errc() && ptr == last, "float literal scanned but not converted: " + t.text);
    } else {
      t.kind = TokenKind::Int;
      auto [ptr, ec] = std::from_chars(first, last, t.int_value);
      if (ec == std::errc::result_out_of_range) {
        fail(t.line, t.col, fmt::format("integer {} does not fit in 64 bits", shorten(s)));
      }
      STITCH_ASSERT(ec == std::errc() && ptr == last, "integer literal scanned but not converted: " + t.text);
    }
  }

  void lex_string(Token& t) {
    advance();  // opening quote
    std::string value;
    for (;;) {
      if (at_end() || peek() == '\n') fail(t.line, t.col, "unterminated string");
      char c = peek();
      if (c == '"') {
        advance();
        break;
      }
      if (c == '\\') {
        char e = peek(1);
        if (at_end(1) || e == '\n') fail(t.line, t.col, "unterminated string");
        if (e != '"' && e != '\\') {
          fail(line_, col_, fmt::format("unknown escape '\\{}' in string (only \\\" and \\\\ are allowed)",
                                        printable_byte(static_cast<unsigned char>(e))));
        }
        advance();
        advance();
        value += e;
        continue;
      }
      auto u = static_cast<unsigned char>(c);
      if (u < 0x20 || u >= 0x7f) {
        fail(line_, col_, fmt::format("unexpected character '{}' in string", printable_byte(u)));
      }
      value += c;
      advance();
    }
    t.kind = TokenKind::String;
    t.text = std::move(value);
  }

  static std::string shorten(std::string_view s) {
    constexpr size_t kMax = 40;
    return s.size() <= kMax ? std::string(s) : std::string(s.substr(0, kMax)) + "...";
  }

  std::string_view text_;
  const std::string& file_;
  size_t pos_ = 0;
  int line_ = 1;
  int col_ = 1;
};

}  // namespace

std::string printable_byte(unsigned char c) {
  if (c >= 0x20 && c < 0x7f) return std::string(1, static_cast<char>(c));
  return fmt::format("\\x{:02x}", c);
}

std::vector<Token> tokenize(std::string_view text, const std::string& file) {
  if (text.size() > kMaxSourceBytes) {
    throw UserError(fmt::format("input is {} bytes; the limit is {} bytes", text.size(), kMaxSourceBytes),
                    SourceLoc{file, 1, 1});
  }
  return Lexer(text, file).run();
}

std::string describe(const Token& t) {
  constexpr size_t kMax = 40;
  auto clip = [&](const std::string& s) { return s.size() <= kMax ? s : s.substr(0, kMax) + "..."; };
  switch (t.kind) {
    case TokenKind::End: return "end of input";
    case TokenKind::String: {
      std::string shown;
      for (char c : clip(t.text)) shown += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
      return "string \"" + shown + "\"";
    }
    default: return "'" + clip(t.text) + "'";
  }
}

}  // namespace stitch
