// The emit-only route through the compile layer (docs/pipeline.md): what
// `stitch emit`, `stitch plan --format json` and the fusion report show, the
// pipeline run up to its emit stage for a back end without compiling or
// loading anything, and one kernel's source.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "fusion/planner.h"
#include "kir/kernel.h"
#include "pipeline/pipeline.h"
#include "schedule/select.h"
#include "stitch/graph.h"

namespace stitch::pipeline {

// The pipeline through its emit stage for `canonical` on `backend` ("cpu" or
// "cuda": the CUDA back end's plan for an sm_90 device, as `stitch emit`,
// its rows ranked by the GPU model for `model_target` ("h200"; "": the
// device's nearest), the row schedules forced to `forced` when given,
// each stage `dump` wants printed; the pipeline stops after `last_stage`.
// UserError for another back end, or "cuda" in a build without the CUDA toolkit.
Compilation emitted_compilation(const Graph& canonical, PlannerKind planner, const std::string& backend,
                                         std::optional<schedule::RowScheduleKind> forced = std::nullopt,
                                         const std::string& model_target = "", const StageDump& dump = {},
                                         std::string_view last_stage = "emit");

// One kernel's source as `backend` ("cpu" or "cuda") writes it.
std::string kernel_source(const kir::Kernel& kernel, const std::string& backend);

}  // namespace stitch::pipeline
