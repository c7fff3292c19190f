#include "pipeline/emit_route.h"

#include <fmt/format.h>

#include <vector>

#include "codegen/cpu/cpp_emitter.h"
#include "stitch/error.h"
#ifdef STITCH_HAVE_CUDA
#include "codegen/cuda/cuda_emitter.h"
#include "gpu_model/analytic.h"
#endif

namespace stitch::pipeline {

Compilation emitted_compilation(const Graph& canonical, PlannerKind planner, const std::string& backend,
                                         std::optional<schedule::RowScheduleKind> forced,
                                         const std::string& model_target, const StageDump& dump,
                                         std::string_view last_stage) {
  Backend emitter;
  emitter.name = backend;
  schedule::RowScheduleTarget rows = schedule::RowScheduleTarget::cpu();
  PlanOptions options;
  if (backend == "cuda") {
#ifdef STITCH_HAVE_CUDA
    emitter.emit = [](const std::vector<kir::Kernel>& kernels) {
      return codegen::cuda::emit_cuda_translation_unit(kernels);
    };
    rows = gpu_model::with_row_model(schedule::RowScheduleTarget::gpu(), model_target);
    options = PlanOptions::for_gpu();
#else
    (void)model_target;
    throw UserError("--backend cuda: this stitch was built without the CUDA toolkit");
#endif
  } else if (backend == "cpu") {
    emitter.emit = [](const std::vector<kir::Kernel>& kernels) {
      return codegen::cpu::emit_cpp_translation_unit(kernels);
    };
  } else {
    throw UserError(fmt::format("--backend {}: use cpu or cuda", backend));
  }
  rows.forced = forced;
  Compilation c = compilation_of(canonical, planner, options, rows);
  run_pipeline(c, emitter, "split-reductions", last_stage, dump);
  return c;
}

std::string kernel_source(const kir::Kernel& kernel, const std::string& backend) {
#ifdef STITCH_HAVE_CUDA
  if (backend == "cuda") return codegen::cuda::emit_cuda(kernel);
#endif
  (void)backend;
  return codegen::cpu::emit_cpp_kernel(kernel);
}

}  // namespace stitch::pipeline
