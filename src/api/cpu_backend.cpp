// Backend::Cpu: the CPU executable over the process's kernel cache for the
// requested directory, with the CLI's tuners when asked (tools/stitch,
// cpu_tuners), minus its report on stderr.
#include <memory>

#include "api/backend_executable.h"
#include "api/kernel_caches.h"
#include "runtime/cpu/executable.h"
#include "tune/fusion_tuner.h"
#include "tune/schedule_tuner.h"

namespace stitch::api {

namespace {

class CpuBackendExecutable final : public BackendExecutable {
 public:
  explicit CpuBackendExecutable(runtime::cpu::CpuExecutable exe) : exe_(std::move(exe)) {
    const runtime::cpu::CacheStats& s = exe_.cache_stats();
    stats_ = {s.memory_hits, s.hits, s.misses + s.recompiled_corrupt};
  }

  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override { return exe_.run(inputs); }
  void run(const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) override { exe_.run(inputs, outputs); }
  int kernel_count() const override { return exe_.kernel_count(); }
  const Graph& graph() const override { return exe_.graph(); }
  const FusionPlan& plan() const override { return exe_.plan(); }
  const std::string& fallback() const override { return exe_.fallback(); }
  const CacheStats& cache_stats() const override { return stats_; }

 private:
  runtime::cpu::CpuExecutable exe_;
  CacheStats stats_;
};

}  // namespace

std::unique_ptr<BackendExecutable> compile_for_cpu(const Graph& canonical, const BackendRequest& request) {
  runtime::cpu::KernelCache& cache = kernel_cache(request.cache_directory);
  runtime::cpu::CompileOptions options;
  options.dump = request.dump;
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
  return std::make_unique<CpuBackendExecutable>(
      runtime::cpu::CpuExecutable::compile(canonical, request.planner, cache, options));
}

}  // namespace stitch::api
