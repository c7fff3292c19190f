// PTX text as tokens (docs/ptx.md, Grammar): what the PTX parser reads.
//
// Dots split words: `ld.global.nc.f32` is the identifier `ld` followed by the
// directive tokens `global`, `nc` and `f32`, each marked as touching the token
// before it, so the parser can tell an opcode's modifiers (and %tid.x's
// component) from a directive that starts a new declaration.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "stitch/error.h"

namespace stitch::ptx {

enum class TokenKind : uint8_t {
  Identifier,  // ld, %r1, $L__BB0_1, _Z4polyf, _
  Directive,   // .version, .f32, .x: `text` without the dot
  Integer,     // 42, 0x1F, 017, 0b101, 7U: `text` as written, `integer` its value
  Float,       // 1.5, 2e-3 (decimal, a double), 0f3F800000 (single), 0d... (double): `bits`
  String,      // "nounroll": `text` without the quotes
  Punct,       // one of , ; : [ ] { } ( ) < > + - ! @ = |
  End,
};

struct Token {
  TokenKind kind = TokenKind::End;
  std::string text;
  uint64_t integer = 0;      // Integer: the value, wrapped to 64 bits
  uint64_t bits = 0;         // Float: the IEEE bits (binary32 in the low half for 0f)
  bool single = false;       // Float: written as 0f (binary32)
  bool hex_float = false;    // Float: written as 0f/0d rather than in decimal
  bool touches_previous = false;  // no space or comment between this token and the one before
  int line = 0;
  int col = 0;

  bool is(TokenKind k, std::string_view t) const { return kind == k && text == t; }
  bool is_punct(char c) const { return kind == TokenKind::Punct && text.size() == 1 && text[0] == c; }
};

// Splits `text` into tokens ending with one End token; comments (// and /* */)
// are dropped. UserError at `file`:line:col on a character PTX does not use, an
// unterminated string or comment, or a malformed number.
std::vector<Token> lex(std::string_view text, const SourceFile& file);

// How a token reads in an error message: `'.f32'`, `'%r1'`, `end of file`.
std::string describe(const Token& t);

}  // namespace stitch::ptx
