// The PTX parser (docs/ptx.md): text as NVRTC and nvcc emit it for sm_75 ..
// sm_90 into a ptx::Module. Instructions stay generic (opcode, modifiers,
// operands), so any instruction of that shape parses; declarations,
// functions and module directives are checked against the grammar.
#pragma once

#include <string>
#include <string_view>

#include "ptx/ptx_ast.h"

namespace stitch::ptx {

// UserError "file:line:col: ..." at the first token that breaks the grammar.
Module parse_module(std::string_view text, const std::string& file);

}  // namespace stitch::ptx
