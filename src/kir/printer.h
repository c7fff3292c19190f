// Kernel IR text form: deterministic and unambiguous, for golden tests and
// STITCH_DUMP=kir. The grammar is in docs/kernel-ir.md; no parser reads it yet.
#pragma once

#include <string>

#include "kir/kernel.h"

namespace stitch::kir {

std::string print_expr(const Expr& e);
std::string print_kernel(const Kernel& k);

}  // namespace stitch::kir
