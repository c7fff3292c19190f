// Transpose tiles (docs/lowering.md, Transpose tiles): the lowering of a loop
// group whose transposes move their operand's innermost axis to the output's
// second-to-last. Each block stages a square (16 x 16 on the CPU, 32 x 32 on
// the GPU) of every such transpose's operand in shared memory, read along the
// operand's rows, transposes it (in registers on the CPU, kir::TransposeTileStmt;
// by reading it back along columns on the GPU) and computes the roots from it
// along the output's rows: no load of the group is strided.
#pragma once

#include <cstdint>
#include <string>

#include "fusion/fusion_plan.h"
#include "kir/kernel.h"
#include "stitch/graph.h"

namespace stitch::lower {

// Square side of a transpose tile on the CPU: one 64-byte vector of f32.
inline constexpr int64_t kTransposeTile = 16;
// On the GPU: one warp's 32 lanes, a 128-byte line of f32 per staged row. The
// block is that one warp; the tile's rows are padded to 33 elements, so that
// the column a lane reads back lands in 32 different banks, and the compute
// reads the tile transposed instead of transposing it in place.
inline constexpr int64_t kGpuTransposeTile = 32;

// Empty when lower_transpose_tiles takes `group`; otherwise why not.
std::string transpose_tiles_problem(const Graph& g, const FusionGroup& group, bool gpu = false);

// The kernel of `group` (transpose_tiles_problem empty), with the signature
// lower_loop_group gives it (loop_group_signature). Verified.
kir::Kernel lower_transpose_tiles(const Graph& g, const FusionGroup& group, const std::string& kernel_name,
                                  bool gpu = false);

}  // namespace stitch::lower
