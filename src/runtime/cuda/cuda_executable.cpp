#include "runtime/cuda/cuda_executable.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <set>

#include "codegen/cuda/cuda_emitter.h"
#include "gpu_model/analytic.h"
#include "ir/env_switch.h"
#include "runtime/common/buffer_plan.h"
#include "runtime/common/launch_list.h"
#include "runtime/common/pipeline.h"
#include "runtime/cpu/cpu_compiler.h"
#include "runtime/cuda/cuda_module.h"
#include "runtime/cuda/gpu_dot.h"
#include "runtime/cuda/launch_geometry.h"
#include "runtime/cuda/weave_steps.h"
#include "stitch/error.h"
#include "stitch/interpreter.h"
#include "stitch/text.h"

namespace stitch::runtime::cuda {

// One entry of the launch list.
struct CudaStep {
  enum class Kind : uint8_t { Kernel, Dot };
  Kind kind = Kind::Kernel;
  CUfunction function = nullptr;  // Kernel
  kir::Kernel kernel;             // Kernel: its parameters and launch geometry
  int64_t dynamic_shared_bytes = 0;  // Kernel: its arena when over the static 48 KiB
  int node = -1;                  // Dot: the dot node
  lower::GroupSignature signature;
  std::vector<int> arg_reductions;
  lower::GroupSignature epilogue_signature;  // always empty: no dot epilogues on CUDA (PlanOptions::for_gpu)
  // --weave: this kernel and the next step's run as one launch of `woven`
  // (the first's arguments, the second's, then both grids).
  CUfunction woven = nullptr;
  int64_t woven_dynamic_shared_bytes = 0;
};

struct CompiledCudaGraph {
  FusionPlan plan;
  std::vector<CudaStep> steps;
  std::string source;
  std::shared_ptr<CudaModule> module;
  std::string fallback;
  bool interpret = false;  // nothing compiled: the reference interpreter runs
  std::shared_ptr<CudaModule> woven_module;  // the woven kernels (CudaCompileOptions::weave)
  std::string weave_refusals;
};

namespace {

std::vector<CudaStep> make_steps(const Graph& g, const LoweredPlan& lowered, const CudaModule& module) {
  std::vector<CudaStep> steps;
  for (LaunchStep& l : launch_steps(g, lowered)) {
    STITCH_ASSERT(!l.epilogue, "a dot epilogue in a CUDA plan (PlanOptions::for_gpu plans none)");
    CudaStep step;
    step.kind = l.dot ? CudaStep::Kind::Dot : CudaStep::Kind::Kernel;
    step.node = l.node;
    if (l.kernel) {
      step.kernel = *l.kernel;
      step.function = module.function(l.kernel->name);
      step.dynamic_shared_bytes = dynamic_shared_bytes(step.kernel);
      if (step.dynamic_shared_bytes > 0) module.allow_dynamic_shared(step.function, step.dynamic_shared_bytes);
      module.prefer_shared_carveout(step.function, step.kernel);
    }
    step.signature = std::move(l.signature);
    step.arg_reductions = std::move(l.arg_reductions);
    steps.push_back(std::move(step));
  }
  return steps;
}

schedule::RowScheduleTarget rows_for(const CudaContext& context, const CudaCompileOptions& options) {
  schedule::RowScheduleTarget rows =
      gpu_model::with_row_model(schedule::RowScheduleTarget::for_device(context.target()), options.model_target);
  rows.forced = options.forced_rows;
  rows.forced_column_groups = options.forced_column_groups;
  return rows;
}

// The GPU planner's options for the device: a stitched kernel's block may hold
// between its phases what the lowering lets its row caches take on this device
// (RowScheduleTarget::shared_budget_bytes, half the opt-in maximum), so a row
// the lowering could cache is not split at planning for want of the static 48 KiB.
PlanOptions plan_options_for(const CudaContext& context, const CudaCompileOptions& options,
                             const schedule::RowScheduleTarget& rows) {
  PlanOptions plan_options = PlanOptions::for_gpu(context.device().arch());
  plan_options.max_fusions = resolve_max_fusions(options.plan);
  plan_options.row_hold_bytes = rows.shared_budget_bytes();
  return plan_options;
}

// The CUDA stages of the pipeline: the CUDA C emitter, and NVRTC through the
// cubin cache, loading into `module`. An emitter failure is reported like a
// compile failure, so the fallback ladder takes over.
Backend cuda_backend(const std::shared_ptr<CudaContext>& context, CubinCache& cache, const CudaCompileOptions& options,
                     std::shared_ptr<CudaModule>& module, std::string& emit_error) {
  Backend backend;
  backend.name = "cuda";
  backend.emit = [&emit_error](const std::vector<kir::Kernel>& kernels) {
    emit_error.clear();
    try {
      return codegen::cuda::emit_cuda_translation_unit(kernels);
    } catch (const InternalError& e) {
      emit_error = fmt::format("the CUDA emitter failed: {}", e.what());
      return std::string();
    }
  };
  backend.build = [&context, &cache, &options, &module, &emit_error](const std::string& source,
                                                                      const LoweredPlan& lowered, std::string& error) {
    if (!emit_error.empty()) {
      error = emit_error;
      return false;
    }
    if (options.reject_plan && options.reject_plan(lowered.plan)) {
      error = "the translation unit was rejected by CudaCompileOptions::reject_plan (test seam)";
      return false;
    }
    try {
      module = std::make_shared<CudaModule>(context, cache.load_or_compile(source, context->device().arch(), module_image_for(context->api())));
    } catch (const cpu::CompileError& e) {
      error = fmt::format("{}\n{}", e.what(), e.diagnostics());
      return false;
    }
    return true;
  };
  return backend;
}

// --weave: kernels are woven in pairs from the left. A kernel step pairs with
// the first of the next few kernel steps that is independent of it, has the
// same block size and not dynamic shared memory as well, and that may move up
// next to it (it is independent of every step it passes); the woven kernels
// are a module of their own, loaded from PTX.
void weave_adjacent_steps(CompiledCudaGraph& compiled, const std::shared_ptr<CudaContext>& context, CubinCache& cache,
                          const StageDump& dump) {
  // STITCH_DUMP=weave: the pairs, the woven module and the refusals.
  std::string report;
  auto print_report = [&] {
    if (dump.wants && dump.print && dump.wants("weave")) dump.print("weave", report);
  };
  std::vector<CudaStep>& steps = compiled.steps;
  auto weavable = [](const CudaStep& a, const CudaStep& b) {
    return a.kind == CudaStep::Kind::Kernel && b.kind == CudaStep::Kind::Kernel &&
           a.kernel.launch.block_size == b.kernel.launch.block_size &&
           (a.dynamic_shared_bytes == 0 || b.dynamic_shared_bytes == 0) &&
           independent_steps(step_values(a), step_values(b));
  };
  constexpr size_t kLookahead = 8;
  std::vector<std::pair<std::string, std::string>> pairs;
  std::vector<size_t> firsts;
  for (size_t i = 0; i + 1 < steps.size();) {
    size_t partner = 0;
    for (size_t j = i + 1; j < steps.size() && j <= i + kLookahead && partner == 0; ++j) {
      if (!weavable(steps[i], steps[j])) continue;
      bool movable = true;
      for (size_t k = i + 1; k < j && movable; ++k) movable = independent_steps(step_values(steps[k]), step_values(steps[j]));
      if (movable) partner = j;
    }
    if (partner == 0) {
      ++i;
      continue;
    }
    // The partner moves up behind step i; the steps it passes follow it.
    std::rotate(steps.begin() + static_cast<std::ptrdiff_t>(i + 1), steps.begin() + static_cast<std::ptrdiff_t>(partner),
                steps.begin() + static_cast<std::ptrdiff_t>(partner + 1));
    pairs.emplace_back(steps[i].kernel.name, steps[i + 1].kernel.name);
    firsts.push_back(i);
    i += 2;
  }
  if (pairs.empty()) {
    report = "no independent kernels to weave\n";
    print_report();
    return;
  }
  const std::string ptx = cache.load_or_compile(compiled.source, context->device().arch(), ModuleImage::Ptx);
  const WovenKernels woven = weave_kernel_pairs(ptx, pairs);
  compiled.weave_refusals = woven.refusals;
  for (size_t k = 0; k < pairs.size(); ++k) {
    if (!woven.names[k].empty()) report += fmt::format("woven: {} and {} as {}\n", pairs[k].first, pairs[k].second, woven.names[k]);
  }
  report += woven.refusals + woven.ptx;
  print_report();
  if (woven.ptx.empty()) return;
  try {
    compiled.woven_module = std::make_shared<CudaModule>(context, woven.ptx);
  } catch (const cpu::CompileError& e) {
    // The kernels run unwoven, as they would without --weave.
    compiled.weave_refusals += fmt::format("not woven: {}\n", e.what());
    report_warning({}, fmt::format("--weave: {}; the kernels run unwoven", e.what()));
    return;
  }
  for (size_t k = 0; k < pairs.size(); ++k) {
    if (woven.names[k].empty()) continue;
    CudaStep& first = steps[firsts[k]];
    first.woven = compiled.woven_module->function(woven.names[k]);
    first.woven_dynamic_shared_bytes = std::max(first.dynamic_shared_bytes, steps[firsts[k] + 1].dynamic_shared_bytes);
    if (first.woven_dynamic_shared_bytes > 0) {
      compiled.woven_module->allow_dynamic_shared(first.woven, first.woven_dynamic_shared_bytes);
    }
  }
}

bool weave_enabled(const CudaCompileOptions& options) {
  // Read even when set, so a bad value is reported wherever it is set.
  const bool env = env_switch("STITCH_WEAVE", false);
  return options.weave < 0 ? env : options.weave > 0;
}

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

}  // namespace

CudaExecutable::CudaExecutable(Graph graph, std::shared_ptr<CudaContext> context,
                               std::shared_ptr<const CompiledCudaGraph> compiled)
    : graph_(std::move(graph)), context_(std::move(context)), compiled_(std::move(compiled)) {}

int CudaExecutable::kernel_count() const { return static_cast<int>(compiled_->steps.size()); }
int CudaExecutable::woven_launches() const {
  return static_cast<int>(std::count_if(compiled_->steps.begin(), compiled_->steps.end(),
                                        [](const CudaStep& s) { return s.woven != nullptr; }));
}
const std::string& CudaExecutable::weave_refusals() const { return compiled_->weave_refusals; }
const FusionPlan& CudaExecutable::plan() const { return compiled_->plan; }
const std::string& CudaExecutable::source() const { return compiled_->source; }
const std::string& CudaExecutable::fallback() const { return compiled_->fallback; }

CudaExecutable CudaExecutable::compile(const Graph& canonical_graph, PlannerKind planner,
                                       std::shared_ptr<CudaContext> context, CubinCache& cache,
                                       const CudaCompileOptions& options) {
  context->make_current();
  const schedule::RowScheduleTarget rows = rows_for(*context, options);
  const PlanOptions plan_options = plan_options_for(*context, options, rows);
  Compilation c = compilation_of(canonical_graph, planner, plan_options, rows);
  c.warn = options.warn;
  c.tuner = options.tuner;
  std::shared_ptr<CudaModule> module;
  std::string emit_error;
  const Backend backend = cuda_backend(context, cache, options, module, emit_error);
  // Full reductions become two row reductions, so every SM takes part, as on the CPU.
  run_pipeline(c, backend, "split-reductions", "compile", options.dump);
  auto compiled = std::make_shared<CompiledCudaGraph>();
  compiled->module = module;
  take_compiled(*compiled, c, [&](const Graph& g, const LoweredPlan& l) { return make_steps(g, l, *module); });
  if (weave_enabled(options) && !compiled->interpret) weave_adjacent_steps(*compiled, context, cache, options.dump);
  return CudaExecutable(std::move(c.graph), std::move(context), std::move(compiled));
}

std::vector<CudaExecutable> CudaExecutable::compile_batch(const std::vector<Graph>& canonical_graphs,
                                                          PlannerKind planner, std::shared_ptr<CudaContext> context,
                                                          CubinCache& cache, const CudaCompileOptions& options) {
  context->make_current();
  const schedule::RowScheduleTarget rows = rows_for(*context, options);
  const PlanOptions plan_options = plan_options_for(*context, options, rows);
  std::shared_ptr<CudaModule> module;
  std::string emit_error;
  const Backend backend = cuda_backend(context, cache, options, module, emit_error);
  LoweredBatch batch = lower_batch(canonical_graphs, compilation_of(Graph(), planner, plan_options, rows), backend);
  const std::string source = codegen::cuda::emit_cuda_translation_unit(batch.kernels);
  module = std::make_shared<CudaModule>(context, cache.load_or_compile(source, context->device().arch(), module_image_for(context->api())));
  std::vector<CudaExecutable> out;
  for (Compilation& c : batch.graphs) {
    auto compiled = std::make_shared<CompiledCudaGraph>();
    compiled->steps = make_steps(c.graph, c.lowered, *module);
    compiled->plan = std::move(c.lowered.plan);
    compiled->source = source;
    compiled->module = module;
    if (weave_enabled(options)) weave_adjacent_steps(*compiled, context, cache, options.dump);
    out.push_back(CudaExecutable(std::move(c.graph), context, std::move(compiled)));
  }
  return out;
}

std::string CudaExecutable::unsupported_reason(const Graph& canonical_graph, PlannerKind planner,
                                               const schedule::RowScheduleTarget& rows,
                                               const PlanOptions& plan_options) {
  Compilation c = compilation_of(canonical_graph, planner, plan_options, rows);
  run_pipeline(c, Backend{}, "split-reductions", "schedule");
  return lower_whole_plan(c.graph, c.plan, c.schedules, kernel_prefix(c.graph.name()), c.target).unsupported;
}

std::vector<Tensor> CudaExecutable::run(const std::vector<Tensor>& inputs) {
  if (compiled_->interpret) return interpret(graph_, inputs);
  bind_inputs(graph_, inputs);  // the interpreter's message for a bad input, before any copy
  context_->make_current();
  std::vector<DeviceTensor> device_inputs;
  device_inputs.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    device_inputs.push_back(upload(context_, inputs[i],
                                   fmt::format("input '{}' of graph '{}'", graph_.value_name(graph_.params()[i]),
                                               graph_.name())));
  }
  std::vector<const DeviceTensor*> pointers;
  for (const DeviceTensor& t : device_inputs) pointers.push_back(&t);
  std::vector<DeviceTensor> device_outputs;
  run_on_device(pointers, device_outputs);
  std::vector<Tensor> outputs;
  for (const DeviceTensor& t : device_outputs) outputs.push_back(download(*context_, t));
  return outputs;
}

void CudaExecutable::run_on_device(const std::vector<const DeviceTensor*>& inputs,
                                   std::vector<DeviceTensor>& outputs) {
  const Graph& g = graph_;
  context_->make_current();
  const DriverApi& api = context_->api();
  const CUstream stream = context_->stream();
  std::vector<InputType> types;
  for (const DeviceTensor* t : inputs) types.push_back({t->dtype, t->shape});
  const SymbolBindings bindings = bind_input_types(g, types);

  if (compiled_->interpret) {
    std::vector<Tensor> host_inputs;
    for (const DeviceTensor* t : inputs) host_inputs.push_back(download(*context_, *t));
    std::vector<Tensor> host_outputs = interpret(g, host_inputs);
    outputs.clear();
    for (const Tensor& t : host_outputs) outputs.push_back(upload(context_, t));
    context_->synchronize();  // the host tensors die here
    return;
  }
  const std::vector<CudaStep>& steps = compiled_->steps;
  for (const CudaStep& step : steps) {
    for (int node : step.arg_reductions) check_arg_reduction_extent(g, node, bindings);
  }

  // Graph outputs are written straight into `outputs` (the first slot
  // returning a value); every other value a step writes lives in a buffer of
  // the caching allocator from its producing step to its last consumer.
  // The inputs' memory, taken before any output is replaced: an input may be
  // one of `outputs` itself.
  std::map<int, CUdeviceptr> params;
  std::vector<std::pair<CUdeviceptr, CUdeviceptr>> input_ranges;
  for (size_t i = 0; i < g.params().size(); ++i) {
    params[g.params()[i].index] = inputs[i]->buffer.get();
    input_ranges.emplace_back(inputs[i]->buffer.get(), inputs[i]->buffer.get() + inputs[i]->buffer.bytes());
  }
  outputs.resize(g.outputs().size());
  // The kernels' buffer parameters are __restrict__ (docs/cuda-backend.md):
  // an output that overlaps an input is replaced, never written in place, and
  // its old memory (which the kernels read) is kept until the run is queued.
  auto overlaps_an_input = [&](const DeviceTensor& out) {
    const CUdeviceptr begin = out.buffer.get(), end = begin + out.buffer.bytes();
    if (!begin || begin == end) return false;
    for (const auto& [b, e] : input_ranges) {
      if (b && b < end && begin < e) return true;
    }
    return false;
  };
  std::vector<DeviceBuffer> retired;
  std::map<int, size_t> output_slot;
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const ValueId v = g.outputs()[i].value;
    if (g.value(v).producer < 0 || output_slot.count(v.index)) continue;
    output_slot.emplace(v.index, i);
    const DType dtype = g.type(v).dtype;
    std::vector<int64_t> shape = concrete_shape(g.type(v).shape, bindings);
    DeviceTensor& out = outputs[i];
    const size_t bytes = static_cast<size_t>(numel(shape)) * dtype_size(dtype);
    if (out.dtype != dtype || out.shape != shape || out.buffer.bytes() != bytes || (bytes > 0 && !out.buffer.get()) ||
        overlaps_an_input(out)) {
      out.dtype = dtype;
      out.shape = std::move(shape);
      retired.push_back(std::move(out.buffer));
      out.buffer = DeviceBuffer(context_, bytes, fmt::format("output '{}' of graph '{}'", g.value_name(v), g.name()));
    }
  }
  const int step_count = static_cast<int>(steps.size());
  // The intermediates and the step after which each is released
  // (runtime/common/buffer_plan.h); the caching allocator, not a planned
  // pool, hands their memory on.
  const Lifetimes lifetimes = launch_lifetimes(g, steps, output_slot);
  std::map<int, DeviceBuffer> intermediates;
  auto address_of = [&](ValueId v) -> CUdeviceptr {
    if (auto it = params.find(v.index); it != params.end()) return it->second;
    if (auto it = output_slot.find(v.index); it != output_slot.end()) return outputs[it->second].buffer.get();
    if (auto it = intermediates.find(v.index); it != intermediates.end()) return it->second.get();
    throw InternalError(fmt::format("cuda executable: value {} has no buffer", g.value_name(v)), __FILE__, __LINE__);
  };

  // One status word per kernel that can reject its input, zeroed together.
  std::vector<int> status_steps;
  for (int i = 0; i < step_count; ++i) {
    if (steps[i].kind == CudaStep::Kind::Kernel && steps[i].signature.status) status_steps.push_back(i);
  }
  DeviceBuffer statuses;
  if (!status_steps.empty()) {
    statuses = DeviceBuffer(context_, status_steps.size() * sizeof(int32_t));
    check(api, api.cuMemsetD8Async(statuses.get(), 0, statuses.bytes(), stream), "cuMemsetD8Async");
  }

  // A kernel step's arguments: the buffers (inputs, outputs, status) as
  // device pointers, then the symbols' extents as int64_t
  // (docs/cuda-backend.md, ABI), and its grid.
  struct BoundKernel {
    std::vector<CUdeviceptr> buffers;
    std::vector<int64_t> scalars;
    int64_t blocks = 0;
  };
  int status_index = 0;
  auto bind_kernel = [&](const CudaStep& step) {
    BoundKernel b;
    for (ValueId v : step.signature.inputs) b.buffers.push_back(address_of(v));
    for (ValueId v : step.signature.outputs) b.buffers.push_back(address_of(v));
    if (step.signature.status) b.buffers.push_back(statuses.get() + sizeof(int32_t) * status_index++);
    STITCH_ASSERT(b.buffers.size() == step.kernel.buffers.size(),
                  fmt::format("kernel {}: {} buffers bound for {} parameters", step.kernel.name, b.buffers.size(),
                              step.kernel.buffers.size()));
    STITCH_ASSERT(step.signature.symbols.size() == step.kernel.scalars.size(),
                  fmt::format("kernel {}: scalar parameters differ from its signature", step.kernel.name));
    std::map<std::string, int64_t> scalar_values;
    for (size_t j = 0; j < step.signature.symbols.size(); ++j) {
      STITCH_ASSERT(step.kernel.scalars[j].dtype == DType::i64, "kernel scalars are i64 extents");
      b.scalars.push_back(bindings.at(step.signature.symbols[j]));
      scalar_values[step.kernel.scalars[j].name] = b.scalars.back();
    }
    b.blocks = grid_blocks(step.kernel, scalar_values);
    return b;
  };
  auto push_args = [](BoundKernel& b, std::vector<void*>& args) {
    for (CUdeviceptr& p : b.buffers) args.push_back(&p);
    for (int64_t& s : b.scalars) args.push_back(&s);
  };
  auto launch = [&](CUfunction f, int64_t blocks, int64_t block_size, int64_t shared, std::vector<void*>& args,
                    const std::string& name) {
    if (blocks <= 0) return;
    check(api,
          api.cuLaunchKernel(f, static_cast<unsigned>(blocks), 1, 1, static_cast<unsigned>(block_size), 1, 1,
                             static_cast<unsigned>(shared), stream, args.data(), nullptr),
          fmt::format("cuLaunchKernel({})", name).c_str());
  };

  for (int i = 0; i < step_count;) {
    const CudaStep& step = steps[i];
    // A woven pair is one launch: both steps' values live across it.
    const int span = step.woven != nullptr ? 2 : 1;
    for (int j = i; j < i + span; ++j) {
      for (int v : lifetimes.written_at[j]) {
        intermediates.emplace(v, DeviceBuffer(context_, static_cast<size_t>(value_bytes(g, ValueId{v}, bindings)),
                                              fmt::format("intermediate '{}' of graph '{}'",
                                                          g.value_name(ValueId{v}), g.name())));
      }
    }
    if (step.kind == CudaStep::Kind::Dot) {
      const Node& n = g.nodes()[step.node];
      run_gpu_dot(*context_, g.type(n.output).dtype, concrete_shape(g.type(n.inputs[0]).shape, bindings),
                  concrete_shape(g.type(n.inputs[1]).shape, bindings), concrete_shape(g.type(n.output).shape, bindings),
                  address_of(n.inputs[0]), address_of(n.inputs[1]), address_of(n.output));
    } else if (span == 1) {
      BoundKernel b = bind_kernel(step);
      std::vector<void*> args;
      push_args(b, args);
      launch(step.function, b.blocks, step.kernel.launch.block_size, step.dynamic_shared_bytes, args, step.kernel.name);
    } else {
      // The woven kernel: the first's arguments, the second's, then each one's
      // grid (x, y, z) as .u32; it runs on the larger grid and each kernel's
      // code only in its own CTAs (docs/goptx.md, Grids).
      const CudaStep& second = steps[i + 1];
      BoundKernel a = bind_kernel(step);
      BoundKernel b = bind_kernel(second);
      std::array<uint32_t, 6> grids{static_cast<uint32_t>(std::max<int64_t>(a.blocks, 0)), 1, 1,
                                    static_cast<uint32_t>(std::max<int64_t>(b.blocks, 0)), 1, 1};
      std::vector<void*> args;
      push_args(a, args);
      push_args(b, args);
      for (uint32_t& extent : grids) args.push_back(&extent);
      launch(step.woven, std::max(a.blocks, b.blocks), step.kernel.launch.block_size, step.woven_dynamic_shared_bytes,
             args, step.kernel.name + "_" + second.kernel.name + "_woven");
    }
    for (int j = i; j < i + span; ++j) {
      for (int v : lifetimes.released_after[j]) intermediates.erase(v);
    }
    i += span;
  }

  // A value returned twice is copied into its later slots; a parameter
  // returned as is, copied from the input.
  // A parameter's memory and type are the ones taken before the outputs were
  // replaced (the input may be one of `outputs`).
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const ValueId v = g.outputs()[i].value;
    DeviceTensor copy;
    CUdeviceptr from = 0;
    if (g.value(v).producer < 0) {
      for (size_t p = 0; p < g.params().size(); ++p) {
        if (g.params()[p] != v) continue;
        copy.dtype = types[p].dtype;
        copy.shape = types[p].shape;
        from = input_ranges[p].first;
      }
    } else if (output_slot.at(v.index) != i) {
      const DeviceTensor& source = outputs[output_slot.at(v.index)];
      copy.dtype = source.dtype;
      copy.shape = source.shape;
      from = source.buffer.get();
    } else {
      continue;
    }
    const size_t bytes = static_cast<size_t>(numel(copy.shape)) * dtype_size(copy.dtype);
    copy.buffer = DeviceBuffer(context_, bytes);
    if (bytes > 0) {
      check(api, api.cuMemcpyDtoDAsync(copy.buffer.get(), from, bytes, stream), "cuMemcpyDtoDAsync");
    }
    outputs[i] = std::move(copy);
  }

  if (!status_steps.empty()) {
    std::vector<int32_t> host(status_steps.size(), 0);
    check(api, api.cuMemcpyDtoHAsync(host.data(), statuses.get(), statuses.bytes(), stream), "cuMemcpyDtoHAsync");
    context_->synchronize();
    for (int32_t s : host) {
      if (s != 0) throw_rejected_input(g, s - 1, bindings);
    }
  }
}

}  // namespace stitch::runtime::cuda
