// Lowering of a whole fusion plan to Kernel IR, group by group
// (docs/lowering.md). Groups the lowering does not handle yet are reported,
// not skipped silently: the caller sees which groups have a kernel.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "fusion/fusion_plan.h"
#include "kir/kernel.h"
#include "lower/lower_loop_group.h"

namespace stitch::lower {

struct LoweredGroup {
  int group = -1;                     // index into FusionPlan::groups
  std::optional<kir::Kernel> kernel;  // absent: not lowered yet
  GroupSignature signature;           // meaningful only with a kernel
  std::string not_lowered_reason;     // set exactly when kernel is absent
};

// One entry per group of `plan`, in plan order. Kernels are named
// "<prefix>_g<index>". A loop group with an op outside is_loop_lowerable, a
// reduction group with a reduction_group_problem and a library group come
// back without a kernel and a reason.
std::vector<LoweredGroup> lower_plan(const Graph& g, const FusionPlan& plan, const std::string& prefix);

}  // namespace stitch::lower
