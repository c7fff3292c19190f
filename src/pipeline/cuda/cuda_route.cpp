#include "pipeline/cuda/cuda_route.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "codegen/cuda/cuda_emitter.h"
#include "gpu_model/analytic.h"
#include "options/options.h"
#include "pipeline/compile_notes.h"
#include "pipeline/cuda/device_target.h"
#include "pipeline/lowered_plan.h"
#include "runtime/common/launch_list.h"
#include "runtime/cpu/cpu_compiler.h"
#include "runtime/cuda/compiled_cuda_graph.h"
#include "runtime/cuda/cuda_module.h"
#include "runtime/cuda/launch_geometry.h"
#include "runtime/cuda/weave_steps.h"
#include "stitch/error.h"

namespace stitch::pipeline {

using runtime::cuda::CudaModule;
using runtime::cuda::CudaStep;

namespace {

std::vector<CudaStep> make_steps(const Graph& g, const LoweredPlan& lowered, const CudaModule& module,
                                 const schedule::GpuTarget& target) {
  std::vector<CudaStep> steps;
  for (LaunchStep& l : pipeline::launch_steps(g, lowered)) {
    STITCH_ASSERT(!l.epilogue, "a dot epilogue in a CUDA plan (PlanOptions::for_gpu plans none)");
    CudaStep step;
    step.kind = l.dot ? CudaStep::Kind::Dot : l.interpreted ? CudaStep::Kind::Interpret : CudaStep::Kind::Kernel;
    step.node = l.node;
    step.interpreted = l.interpreted;
    if (l.kernel) {
      step.kernel = *l.kernel;
      step.function = module.function(l.kernel->name);
      step.dynamic_shared_bytes = runtime::cuda::dynamic_shared_bytes(step.kernel);
      if (step.dynamic_shared_bytes > 0) module.allow_dynamic_shared(step.function, step.dynamic_shared_bytes);
      prefer_shared_carveout(module, target, step.function, step.kernel);
    }
    step.signature = std::move(l.signature);
    step.arg_reductions = std::move(l.arg_reductions);
    steps.push_back(std::move(step));
  }
  return steps;
}

schedule::RowScheduleTarget rows_for(const CudaContext& context, const CudaCompileOptions& options) {
  schedule::RowScheduleTarget rows =
      options.rows ? *options.rows
                   : gpu_model::with_row_model(schedule::RowScheduleTarget::for_device(device_target(context)),
                                               options.model_target);
  rows.forced = options.forced_rows;
  rows.forced_column_groups = options.forced_column_groups;
  return rows;
}

// The GPU planner's options for the device: a stitched kernel's block may hold
// between its phases what the lowering lets its row caches take on this device
// (RowScheduleTarget::shared_budget_bytes, half the opt-in maximum), so a row
// the lowering could cache is not split at planning for want of the static 48 KiB.
PlanOptions plan_options_for(const CudaCompileOptions& options, const schedule::RowScheduleTarget& rows) {
  // The device's architecture (for_device), or a package's.
  PlanOptions plan_options = PlanOptions::for_gpu(rows.gpu_arch);
  plan_options.max_fusions = resolve_max_fusions(options.plan);
  plan_options.row_hold_bytes = rows.shared_budget_bytes();
  plan_options.f32_intermediates = options.plan.f32_intermediates;
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
    error = seam_rejection(lowered, options.reject_plan, options.reject_group, "CudaCompileOptions");
    if (!error.empty()) return false;
    try {
      const runtime::cuda::ModuleImage image = runtime::cuda::module_image_for(context->api());
      module = std::make_shared<CudaModule>(context, options.build_image
                                                         ? options.build_image(source, image)
                                                         : cache.load_or_compile(source, context->device().arch(), image));
    } catch (const runtime::cpu::CompileError& e) {
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
void weave_adjacent_steps(runtime::cuda::CompiledCudaGraph& compiled, const std::shared_ptr<CudaContext>& context, CubinCache& cache,
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
           runtime::cuda::independent_steps(runtime::step_values(a), runtime::step_values(b));
  };
  constexpr size_t kLookahead = 8;
  std::vector<std::pair<std::string, std::string>> pairs;
  std::vector<size_t> firsts;
  for (size_t i = 0; i + 1 < steps.size();) {
    size_t partner = 0;
    for (size_t j = i + 1; j < steps.size() && j <= i + kLookahead && partner == 0; ++j) {
      if (!weavable(steps[i], steps[j])) continue;
      bool movable = true;
      for (size_t k = i + 1; k < j && movable; ++k) {
        movable = runtime::cuda::independent_steps(runtime::step_values(steps[k]), runtime::step_values(steps[j]));
      }
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
  const std::string ptx = cache.load_or_compile(compiled.source, context->device().arch(), runtime::cuda::ModuleImage::Ptx);
  const runtime::cuda::WovenKernels woven = runtime::cuda::weave_kernel_pairs(ptx, pairs);
  compiled.weave_refusals = woven.refusals;
  for (size_t k = 0; k < pairs.size(); ++k) {
    if (!woven.names[k].empty()) report += fmt::format("woven: {} and {} as {}\n", pairs[k].first, pairs[k].second, woven.names[k]);
  }
  report += woven.refusals + woven.ptx;
  print_report();
  if (woven.ptx.empty()) return;
  try {
    compiled.woven_module = std::make_shared<CudaModule>(context, woven.ptx);
  } catch (const runtime::cpu::CompileError& e) {
    // The kernels run unwoven, as they would without --weave.
    compiled.weave_refusals += fmt::format("not woven: {}\n", e.what());
    pipeline::report_warning({}, fmt::format("--weave: {}; the kernels run unwoven", e.what()));
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
  const bool env = environment_options().weave;
  return options.weave < 0 ? env : options.weave > 0;
}

}  // namespace

CudaExecutable compile_cuda(const Graph& canonical_graph, PlannerKind planner, std::shared_ptr<CudaContext> context,
                            CubinCache& cache, const CudaCompileOptions& options) {
  context->make_current();
  const runtime::cuda::CubinCacheStats before = cache.stats();
  const schedule::RowScheduleTarget rows = rows_for(*context, options);
  const PlanOptions plan_options = plan_options_for(options, rows);
  Compilation c = pipeline::compilation_of(canonical_graph, planner, plan_options, rows);
  c.warn = options.warn;
  c.tuner = options.tuner;
  std::shared_ptr<CudaModule> module;
  std::string emit_error;
  const Backend backend = cuda_backend(context, cache, options, module, emit_error);
  // Full reductions become two row reductions, so every SM takes part, as on the CPU.
  run_pipeline(c, backend, "split-reductions", "compile", options.dump);
  auto compiled = std::make_shared<runtime::cuda::CompiledCudaGraph>();
  compiled->module = module;
  const schedule::GpuTarget device = device_target(*context);
  take_compiled(*compiled, c, [&](const Graph& g, const LoweredPlan& l) { return make_steps(g, l, *module, device); });
  if (weave_enabled(options) && !compiled->interpret) weave_adjacent_steps(*compiled, context, cache, options.dump);
  // STITCH_DUMP=cache: this compile's share of the cubin cache's counts.
  if (options.dump.wants && options.dump.wants("cache")) {
    options.dump.print("cache", runtime::cache_dump_line(cache.stats() - before));
  }
  return CudaExecutable(std::move(c.graph), std::move(context), std::move(compiled));
}

std::string cuda_translation_unit(const Graph& canonical_graph, PlannerKind planner, const CudaCompileOptions& options) {
  STITCH_ASSERT(options.rows.has_value(), "cuda_translation_unit needs CudaCompileOptions::rows");
  const schedule::RowScheduleTarget& rows = *options.rows;
  Compilation c = pipeline::compilation_of(canonical_graph, planner, plan_options_for(options, rows), rows);
  c.warn = options.warn;
  std::string emit_error, source;
  Backend backend;
  backend.name = "cuda";
  backend.emit = [&emit_error](const std::vector<kir::Kernel>& kernels) {
    try {
      return codegen::cuda::emit_cuda_translation_unit(kernels);
    } catch (const InternalError& e) {
      emit_error = e.what();
      return std::string();
    }
  };
  // The first unit the pipeline would compile: the whole plan's.
  backend.build = [&source](const std::string& s, const LoweredPlan&, std::string&) {
    if (source.empty()) source = s;
    return true;
  };
  run_pipeline(c, backend, "split-reductions", "compile", options.dump);
  if (!emit_error.empty()) throw UserError(fmt::format("the CUDA emitter failed: {}", emit_error));
  return source;
}

std::vector<CudaExecutable> compile_cuda_batch(const std::vector<Graph>& canonical_graphs, PlannerKind planner,
                                               std::shared_ptr<CudaContext> context, CubinCache& cache,
                                               const CudaCompileOptions& options) {
  context->make_current();
  const schedule::RowScheduleTarget rows = rows_for(*context, options);
  const PlanOptions plan_options = plan_options_for(options, rows);
  std::shared_ptr<CudaModule> module;
  std::string emit_error;
  const Backend backend = cuda_backend(context, cache, options, module, emit_error);
  LoweredBatch batch = lower_batch(canonical_graphs, pipeline::compilation_of(Graph(), planner, plan_options, rows), backend);
  const std::string source = codegen::cuda::emit_cuda_translation_unit(batch.kernels);
  module = std::make_shared<CudaModule>(context, cache.load_or_compile(source, context->device().arch(), runtime::cuda::module_image_for(context->api())));
  std::vector<CudaExecutable> out;
  const schedule::GpuTarget device = device_target(*context);
  for (Compilation& c : batch.graphs) {
    auto compiled = std::make_shared<runtime::cuda::CompiledCudaGraph>();
    compiled->steps = make_steps(c.graph, c.lowered, *module, device);
    compiled->plan = std::move(c.lowered.plan);
    compiled->source = source;
    compiled->module = module;
    if (weave_enabled(options)) weave_adjacent_steps(*compiled, context, cache, options.dump);
    out.push_back(CudaExecutable(std::move(c.graph), context, std::move(compiled)));
  }
  return out;
}

std::string cuda_unsupported_reason(const Graph& canonical_graph, PlannerKind planner,
                                    const schedule::RowScheduleTarget& rows, const PlanOptions& plan_options) {
  Compilation c = pipeline::compilation_of(canonical_graph, planner, plan_options, rows);
  run_pipeline(c, Backend{}, "split-reductions", "schedule");
  return pipeline::lower_whole_plan(c.graph, c.plan, c.schedules, pipeline::kernel_prefix(c.graph.name()), c.target).unsupported;
}

}  // namespace stitch::pipeline
