// A GPU's route through the compile layer (docs/pipeline.md,
// docs/cuda-runtime.md): the back end's hooks (the CUDA C emitter; NVRTC
// through the cubin cache), the schedules ranked for the device, the launch
// list bound to the loaded module, and GoPTX's weaving of adjacent kernels.
// What it returns runs on runtime::cuda's CudaExecutable.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fusion/fusion_plan.h"
#include "fusion/planner.h"
#include "pipeline/pipeline.h"
#include "runtime/cuda/context.h"
#include "runtime/cuda/cubin_cache.h"
#include "runtime/cuda/cuda_executable.h"
#include "schedule/select.h"
#include "stitch/graph.h"

namespace stitch::pipeline {

using runtime::cuda::CubinCache;
using runtime::cuda::CudaContext;
using runtime::cuda::CudaExecutable;

struct CudaCompileOptions {
  PlanOptions plan;  // max_fusions: -1 reads STITCH_MAX_FUSIONS
  // Row schedules are ranked on the device; a forced kind or column tile
  // overrides the ranking (stitch bench --row-schedule, tests).
  std::optional<schedule::RowScheduleKind> forced_rows;
  int64_t forced_column_groups = 0;
  // The GPU model's target ("h200", gpu_model/target.h) whose numbers choose the
  // row schedules, instead of the device's nearest: what `stitch bench --backend
  // cuda-sim --profile T` predicts for, since the simulated device is an H100.
  std::string model_target;
  StageDump dump;  // the pipeline stages to print (STITCH_DUMP)
  // Replaces groups' default schedules: the tuner measuring on this device
  // (pipeline/cuda/cuda_tuning.h) or a test's choice. compile_cuda only.
  Compilation::Tuner tuner;
  // Where the loud report of a compile failure and its fallback goes; stderr
  // ("stitch: warning: ...") when empty.
  std::function<void(const std::string&)> warn;
  // Test seam: a plan for which this returns true is treated as if NVRTC had
  // rejected its translation unit.
  std::function<bool(const FusionPlan&)> reject_plan;
  // Test seam: a translation unit holding the kernel of a group for which
  // this returns true is treated as rejected too, so the fallback of one
  // group can be tested.
  std::function<bool(const FusionGroup&)> reject_group;
  // The target the row schedules are ranked for instead of the device's
  // (rows_for): a package's, so that a loader generates the sources the
  // package was built from (package/). Its gpu_arch also sets the plan's.
  std::optional<schedule::RowScheduleTarget> rows;
  // Where each translation unit's image comes from instead of the cubin
  // cache (`cache.load_or_compile(source, arch, image)`): a package's
  // cubin or PTX. Throws CompileError for a unit it rejects, as NVRTC would.
  std::function<std::string(const std::string& source, runtime::cuda::ModuleImage image)> build_image;
  // Weave adjacent independent kernels into one launch at the PTX level
  // (docs/goptx.md, In Stitch): 1 on, 0 off, -1 as $STITCH_WEAVE says (off
  // when unset). Off by default: not yet measured on a GPU.
  int weave = -1;
};

// The canonical graph compiled for `context`'s GPU. Throws UserError naming
// the first group that does not lower. NVRTC rejecting the fused kernels is
// reported through options.warn and the fallback ladder takes over: the
// groups that do not compile alone by their unfused ops, an op that does not
// compile even alone by the reference interpreter (group_fallback.h).
CudaExecutable compile_cuda(const Graph& canonical_graph, PlannerKind planner, std::shared_ptr<CudaContext> context,
                            CubinCache& cache, const CudaCompileOptions& options = {});

// The translation unit compile_cuda builds for `canonical_graph` under
// `options.rows` (required), without a device or a compiler: what a CUDA
// package compiles for each of its architectures (package/). Throws
// UserError when a group does not lower or the emitter fails.
std::string cuda_translation_unit(const Graph& canonical_graph, PlannerKind planner, const CudaCompileOptions& options);

// For test suites: every graph's kernels in one translation unit, one NVRTC
// run, one module. No fallback: a compile failure throws CompileError.
std::vector<CudaExecutable> compile_cuda_batch(const std::vector<Graph>& canonical_graphs, PlannerKind planner,
                                               std::shared_ptr<CudaContext> context, CubinCache& cache,
                                               const CudaCompileOptions& options = {});

// "" when compile_cuda would lower every group of `canonical_graph`'s plan;
// otherwise why not (the first group that does not lower), as
// cpu_unsupported_reason. Needs no GPU: `rows` is the table entry of an
// architecture unless a caller with a context passes
// RowScheduleTarget::for_device, whose ranking compile_cuda uses.
std::string cuda_unsupported_reason(const Graph& canonical_graph, PlannerKind planner,
                                    const schedule::RowScheduleTarget& rows = schedule::RowScheduleTarget::gpu(),
                                    const PlanOptions& plan_options = PlanOptions::for_gpu());

}  // namespace stitch::pipeline
