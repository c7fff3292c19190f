// Instruction latencies per architecture for the weaver's scheduler
// (docs/goptx.md, Latency tables; each figure's source is cited there and in
// latency.cpp). Cycles from issue until a dependent instruction can use the
// result; a model, not a measurement of this machine.
#pragma once

#include "ptx/ptx_ast.h"
#include "ptx/weave/weave.h"

namespace stitch::ptx {

int instruction_latency(const Instruction& in, WeaveArch arch);

// sm_80 .. sm_89 -> Sm80; sm_90 and later (and anything else) -> Sm90.
WeaveArch weave_arch_for_target(const std::vector<std::string>& target);

}  // namespace stitch::ptx
