// Lowering of a stitched fusion group (block composition across reductions,
// FusionStitching 2019 §4; docs/lowering.md, Stitched groups): reductions
// whose totals other ops of the same kernel read, computed row by row in
// one kernel.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fusion/fusion_plan.h"
#include "kir/kernel.h"
#include "schedule/column_schedule.h"
#include "schedule/group_shared_memory.h"
#include "schedule/row_schedule.h"
#include "stitch/graph.h"

namespace stitch::lower {

// Why `group` cannot be lowered by lower_stitched_group, or "" when it can
// (stitched_group_problem of src/fusion/stitched_group.h).
std::string stitched_group_lowering_problem(const Graph& g, const FusionGroup& group);

// One kernel: the row schedule `schedule` when the reductions reduce the
// innermost axes (each reduction a strided phase ending in the row's block or
// warp reduction, then a phase storing the roots; docs/lowering.md, Row
// schedules), otherwise a thread per column (serial loops, no block
// reduction). The signature is loop_group_signature's. Raises InternalError
// when the group is not stitchable. Verified. Past kir::kStaticSharedBytes
// the block's shared memory all lives in the kernel's arena. `prefetch`:
// the store phase of a row schedule asks for the next block's rows of the
// inputs read in place (kir::PrefetchStmt; the CPU's). `shared`: the
// schedule stage's shared-memory plan (GroupSchedule::shared_memory), which
// the row caches follow: required by a row schedule over a static row, which
// keeps the caches it names and no others. `held`: the
// values (value indices) each thread keeps in registers across the phases
// (GroupSchedule::held; a row schedule over a static row only): the phases
// step over the row unrolled, the first loads each held input into a local
// array, later ones read it there, and a held computed value is kept where
// it is first computed; such values take no row cache. `held_vector` > 1:
// each thread takes that many consecutive elements of the row at a time (16
// bytes of its narrowest row buffer), and the kernel asks for 16-byte-aligned
// buffers (kir::Kernel::aligned_bytes), so that the CUDA compiler loads and
// stores them as vectors.
// Over other axes than the innermost, a thread per column in blocks of
// `column_width` columns.
kir::Kernel lower_stitched_group(const Graph& g, const FusionGroup& group, const std::string& kernel_name,
                                 const schedule::RowSchedule& schedule = {}, bool prefetch = false,
                                 const schedule::GroupSharedMemory* shared = nullptr,
                                 const std::vector<int>& held = {}, int64_t held_vector = 1,
                                 int64_t column_width = schedule::kColumnWidth);

}  // namespace stitch::lower
