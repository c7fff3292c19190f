// Which kernel outputs the CPU back end stores non-temporally
// (docs/cpu-backend.md, Streaming stores): a write-once graph output that no
// other kernel of the plan reads and that is too large to be still cached
// when the caller reads it. Sets kir::BufferParam::streaming; a hint that
// never changes a value.
#pragma once

#include <cstdint>
#include <vector>

#include "fusion/fusion_plan.h"
#include "lower/lower_plan.h"

namespace stitch::lower {

// Marks the output buffers of `lowered`'s kernels that qualify: at least
// `min_bytes` (schedule::RowScheduleTarget::stream_min_bytes). Outputs of
// symbolic shape are never streamed (their size is not known here).
void mark_streaming_outputs(const Graph& g, const FusionPlan& plan, std::vector<LoweredGroup>& lowered,
                            int64_t min_bytes);

}  // namespace stitch::lower
