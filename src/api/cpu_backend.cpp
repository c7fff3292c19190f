// Backend::Cpu: the CPU executable over the process's kernel cache for the
// requested directory, with the CLI's tuners when asked (tools/stitch,
// cpu_tuners), minus its report on stderr.
#include <memory>

#include "api/backend_executable.h"
#include "api/kernel_caches.h"
#include "package/package_file.h"
#include "package/package_load.h"
#include "pipeline/cpu_route.h"
#include "runtime/cpu/executable.h"
#include "tune/fusion_tuner.h"
#include "tune/schedule_tuner.h"

namespace stitch::api {

std::unique_ptr<BackendExecutable> compile_for_cpu(const Graph& canonical, const BackendRequest& request) {
  runtime::cpu::KernelCache& cache = kernel_cache(request.cache_directory);
  pipeline::CpuCompileOptions options;
  options.dump = request.dump;
  options.plan.f32_intermediates = request.f32_intermediates;
  // The tuners are needed only while compiling: their choices are cached on
  // disk and the compiled graph keeps what they chose.
  std::unique_ptr<tune::FusionTuner> fusions;
  std::unique_ptr<tune::ScheduleTuner> schedules;
  if (request.tune) {
    fusions = std::make_unique<tune::FusionTuner>(cache);
    schedules = std::make_unique<tune::ScheduleTuner>(cache);
    tune::FusionTuner* f = fusions.get();
    tune::ScheduleTuner* s = schedules.get();
    options.plan_tuner = [f](const Graph& g, const FusionPlan& plan, const schedule::RowScheduleTarget& target) {
      return f->refine(g, plan, target);
    };
    options.tuner = [s](const Graph& g, const FusionPlan& plan, const schedule::RowScheduleTarget& target) {
      return s->choose(g, plan, target);
    };
    options.tuner_key = s->key();
  }
  runtime::cpu::CpuExecutable exe = pipeline::compile_cpu(canonical, request.planner, cache, options);
  if (!request.constant_params.empty()) exe.set_constant_params(request.constant_params);
  const runtime::cpu::CacheStats& s = exe.cache_stats();
  const CacheStats stats{s.memory_hits, s.hits, s.compiles(), s.remote_hits};
  return std::make_unique<BackendExecutableOf<runtime::cpu::CpuExecutable>>(std::move(exe), stats);
}

std::unique_ptr<BackendExecutable> load_cpu_package(const package::Package& p, const std::string& path) {
  return std::make_unique<BackendExecutableOf<runtime::cpu::CpuExecutable>>(package::load_cpu_package(p, path),
                                                                             CacheStats{});
}

}  // namespace stitch::api
