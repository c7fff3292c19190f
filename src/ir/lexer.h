// Tokens of the graph text format (DESIGN.md, "Graph text format").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stitch/error.h"

namespace stitch {

enum class TokenKind : uint8_t {
  Ident,     // [A-Za-z_][A-Za-z0-9_]*
  Int,       // 42, -7 (a '-' directly before a digit belongs to the number)
  Float,     // 1.0, .5, 2., 1e-5, -3.5
  String,    // "..." with \" and \\ escapes; `text` holds the unescaped bytes
  LParen,
  RParen,
  LBracket,
  RBracket,
  LBrace,
  RBrace,
  Comma,
  Colon,
  Equals,
  Arrow,     // ->
  Minus,     // a '-' not followed by a digit, as in -inf
  Operator,  // kernel bodies: + * / % < > <= >= == != && || ! += -= *= /=
  End,
};

struct Token {
  TokenKind kind = TokenKind::End;
  std::string text;  // identifier, literal spelling, or unescaped string
  int64_t int_value = 0;
  double float_value = 0;
  int line = 1;  // 1-based
  int col = 1;   // 1-based, counted in bytes
};

// Largest input accepted, so line and column numbers always fit an int.
inline constexpr size_t kMaxSourceBytes = size_t{256} << 20;

// Splits `text` into tokens, ending with one End token. `#` starts a comment
// that runs to the end of the line. Throws UserError at the offending byte for
// an unexpected character, an unterminated string, a bad escape, a malformed
// number or one out of range.
std::vector<Token> tokenize(std::string_view text, const std::string& file);

// How a token reads in an error message: 'foo', '(', number 3, end of input.
std::string describe(const Token& t);

// A byte as an error message shows it: printable ASCII as itself, others as \xNN.
std::string printable_byte(unsigned char c);

}  // namespace stitch
