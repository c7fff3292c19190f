#include "runtime/cuda/cuda_executable.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <set>

#include "runtime/common/buffer_plan.h"
#include "runtime/common/input_checks.h"
#include "runtime/common/launch_list.h"
#include "runtime/cpu/cpu_compiler.h"
#include "runtime/cuda/compiled_cuda_graph.h"
#include "runtime/cuda/cuda_module.h"
#include "runtime/cuda/gpu_dot.h"
#include "runtime/cuda/launch_geometry.h"
#include "stitch/error.h"
#include "stitch/interpreter.h"
#include "stitch/text.h"

namespace stitch::runtime::cuda {

namespace {

// A group the interpreter runs (CudaStep::Kind::Interpret): its inputs
// copied to the host after the work queued before it, its results back, waited
// for before the host tensors go.
template <class AddressOf>
void run_interpreted_step(CudaContext& context, const Graph& g, const InterpretedGroup& group,
                          const SymbolBindings& bindings, const AddressOf& address_of) {
  const DriverApi& api = context.api();
  std::vector<Tensor> inputs;
  for (ValueId v : group.inputs) {
    Tensor& t = inputs.emplace_back(g.type(v).dtype, concrete_shape(g.type(v).shape, bindings));
    if (t.nbytes() > 0) {
      check(api, api.cuMemcpyDtoHAsync(t.raw(), address_of(v), t.nbytes(), context.stream()), "cuMemcpyDtoHAsync");
    }
  }
  context.synchronize();
  const std::vector<Tensor> outputs = interpret(group.graph, inputs);
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].nbytes() == 0) continue;
    check(api, api.cuMemcpyHtoDAsync(address_of(group.outputs[i]), outputs[i].raw(), outputs[i].nbytes(), context.stream()),
          "cuMemcpyHtoDAsync");
  }
  context.synchronize();
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

// What one run binds: each parameter's memory, each output slot's, and the
// first slot that returns each produced value (later slots returning it, and
// slots returning a parameter, are filled by copies after the launches).
struct CudaExecutable::BoundRun {
  SymbolBindings bindings;
  std::vector<InputType> types;
  std::vector<CUdeviceptr> inputs;
  std::vector<size_t> input_bytes;
  std::map<int, size_t> output_slot;
  std::vector<CUdeviceptr> outputs;
  std::vector<int> status_steps;  // the kernels that can reject their input, in order
  DeviceBuffer statuses;          // one status word each (launch_steps)
};

CudaExecutable::BoundRun CudaExecutable::bind_run(std::vector<InputType> types, std::vector<CUdeviceptr> inputs) const {
  const Graph& g = graph_;
  BoundRun run;
  run.bindings = bind_input_types(g, types);
  for (const InputType& t : types) {
    run.input_bytes.push_back(static_cast<size_t>(numel(t.shape)) * dtype_size(t.dtype));
  }
  run.types = std::move(types);
  run.inputs = std::move(inputs);
  if (!compiled_->interpret) {
    for (const CudaStep& step : compiled_->steps) {
      for (int node : step.arg_reductions) check_arg_reduction_extent(g, node, run.bindings);
    }
  }
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const ValueId v = g.outputs()[i].value;
    if (g.value(v).producer >= 0) run.output_slot.emplace(v.index, i);
  }
  run.outputs.assign(g.outputs().size(), 0);
  return run;
}

bool CudaExecutable::overlaps_an_input(const BoundRun& run, CUdeviceptr begin, size_t bytes) {
  if (!begin || bytes == 0) return false;
  for (size_t i = 0; i < run.inputs.size(); ++i) {
    const CUdeviceptr b = run.inputs[i], e = b + run.input_bytes[i];
    if (b && b < begin + bytes && begin < e) return true;
  }
  return false;
}

void CudaExecutable::run_on_device(const std::vector<const DeviceTensor*>& inputs,
                                   std::vector<DeviceTensor>& outputs) {
  const Graph& g = graph_;
  context_->make_current();
  std::vector<InputType> types;
  std::vector<CUdeviceptr> addresses;
  for (const DeviceTensor* t : inputs) {
    types.push_back({t->dtype, t->shape});
    addresses.push_back(t->buffer.get());
  }
  BoundRun run = bind_run(std::move(types), std::move(addresses));

  if (compiled_->interpret) {
    std::vector<Tensor> host_inputs;
    for (const DeviceTensor* t : inputs) host_inputs.push_back(download(*context_, *t));
    std::vector<Tensor> host_outputs = interpret(g, host_inputs);
    outputs.clear();
    for (const Tensor& t : host_outputs) outputs.push_back(upload(context_, t));
    context_->synchronize();  // the host tensors die here
    return;
  }
  // Graph outputs are written straight into `outputs` (the first slot
  // returning a value). The kernels' buffer parameters are __restrict__
  // (docs/cuda-backend.md): an output that overlaps an input is replaced,
  // never written in place, and its old memory (which the kernels read) is
  // kept until the run is queued.
  outputs.resize(g.outputs().size());
  std::vector<DeviceBuffer> retired;
  for (const auto& [value, i] : run.output_slot) {
    const ValueId v{value};
    const DType dtype = g.type(v).dtype;
    std::vector<int64_t> shape = concrete_shape(g.type(v).shape, run.bindings);
    DeviceTensor& out = outputs[i];
    const size_t bytes = static_cast<size_t>(numel(shape)) * dtype_size(dtype);
    if (out.dtype != dtype || out.shape != shape || out.buffer.bytes() != bytes || (bytes > 0 && !out.buffer.get()) ||
        overlaps_an_input(run, out.buffer.get(), out.buffer.bytes())) {
      out.dtype = dtype;
      out.shape = std::move(shape);
      retired.push_back(std::move(out.buffer));
      out.buffer = DeviceBuffer(context_, bytes, fmt::format("output '{}' of graph '{}'", g.value_name(v), g.name()));
    }
    run.outputs[i] = out.buffer.get();
  }
  launch_steps(run);
  // A value returned twice is copied into its later slots; a parameter
  // returned as is, copied from the input (its memory and type taken before
  // the outputs were replaced: the input may be one of `outputs`).
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const auto source = copy_source(run, i);
    if (!source) continue;
    const auto& [from, type] = *source;
    DeviceTensor copy{type.dtype, type.shape, {}};
    copy.buffer = DeviceBuffer(context_, copy.nbytes());
    copy_on_stream(copy.buffer.get(), from, copy.nbytes());
    outputs[i] = std::move(copy);
  }
  read_statuses(run);
}

std::optional<std::pair<CUdeviceptr, InputType>> CudaExecutable::copy_source(const BoundRun& run, size_t slot) const {
  const Graph& g = graph_;
  const ValueId v = g.outputs()[slot].value;
  if (g.value(v).producer < 0) {
    for (size_t p = 0; p < g.params().size(); ++p) {
      if (g.params()[p] == v) return std::pair{run.inputs[p], run.types[p]};
    }
    throw InternalError(fmt::format("cuda executable: output {} is no parameter", slot), __FILE__, __LINE__);
  }
  const size_t first = run.output_slot.at(v.index);
  if (first == slot) return std::nullopt;
  return std::pair{run.outputs[first], InputType{g.type(v).dtype, concrete_shape(g.type(v).shape, run.bindings)}};
}

void CudaExecutable::copy_on_stream(CUdeviceptr to, CUdeviceptr from, size_t bytes) const {
  if (bytes == 0) return;
  const DriverApi& api = context_->api();
  check(api, api.cuMemcpyDtoDAsync(to, from, bytes, context_->stream()), "cuMemcpyDtoDAsync");
}

namespace {

// Orders the context's stream after what `caller` has queued, and `caller`
// after what the context's stream queues until the guard ends (an event each
// way); nothing to do when they are one stream.
class StreamOrder {
 public:
  StreamOrder(const CudaContext& context, CUstream caller) : api_(context.api()), ours_(context.stream()), caller_(caller) {
    if (caller_ == ours_) return;
    check(api_, api_.cuEventCreate(&event_, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    wait(ours_, caller_);
  }
  // Called once the run is queued; a run that threw leaves `caller` unordered
  // after it (its results are not to be read).
  void done() {
    if (caller_ != ours_) wait(caller_, ours_);
  }
  ~StreamOrder() {
    if (event_) api_.cuEventDestroy(event_);
  }
  StreamOrder(const StreamOrder&) = delete;
  StreamOrder& operator=(const StreamOrder&) = delete;

 private:
  void wait(CUstream waiting, CUstream on) {
    check(api_, api_.cuEventRecord(event_, on), "cuEventRecord");
    check(api_, api_.cuStreamWaitEvent(waiting, event_, 0), "cuStreamWaitEvent");
  }
  const DriverApi& api_;
  CUstream ours_;
  CUstream caller_;
  CUevent event_ = nullptr;
};

}  // namespace

void CudaExecutable::run_at(const std::vector<DeviceArrayView>& inputs, const DeviceOutputMemory& output,
                            CUstream caller) {
  const Graph& g = graph_;
  context_->make_current();
  std::vector<InputType> types;
  std::vector<CUdeviceptr> addresses;
  for (const DeviceArrayView& a : inputs) {
    types.push_back({a.dtype, a.shape});
    addresses.push_back(a.data);
  }
  BoundRun run = bind_run(std::move(types), std::move(addresses));
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const ValueId v = g.outputs()[i].value;
    const DType dtype = g.type(v).dtype;
    const std::vector<int64_t> shape = concrete_shape(g.type(v).shape, run.bindings);
    const CUdeviceptr at = output(i, dtype, shape);
    const size_t bytes = static_cast<size_t>(numel(shape)) * dtype_size(dtype);
    if (bytes > 0 && !at) throw UserError(fmt::format("run_at: output {} has no device memory", i));
    if (overlaps_an_input(run, at, bytes)) throw UserError(fmt::format("run_at: output {} overlaps an input", i));
    run.outputs[i] = at;
  }
  StreamOrder order(*context_, caller);
  if (compiled_->interpret) {
    run_interpreted_at(run);
  } else {
    launch_steps(run);
    for (size_t i = 0; i < g.outputs().size(); ++i) {
      if (const auto source = copy_source(run, i)) {
        const auto& [from, type] = *source;
        copy_on_stream(run.outputs[i], from, static_cast<size_t>(numel(type.shape)) * dtype_size(type.dtype));
      }
    }
  }
  order.done();
  read_statuses(run);
}

void CudaExecutable::run_at(const std::vector<ArrayView>& inputs, const OutputMemory& output, std::uintptr_t caller) {
  std::vector<DeviceArrayView> views;
  for (const ArrayView& a : inputs) {
    views.push_back({reinterpret_cast<CUdeviceptr>(a.data), a.dtype, std::vector<int64_t>(a.shape, a.shape + a.rank)});
  }
  run_at(
      views,
      [&](size_t i, DType dtype, const std::vector<int64_t>& shape) {
        return reinterpret_cast<CUdeviceptr>(output(i, dtype, shape));
      },
      reinterpret_cast<CUstream>(caller));
}

// The interpreter on the device's memory: inputs copied to the host, results
// back to their places, waiting for both.
void CudaExecutable::run_interpreted_at(const BoundRun& run) {
  const DriverApi& api = context_->api();
  std::vector<Tensor> host_inputs;
  for (size_t i = 0; i < run.inputs.size(); ++i) {
    Tensor& t = host_inputs.emplace_back(run.types[i].dtype, run.types[i].shape);
    if (t.nbytes() > 0) {
      check(api, api.cuMemcpyDtoHAsync(t.raw(), run.inputs[i], t.nbytes(), context_->stream()), "cuMemcpyDtoHAsync");
    }
  }
  context_->synchronize();
  const std::vector<Tensor> host_outputs = interpret(graph_, host_inputs);
  for (size_t i = 0; i < host_outputs.size(); ++i) {
    const Tensor& t = host_outputs[i];
    if (t.nbytes() > 0) {
      check(api, api.cuMemcpyHtoDAsync(run.outputs[i], t.raw(), t.nbytes(), context_->stream()), "cuMemcpyHtoDAsync");
    }
  }
  context_->synchronize();  // the host tensors die here
}

void CudaExecutable::launch_steps(BoundRun& run) {
  const Graph& g = graph_;
  const DriverApi& api = context_->api();
  const CUstream stream = context_->stream();
  const SymbolBindings& bindings = run.bindings;
  const std::vector<CudaStep>& steps = compiled_->steps;
  const int step_count = static_cast<int>(steps.size());
  // The intermediates and the step after which each is released
  // (runtime/common/buffer_plan.h); the caching allocator, not a planned
  // pool, hands their memory on.
  const Lifetimes lifetimes = launch_lifetimes(g, steps, run.output_slot);
  std::map<int, DeviceBuffer> intermediates;
  auto address_of = [&](ValueId v) -> CUdeviceptr {
    for (size_t p = 0; p < g.params().size(); ++p) {
      if (g.params()[p] == v) return run.inputs[p];
    }
    if (auto it = run.output_slot.find(v.index); it != run.output_slot.end()) return run.outputs[it->second];
    if (auto it = intermediates.find(v.index); it != intermediates.end()) return it->second.get();
    throw InternalError(fmt::format("cuda executable: value {} has no buffer", g.value_name(v)), __FILE__, __LINE__);
  };

  // One status word per kernel that can reject its input, zeroed together.
  run.status_steps.clear();
  for (int i = 0; i < step_count; ++i) {
    if (steps[i].kind == CudaStep::Kind::Kernel && steps[i].signature.status) run.status_steps.push_back(i);
  }
  run.statuses = DeviceBuffer();
  if (!run.status_steps.empty()) {
    run.statuses = DeviceBuffer(context_, run.status_steps.size() * sizeof(int32_t));
    check(api, api.cuMemsetD8Async(run.statuses.get(), 0, run.statuses.bytes(), stream), "cuMemsetD8Async");
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
    if (step.signature.status) b.buffers.push_back(run.statuses.get() + sizeof(int32_t) * status_index++);
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
    if (profile_) profile_->before(static_cast<size_t>(i));
    if (step.kind == CudaStep::Kind::Interpret) {
      run_interpreted_step(*context_, g, *step.interpreted, bindings, address_of);
    } else if (step.kind == CudaStep::Kind::Dot) {
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
    if (profile_) profile_->after();
    for (int j = i; j < i + span; ++j) {
      for (int v : lifetimes.released_after[j]) intermediates.erase(v);
    }
    i += span;
  }
  if (profile_) profile_->end_run();
}

void CudaExecutable::set_step_profiling(bool on) {
  profile_ = on ? std::make_shared<StepProfile>(*context_) : nullptr;
}

int64_t CudaExecutable::profiled_runs() const { return profile_ ? profile_->runs() : 0; }

std::vector<CudaExecutable::StepTime> CudaExecutable::step_times() {
  const std::vector<CudaStep>& steps = compiled_->steps;
  const std::vector<double> seconds = profile_ ? profile_->seconds(steps.size()) : std::vector<double>(steps.size(), 0.0);
  std::vector<StepTime> out;
  for (size_t i = 0; i < steps.size(); ++i) {
    const CudaStep& s = steps[i];
    if (s.kind == CudaStep::Kind::Dot) {
      out.push_back({"dot", "dot " + graph_.value_name(graph_.nodes()[s.node].output), seconds[i]});
      continue;
    }
    if (s.kind == CudaStep::Kind::Interpret) {
      out.push_back({"interpreter", s.interpreted->graph.name(), seconds[i]});
      continue;
    }
    std::string label = s.kernel.name;
    if (s.woven != nullptr && i + 1 < steps.size()) label += " & " + steps[++i].kernel.name;
    out.push_back({"kernel", label, seconds[i - (s.woven != nullptr ? 1 : 0)]});
  }
  return out;
}

void CudaExecutable::read_statuses(BoundRun& run) {
  if (run.status_steps.empty()) return;
  const DriverApi& api = context_->api();
  std::vector<int32_t> host(run.status_steps.size(), 0);
  check(api, api.cuMemcpyDtoHAsync(host.data(), run.statuses.get(), run.statuses.bytes(), context_->stream()),
        "cuMemcpyDtoHAsync");
  context_->synchronize();
  for (int32_t s : host) {
    if (s != 0) throw_rejected_input(graph_, s - 1, run.bindings);
  }
}

}  // namespace stitch::runtime::cuda
