// Execution-based tuning of schedules on the CPU or a GPU (docs/tuning.md;
// FusionStitching 2019 §6, Alg. 3): every group with more than one candidate
// schedule (pipeline::schedule_candidates) is compiled once per candidate, all
// in one translation unit, run on random inputs of its own shapes, checked
// against the interpreter and timed; the fastest is kept. Choices are cached
// on disk beside the kernel cache, keyed by the group's structure (which
// holds its exact static shapes) and the machine, so a second compile of the
// same group measures nothing.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "fusion/fusion_plan.h"
#include "runtime/cpu/kernel_cache.h"
#include "schedule/group_schedule.h"
#include "schedule/select.h"
#include "stitch/graph.h"
#include "tune/measure.h"

namespace stitch::tune {

struct TuneOptions {
  // Where the choices live: one file per (group structure, machine). Empty:
  // "tuning" under the kernel cache's directory.
  std::filesystem::path directory;
  MeasureOptions measure;  // how long each candidate runs
  // A candidate replaces the default only when it is faster by more than
  // this fraction, so that noise does not flip a choice.
  double margin = 0.03;
  // Test seam: replaces the measured seconds of candidate `index` of a group
  // (the fusion tuner: 0 the fused kernel, 1 its xla kernels apart).
  std::function<double(int index, double measured)> adjust_seconds;
};

// What one choose() did, for STITCH_DUMP=tune, the CLI's report and tests.
struct TuneStats {
  int groups = 0;       // groups with at least two candidates
  int hits = 0;         // answered from the cache
  int measured = 0;     // measured now (misses, stale and corrupt entries)
  int stale = 0;        // cache entries made for other candidates or another compiler
  int corrupt = 0;      // cache entries that did not parse
  int untunable = 0;    // symbolic shapes, or inputs the default kernel rejects: default kept
  int rejected = 0;     // candidates whose results disagreed with the interpreter (a bug, reported)
  int changed = 0;      // groups whose choice is not the default
};

// Where the candidates run and how they are timed: the CPU's kernels
// (cpu_measurer) or a GPU's (tune/cuda_measure.h).
struct Measurer {
  schedule::RowScheduleTarget::Machine machine = schedule::RowScheduleTarget::Machine::Cpu;
  // The machine the times are of (CPU model and ISA flags, or the GPU): part
  // of a cache entry's name, so each machine keeps its own choices.
  std::string description;
  // What builds the kernels (compiler and its flags): part of an entry's
  // fingerprint, so a new compiler makes the entry stale.
  std::string compiler;
  std::function<std::vector<TrialResult>(const std::vector<Trial>&, const schedule::RowScheduleTarget&,
                                         const MeasureOptions&)>
      measure;
};

// The CPU's: every trial in one translation unit through `kernels`
// (measure_trials).
Measurer cpu_measurer(runtime::cpu::KernelCache& kernels);

class ScheduleTuner {
 public:
  // On the CPU, the choices under "tuning" in the kernel cache's directory
  // unless options.directory names another.
  explicit ScheduleTuner(runtime::cpu::KernelCache& kernels, TuneOptions options = {});
  // On `measurer`'s machine, the choices in `directory` (options.directory,
  // when set, takes precedence).
  ScheduleTuner(Measurer measurer, std::filesystem::path directory, TuneOptions options = {});

  // Per group of `plan`: the chosen schedule, or nullopt to keep the default
  // (a single candidate, a library group, an untunable group).
  std::vector<std::optional<schedule::GroupSchedule>> choose(const Graph& g, const FusionPlan& plan,
                                                             const schedule::RowScheduleTarget& target);

  // The totals of every choose() so far.
  const TuneStats& stats() const { return stats_; }
  // One line per group decided so far: its candidates' times and the choice.
  const std::string& report() const { return report_; }
  // What the executables' in-memory cache key needs: the cache directory.
  std::string key() const;
  const std::filesystem::path& directory() const { return directory_; }

  // The file a group of this structure's choice lives in (tests corrupt it).
  std::filesystem::path entry_path(const Graph& group_graph, const schedule::RowScheduleTarget& target) const;

 private:
  Measurer measurer_;
  TuneOptions options_;
  std::filesystem::path directory_;
  TuneStats stats_;
  std::string report_;
};

// Whether STITCH_TUNE asks for tuning: unset or "0" no, "1" yes, anything
// else a UserError.
bool tuning_requested_by_environment();

}  // namespace stitch::tune
