#include "runtime/cpu/executable.h"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cctype>
#include <cstring>
#include <cstdint>
#include <functional>
#include <map>
#include <new>
#include <set>

#include "ir/composites_nn.h"
#include "ir/structural_key.h"
#include "kir/printer.h"
#include "runtime/common/buffer_plan.h"
#include "runtime/common/caller_memory.h"
#include "runtime/common/dot_panels.h"
#include "runtime/common/input_checks.h"
#include "runtime/common/launch_list.h"
#include "runtime/cpu/compiled_graph.h"
#include "runtime/cpu/attention_call.h"
#include "runtime/cpu/conv_call.h"
#include "runtime/cpu/dot_call.h"
#include "stitch/error.h"
#include "stitch/interpreter.h"
#include "stitch/text.h"

namespace stitch::runtime::cpu {

namespace {

// The run-time value of each symbol a kernel takes, in its order.
std::vector<int64_t> kernel_scalars(const kir::GroupSignature& signature, const SymbolBindings& bindings) {
  std::vector<int64_t> scalars;
  for (const std::string& s : signature.symbols) scalars.push_back(scalar_slot(bindings.at(s)));
  return scalars;
}

using AddressOf = std::function<void*(ValueId)>;

// A kernel's buffer arguments: inputs, outputs, then `status` if it reports one.
std::vector<void*> kernel_buffers(const kir::GroupSignature& signature, const AddressOf& address_of, int32_t& status) {
  std::vector<void*> buffers;
  for (ValueId v : signature.inputs) buffers.push_back(address_of(v));
  for (ValueId v : signature.outputs) buffers.push_back(address_of(v));
  if (signature.status) buffers.push_back(&status);
  return buffers;
}

// A group the interpreter runs: its inputs copied out of their buffers, its
// results into theirs (an input the interpreter rejects is its UserError).
void run_interpreted_step(const Graph& g, const InterpretedGroup& group, const SymbolBindings& bindings,
                          const AddressOf& address_of) {
  std::vector<Tensor> inputs;
  for (ValueId v : group.inputs) {
    Tensor& t = inputs.emplace_back(g.type(v).dtype, concrete_shape(g.type(v).shape, bindings));
    if (t.nbytes() > 0) std::memcpy(t.raw(), address_of(v), t.nbytes());
  }
  const std::vector<Tensor> outputs = interpret(group.graph, inputs);
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].nbytes() > 0) std::memcpy(address_of(group.outputs[i]), outputs[i].raw(), outputs[i].nbytes());
  }
}

// An attention step (attention_call.h): one call on OpenMP's threads.
void run_attention_step(const Graph& g, const Step& step, const SymbolBindings& bindings, const AddressOf& address_of) {
  const Node& n = g.nodes()[step.node];
  const bool has_bias = n.inputs.size() == 4;
  auto shape = [&](ValueId v) { return concrete_shape(g.type(v).shape, bindings); };
  const AttentionProblem p =
      attention_problem(g.type(n.output).dtype, shape(n.inputs[0]), shape(n.inputs[1]), shape(n.inputs[2]), has_bias,
                        has_bias ? shape(n.inputs[3]) : std::vector<int64_t>(), n.attrs.get("scale").as_number(),
                        n.attrs.get("causal").as_bool());
  run_attention(p, address_of(n.inputs[0]), address_of(n.inputs[1]), address_of(n.inputs[2]),
                has_bias ? address_of(n.inputs[3]) : nullptr, address_of(n.output));
}

// A conv step (conv_call.h): one oneDNN call on OpenMP's threads.
void run_conv_step(const Graph& g, const Step& step, const SymbolBindings& bindings, const AddressOf& address_of,
                   PackedWeights* constant_weights) {
  const Node& n = g.nodes()[step.node];
  ConvProblem p;
  p.channels_last = n.attrs.get("channels_last").as_bool();
  // oneDNN's dims are [N, C, spatial...] whatever the layout.
  auto logical = [&](ValueId v) {
    std::vector<int64_t> s = concrete_shape(g.type(v).shape, bindings);
    if (p.channels_last) {
      s.insert(s.begin() + 1, s.back());
      s.pop_back();
    }
    return s;
  };
  p.x_shape = logical(n.inputs[0]);
  p.w_shape = concrete_shape(g.type(n.inputs[1]).shape, bindings);
  p.out_shape = logical(n.output);
  p.strides = n.attrs.get("strides").as_ints();
  p.dilations = n.attrs.get("dilations").as_ints();
  p.pads = n.attrs.get("pads").as_ints();
  p.groups = n.attrs.get("groups").as_int();
  const ConvOperands operands = conv_operands(n);
  p.has_bias = operands.bias;
  p.has_side = operands.side;
  p.activation_min = n.attrs.get("activation_min").as_number();
  p.activation_max = n.attrs.get("activation_max").as_number();
  auto operand = [&](bool present, size_t i) {
    return present ? static_cast<const float*>(address_of(n.inputs[i])) : nullptr;
  };
  float* const out = static_cast<float*>(address_of(n.output));
  const float* const side = operand(operands.side, operands.side_index());
  p.side_in_place = side && side == out;
  run_conv(p, operand(true, 0), operand(true, 1), operand(operands.bias, operands.bias_index()), side, out,
           constant_weights);
}

// A dot step (dot_call.h): with an epilogue, by row panels on OpenMP's
// threads, the epilogue's blocks after each panel while its rows are in the
// cache; without, f32 in one oneDNN call (on OpenMP's threads itself) and f64
// matrices one panel a thread, so that BLAS's threads and OpenMP's never spin
// against each other. Returns the epilogue's status (0: accepted).
// `epilogue_seconds` (profiling; may be null): adds the epilogue's time when
// it runs in one panel, after the whole gemm.
int32_t run_dot_step(const Graph& g, const Step& step, const SymbolBindings& bindings, const AddressOf& address_of,
                     double* epilogue_seconds) {
  const Node& n = g.nodes()[step.node];
  const DType dtype = g.type(n.output).dtype;
  const bool transposed = step.b_transposed.valid();
  const ValueId b_value = transposed ? step.b_transposed : n.inputs[1];
  const std::vector<int64_t> a = concrete_shape(g.type(n.inputs[0]).shape, bindings);
  const std::vector<int64_t> b = concrete_shape(g.type(b_value).shape, bindings);
  const std::vector<int64_t> out = concrete_shape(g.type(n.output).shape, bindings);
  void* const a_data = address_of(n.inputs[0]);
  void* const b_data = address_of(b_value);
  void* const out_data = address_of(n.output);
  if (!step.epilogue) {
    // f32 goes to oneDNN, which threads on OpenMP's team itself: one call.
    const bool panels = dtype == DType::f64 && a.size() >= 2 && b.size() >= 2 &&
                        std::find(out.begin(), out.end(), 0) == out.end();
    if (!panels) {
      run_dot(dtype, a, b, out, a_data, b_data, out_data, transposed);
      return 0;
    }
    // No epilogue to keep in the cache: one panel a thread, so that each
    // packs B once (panels of half an L2 packed it once per 42 rows of a
    // [1024, 3072] result: 196 GFLOP/s where one call a thread gives 290).
    const int64_t threads = omp_get_max_threads();
    run_dot_panels(dtype, a, b, out, a_data, b_data, out_data,
                   dot_panels(dot_rows(out), out.back(), out.back(), dtype_size(dtype), INT64_MAX / 4, threads),
                   [](size_t) {}, transposed);
    return 0;
  }
  // Each panel has its own block range and status.
  const size_t count = step.panels.size();
  std::vector<int32_t> statuses(count, 0);
  std::vector<std::vector<void*>> buffers(count);
  std::vector<std::vector<int64_t>> scalars(count, kernel_scalars(step.epilogue_signature, bindings));
  for (size_t p = 0; p < count; ++p) {
    buffers[p] = kernel_buffers(step.epilogue_signature, address_of, statuses[p]);
    scalars[p].push_back(step.panels[p].first_block);
    scalars[p].push_back(step.panels[p].end_block);
  }
  const bool timed = epilogue_seconds && count == 1;
  run_dot_panels(
      dtype, a, b, out, a_data, b_data, out_data, step.panels,
      [&](size_t p) {
        const auto started = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
        step.epilogue(buffers[p].data(), scalars[p].data());
        if (timed) *epilogue_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      },
      transposed);
  for (int32_t s : statuses) {
    if (s != 0) return s;
  }
  return 0;
}

}  // namespace

CpuExecutable::CpuExecutable(Graph graph, std::shared_ptr<const CompiledGraph> compiled, const CacheStats& cache_stats)
    : graph_(std::move(graph)), compiled_(std::move(compiled)), cache_stats_(cache_stats) {}

int CpuExecutable::kernel_count() const { return static_cast<int>(compiled_->steps.size()); }

void CpuExecutable::set_constant_params(const std::vector<std::string>& names) {
  std::vector<bool> constant(graph_.params().size(), false);
  for (const std::string& name : names) {
    size_t i = 0;
    while (i < graph_.params().size() && graph_.value_name(graph_.params()[i]) != name) ++i;
    if (i == graph_.params().size()) throw UserError(fmt::format("constant parameter '{}': the graph has no such parameter", name));
    constant[i] = true;
  }
  constant_param_ = std::move(constant);
  packed_weights_ = std::make_unique<PackedWeights>();
}

PackedWeights* CpuExecutable::constant_weights(const Node& conv) const {
  if (!packed_weights_) return nullptr;
  const ValueId w = conv.inputs[1];
  const auto& params = graph_.params();
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i] == w) return constant_param_[i] ? packed_weights_.get() : nullptr;
  }
  return nullptr;
}

void CpuExecutable::set_step_profiling(bool on) {
  profiling_ = on;
  step_seconds_.assign(on ? compiled_->steps.size() : 0, 0.0);
  epilogue_seconds_.assign(on ? compiled_->steps.size() : 0, 0.0);
  profiled_runs_ = 0;
}

std::vector<CpuExecutable::StepTime> CpuExecutable::step_times() const {
  std::vector<StepTime> times;
  for (size_t i = 0; i < compiled_->steps.size(); ++i) {
    const Step& s = compiled_->steps[i];
    times.push_back({s.kind_name, s.label, i < step_seconds_.size() ? step_seconds_[i] : 0.0,
                     i < epilogue_seconds_.size() ? epilogue_seconds_[i] : 0.0});
  }
  return times;
}
const FusionPlan& CpuExecutable::plan() const { return compiled_->plan; }
const std::string& CpuExecutable::source() const { return compiled_->source; }
const std::string& CpuExecutable::fallback() const { return compiled_->fallback; }

std::vector<Tensor> CpuExecutable::run(const std::vector<Tensor>& inputs) {
  std::vector<Tensor> outputs;
  run(inputs, outputs);
  return outputs;
}

void CpuExecutable::run(const std::vector<Tensor>& inputs, std::vector<Tensor>& results) {
  if (compiled_->interpret) {
    results = interpret(graph_, inputs);
    return;
  }
  std::vector<ArrayView> views;
  views.reserve(inputs.size());
  for (const Tensor& t : inputs) {
    views.push_back({const_cast<std::byte*>(t.raw()), t.dtype(), t.shape().data(), t.rank()});
  }
  results.resize(graph_.outputs().size());
  run_into(views, [&](size_t i, DType dtype, const std::vector<int64_t>& shape) {
    int64_t numel = 1;
    for (int64_t d : shape) numel *= d;
    // A default-constructed Tensor has no storage, whatever it claims.
    const bool reusable = results[i].dtype() == dtype && results[i].shape() == shape &&
                          results[i].nbytes() == static_cast<size_t>(numel * dtype_size(dtype));
    // Kernels write every element of an output: fresh ones are not zeroed first.
    if (!reusable) {
      try {
        results[i] = Tensor::uninitialized(dtype, shape);
      } catch (const UserError& e) {
        throw UserError(fmt::format("output '{}': {}", graph_.outputs()[i].name, e.what()));
      }
    }
    return results[i].raw();
  });
}

// A conv call's result may take its side input's buffer (written -> read,
// plan_buffers): the call then adds the side input in place (conv_call.h),
// unless the conv reads that value as another operand too.
namespace {

std::map<int, int> conv_results_in_place(const Graph& g, const std::vector<Step>& steps) {
  std::map<int, int> out;
  for (const Step& step : steps) {
    if (step.kind != Step::Kind::Dot || g.nodes()[step.node].op != OpKind::Conv) continue;
    const Node& n = g.nodes()[step.node];
    const ConvOperands operands = conv_operands(n);
    if (!operands.side) continue;
    const ValueId side = n.inputs[operands.side_index()];
    if (std::count(n.inputs.begin(), n.inputs.end(), side) == 1) out[n.output.index] = side.index;
  }
  return out;
}

}  // namespace

// Graph outputs are written straight into the caller's memory (the first
// output slot returning a value); every other value a step writes is an
// intermediate that lives in the workspace from its producing step to its
// last consumer. Buffer planning (runtime/common/buffer_plan.h): best fit from
// the workspace buffers, all free when a run starts, appending one only when
// none fits; the plan is made before the first step runs.
CpuExecutable::RunPlan CpuExecutable::plan_run(const SymbolBindings& bindings,
                                               const std::vector<int64_t>& pool_bytes) const {
  const Graph& g = graph_;
  RunPlan out;
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const ValueId v = g.outputs()[i].value;
    if (g.value(v).producer < 0 || out.output_slot.count(v.index)) continue;
    out.output_slot.emplace(v.index, i);
  }
  const Lifetimes lifetimes = launch_lifetimes(g, compiled_->steps, out.output_slot);
  std::map<int, int64_t> bytes;
  for (const Lifetime& l : lifetimes.values) bytes[l.value] = value_bytes(g, ValueId{l.value}, bindings);
  out.buffers = plan_buffers(lifetimes, bytes, pool_bytes, conv_results_in_place(g, compiled_->steps));
  return out;
}

void CpuExecutable::run_into(const std::vector<ArrayView>& inputs, const OutputMemory& output) {
  const Graph& g = graph_;
  std::vector<InputType> input_types;
  input_types.reserve(inputs.size());
  for (const ArrayView& v : inputs) input_types.push_back({v.dtype, std::vector<int64_t>(v.shape, v.shape + v.rank)});
  SymbolBindings bindings = bind_input_types(g, input_types);
  if (compiled_->interpret) {
    copy_outputs(interpret(g, tensors_of(inputs)), output);
    return;
  }
  const std::vector<Step>& steps = compiled_->steps;
  const int step_count = static_cast<int>(steps.size());

  std::vector<int64_t> pool_bytes;
  for (const std::vector<std::byte>& buffer : workspace_) pool_bytes.push_back(static_cast<int64_t>(buffer.size()));
  std::optional<RunPlan> fresh;
  if (!bindings.empty() || !static_run_ || static_run_->buffers.pool_bytes != pool_bytes) {
    fresh = plan_run(bindings, pool_bytes);
    if (bindings.empty()) static_run_ = *fresh;
  }
  const RunPlan& run_plan = fresh ? *fresh : *static_run_;
  const std::map<int, size_t>& output_slot = run_plan.output_slot;
  const BufferPlan& plan = run_plan.buffers;
  std::vector<std::byte*> output_data(g.outputs().size(), nullptr);
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const ValueId v = g.outputs()[i].value;
    if (auto it = output_slot.find(v.index); it == output_slot.end() || it->second != i) continue;
    output_data[i] = output(i, g.type(v).dtype, concrete_shape(g.type(v).shape, bindings));
  }
  std::map<int, const std::byte*> params;  // parameter value index -> input data
  for (size_t i = 0; i < g.params().size(); ++i) params[g.params()[i].index] = inputs[i].data;
  std::vector<std::vector<std::byte>>& pool = workspace_;
  for (size_t b = pool.size(); b < plan.pool_bytes.size(); ++b) {
    try {
      pool.emplace_back(static_cast<size_t>(plan.pool_bytes[b]));
    } catch (const std::bad_alloc&) {
      throw UserError(fmt::format("out of memory: the host did not give the {} bytes of workspace buffer {} for the "
                                  "intermediates of graph '{}'", plan.pool_bytes[b], b, g.name()));
    }
  }

  const AddressOf address_of = [&](ValueId v) -> void* {
    if (auto it = params.find(v.index); it != params.end()) return const_cast<std::byte*>(it->second);
    if (auto it = output_slot.find(v.index); it != output_slot.end()) return output_data[it->second];
    if (const PlannedValue* planned = plan.find(v.index)) return pool[planned->buffer].data();
    throw InternalError(fmt::format("cpu executable: value {} has no buffer", g.value_name(v)), __FILE__, __LINE__);
  };

  if (profiling_) {
    step_seconds_.resize(steps.size(), 0.0);
    epilogue_seconds_.resize(steps.size(), 0.0);
    ++profiled_runs_;
  }
  for (int i = 0; i < step_count; ++i) {
    const Step& step = steps[i];
    const auto started = profiling_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    for (int node : step.arg_reductions) check_arg_reduction_extent(g, node, bindings);
    int32_t status = 0;
    if (step.kind == Step::Kind::Dot && g.nodes()[step.node].op == OpKind::Attention) {
      run_attention_step(g, step, bindings, address_of);
    } else if (step.kind == Step::Kind::Dot && g.nodes()[step.node].op == OpKind::Conv) {
      run_conv_step(g, step, bindings, address_of, constant_weights(g.nodes()[step.node]));
    } else if (step.kind == Step::Kind::Dot) {
      status = run_dot_step(g, step, bindings, address_of, profiling_ ? &epilogue_seconds_[i] : nullptr);
    } else if (step.kind == Step::Kind::Interpret) {
      run_interpreted_step(g, *step.interpreted, bindings, address_of);
    } else {
      std::vector<void*> buffers = kernel_buffers(step.signature, address_of, status);
      const std::vector<int64_t> scalars = kernel_scalars(step.signature, bindings);
      step.function(buffers.data(), scalars.data());
    }
    if (status != 0) throw_rejected_input(g, status - 1, bindings);
    if (profiling_) step_seconds_[i] += std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  }

  // The peak of this run: the workspace buffers it used (a buffer left from
  // a larger earlier run counts with its full size).
  peak_intermediate_bytes_ = plan.bytes_used;
  intermediate_buffer_count_ = plan.buffers_used;
  intermediate_value_count_ = plan.intermediate_count();

  // A value returned twice is copied into its later slots; a parameter
  // returned as is, copied from the input.
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const ValueId v = g.outputs()[i].value;
    // A zero-element array may have no address: whether to copy is not whether `from` is null.
    bool copied = false;
    const std::byte* from = nullptr;
    if (g.value(v).producer < 0) {
      for (size_t p = 0; p < g.params().size(); ++p) {
        if (g.params()[p] != v) continue;
        from = inputs[p].data;
        copied = true;
      }
    } else if (output_slot.at(v.index) != i) {
      from = output_data[output_slot.at(v.index)];
      copied = true;
    }
    if (!copied) continue;
    const std::vector<int64_t> shape = concrete_shape(g.type(v).shape, bindings);
    std::byte* to = output(i, g.type(v).dtype, shape);
    const size_t n = static_cast<size_t>(value_bytes(g, v, bindings));
    if (n > 0) std::memcpy(to, from, n);
  }
}

}  // namespace stitch::runtime::cpu
