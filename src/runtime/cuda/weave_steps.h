// --weave (docs/goptx.md, In Stitch): adjacent kernels of a CUDA launch list
// that are independent become one launch of a kernel woven at the PTX level
// (src/ptx/weave). Off by default: only a GPU measurement can say whether it
// pays, and none has been made.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "runtime/common/buffer_plan.h"

namespace stitch::runtime::cuda {

// Whether two steps may run in one launch in either order: neither writes a
// value the other reads or writes.
bool independent_steps(const StepValues& a, const StepValues& b);

// Each pair (a, b) of .entry names of `module_ptx` woven into one kernel
// "<a>_<b>_woven" whose parameters are a's, b's, then a's grid (x, y, z)
// and b's as .u32 (WeaveOptions::grid_params), by the latency strategy.
struct WovenKernels {
  std::string ptx;  // a module holding every woven kernel; "" when none was woven
  // Per pair: the woven kernel's name, or "" when the weaver refused the pair.
  std::vector<std::string> names;
  // One line per refused pair, naming it and the weaver's reason.
  std::string refusals;
};
WovenKernels weave_kernel_pairs(const std::string& module_ptx,
                                const std::vector<std::pair<std::string, std::string>>& pairs);

}  // namespace stitch::runtime::cuda
