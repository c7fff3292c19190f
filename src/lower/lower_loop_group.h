// Lowering of a loop fusion group to Kernel IR (DESIGN.md, Kernel IR;
// docs/lowering.md): thread composition, one thread per output element.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fusion/fusion_plan.h"
#include "kir/group_signature.h"
#include "kir/kernel.h"
#include "stitch/graph.h"

namespace stitch::lower {

// Elements one block of a loop kernel covers: kLoopBlockThreads threads, each
// handling kLoopElementsPerThread elements strided by the block size so that
// consecutive threads touch consecutive elements (coalesced on a GPU, a
// vectorisable inner loop on the CPU).
inline constexpr int64_t kLoopBlockThreads = 256;
inline constexpr int64_t kLoopElementsPerThread = 4;

// The threads of a loop block over rows of `innermost` elements: 256 where
// that divides the row (or the extent is unknown, <= 0), else the divisor of
// the row in [kMinLoopBlockThreads, kMaxLoopBlockThreads] that fills the most
// whole 16-lane vectors, then the nearest to 256; 256 when there is none.
// With a block that divides the row, the emitters split a thread's linear
// index into a block-uniform row and a column that is the row's start plus
// the thread (docs/lowering.md, Loop blocks that divide the row): a
// broadcast, a transpose of outer axes or a slice then reads contiguously,
// where a block of 256 over rows of 688 divides every element's index.
inline constexpr int64_t kMinLoopBlockThreads = 32;
inline constexpr int64_t kMaxLoopBlockThreads = 1024;
int64_t loop_block_threads(int64_t innermost);
// For a group: the row of its roots (one element count and one static
// innermost extent, rank 2 or more) where an element reads by coordinates
// (layout ops, broadcasts, gathers, iota, roots of two shapes);
// kLoopBlockThreads otherwise and for dot epilogues.
int64_t loop_block_threads(const Graph& g, const FusionGroup& group);

// The calling convention of a lowered group (kir/group_signature.h).
using kir::GroupSignature;

// Whether `op` may appear in a group lower_loop_group accepts.
bool is_loop_lowerable(OpKind op);

// The signature lower_loop_group gives `group`'s kernel.
GroupSignature loop_group_signature(const Graph& g, const FusionGroup& group);

// One kernel computing every root of `group` (kind loop, every node
// is_loop_lowerable); anything else raises InternalError naming the node or
// the problem. Roots may differ in shape (kernel packing, DESIGN.md Schedules
// and compositions): roots with the same element count share one loop, each
// distinct count gets its own range of blocks of the one grid. The kernel is
// verified.
// `prefetch`: each part of a block first asks for the same part of the next
// block of every input of the roots' shape (kir::PrefetchStmt; the CPU's).
kir::Kernel lower_loop_group(const Graph& g, const FusionGroup& group, const std::string& kernel_name,
                             bool prefetch = false);

}  // namespace stitch::lower
