// A position in a token stream, with the checks both parsers of the text
// format use (graphs: parser.cpp; kernels: src/kernel_lang/parser.cpp), so one file's
// graphs and kernels read the same tokens and report errors the same way.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "ir/lexer.h"

namespace stitch {

class TokenCursor {
 public:
  TokenCursor(const std::vector<Token>& toks, size_t& pos, const SourceFile& file)
      : toks_(toks), pos_(pos), file_(file) {}

  const Token& peek(size_t ahead = 0) const { return toks_[std::min(pos_ + ahead, toks_.size() - 1)]; }
  bool at(TokenKind k, size_t ahead = 0) const { return peek(ahead).kind == k; }
  bool at_word(std::string_view w) const { return at(TokenKind::Ident) && peek().text == w; }
  bool at_operator(std::string_view op) const { return at(TokenKind::Operator) && peek().text == op; }
  // The current token; moves on, except past the End token.
  Token next() {
    Token t = peek();
    if (pos_ < toks_.size() - 1) ++pos_;
    return t;
  }
  SourceLoc loc(const Token& t) const { return SourceLoc{file_, t.line, t.col}; }
  [[noreturn]] void fail(const Token& t, const std::string& message) const { throw UserError(message, loc(t)); }

  // `what` completes "expected ...", e.g. "')' after the parameters".
  Token expect(TokenKind k, std::string_view what) {
    if (!at(k)) fail(peek(), fmt::format("expected {}, got {}", what, describe(peek())));
    return next();
  }

 protected:
  const std::vector<Token>& toks_;
  size_t& pos_;
  const SourceFile& file_;
};

}  // namespace stitch
