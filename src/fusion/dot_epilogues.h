// Dot epilogues (docs/fusion.md, Dot epilogues): a loop or row-reduction
// kernel that reads a dot's result element by element or row by row runs
// inside the dot's library call. The CPU executable computes the dot a panel
// of rows at a time and runs the kernel's blocks over each panel while the
// panel is in the cache: one launch instead of two, and the dot's result is
// not read back from memory. The dot's result is still written (another
// kernel or the graph's outputs may read it).
#pragma once

#include <string>
#include <vector>

#include "fusion/fusion_plan.h"

namespace stitch {

// Why `consumer` cannot be the epilogue of dot node `dot` (shapes, dtype and
// how the group reads the dot's result; not the order of the groups), or ""
// when it can.
std::string dot_epilogue_refusal(const Graph& g, int dot, const FusionGroup& consumer);

// Makes each group the epilogue of the dot it reads, where
// dot_epilogue_refusal allows and the dot's group comes after every other
// group the consumer reads (so the pair runs at the dot's place in the
// order): one epilogue per dot, one dot per epilogue. `plan` is finalized
// before and after. Returns how many it paired.
int pair_dot_epilogues(const Graph& g, FusionPlan& plan);

// Whether `node` is a transpose that swaps its operand's last two axes and
// keeps the others (perm [0, ..., r-3, r-1, r-2]; rank 2 or more).
bool swaps_last_two_axes(const Graph& g, const Node& node);

// For every node, whether it is a transpose of its operand's last two axes
// that only f32 and f64 dots (of a matrix A) read, as their B, and no graph
// output: a linear layer's `dot(x, transpose(w))`. The CPU executable reads w
// with the gemm's transpose flag instead and drops a kernel that writes only
// such transposes (runtime/cpu/executable.cpp), so a planner keeps them apart
// from other kernels.
std::vector<bool> dot_operand_transposes(const Graph& g);

}  // namespace stitch
