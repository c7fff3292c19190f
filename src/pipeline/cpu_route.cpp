#include "pipeline/cpu_route.h"

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "codegen/cpu/cpp_emitter.h"
#include "fusion/dot_epilogues.h"
#include "ir/composites_nn.h"
#include "ir/structural_key.h"
#include "pipeline/lowered_plan.h"
#include "runtime/common/dot_panels.h"
#include "runtime/cpu/compiled_graph.h"
#include "stitch/error.h"
#include "stitch/text.h"

namespace stitch::pipeline {

using runtime::cpu::CpuExecutable;
using runtime::cpu::Step;

namespace {

// A dot epilogue's panel (fusion/dot_epilogues.h): half a core's L2 of the
// dot's result, the other half for BLAS's packed operands.
int64_t dot_panel_bytes(const schedule::RowScheduleTarget& rows) { return rows.cpu_l2_bytes / 2; }

// At least two panels a thread where the rows allow, so that a small dot is
// shared by every core on OpenMP's threads rather than left to BLAS's.
int64_t dot_min_panels() { return 2 * static_cast<int64_t>(omp_get_max_threads()); }

// `v = transpose(x)` swapping x's last two axes, x read by `step`: x, else an
// invalid id.
ValueId transpose_source(const Graph& g, const Step& step, ValueId v) {
  const int producer = g.value(v).producer;
  if (producer < 0 || !swaps_last_two_axes(g, g.nodes()[producer])) return {};
  const Node& t = g.nodes()[producer];
  const std::vector<ValueId>& reads = step.signature.inputs;
  if (std::find(reads.begin(), reads.end(), t.inputs[0]) == reads.end()) return {};
  return t.inputs[0];
}

// A linear layer's `dot(x, transpose(w))`: where a kernel writes only
// transposes of last two axes (kernel packing may put several in one), each
// read by nothing but an f32 or f64 dot as its B, those dots read the
// transposes' operands with the gemm's transpose flag and the kernel is
// dropped, so no weight is copied each run.
void fold_operand_transposes(const Graph& g, std::vector<Step>& steps) {
  std::vector<int> reads(g.num_values(), 0);
  for (const Node& n : g.nodes()) {
    for (ValueId in : n.inputs) ++reads[in.index];
  }
  for (const GraphOutput& o : g.outputs()) ++reads[o.value.index];
  std::map<int, Step*> dot_reading_b;  // value index -> the dot step reading it as B
  for (Step& s : steps) {
    if (s.kind != Step::Kind::Dot || g.nodes()[s.node].op != OpKind::Dot) continue;
    const Node& n = g.nodes()[s.node];
    const DType dtype = g.type(n.output).dtype;
    if ((dtype == DType::f32 || dtype == DType::f64) && g.type(n.inputs[0]).shape.size() >= 2) {
      dot_reading_b[n.inputs[1].index] = &s;
    }
  }
  std::vector<bool> dropped(steps.size(), false);
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    bool foldable = s.kind == Step::Kind::Kernel && !s.signature.status && !s.signature.outputs.empty();
    for (ValueId v : s.signature.outputs) {
      foldable = foldable && reads[v.index] == 1 && dot_reading_b.count(v.index) && transpose_source(g, s, v).valid();
    }
    if (!foldable) continue;
    for (ValueId v : s.signature.outputs) {
      Step& dot = *dot_reading_b.at(v.index);
      dot.b_transposed = transpose_source(g, s, v);
      std::replace(dot.signature.inputs.begin(), dot.signature.inputs.end(), v, dot.b_transposed);
    }
    dropped[i] = true;
  }
  std::vector<Step> kept;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (!dropped[i]) kept.push_back(std::move(steps[i]));
  }
  steps = std::move(kept);
}

// The launch list of `lowered`, with kernel entry points from `module`; a
// dot epilogue's panels are about `panel_bytes` of the dot's result.
std::vector<Step> make_steps(const Graph& g, const LoweredPlan& lowered, const runtime::cpu::CpuModule& module, int64_t panel_bytes) {
  std::vector<Step> steps;
  for (LaunchStep& l : pipeline::launch_steps(g, lowered)) {
    Step step;
    step.kind = l.dot ? Step::Kind::Dot : l.interpreted ? Step::Kind::Interpret : Step::Kind::Kernel;
    step.node = l.node;
    if (l.kernel) step.function = module.function(l.kernel->name);
    step.interpreted = l.interpreted;
    if (l.interpreted) {
      step.kind_name = "interpreter";
      step.label = l.interpreted->graph.name();
    } else if (l.dot) {
      step.kind_name = op_name(g.nodes()[l.node].op);
      step.label = fmt::format("{} {}", step.kind_name, g.value_name(g.nodes()[l.node].output));
    } else {
      step.kind_name = "kernel";
      step.label = l.kernel ? l.kernel->name : "";
    }
    step.signature = std::move(l.signature);
    step.arg_reductions = std::move(l.arg_reductions);
    if (l.epilogue) {
      // dot_epilogue_refusal admits static, non-empty results only.
      const TensorType& t = g.type(g.nodes()[l.node].output);
      const std::vector<int64_t> shape = concrete_shape(t.shape, {});
      step.epilogue = module.function(l.epilogue->name);
      step.label += " + " + l.epilogue->name;
      step.epilogue_signature = std::move(l.epilogue_signature);
      // f32: one panel, the whole dot in one oneDNN call on OpenMP's threads
      // and then the whole epilogue. Row panels call the gemm once a panel,
      // each packing B again: on the 2-core EPYC that made every f32 dot with
      // an epilogue 7-18% slower than the dot and its kernel apart (docs/fusion.md,
      // Dot epilogues). f64 (OpenBLAS) keeps its panels.
      const bool whole = t.dtype == DType::f32;
      step.panels = runtime::dot_panels(runtime::dot_rows(shape), shape.back(), l.epilogue->panel_elements, dtype_size(t.dtype),
                               whole ? INT64_MAX / 4 : panel_bytes, whole ? 1 : dot_min_panels());
    }
    steps.push_back(std::move(step));
  }
  fold_operand_transposes(g, steps);
  return steps;
}

std::string memory_key(const Graph& g, PlannerKind planner, const PlanOptions& plan, const runtime::cpu::CompilerOptions& compiler,
                       const schedule::RowScheduleTarget& rows, const std::string& tuner_key) {
  std::string text = structural_key(g);
  // The hints that change the generated code but no value (prefetch,
  // streaming stores, transpose tiles, the L1 and L2 sizes that set the warps
  // a block) are part of the key too: one process may compile a graph under both settings.
  text += fmt::format(
      "planner {}\nmax_fusions {}\ndot_epilogues {}\nattention {}\nconv_calls {}\nchannels_last {}\nf32_intermediates {}\ncompiler {}\nrows {}\nprefetch {}\nstream_min_bytes {}\ntranspose_tiles {}\n"
      "cpu_l2_bytes {}\ncpu_l1_bytes {}\n",
      planner_name(planner), plan.max_fusions, plan.dot_epilogues, plan.attention, plan.conv_calls, plan.channels_last, plan.f32_intermediates, compiler.compiler, rows.name(), rows.prefetch, rows.stream_min_bytes,
      rows.transpose_tiles, rows.cpu_l2_bytes, rows.cpu_l1_bytes);
  for (const std::string& f : compiler.flags) text += f + "\n";
  // Tuned schedules (CpuCompileOptions::schedule_override) change the kernels.
  text += "tuner " + tuner_key + "\n";
  return runtime::cpu::sha256_hex(text);
}

runtime::cpu::CacheStats stats_delta(const runtime::cpu::CacheStats& before, const runtime::cpu::CacheStats& after) {
  runtime::cpu::CacheStats delta;
  static_cast<runtime::EntryCounts&>(delta) = after - before;
  delta.memory_hits = after.memory_hits - before.memory_hits;
  return delta;
}

// STITCH_DUMP=cache: this compile's share of the cache's counts, one line.
void dump_cache_counts(const StageDump& dump, const runtime::cpu::CacheStats& delta) {
  if (dump.wants && dump.wants("cache")) dump.print("cache", runtime::cache_dump_line(delta));
}

// The CPU's stages of the pipeline: the C++ emitter, and the compiler through
// the kernel cache, loading into `module`.
Backend cpu_backend(runtime::cpu::KernelCache& cache, const CpuCompileOptions& options, runtime::cpu::CpuModule& module) {
  Backend backend;
  backend.name = "cpu";
  backend.emit = [](const std::vector<kir::Kernel>& kernels) { return codegen::cpu::emit_cpp_translation_unit(kernels); };
  backend.build = [&cache, &options, &module](const std::string& source, const LoweredPlan& lowered, std::string& error) {
    error = seam_rejection(lowered, options.reject_plan, options.reject_group, "CpuCompileOptions");
    if (!error.empty()) return false;
    try {
      module = options.build_module ? options.build_module(source) : cache.load_or_compile(source, options.compiler);
    } catch (const runtime::cpu::CompileError& e) {
      // The compiler rejected the source (a missing toolchain is a
      // ToolchainMissing from the cache, which no fallback hides).
      error = e.what();
      return false;
    }
    return true;
  };
  return backend;
}

}  // namespace

CpuExecutable compile_cpu(const Graph& canonical_graph, PlannerKind planner, runtime::cpu::KernelCache& cache,
                                     const StageDump& dump) {
  CpuCompileOptions options;
  options.dump = dump;
  return compile_cpu(canonical_graph, planner, cache, options);
}

CpuExecutable compile_cpu(const Graph& canonical_graph, PlannerKind planner, runtime::cpu::KernelCache& cache,
                                     const CpuCompileOptions& options) {
  const runtime::cpu::CacheStats before = cache.stats();
  // The CPU's planning options; only the fusion cap comes from the caller.
  PlanOptions plan_options;
  plan_options.max_fusions = resolve_max_fusions(options.plan);
  plan_options.dot_epilogues = resolve_dot_epilogues(options.plan);
  plan_options.attention = resolve_attention(options.plan);
  plan_options.conv_calls = resolve_conv_calls(options.plan);
  plan_options.channels_last = resolve_channels_last(options.plan);
  plan_options.f32_intermediates = options.plan.f32_intermediates;
  const std::string key = memory_key(canonical_graph, planner, plan_options, options.compiler, options.rows, options.tuner_key);
  Compilation c = pipeline::compilation_of(canonical_graph, planner, plan_options, options.rows);
  c.schedule_override = options.schedule_override;
  c.tuner = options.tuner;
  c.plan_tuner = options.plan_tuner;
  c.warn = options.warn;
  runtime::cpu::CpuModule module;
  const Backend backend = cpu_backend(cache, options, module);
  // The graph the CPU runs (split-reductions) is deterministic, so a memory
  // hit rebuilds the same value numbering the cached steps refer to.
  run_pipeline(c, backend, "split-reductions", "widen-floats", options.dump);
  if (std::shared_ptr<const runtime::cpu::CompiledGraph> hit = cache.find_compiled_graph(key)) {
    const runtime::cpu::CacheStats delta = stats_delta(before, cache.stats());
    dump_cache_counts(options.dump, delta);
    return CpuExecutable(std::move(c.graph), std::move(hit), delta);
  }
  run_pipeline(c, backend, "plan", "compile", options.dump);
  auto compiled = std::make_shared<runtime::cpu::CompiledGraph>();
  compiled->module = module;
  take_compiled(*compiled, c, [&](const Graph& g, const LoweredPlan& l) {
    return make_steps(g, l, module, dot_panel_bytes(options.rows));
  });
  cache.store_compiled_graph(key, compiled);
  const runtime::cpu::CacheStats delta = stats_delta(before, cache.stats());
  dump_cache_counts(options.dump, delta);
  return CpuExecutable(std::move(c.graph), std::move(compiled), delta);
}

std::vector<CpuExecutable> compile_cpu_batch(const std::vector<Graph>& canonical_graphs, PlannerKind planner,
                                                        runtime::cpu::KernelCache& cache, const PlanOptions& plan_options,
                                                        const schedule::RowScheduleTarget& rows) {
  PlanOptions resolved;
  resolved.max_fusions = resolve_max_fusions(plan_options);
  resolved.dot_epilogues = resolve_dot_epilogues(plan_options);
  resolved.attention = resolve_attention(plan_options);
  resolved.conv_calls = resolve_conv_calls(plan_options);
  resolved.channels_last = resolve_channels_last(plan_options);
  resolved.f32_intermediates = plan_options.f32_intermediates;
  CpuCompileOptions options;
  runtime::cpu::CpuModule module;
  const Backend backend = cpu_backend(cache, options, module);
  LoweredBatch batch = lower_batch(canonical_graphs, pipeline::compilation_of(Graph(), planner, resolved, rows), backend);
  const runtime::cpu::CacheStats before = cache.stats();
  const std::string source = backend.emit(batch.kernels);
  module = cache.load_or_compile(source);
  const runtime::cpu::CacheStats delta = stats_delta(before, cache.stats());
  std::vector<CpuExecutable> out;
  for (Compilation& c : batch.graphs) {
    auto compiled = std::make_shared<runtime::cpu::CompiledGraph>();
    compiled->steps = make_steps(c.graph, c.lowered, module, dot_panel_bytes(rows));
    compiled->plan = std::move(c.lowered.plan);
    compiled->source = source;
    compiled->module = module;
    out.push_back(CpuExecutable(std::move(c.graph), std::move(compiled), delta));
  }
  return out;
}

std::string cpu_unsupported_reason(const Graph& canonical_graph, PlannerKind planner,
                                              const PlanOptions& plan_options) {
  Compilation c = pipeline::compilation_of(canonical_graph, planner, plan_options, schedule::RowScheduleTarget::cpu());
  run_pipeline(c, Backend{}, "split-reductions", "schedule");
  return pipeline::lower_whole_plan(c.graph, c.plan, c.schedules, "k", c.target).unsupported;
}

}  // namespace stitch::pipeline
