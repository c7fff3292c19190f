// Kernel IR verifier: the structural rules both emitters rely on
// (docs/kernel-ir.md, "Verifier rules").
#pragma once

#include <string>
#include <vector>

#include "kir/kernel.h"

namespace stitch::kir {

// Every violated rule, one message each, in program order; empty when valid.
std::vector<std::string> verify_kernel(const Kernel& k);

// Throws InternalError listing the problems: kernels come from Stitch's own
// lowering, so an invalid one is a bug in Stitch, not in the user's program.
void verify_kernel_or_throw(const Kernel& k);

}  // namespace stitch::kir
