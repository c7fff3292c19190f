// Execution-based tuning on a GPU (docs/tuning.md, On a GPU): the schedule
// tuner's measurer for a CUDA device. Every candidate of every group is
// lowered for the device into one CUDA C translation unit, compiled once by
// NVRTC (through the cubin cache), run on the context's stream on random
// inputs of the group's static shapes, checked against the interpreter, and
// timed with CUDA events in interleaved rounds.
#pragma once

#include <filesystem>
#include <memory>
#include <vector>

#include "runtime/cuda/context.h"
#include "runtime/cuda/cubin_cache.h"
#include "tune/measure.h"
#include "tune/schedule_tuner.h"

namespace stitch::pipeline {

// One result per trial, in order, as tune::measure_trials on the CPU: a
// trial's time is the fastest mean launch of a batch timed between two events.
std::vector<tune::TrialResult> measure_trials_on_device(const std::shared_ptr<CudaContext>& context, CubinCache& cubins,
                                                        const std::vector<tune::Trial>& trials,
                                                        const schedule::RowScheduleTarget& target,
                                                        const tune::MeasureOptions& options);

// The device's measurer: its name, architecture and memory make the machine,
// NVRTC's version and options the compiler.
tune::Measurer cuda_measurer(std::shared_ptr<CudaContext> context, CubinCache& cubins);

// Where a GPU's choices live: "tuning" beside the cubins.
std::filesystem::path cuda_tuning_directory(const CubinCache& cubins);

}  // namespace stitch::pipeline
