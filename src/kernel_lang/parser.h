// The text form of user kernels (docs/kernel-language.md), parsed from the
// same token stream as graphs so one .stitch file holds both.
#pragma once

#include <string>
#include <vector>

#include "ir/lexer.h"
#include "stitch/kernel.h"

namespace stitch {

// Parses the kernel whose 'kernel' word is tokens[pos] and leaves `pos` after
// its closing brace. The result is not yet checked (check_kernel). Throws
// UserError at the offending token.
UserKernel parse_kernel_tokens(const std::vector<Token>& tokens, size_t& pos, const SourceFile& file);

}  // namespace stitch
