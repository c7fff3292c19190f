// Where divergent lanes of a warp rejoin (docs/ptx-interpreter.md, Divergence):
// each conditional branch reconverges at the first instruction of its block's
// immediate post-dominator, the point every path from the branch must pass.
#pragma once

#include "ptx/sim/program.h"

namespace stitch::ptx::sim {

// Sets DInst::reconverge of every Branch in `f` (kNoReconvergence when only
// the function's exit post-dominates it). Computed on the decoded code
// rather than ptx/cfg.h's blocks, as the interpreter's instruction indices
// are what the warp's reconvergence stack holds.
void assign_reconvergence(DFunction& f);

}  // namespace stitch::ptx::sim
