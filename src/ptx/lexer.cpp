#include "ptx/lexer.h"

#include <fmt/format.h>

#include <charconv>
#include <cstring>

namespace stitch::ptx {

namespace {

bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' || c == '%';
}
bool is_ident_char(char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
int hex_value(char c) {
  if (is_digit(c)) return c - '0';
  return (c | 0x20) - 'a' + 10;
}

class Lexer {
 public:
  Lexer(std::string_view text, const SourceFile& file) : text_(text), file_(file) {}

  std::vector<Token> run() {
    std::vector<Token> tokens;
    bool touches = false;
    while (true) {
      touches = !skip_space_and_comments() && !tokens.empty();
      Token t;
      t.line = line_;
      t.col = col_;
      t.touches_previous = touches;
      if (pos_ >= text_.size()) {
        t.kind = TokenKind::End;
        tokens.push_back(std::move(t));
        return tokens;
      }
      char c = text_[pos_];
      if (c == '.' && pos_ + 1 < text_.size() && is_ident_char(text_[pos_ + 1]) && text_[pos_ + 1] != '%') {
        advance();
        t.kind = TokenKind::Directive;
        t.text = take_while(is_ident_char);
      } else if (is_ident_start(c)) {
        t.kind = TokenKind::Identifier;
        t.text = take_while(is_ident_char);
      } else if (is_digit(c)) {
        lex_number(t);
      } else if (c == '"') {
        lex_string(t);
      } else if (std::strchr(",;:[]{}()<>+-!@=|", c) != nullptr) {
        t.kind = TokenKind::Punct;
        t.text = std::string(1, c);
        advance();
      } else {
        throw error(fmt::format("unexpected character {}", printable(c)), line_, col_);
      }
      tokens.push_back(std::move(t));
    }
  }

 private:
  UserError error(const std::string& message, int line, int col) const {
    return UserError(message, SourceLoc{file_, line, col});
  }

  static std::string printable(char c) {
    auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) return fmt::format("'{}'", c);
    return fmt::format("0x{:02x}", u);
  }

  void advance() {
    if (text_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++pos_;
  }

  char peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }

  std::string take_while(bool (*pred)(char)) {
    size_t start = pos_;
    while (pos_ < text_.size() && pred(text_[pos_])) advance();
    return std::string(text_.substr(start, pos_ - start));
  }

  // Returns whether anything was skipped.
  bool skip_space_and_comments() {
    size_t start = pos_;
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
        advance();
      } else if (c == '/' && peek(1) == '/') {
        while (pos_ < text_.size() && text_[pos_] != '\n') advance();
      } else if (c == '/' && peek(1) == '*') {
        int line = line_, col = col_;
        advance();
        advance();
        while (pos_ < text_.size() && !(text_[pos_] == '*' && peek(1) == '/')) advance();
        if (pos_ >= text_.size()) throw error("unterminated comment", line, col);
        advance();
        advance();
      } else {
        break;
      }
    }
    return pos_ != start;
  }

  void lex_string(Token& t) {
    advance();
    size_t start = pos_;
    while (pos_ < text_.size() && text_[pos_] != '"') {
      if (text_[pos_] == '\n') break;
      advance();
    }
    if (pos_ >= text_.size() || text_[pos_] != '"') throw error("unterminated string", t.line, t.col);
    t.kind = TokenKind::String;
    t.text = std::string(text_.substr(start, pos_ - start));
    advance();
  }

  // 0f + 8 hex digits, 0d + 16 hex digits, 0x.., 0b.., octal 0.., decimal,
  // decimal floats; integers may end in U.
  void lex_number(Token& t) {
    size_t start = pos_;
    char kind = static_cast<char>(peek(1) | 0x20);
    if (peek() == '0' && (kind == 'f' || kind == 'd') && is_hex(peek(2))) {
      size_t digits = kind == 'f' ? 8 : 16;
      advance();
      advance();
      std::string hex = take_while(is_hex);
      if (hex.size() != digits || (pos_ < text_.size() && is_ident_char(text_[pos_]))) {
        throw error(fmt::format("a 0{} float literal needs exactly {} hex digits", kind, digits), t.line, t.col);
      }
      t.kind = TokenKind::Float;
      t.single = kind == 'f';
      t.hex_float = true;
      for (char c : hex) t.bits = (t.bits << 4) | static_cast<uint64_t>(hex_value(c));
      t.text = std::string(text_.substr(start, pos_ - start));
      return;
    }
    int base = 10;
    bool (*digit)(char) = is_digit;
    if (peek() == '0' && (peek(1) | 0x20) == 'x') {
      base = 16;
      digit = is_hex;
      advance();
      advance();
    } else if (peek() == '0' && (peek(1) | 0x20) == 'b') {
      base = 2;
      advance();
      advance();
    }
    std::string digits = take_while(digit);
    bool decimal_float = false;
    if (base == 10 && (peek() == '.' || (peek() | 0x20) == 'e')) {
      decimal_float = true;
      if (peek() == '.') {
        advance();
        digits += '.' + take_while(is_digit);
      }
      if ((peek() | 0x20) == 'e') {
        digits += 'e';
        advance();
        if (peek() == '+' || peek() == '-') {
          digits += peek();
          advance();
        }
        std::string exponent = take_while(is_digit);
        if (exponent.empty()) throw error("malformed float literal: missing exponent digits", t.line, t.col);
        digits += exponent;
      }
    }
    if (decimal_float) {
      double value = 0;
      auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
      if (ec == std::errc::result_out_of_range) {
        throw error(fmt::format("float literal '{}' is out of range for a double", digits), t.line, t.col);
      }
      if (ec != std::errc() || end != digits.data() + digits.size()) {
        throw error(fmt::format("malformed float literal '{}'", digits), t.line, t.col);
      }
      std::memcpy(&t.bits, &value, sizeof value);
      t.kind = TokenKind::Float;
    } else {
      if (digits.empty()) throw error("malformed integer literal: no digits", t.line, t.col);
      if (base == 10 && digits.size() > 1 && digits[0] == '0') base = 8;
      uint64_t value = 0;
      for (char c : digits) {
        int d = hex_value(c);
        if (d >= base) throw error(fmt::format("digit '{}' in a base-{} integer literal", c, base), t.line, t.col);
        if (value > (UINT64_MAX - static_cast<uint64_t>(d)) / static_cast<uint64_t>(base)) {
          throw error("integer literal does not fit in 64 bits", t.line, t.col);
        }
        value = value * static_cast<uint64_t>(base) + static_cast<uint64_t>(d);
      }
      if (peek() == 'U' || peek() == 'u') advance();
      t.kind = TokenKind::Integer;
      t.integer = value;
    }
    if (pos_ < text_.size() && is_ident_char(text_[pos_])) {
      throw error(fmt::format("malformed number: unexpected {} after '{}'", printable(text_[pos_]),
                              text_.substr(start, pos_ - start)),
                  t.line, t.col);
    }
    t.text = std::string(text_.substr(start, pos_ - start));
  }

  std::string_view text_;
  const SourceFile& file_;
  size_t pos_ = 0;
  int line_ = 1;
  int col_ = 1;
};

}  // namespace

std::vector<Token> lex(std::string_view text, const SourceFile& file) { return Lexer(text, file).run(); }

std::string describe(const Token& t) {
  switch (t.kind) {
    case TokenKind::End: return "end of file";
    case TokenKind::Directive: return fmt::format("'.{}'", t.text);
    case TokenKind::String: return fmt::format("\"{}\"", t.text);
    default: return fmt::format("'{}'", t.text);
  }
}

}  // namespace stitch::ptx
