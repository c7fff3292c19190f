// Kernel packing at the PTX level (horizontal fusion, the baseline GoPTX is
// measured against; docs/goptx-bench.md): two independent kernels become one
// .entry whose CTAs are split between them, so both run in one launch
// without sharing a thread.
//
//   ptx::Module packed = ptx::pack(a, b, {.kernel_a = "triad", .kernel_b = "collatz_steps"});
//
// The packed kernel takes A's parameters, then B's, then two .u32 parameters:
// A's grid x and B's grid x. Launched with grid (gridA + gridB, 1, 1) and the
// block both kernels were meant for (and the larger dynamic shared memory),
// CTAs [0, gridA) run A's code and CTAs [gridA, gridA + gridB) run B's, where
// B reads %ctaid.x as ctaid.x - gridA and each kernel reads %nctaid.x as its
// own grid. Only one-dimensional grids: a kernel that reads %ctaid.y/z or
// %nctaid.y/z is refused (UserError), as are grids given with y or z > 1.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "ptx/ptx_ast.h"

namespace stitch::ptx {

struct PackOptions {
  std::string kernel_a;  // the .entry to take from A; "" when A has exactly one
  std::string kernel_b;
  std::string name;  // the packed .entry; "" for <a>_<b>_packed
  // The grids the kernels will be launched with, when known: checked to be
  // one-dimensional (the packed kernel itself takes the x extents as parameters).
  std::optional<std::array<uint32_t, 3>> grid_a;
  std::optional<std::array<uint32_t, 3>> grid_b;
};

// UserError for a missing or ambiguous kernel, a kernel or grid that is not
// one-dimensional, differing .reqntid blocks, or what prepare_side refuses.
Module pack(const Module& a, const Module& b, const PackOptions& options);

}  // namespace stitch::ptx
