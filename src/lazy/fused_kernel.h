// Building one user kernel from a segment of consecutive calls
// (docs/lazy.md, Fused kernels): argument fusion (every array storage is one
// parameter, however many calls and parameters it is passed to), loop fusion
// (every body inside one loop over the range, a call whose range is smaller
// under a guard), and renaming so bodies do not meet. The result is an
// ordinary checked UserKernel, so it is lowered, compiled, cached and checked
// against the interpreter like any other.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "interp/kernel_binding.h"
#include "lazy/index_safety.h"
#include "stitch/kernel.h"

namespace stitch::lazy {

// One call of the segment: its kernel, the storage each array parameter is
// bound to (segment-local numbering: 0, 1, ... in first-use order; -1 for
// scalars) and the call's bound arguments.
struct SegmentCall {
  const UserKernel* kernel = nullptr;
  std::vector<int> storage;
  const interp::KernelBinding* binding = nullptr;
  const std::vector<ArrayAccessSite>* accesses = nullptr;  // collect_accesses(*kernel); made here when null
};

// A storage's element type and rank, to declare its parameter.
struct StorageType {
  DType dtype;
  int rank;
};

struct FusedKernel {
  UserKernel kernel;
  // The fused call's arguments, in parameter order: the storages (0, 1, ...),
  // then each call's scalar parameters in call order, then the range's
  // extents r0, r1, ... (the largest of the calls').
  int storage_count = 0;
  std::vector<std::pair<int, int>> scalar_sources;  // (call, parameter)
  std::vector<int64_t> extents;
  // Per storage: whether it lives in a local of each index instead of memory
  // (a temporary nobody reads after the segment; see build_fused_kernel).
  std::vector<char> in_register;
  // Per storage: whether the kernel writes it (its parameter's access).
  std::vector<char> written;
  // Whether an index reads a scalar parameter's value (interp::indices_read_scalars).
  bool index_reads_scalars = false;
};

// Requires at most one call to be a reduction (the fused kernel's result),
// and every pair of calls to pass the safety check at the fused rank.
//
// Ranges of different rank (docs/lazy.md): the fused range is the first R
// dimensions, R the smallest rank of the calls'. A call of larger rank runs
// the rest of its range in serial loops within each index; consecutive such
// calls share one loop nest when their trailing extents are equal and they
// pass the safety check at their full rank (so they may share an index).
//
// `dead` (per storage, or empty): storages no one reads after the segment (no
// handle, view or later call refers to them). Such a storage is kept in a
// local of each index, never loaded or stored, when that is exact: every
// access in the segment uses one index, each of whose components is a
// distinct range index plus a constant, covering the range (so no two indices
// share an element); the first access, in evaluation order, is a store at the
// top of its call's body (outside any branch or loop), so the old contents
// are never needed; and every later call touching it has a range inside the
// first one's, so it runs only where that store ran.
FusedKernel build_fused_kernel(const std::vector<SegmentCall>& calls, const std::vector<StorageType>& storages,
                               const std::vector<bool>& dead = {});

}  // namespace stitch::lazy
