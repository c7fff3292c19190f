// The compile stage's first rung of the fallback ladder (docs/executable.md,
// When the compiler rejects a plan): when the translation unit of a plan does
// not build, find the groups whose kernels do not build alone, by bisection
// over the groups (builds only on failure), and replace just those by one
// group per op they write, so every other group keeps its fused kernel; and
// the second rung, where what fails even then runs on the reference
// interpreter, group by group.
#pragma once

#include <string>
#include <vector>

#include "fusion/fusion_plan.h"
#include "pipeline/pipeline.h"

namespace stitch::pipeline {

struct FailingGroups {
  std::vector<int> groups;  // indices into the plan's groups, ascending
  std::string error;        // the first failing group's own build error
  int builds = 0;           // the translation units built to find them
};

// The groups of `c.lowered` whose kernels fail to build (backend.build on a
// translation unit of a subset of the kernels). Empty when every group builds
// alone (the failure is the groups together, and no one group can be blamed),
// and when every group fails or the builds allowed (a few a level of the
// bisection) ran out: a compiler or driver that fails every unit.
FailingGroups locate_failing_groups(const Compilation& c, const Backend& backend);

// `plan` with each of `failing` replaced by one group per node it writes
// (its roots) or computes that no group writes; `reason` is the refusal on
// every edge into them.
FusionPlan unfuse_groups(const Graph& g, const FusionPlan& plan, const std::vector<int>& failing,
                         const std::string& reason);

// The second rung: the groups of `c.lowered` whose kernels fail to build
// alone (locate_failing_groups) lose their kernels and run on the reference
// interpreter (LoweredGroup::interpreted); c.source is emitted again without
// them. Empty, and `c` unchanged, when no group can be blamed or one of them
// is a dot's epilogue (it runs inside the dot's call).
FailingGroups interpret_failing_groups(Compilation& c, const Backend& backend);

}  // namespace stitch::pipeline
