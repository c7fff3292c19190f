// The tuning trials' entry into the compile layer (docs/tuning.md): each
// trial, one group's own graph under one candidate schedule, lowered as the
// schedule says into a kernel of its own, for the tuners' measurers to
// compile in one translation unit (compile_trials_cpu here; on a GPU,
// pipeline/cuda/cuda_tuning.h).
#pragma once

#include <string>
#include <vector>

#include "fusion/fusion_plan.h"
#include "kir/kernel.h"
#include "lower/lower_plan.h"
#include "runtime/cpu/kernel_cache.h"
#include "schedule/group_schedule.h"
#include "schedule/select.h"
#include "stitch/graph.h"

namespace stitch::pipeline {

// One trial: a group's graph of static shapes and its one-group plan, under
// `schedule`.
struct TrialInput {
  const Graph* graph = nullptr;
  const FusionPlan* plan = nullptr;
  schedule::GroupSchedule schedule;
};

// The trials' kernels ("tune_t<i>", in trial order) and what each reads and
// writes.
struct TrialKernels {
  std::vector<kir::Kernel> kernels;
  std::vector<kir::GroupSignature> signatures;
};

// Each trial lowered for `target`; a schedule that does not lower, or a
// kernel that takes size symbols, is an internal error (the tuners offer
// only candidates the lowering implements, on static shapes).
TrialKernels lower_trials(const std::vector<TrialInput>& trials, const schedule::RowScheduleTarget& target);

// The trials' kernels as one C++ translation unit compiled and loaded
// through `cache`, with their entry points' names and signatures.
struct CompiledTrials {
  runtime::cpu::CpuModule module;
  std::vector<std::string> names;
  std::vector<kir::GroupSignature> signatures;
};
CompiledTrials compile_trials_cpu(const std::vector<TrialInput>& trials, const schedule::RowScheduleTarget& target,
                                  runtime::cpu::KernelCache& cache);

}  // namespace stitch::pipeline
