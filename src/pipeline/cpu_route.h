// The CPU's route through the compile layer (docs/pipeline.md): the back
// end's hooks (the C++ emitter; the system compiler through the kernel
// cache), the launch list bound to the loaded kernels, and the in-memory
// cache of compiled graphs. What it returns runs on runtime::cpu's
// CpuExecutable.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "fusion/fusion_plan.h"
#include "fusion/planner.h"
#include "pipeline/pipeline.h"
#include "pipeline/schedule_groups.h"
#include "runtime/cpu/executable.h"
#include "runtime/cpu/kernel_cache.h"
#include "schedule/select.h"
#include "stitch/graph.h"

namespace stitch::pipeline {

struct CpuCompileOptions {
  PlanOptions plan;  // max_fusions: -1 reads STITCH_MAX_FUSIONS
  runtime::cpu::CompilerOptions compiler;
  // The row schedules of row reductions and stitched groups: chosen for the
  // CPU unless a kind is forced (stitch bench --row-schedule).
  schedule::RowScheduleTarget rows = schedule::RowScheduleTarget::cpu();
  // The pipeline stages to print (STITCH_DUMP): each as it finishes, so the
  // plan is printed even when lowering then fails.
  StageDump dump;
  // Replace groups' default schedules: the tuner (tune/schedule_tuner.h) or
  // a test's choice. `tuner_key` names what they would choose, so that the
  // in-memory cache tells tuned executables from untuned ones.
  ScheduleOverride schedule_override;
  Compilation::Tuner tuner;
  Compilation::PlanTuner plan_tuner;  // contested fusions measured (tune/fusion_tuner.h)
  std::string tuner_key;
  // Where each translation unit's object comes from instead of the kernel
  // cache (`cache.load_or_compile(source, compiler)`): a package's, or a
  // package build's recording compile (package/). Throws CompileError for a
  // unit it rejects, as the compiler would, so the fallback is the same.
  std::function<runtime::cpu::CpuModule(const std::string& source)> build_module;
  // Where the loud report of a compile failure and its fallback goes; stderr
  // ("stitch: warning: ...") when empty.
  std::function<void(const std::string&)> warn;
  // Test seam: a plan for which this returns true is treated as if the
  // system compiler had rejected its translation unit, so the fallback path
  // can be tested without a broken compiler.
  std::function<bool(const FusionPlan&)> reject_plan;
  // Test seam: a translation unit holding the kernel of a group for which
  // this returns true is treated as rejected too, so the fallback of one
  // group can be tested.
  std::function<bool(const FusionGroup&)> reject_group;
};

// The canonical graph compiled for the CPU. Throws UserError naming the
// first group that does not lower (an op the CPU back end does not
// implement). A translation unit the compiler rejects is reported through options.warn and replaced: the
// groups that do not compile alone by their unfused ops, an op that does not
// compile even alone by the reference interpreter (group_fallback.h); the
// result is always computed.
runtime::cpu::CpuExecutable compile_cpu(const Graph& canonical_graph, PlannerKind planner,
                                        runtime::cpu::KernelCache& cache, const CpuCompileOptions& options = {});
runtime::cpu::CpuExecutable compile_cpu(const Graph& canonical_graph, PlannerKind planner,
                                        runtime::cpu::KernelCache& cache, const StageDump& dump);

// For test suites: every graph's kernels in one translation unit, one
// compiler run. No fallback: a compile failure throws CompileError. Throws
// UserError when any group of any graph does not lower.
std::vector<runtime::cpu::CpuExecutable> compile_cpu_batch(
    const std::vector<Graph>& canonical_graphs, PlannerKind planner, runtime::cpu::KernelCache& cache,
    const PlanOptions& plan_options = {}, const schedule::RowScheduleTarget& rows = schedule::RowScheduleTarget::cpu());

// "" when compile_cpu would lower every group of `canonical_graph`'s plan;
// otherwise why not (the first group that does not lower).
std::string cpu_unsupported_reason(const Graph& canonical_graph, PlannerKind planner,
                                   const PlanOptions& plan_options = {});

}  // namespace stitch::pipeline
