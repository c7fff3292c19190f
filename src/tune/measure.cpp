#include "tune/measure.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>

#include "lower/lower_plan.h"
#include "pipeline/trial_kernels.h"
#include "stitch/error.h"
#include "stitch/interpreter.h"
#include "stitch/tensor.h"
#include "tensor/compare.h"

namespace stitch::tune {

namespace {

// The fastest of at least `runs` calls that together take at least `seconds`.
double fastest_of(runtime::cpu::KernelFunction f, std::vector<void*>& buffers, int runs, double seconds) {
  const int64_t* no_scalars = nullptr;
  double best = std::numeric_limits<double>::infinity(), total = 0;
  for (int r = 0; (r < runs || total < seconds) && r < 1000; ++r) {
    const auto start = std::chrono::steady_clock::now();
    f(buffers.data(), no_scalars);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::min(best, s);
    total += s;
  }
  return best;
}

// A group graph's reference run and the tensors every trial of it writes into.
struct Reference : ReferenceRun {
  std::vector<Tensor> outputs;
};

Reference reference_of(const Graph& g) {
  Reference r;
  static_cast<ReferenceRun&>(r) = reference_run(g);
  for (const GraphOutput& o : g.outputs()) {
    r.outputs.push_back(Tensor::uninitialized(g.type(o.value).dtype, concrete_shape(g.type(o.value).shape, {})));
  }
  return r;
}

}  // namespace

ReferenceRun reference_run(const Graph& g) {
  ReferenceRun r;
  uint64_t seed = 0x5eed;
  for (ValueId v : g.params()) {
    Tensor t(g.type(v).dtype, concrete_shape(g.type(v).shape, {}));
    fill_random(t, seed++);
    r.inputs.push_back(std::move(t));
  }
  try {
    r.want = interpret(g, r.inputs);
  } catch (const UserError& e) {
    r.problem = fmt::format("random inputs are not valid for it ({})", e.what());
  }
  return r;
}

SignatureSlots signature_slots(const Graph& g, const kir::GroupSignature& signature) {
  std::map<int, size_t> param_index, output_index;
  for (size_t i = 0; i < g.params().size(); ++i) param_index[g.params()[i].index] = i;
  for (size_t i = 0; i < g.outputs().size(); ++i) output_index[g.outputs()[i].value.index] = i;
  SignatureSlots slots;
  for (ValueId v : signature.inputs) slots.inputs.push_back(param_index.at(v.index));
  for (ValueId v : signature.outputs) slots.outputs.push_back(output_index.at(v.index));
  return slots;
}

bool all_static(const Graph& g) {
  for (ValueId p : g.params()) {
    for (const Dim& d : g.type(p).shape) {
      if (!d.is_static()) return false;
    }
  }
  return true;
}

std::vector<TrialResult> measure_trials(runtime::cpu::KernelCache& kernels, const std::vector<Trial>& trials,
                                        const schedule::RowScheduleTarget& target, const MeasureOptions& options) {
  std::vector<TrialResult> out(trials.size());
  if (trials.empty()) return out;
  std::vector<pipeline::TrialInput> inputs;
  for (const Trial& trial : trials) {
    STITCH_ASSERT(all_static(trial.group->graph), "measure_trials: a group graph of static shapes");
    inputs.push_back({&trial.group->graph, &trial.group->plan, trial.schedule});
  }
  const pipeline::CompiledTrials compiled = pipeline::compile_trials_cpu(inputs, target, kernels);
  const runtime::cpu::CpuModule& module = compiled.module;
  const std::vector<kir::GroupSignature>& signatures = compiled.signatures;
  const std::vector<std::string>& names = compiled.names;

  // First pass, trial by trial: one run into the group's outputs (pages
  // touched, caches warm), checked against the interpreter at once.
  std::map<const GroupGraph*, Reference> references;
  std::vector<std::vector<void*>> buffers(trials.size());
  std::deque<int32_t> statuses;
  std::vector<size_t> timed;  // trials that ran correctly
  for (size_t t = 0; t < trials.size(); ++t) {
    report_progress(options, "checking", t, trials.size());
    const GroupGraph* group = trials[t].group;
    auto it = references.find(group);
    if (it == references.end()) it = references.emplace(group, reference_of(group->graph)).first;
    Reference& ref = it->second;
    if (!ref.problem.empty()) {
      out[t].problem = ref.problem;
      continue;
    }
    const Graph& sg = group->graph;
    const SignatureSlots slots = signature_slots(sg, signatures[t]);
    for (size_t i : slots.inputs) buffers[t].push_back(ref.inputs.at(i).raw());
    for (size_t o : slots.outputs) buffers[t].push_back(ref.outputs.at(o).raw());
    int32_t& status = statuses.emplace_back(0);
    if (signatures[t].status) buffers[t].push_back(&status);
    const int64_t* no_scalars = nullptr;
    module.function(names[t])(buffers[t].data(), no_scalars);
    if (status != 0) {
      out[t].problem = "the kernel rejected the input";
      continue;
    }
    for (size_t o = 0; o < ref.outputs.size(); ++o) {
      const std::string diff =
          compare_with_interpreter(ref.outputs[o], ref.want[o], output_allowance(sg, sg.outputs()[o].value, {}))
              .describe();
      if (!diff.empty()) {
        out[t].problem = "disagrees with the interpreter: " + diff;
        out[t].mismatch = true;
        break;
      }
    }
    if (out[t].problem.empty()) timed.push_back(t);
  }
  // Then the timing, in rounds over all trials, so that a slow spell of the
  // machine falls on every candidate alike; a trial's time is its fastest run.
  report_progress(options, "checking", trials.size(), trials.size());
  const int rounds = std::max(1, options.rounds);
  size_t timings = 0;
  for (int round = 0; round < rounds; ++round) {
    for (size_t t : timed) {
      report_progress(options, "timing", timings++, timed.size() * static_cast<size_t>(rounds));
      const double s = fastest_of(module.function(names[t]), buffers[t], (options.min_runs + rounds - 1) / rounds,
                                  options.min_seconds / rounds);
      out[t].seconds = std::min(out[t].seconds, s);
    }
  }
  report_progress(options, "timing", timings, timings);
  return out;
}

}  // namespace stitch::tune
