// Lowering of a loop fusion group to Kernel IR (DESIGN.md, Kernel IR;
// docs/lowering.md): thread composition, one thread per output element.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fusion/fusion_plan.h"
#include "kir/kernel.h"
#include "stitch/graph.h"

namespace stitch::lower {

// Elements one block of a loop kernel covers: kLoopBlockThreads threads, each
// handling kLoopElementsPerThread elements strided by the block size so that
// consecutive threads touch consecutive elements (coalesced on a GPU, a
// vectorisable inner loop on the CPU).
inline constexpr int64_t kLoopBlockThreads = 256;
inline constexpr int64_t kLoopElementsPerThread = 4;

// The calling convention of a lowered group: which graph value each buffer
// parameter holds and which shape symbol each scalar parameter carries, in
// the kernel's parameter order. Inputs (read) come first, then roots (write).
struct GroupSignature {
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
  std::vector<std::string> symbols;  // sorted; scalar j is the extent of symbols[j]
  // The kernel can meet input the interpreter rejects (an out-of-range gather
  // index): a last buffer parameter `status` (i32[1]) that the caller
  // zeroes and the kernel sets to 1 + the offending node's index.
  bool status = false;
};

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
