#include "runtime/cpu/executable.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>

#include "codegen/cpu/cpp_emitter.h"
#include "runtime/common/launch_list.h"
#include "ir/split_reductions.h"
#include "ir/structural_key.h"
#include "stitch/text.h"
#include "kir/printer.h"
#include "runtime/cpu/dot_call.h"
#include "stitch/error.h"
#include "stitch/interpreter.h"

namespace stitch::runtime::cpu {

// One entry of the launch list.
struct Step {
  enum class Kind : uint8_t { Kernel, Dot };
  Kind kind = Kind::Kernel;
  KernelFunction function = nullptr;  // Kernel
  int node = -1;                      // Dot: the dot node
  lower::GroupSignature signature;    // values read and written
  // argmax/argmin roots: an axis they reduce that is empty at run time is the
  // interpreter's UserError, checked before the launch.
  std::vector<int> arg_reductions;
};

struct CompiledGraph {
  FusionPlan plan;
  std::vector<Step> steps;
  std::string source;
  CpuModule module;  // keeps the kernels' shared object loaded
  // Set when compile() fell back; with `interpret`, run() uses the reference
  // interpreter because no plan compiled.
  std::string fallback;
  bool interpret = false;
};

namespace {

// The launch list of `lowered`, with kernel entry points from `module`.
std::vector<Step> make_steps(const Graph& g, const LoweredPlan& lowered, const CpuModule& module) {
  std::vector<Step> steps;
  for (LaunchStep& l : launch_steps(g, lowered)) {
    Step step;
    step.kind = l.dot ? Step::Kind::Dot : Step::Kind::Kernel;
    step.node = l.node;
    if (l.kernel) step.function = module.function(l.kernel->name);
    step.signature = std::move(l.signature);
    step.arg_reductions = std::move(l.arg_reductions);
    steps.push_back(std::move(step));
  }
  return steps;
}

std::string memory_key(const Graph& g, PlannerKind planner, int max_fusions, const CompilerOptions& compiler,
                       const schedule::RowScheduleTarget& rows) {
  std::string text = structural_key(g);
  // The hints that change the generated code but no value (prefetch,
  // streaming stores, transpose tiles, the L1 and L2 sizes that set the warps
  // a block) are part of the key too: one process may compile a graph under both settings.
  text += fmt::format(
      "planner {}\nmax_fusions {}\ncompiler {}\nrows {}\nprefetch {}\nstream_min_bytes {}\ntranspose_tiles {}\n"
      "cpu_l2_bytes {}\ncpu_l1_bytes {}\n",
      planner_name(planner), max_fusions, compiler.compiler, rows.name(), rows.prefetch, rows.stream_min_bytes,
      rows.transpose_tiles, rows.cpu_l2_bytes, rows.cpu_l1_bytes);
  for (const std::string& f : compiler.flags) text += f + "\n";
  return sha256_hex(text);
}

CacheStats stats_delta(const CacheStats& before, const CacheStats& after) {
  return {after.memory_hits - before.memory_hits, after.hits - before.hits, after.misses - before.misses,
          after.recompiled_corrupt - before.recompiled_corrupt};
}

// Emits, compiles and loads `lowered`; nullptr and a message in `error` when
// the compiler rejects it (or the test seam says it would).
std::shared_ptr<CompiledGraph> try_build(const Graph& g, const LoweredPlan& lowered, KernelCache& cache,
                                         const CompileOptions& options, std::string& error) {
  auto compiled = std::make_shared<CompiledGraph>();
  compiled->source = codegen::cpu::emit_cpp_translation_unit(lowered.kernels);
  if (options.dump) options.dump("source", compiled->source);
  if (options.reject_plan && options.reject_plan(lowered.plan)) {
    error = "the translation unit was rejected by CompileOptions::reject_plan (test seam)";
    return nullptr;
  }
  try {
    compiled->module = cache.load_or_compile(compiled->source, options.compiler);
  } catch (const CompileError& e) {
    error = e.what();
    return nullptr;
  }
  compiled->steps = make_steps(g, lowered, compiled->module);
  compiled->plan = lowered.plan;
  return compiled;
}

}  // namespace

CpuExecutable::CpuExecutable(Graph graph, std::shared_ptr<const CompiledGraph> compiled)
    : graph_(std::move(graph)), compiled_(std::move(compiled)) {}

int CpuExecutable::kernel_count() const { return static_cast<int>(compiled_->steps.size()); }
const FusionPlan& CpuExecutable::plan() const { return compiled_->plan; }
const std::string& CpuExecutable::source() const { return compiled_->source; }
const std::string& CpuExecutable::fallback() const { return compiled_->fallback; }

CpuExecutable CpuExecutable::compile(const Graph& canonical_graph, PlannerKind planner, KernelCache& cache,
                                     const DumpHook& dump) {
  CompileOptions options;
  options.dump = dump;
  return compile(canonical_graph, planner, cache, options);
}

CpuExecutable CpuExecutable::compile(const Graph& canonical_graph, PlannerKind planner, KernelCache& cache,
                                     const CompileOptions& options) {
  const CacheStats before = cache.stats();
  const int max_fusions = resolve_max_fusions(options.plan);
  const std::string key = memory_key(canonical_graph, planner, max_fusions, options.compiler, options.rows);
  // The graph the CPU runs: full reductions split so that they use every core
  // (src/ir/split_reductions.h). Deterministic, so a memory hit rebuilds the
  // same value numbering the cached steps refer to.
  const Graph g = split_full_reductions(canonical_graph);
  if (std::shared_ptr<const CompiledGraph> hit = cache.find_compiled_graph(key)) {
    CpuExecutable exe(g, std::move(hit));
    exe.cache_stats_ = stats_delta(before, cache.stats());
    return exe;
  }
  if (options.dump && g != canonical_graph) {
    options.dump("graph", "// after split-full-reductions (cpu target)\n" + print_graph(g));
  }

  PlanOptions plan_options;
  plan_options.max_fusions = max_fusions;
  FusionPlan fusion_plan = stitch::plan(g, planner, plan_options);
  if (options.dump) options.dump("plan", print_plan(g, fusion_plan));
  LoweredPlan lowered = lower_whole_plan(g, std::move(fusion_plan), kernel_prefix(g.name()), options.rows);
  if (!lowered.unsupported.empty()) throw UserError(unsupported_message("cpu", lowered.unsupported));
  if (options.dump) options.dump("kir", print_kernels(lowered.kernels));

  // A fused kernel the compiler rejects must not cost the user the result.
  std::shared_ptr<CompiledGraph> compiled = build_with_fallback<CompiledGraph>(
      g, planner, lowered, options.rows, "kernels",
      [&](const LoweredPlan& plan, std::string& error) { return try_build(g, plan, cache, options, error); },
      options.warn);
  cache.store_compiled_graph(key, compiled);
  CpuExecutable exe(g, std::move(compiled));
  exe.cache_stats_ = stats_delta(before, cache.stats());
  return exe;
}

std::vector<CpuExecutable> CpuExecutable::compile_batch(const std::vector<Graph>& canonical_graphs, PlannerKind planner,
                                                        KernelCache& cache, const PlanOptions& plan_options,
                                                        const schedule::RowScheduleTarget& rows) {
  PlanOptions resolved;
  resolved.max_fusions = resolve_max_fusions(plan_options);
  LoweredBatch batch = lower_batch(canonical_graphs, planner, resolved, rows, "cpu");
  const std::vector<Graph>& graphs = batch.graphs;
  std::vector<LoweredPlan>& lowered = batch.plans;
  const CacheStats before = cache.stats();
  const std::string source = codegen::cpu::emit_cpp_translation_unit(batch.kernels);
  CpuModule module = cache.load_or_compile(source);
  const CacheStats delta = stats_delta(before, cache.stats());
  std::vector<CpuExecutable> out;
  for (size_t i = 0; i < graphs.size(); ++i) {
    auto compiled = std::make_shared<CompiledGraph>();
    compiled->steps = make_steps(graphs[i], lowered[i], module);
    compiled->plan = std::move(lowered[i].plan);
    compiled->source = source;
    compiled->module = module;
    out.push_back(CpuExecutable(graphs[i], std::move(compiled)));
    out.back().cache_stats_ = delta;
  }
  return out;
}

std::string CpuExecutable::unsupported_reason(const Graph& canonical_graph, PlannerKind planner,
                                              const PlanOptions& plan_options) {
  const Graph g = split_full_reductions(canonical_graph);
  return lower_whole_plan(g, stitch::plan(g, planner, plan_options), "k", schedule::RowScheduleTarget::cpu()).unsupported;
}

std::vector<Tensor> CpuExecutable::run(const std::vector<Tensor>& inputs) {
  std::vector<Tensor> outputs;
  run(inputs, outputs);
  return outputs;
}

void CpuExecutable::run(const std::vector<Tensor>& inputs, std::vector<Tensor>& results) {
  const Graph& g = graph_;
  if (compiled_->interpret) {
    results = interpret(g, inputs);
    return;
  }
  SymbolBindings bindings = bind_inputs(g, inputs);
  const std::vector<Step>& steps = compiled_->steps;
  const int step_count = static_cast<int>(steps.size());

  // Graph outputs are written straight into `results` (the first output slot
  // returning a value); every other value a step writes is an intermediate
  // that lives in the workspace from its producing step to its last consumer.
  results.resize(g.outputs().size());
  std::map<int, size_t> output_slot;  // value index -> first result slot holding it
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const ValueId v = g.outputs()[i].value;
    if (g.value(v).producer < 0 || output_slot.count(v.index)) continue;
    output_slot.emplace(v.index, i);
    const DType dtype = g.type(v).dtype;
    std::vector<int64_t> shape = concrete_shape(g.type(v).shape, bindings);
    int64_t numel = 1;
    for (int64_t d : shape) numel *= d;
    // A default-constructed Tensor has no storage, whatever it claims.
    const bool reusable = results[i].dtype() == dtype && results[i].shape() == shape &&
                          results[i].nbytes() == static_cast<size_t>(numel * dtype_size(dtype));
    // Kernels write every element of an output: fresh ones are not zeroed first.
    if (!reusable) results[i] = Tensor::uninitialized(dtype, std::move(shape));
  }
  std::map<int, int> last_use;  // intermediate value index -> last step reading it
  for (int i = 0; i < step_count; ++i) {
    for (ValueId v : steps[i].signature.outputs) {
      if (!output_slot.count(v.index)) last_use[v.index] = i;
    }
  }
  for (int i = 0; i < step_count; ++i) {
    for (ValueId v : steps[i].signature.inputs) {
      if (auto it = last_use.find(v.index); it != last_use.end()) it->second = std::max(it->second, i);
    }
  }

  // Buffer planning: best fit from the free workspace buffers, growing the
  // workspace only when none fits. Within a run a buffer is free again after
  // the last reader of its value; every buffer is free when a run starts.
  std::vector<std::vector<std::byte>>& pool = workspace_;
  std::vector<int> free_buffers(pool.size());  // indices into pool
  for (size_t i = 0; i < pool.size(); ++i) free_buffers[i] = static_cast<int>(i);
  std::map<int, int> buffer_of;            // intermediate value index -> pool index
  std::map<int, const std::byte*> params;  // parameter value index -> input data
  for (size_t i = 0; i < g.params().size(); ++i) params[g.params()[i].index] = inputs[i].raw();
  int buffers_used = 0;
  int64_t bytes_used = 0;

  auto address_of = [&](ValueId v) -> void* {
    if (auto it = params.find(v.index); it != params.end()) return const_cast<std::byte*>(it->second);
    if (auto it = output_slot.find(v.index); it != output_slot.end()) return results[it->second].raw();
    if (auto it = buffer_of.find(v.index); it != buffer_of.end()) return pool[it->second].data();
    throw InternalError(fmt::format("cpu executable: value {} has no buffer", g.value_name(v)), __FILE__, __LINE__);
  };

  std::vector<bool> touched(pool.size(), false);
  for (int i = 0; i < step_count; ++i) {
    const Step& step = steps[i];
    // Inputs of this step stay held until after it ran, so a root never
    // shares a buffer with a value the same kernel reads.
    for (ValueId v : step.signature.outputs) {
      if (output_slot.count(v.index)) continue;
      size_t bytes = static_cast<size_t>(value_bytes(g, v, bindings));
      auto best = free_buffers.end();
      for (auto it = free_buffers.begin(); it != free_buffers.end(); ++it) {
        if (pool[*it].size() >= bytes && (best == free_buffers.end() || pool[*it].size() < pool[*best].size())) {
          best = it;
        }
      }
      if (best != free_buffers.end()) {
        buffer_of[v.index] = *best;
        free_buffers.erase(best);
      } else {
        buffer_of[v.index] = static_cast<int>(pool.size());
        pool.emplace_back(bytes);
        touched.push_back(false);
      }
      const int b = buffer_of[v.index];
      if (!touched[b]) {
        touched[b] = true;
        ++buffers_used;
        bytes_used += static_cast<int64_t>(pool[b].size());
      }
    }
    for (int node : step.arg_reductions) check_arg_reduction_extent(g, node, bindings);
    if (step.kind == Step::Kind::Dot) {
      const Node& n = g.nodes()[step.node];
      run_dot(g.type(n.output).dtype, concrete_shape(g.type(n.inputs[0]).shape, bindings),
              concrete_shape(g.type(n.inputs[1]).shape, bindings), concrete_shape(g.type(n.output).shape, bindings),
              address_of(n.inputs[0]), address_of(n.inputs[1]), address_of(n.output));
    } else {
      std::vector<void*> buffers;
      for (ValueId v : step.signature.inputs) buffers.push_back(address_of(v));
      for (ValueId v : step.signature.outputs) buffers.push_back(address_of(v));
      int32_t status = 0;
      if (step.signature.status) buffers.push_back(&status);
      std::vector<int64_t> scalars;
      for (const std::string& s : step.signature.symbols) scalars.push_back(scalar_slot(bindings.at(s)));
      step.function(buffers.data(), scalars.data());
      if (status != 0) throw_rejected_input(g, status - 1, bindings);
    }
    for (auto& [value, last] : last_use) {
      if (last == i) free_buffers.push_back(buffer_of.at(value));
    }
  }

  // The peak of this run: the workspace buffers it used (a buffer left from
  // a larger earlier run counts with its full size).
  peak_intermediate_bytes_ = bytes_used;
  intermediate_buffer_count_ = buffers_used;
  intermediate_value_count_ = static_cast<int>(last_use.size());

  // A value returned twice gets a copy in its later slots; a parameter
  // returned as is, a copy of the input.
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const ValueId v = g.outputs()[i].value;
    if (g.value(v).producer < 0) {
      for (size_t p = 0; p < g.params().size(); ++p) {
        if (g.params()[p] == v) results[i] = inputs[p];
      }
    } else if (output_slot.at(v.index) != i) {
      results[i] = results[output_slot.at(v.index)];
    }
  }
}

}  // namespace stitch::runtime::cpu
