// Repeated kernels: the layers of a model repeat, and so do their kernels. Two
// kernels whose emitted C++ is the same up to the names of the kernel, its
// buffers and its scalars are the same function, so a translation unit defines
// the first and makes each repeat an alias of it (docs/cpu-backend.md, Repeated
// kernels): a 12-layer BERT's 62 kernels are 8 functions to compile.
#pragma once

#include <string>
#include <string_view>

#include "kir/kernel.h"

namespace stitch::codegen::cpu {

// `text` (the kernel's emitted C++) with the kernel's name, its buffers' and
// scalars' names, and the names the emitter derives from a buffer's (`x_words`,
// `x_shift`) spelt by their role and position instead, and whole-line comments
// left out. Two kernels with equal identities are the same function: the
// renaming is one to one (a marker no emitted name begins with, since names
// beginning `stitch_` are refused, then the position, then `__` ahead of the
// derived suffix), and every renamed name is bound inside the kernel, by
// position, from its arguments.
std::string code_identity(const kir::Kernel& kernel, std::string_view text);

// The definition of `name` as an alias of `same_as`, a kernel defined above it
// in the same translation unit with the same code.
std::string alias_definition(const std::string& name, const std::string& same_as);

}  // namespace stitch::codegen::cpu
