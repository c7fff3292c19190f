// The PTX printer (docs/ptx.md, Canonical form): one spelling per tree, so
// print(parse(print(m))) == print(m), and text that ptxas accepts.
//
// Canonical form: module directives first; a blank line between module-scope
// items; one tab of indentation per `{ }` level with labels one level out;
// one statement per line; integers in decimal; floats as 0f/0d hex bits;
// one declaration per name (`.reg .b32 %r1, %r2;` prints as two lines).
#pragma once

#include <string>

#include "ptx/ptx_ast.h"

namespace stitch::ptx {

std::string print_module(const Module& m);
std::string print_function(const Function& f);
// Without indentation or a trailing newline: `@%p1 bra $L__BB0_2;`
std::string print_instruction(const Instruction& in);
std::string print_operand(const Operand& o);
// `.shared .align 4 .b8 smem[1024]` (no ';'), as a declaration or parameter.
std::string print_var_decl(const VarDecl& v);

const char* state_space_name(StateSpace s);

}  // namespace stitch::ptx
