// Transpose tiles (docs/lowering.md, Transpose tiles): the CPU lowering of a
// loop group whose transposes move their operand's innermost axis to the
// output's second-to-last. Each block stages a 16 x 16 square of every such
// transpose's operand in shared memory, read along the operand's rows,
// transposes it in registers (kir::TransposeTileStmt) and computes the roots
// from it along the output's rows: no load of the group is strided.
#pragma once

#include <cstdint>
#include <string>

#include "fusion/fusion_plan.h"
#include "kir/kernel.h"
#include "stitch/graph.h"

namespace stitch::lower {

// Square side of a transpose tile: one 64-byte vector of f32.
inline constexpr int64_t kTransposeTile = 16;

// Empty when lower_transpose_tiles takes `group`; otherwise why not.
std::string transpose_tiles_problem(const Graph& g, const FusionGroup& group);

// The kernel of `group` (transpose_tiles_problem empty), with the signature
// lower_loop_group gives it (loop_group_signature). Verified.
kir::Kernel lower_transpose_tiles(const Graph& g, const FusionGroup& group, const std::string& kernel_name);

}  // namespace stitch::lower
