// Which kernel outputs the CPU back end stores non-temporally
// (docs/cpu-backend.md, Streaming stores): a write-once graph output that no
// other kernel of the plan reads and that is too large to be still cached
// when the caller reads it. Sets kir::BufferParam::streaming; a hint that
// never changes a value.
#pragma once

#include <cstdint>
#include <vector>

#include "fusion/fusion_plan.h"

namespace stitch::lower {

// Per group of `plan`, the graph outputs its kernel stores non-temporally
// (value indices, ascending): those of at least `min_bytes`
// (schedule::RowScheduleTarget::stream_min_bytes) that no other group reads.
// Outputs of symbolic shape are never streamed (their size is not known
// here). The schedule stage records them in each GroupSchedule; the lowering
// marks those buffers.
std::vector<std::vector<int>> streaming_outputs(const Graph& g, const FusionPlan& plan, int64_t min_bytes);

}  // namespace stitch::lower
