#include "pipeline/cuda/cuda_tuning.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>

#include "codegen/cuda/cuda_emitter.h"
#include "lower/lower_plan.h"
#include "pipeline/trial_kernels.h"
#include "pipeline/cuda/device_target.h"
#include "runtime/cuda/cuda_module.h"
#include "runtime/cuda/event_timer.h"
#include "runtime/cuda/launch_geometry.h"
#include "stitch/error.h"
#include "stitch/interpreter.h"
#include "tensor/compare.h"

namespace stitch::pipeline {

using runtime::cuda::CudaContext;
using runtime::cuda::DeviceTensor;

namespace {

// A group graph's reference run (tune::reference_run) with its inputs on
// the device, and the device buffers every trial of the group writes into.
struct DeviceReference : tune::ReferenceRun {
  std::vector<DeviceTensor> device_inputs;
  std::vector<DeviceTensor> device_outputs;
};

DeviceReference reference_on(const std::shared_ptr<CudaContext>& context, const Graph& g) {
  DeviceReference r;
  static_cast<tune::ReferenceRun&>(r) = tune::reference_run(g);
  if (!r.problem.empty()) return r;
  for (const Tensor& t : r.inputs) r.device_inputs.push_back(upload(context, t));
  for (const GraphOutput& o : g.outputs()) {
    DeviceTensor t;
    t.dtype = g.type(o.value).dtype;
    t.shape = concrete_shape(g.type(o.value).shape, {});
    t.buffer = runtime::cuda::DeviceBuffer(context, t.nbytes());
    r.device_outputs.push_back(std::move(t));
  }
  context->synchronize();  // the host inputs stay alive until the uploads are done
  return r;
}

// One trial's kernel, bound to its group's device buffers.
struct BoundKernel {
  CUfunction function = nullptr;
  kir::Kernel kernel;
  int64_t blocks = 0;
  int64_t shared_bytes = 0;
  std::vector<CUdeviceptr> buffers;
  std::vector<void*> args;  // into `buffers`; set once `buffers` stops growing

  void launch(const CudaContext& context) {
    const runtime::cuda::DriverApi& api = context.api();
    if (blocks == 0) return;
    runtime::cuda::check(api,
          api.cuLaunchKernel(function, static_cast<unsigned>(blocks), 1, 1,
                             static_cast<unsigned>(kernel.launch.block_size), 1, 1,
                             static_cast<unsigned>(shared_bytes), context.stream(), args.data(), nullptr),
          fmt::format("cuLaunchKernel({})", kernel.name).c_str());
  }
};

}  // namespace

std::vector<tune::TrialResult> measure_trials_on_device(const std::shared_ptr<CudaContext>& context, runtime::cuda::CubinCache& cubins,
                                                        const std::vector<tune::Trial>& trials,
                                                        const schedule::RowScheduleTarget& target,
                                                        const tune::MeasureOptions& options) {
  std::vector<tune::TrialResult> out(trials.size());
  if (trials.empty()) return out;
  context->make_current();
  std::vector<TrialInput> inputs;
  for (const tune::Trial& trial : trials) {
    STITCH_ASSERT(tune::all_static(trial.group->graph), "measure_trials_on_device: a group graph of static shapes");
    inputs.push_back({&trial.group->graph, &trial.group->plan, trial.schedule});
  }
  TrialKernels lowered = lower_trials(inputs, target);
  std::vector<kir::Kernel>& kernels = lowered.kernels;
  const std::vector<kir::GroupSignature>& signatures = lowered.signatures;
  const runtime::cuda::CudaModule module(context, cubins.load_or_compile(codegen::cuda::emit_cuda_translation_unit(kernels),
                                                          context->device().arch(),
                                                          runtime::cuda::module_image_for(context->api())));

  // First pass, trial by trial: one launch into the group's outputs, its
  // results downloaded and checked against the interpreter's.
  std::map<const tune::GroupGraph*, DeviceReference> references;
  runtime::cuda::DeviceBuffer statuses(context, sizeof(int32_t) * trials.size());
  std::vector<BoundKernel> bound(trials.size());
  std::vector<size_t> timed;
  const runtime::cuda::DriverApi& api = context->api();
  const schedule::GpuTarget device = device_target(*context);
  for (size_t t = 0; t < trials.size(); ++t) {
    tune::report_progress(options, "checking", t, trials.size());
    const tune::GroupGraph* group = trials[t].group;
    auto it = references.find(group);
    if (it == references.end()) it = references.emplace(group, reference_on(context, group->graph)).first;
    DeviceReference& ref = it->second;
    if (!ref.problem.empty()) {
      out[t].problem = ref.problem;
      continue;
    }
    const Graph& sg = group->graph;
    const tune::SignatureSlots slots = tune::signature_slots(sg, signatures[t]);
    BoundKernel& b = bound[t];
    b.kernel = kernels[t];
    b.function = module.function(b.kernel.name);
    b.shared_bytes = runtime::cuda::dynamic_shared_bytes(b.kernel);
    if (b.shared_bytes > 0) module.allow_dynamic_shared(b.function, b.shared_bytes);
    prefer_shared_carveout(module, device, b.function, b.kernel);
    b.blocks = runtime::cuda::grid_blocks(b.kernel, {});
    for (size_t i : slots.inputs) b.buffers.push_back(ref.device_inputs.at(i).buffer.get());
    for (size_t o : slots.outputs) b.buffers.push_back(ref.device_outputs.at(o).buffer.get());
    const CUdeviceptr status = statuses.get() + sizeof(int32_t) * t;
    if (signatures[t].status) b.buffers.push_back(status);
    STITCH_ASSERT(b.buffers.size() == b.kernel.buffers.size(),
                  fmt::format("trial kernel {}: {} buffers bound for {} parameters", b.kernel.name, b.buffers.size(),
                              b.kernel.buffers.size()));
    for (CUdeviceptr& p : b.buffers) b.args.push_back(&p);
    runtime::cuda::check(api, api.cuMemsetD8Async(status, 0, sizeof(int32_t), context->stream()), "cuMemsetD8Async");
    b.launch(*context);
    context->synchronize();
    if (signatures[t].status) {
      int32_t code = 0;
      runtime::cuda::check(api, api.cuMemcpyDtoHAsync(&code, status, sizeof(code), context->stream()), "cuMemcpyDtoHAsync");
      context->synchronize();
      if (code != 0) {
        out[t].problem = "the kernel rejected the input";
        continue;
      }
    }
    for (size_t o = 0; o < ref.device_outputs.size(); ++o) {
      const Tensor got = download(*context, ref.device_outputs[o]);
      const std::string diff =
          compare_with_interpreter(got, ref.want[o], output_allowance(sg, sg.outputs()[o].value, {})).describe();
      if (!diff.empty()) {
        out[t].problem = "disagrees with the interpreter: " + diff;
        out[t].mismatch = true;
        break;
      }
    }
    if (out[t].problem.empty()) timed.push_back(t);
  }
  // Then the timing, in rounds over all trials as on the CPU. A kernel may
  // take a few microseconds, about what the host takes to submit a launch,
  // so each timing is a batch of kBatch launches between two events, queued
  // faster than they run; a trial's time is its fastest batch's mean.
  constexpr int kBatch = 16;
  runtime::cuda::EventTimer timer(*context, 1);
  const int rounds = std::max(1, options.rounds);
  const int per_batch = std::max(kBatch, (options.min_runs + rounds - 1) / rounds);
  tune::report_progress(options, "checking", trials.size(), trials.size());
  size_t timings = 0;
  for (int round = 0; round < rounds; ++round) {
    for (size_t t : timed) {
      tune::report_progress(options, "timing", timings++, timed.size() * static_cast<size_t>(rounds));
      double total = 0;
      for (int launches = 0; (launches == 0 || total < options.min_seconds / rounds) && launches < 1000;
           launches += per_batch) {
        const double s = timer.seconds_each(0, [&] {
          for (int r = 0; r < per_batch; ++r) bound[t].launch(*context);
        })[0];
        out[t].seconds = std::min(out[t].seconds, s / per_batch);
        total += s;
      }
    }
  }
  tune::report_progress(options, "timing", timings, timings);
  return out;
}

tune::Measurer cuda_measurer(std::shared_ptr<CudaContext> context, runtime::cuda::CubinCache& cubins) {
  tune::Measurer m;
  m.machine = schedule::RowScheduleTarget::Machine::Gpu;
  m.description = context->device().summary();
  // The cubin cache's key of an empty source: NVRTC's version and options
  // for this architecture.
  m.compiler = cubins.key("", context->device().arch(), runtime::cuda::module_image_for(context->api()));
  m.measure = [context, &cubins](const std::vector<tune::Trial>& trials, const schedule::RowScheduleTarget& target,
                                 const tune::MeasureOptions& options) {
    return measure_trials_on_device(context, cubins, trials, target, options);
  };
  return m;
}

std::filesystem::path cuda_tuning_directory(const runtime::cuda::CubinCache& cubins) { return cubins.directory() / "tuning"; }

}  // namespace stitch::pipeline
