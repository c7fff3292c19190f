#include "pipeline/trial_kernels.h"

#include <utility>

#include <fmt/format.h>

#include "codegen/cpu/cpp_emitter.h"
#include "stitch/error.h"

namespace stitch::pipeline {

TrialKernels lower_trials(const std::vector<TrialInput>& trials, const schedule::RowScheduleTarget& target) {
  TrialKernels out;
  for (size_t t = 0; t < trials.size(); ++t) {
    std::vector<lower::LoweredGroup> l =
        lower::lower_plan(*trials[t].graph, *trials[t].plan, {trials[t].schedule}, fmt::format("tune_t{}", t), target);
    STITCH_ASSERT(l.size() == 1 && l[0].kernel, "a trial's schedule lowers: " + trials[t].schedule.describe());
    STITCH_ASSERT(l[0].signature.symbols.empty(), "a trial of static shapes takes no symbols");
    out.signatures.push_back(l[0].signature);
    out.kernels.push_back(std::move(*l[0].kernel));
  }
  return out;
}

CompiledTrials compile_trials_cpu(const std::vector<TrialInput>& trials, const schedule::RowScheduleTarget& target,
                                  runtime::cpu::KernelCache& cache) {
  TrialKernels lowered = lower_trials(trials, target);
  CompiledTrials out;
  for (const kir::Kernel& k : lowered.kernels) out.names.push_back(k.name);
  out.signatures = std::move(lowered.signatures);
  out.module = cache.load_or_compile(codegen::cpu::emit_cpp_translation_unit(lowered.kernels));
  return out;
}

}  // namespace stitch::pipeline
