// The GPU model's fast analytical form (docs/gpu-model.md, The analytical form):
// the time model's terms (time_model.h) estimated from a schedule candidate's
// description (schedule/candidates.h) instead of from simulated counters, so a
// user's compile can rank a group's schedules by the model without simulating
// anything. It follows the simulated model's rules: DRAM bytes are the first
// touch of each sector and re-reads the L2 model sends back to DRAM (a row read
// again after more than the L2 was touched by the CTAs beside it); the L2 term
// is every sector requested; issue counts warp instructions per class; the
// latency term is waves times the load batches a warp waits for, one per loop
// step of each pass over its row. CI checks it against the simulated counters
// on the row-reduction graphs (bench/gpu_model/check_analytic.py).
#pragma once

#include <optional>
#include <string>

#include "gpu_model/target.h"
#include "gpu_model/time_model.h"
#include "schedule/candidates.h"
#include "schedule/select.h"

namespace stitch::gpu_model {

// Where a row's later passes read it from.
enum class RereadSource { None, Registers, SharedCache, L2, Dram };

struct AnalyticPrediction {
  Prediction prediction;
  RereadSource rereads = RereadSource::None;
};

// The model's time for `candidate`, one of enumerate_candidates(group, target.device).
AnalyticPrediction analytic_prediction(const GpuTarget& target, const FittedConstants& constants,
                                       const schedule::GroupDescription& group,
                                       const schedule::KernelCandidate& candidate);

// The model's target for the device `device` (a queried GPU or a table entry):
// for compute capability 9.0, the known target whose DRAM bandwidth is nearest
// the device's, with the device's own SMs, clock and limits; nullopt for other
// architectures, which the model has no numbers for.
std::optional<GpuTarget> model_target_for(const schedule::GpuTarget& device);

// `rows` with its model set to the analytical form for the device it ranks on
// (RowScheduleTarget::model), when the model knows that device; unchanged otherwise.
// With `target_name` ("h200"), that known target as it is, whatever the device.
schedule::RowScheduleTarget with_row_model(schedule::RowScheduleTarget rows, const std::string& target_name = "");

}  // namespace stitch::gpu_model
