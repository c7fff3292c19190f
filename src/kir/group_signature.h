// The calling convention of a group's kernel: which graph value each buffer
// parameter holds and which shape symbol each scalar parameter carries. The
// lowering makes it (lower/lower_loop_group.h and the other group lowerings);
// the runtime binds a launch's buffers and scalars by it.
#pragma once

#include <string>
#include <vector>

#include "stitch/graph.h"

namespace stitch::kir {

// In the kernel's parameter order: inputs (read) come first, then roots (write).
struct GroupSignature {
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
  std::vector<std::string> symbols;  // sorted; scalar j is the extent of symbols[j]
  // The kernel can meet input the interpreter rejects (an out-of-range gather
  // index): a last buffer parameter `status` (i32[1]) that the caller
  // zeroes and the kernel sets to 1 + the offending node's index.
  bool status = false;
};

}  // namespace stitch::kir
