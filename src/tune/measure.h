// Timing kernels of single groups on the CPU (docs/tuning.md, What it does):
// the measuring both tuners share. Every trial (a group graph under one
// schedule) is lowered into one translation unit, compiled once, then run on
// random inputs of the group's static shapes, checked against the
// interpreter, and timed in interleaved rounds.
#pragma once

#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/cpu/kernel_cache.h"
#include "schedule/group_schedule.h"
#include "lower/lower_loop_group.h"
#include "schedule/select.h"
#include "stitch/tensor.h"
#include "tune/group_graph.h"

namespace stitch::tune {

struct MeasureOptions {
  // After one warm-up run that is checked against the interpreter, each
  // trial runs at least `min_runs` times and for at least `min_seconds` in
  // all, spread over `rounds` rounds that take every trial in turn (so that a
  // slow spell of the machine falls on all of them); its time is its fastest run.
  int min_runs = 6;
  double min_seconds = 0.03;
  int rounds = 3;
  // Called as the trials go: phase "checking" (the warm-up run of each
  // trial) then "timing" (each trial's share of a round), with the units done
  // and the total; the command line draws its progress line from it.
  std::function<void(std::string_view phase, size_t done, size_t total)> progress;
};

// options.progress(phase, done, total) when it is set.
inline void report_progress(const MeasureOptions& options, std::string_view phase, size_t done, size_t total) {
  if (options.progress) options.progress(phase, done, total);
}

struct Trial {
  const GroupGraph* group = nullptr;  // trials of one group share its inputs
  schedule::GroupSchedule schedule;
};

struct TrialResult {
  double seconds = std::numeric_limits<double>::infinity();
  // Empty when measured. Otherwise why not: the kernel rejected its input,
  // or its results disagree with the interpreter (`mismatch` then).
  std::string problem;
  bool mismatch = false;
};

// Whether every parameter of `g` has a static shape (only those are timed).
bool all_static(const Graph& g);

// A group graph's random inputs, seeded alike by every measurer, and the
// interpreter's results on them; `problem` says why there are none when the
// interpreter rejects the inputs (a gather's indices out of range).
struct ReferenceRun {
  std::vector<Tensor> inputs;
  std::vector<Tensor> want;
  std::string problem;
};
ReferenceRun reference_run(const Graph& g);

// For each input of a trial kernel's signature, the position of that value
// among the group graph's parameters; for each output, among its outputs:
// where the kernel's buffers come from in a ReferenceRun.
struct SignatureSlots {
  std::vector<size_t> inputs;
  std::vector<size_t> outputs;
};
SignatureSlots signature_slots(const Graph& group_graph, const kir::GroupSignature& signature);

// One result per trial, in order. Groups whose interpreter run rejects the
// random inputs (a gather's indices out of range) get that as every trial's
// problem.
std::vector<TrialResult> measure_trials(runtime::cpu::KernelCache& kernels, const std::vector<Trial>& trials,
                                        const schedule::RowScheduleTarget& target, const MeasureOptions& options);

}  // namespace stitch::tune
