// --backend cuda for `stitch run` and `stitch check` (docs/cuda-runtime.md):
// one context and one cubin cache per process.
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli.h"
#include "progress.h"
#include "stitch/error.h"
#ifdef STITCH_HAVE_CUDA
#include "options/options.h"
#include "runtime/cuda/context.h"
#include "pipeline/cuda/cuda_route.h"
#include "runtime/cuda/cuda_executable.h"
#include "pipeline/cuda/cuda_tuning.h"
#include "runtime/cuda/device_allocator.h"
#include "pipeline/cuda/user_kernel_cuda_route.h"
#include "package/cuda/cuda_package.h"
#include "runtime/cuda/user_kernel_cuda.h"
#endif

namespace stitch::cli {

#ifdef STITCH_HAVE_CUDA
namespace {

bool simulated = false;

}  // namespace

std::string simulated_driver_path() {
  if (std::string env = environment_options().cuda_sim_driver; !env.empty()) return env;
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const std::filesystem::path beside = self.parent_path() / "libstitch_cuda_sim.so";
    if (std::filesystem::exists(beside, ec)) return beside.string();
  }
  return STITCH_CUDA_SIM_BUILD_PATH;
}

namespace {

// The device, opened once: a second open would only find the same answer.
std::shared_ptr<runtime::cuda::CudaContext> cuda_context() {
  static std::string why;
  static std::shared_ptr<runtime::cuda::CudaContext> context =
      simulated ? runtime::cuda::CudaContext::open(&why, 0, simulated_driver_path())
                : runtime::cuda::CudaContext::open(&why);
  if (!context) {
    throw UserError(simulated ? "--backend cuda-sim needs the simulated CUDA driver (docs/cuda-sim.md): " + why
                              : "--backend cuda needs an NVIDIA GPU and its driver: " + why);
  }
  return context;
}

runtime::cuda::CubinCache& cubin_cache() {
  static runtime::cuda::CubinCache cache;
  return cache;
}

}  // namespace

void require_cuda_device() { cuda_context(); }

std::shared_ptr<runtime::cuda::CudaContext> opened_cuda_context() { return cuda_context(); }

std::string use_simulated_cuda_driver() {
  simulated = true;
  return "cuda";
}

std::unique_ptr<tune::ScheduleTuner> cuda_tuner(bool tune, const std::shared_ptr<runtime::cuda::CudaContext>& context,
                                                runtime::cuda::CubinCache& cubins,
                                                pipeline::CudaCompileOptions& options) {
  if (!tune && !tune::tuning_requested_by_environment()) return nullptr;
  tune::TuneOptions tune_options;
  tune_options.measure.progress = progress_callback("stitch: tuning schedules,");
  auto tuner = std::make_unique<tune::ScheduleTuner>(pipeline::cuda_measurer(context, cubins),
                                                     pipeline::cuda_tuning_directory(cubins), tune_options);
  tune::ScheduleTuner* t = tuner.get();
  options.tuner = [t](const Graph& g, const FusionPlan& plan, const schedule::RowScheduleTarget& target) {
    return t->choose(g, plan, target);
  };
  return tuner;
}

std::vector<Tensor> run_on_cuda(const Graph& canonical, const std::string& planner, const std::vector<Tensor>& inputs,
                                bool tune) {
  std::shared_ptr<runtime::cuda::CudaContext> context = cuda_context();
  pipeline::CudaCompileOptions options;
  options.dump = stage_dumps();
  std::unique_ptr<tune::ScheduleTuner> tuner = cuda_tuner(tune, context, cubin_cache(), options);
  runtime::cuda::CudaExecutable exe =
      pipeline::compile_cuda(canonical, executable_planner("cuda", planner), context, cubin_cache(), options);
  if (tuner) report_schedule_tuning(*tuner);
  std::vector<Tensor> results = exe.run(inputs);
  if (dump_enabled("buffers")) {
    runtime::cuda::DeviceAllocator::Stats s = context->allocator().stats();
    std::cerr << fmt::format("device memory: {} kernels and library calls, {} driver allocations, {} reuses, peak {} "
                             "bytes in use\n",
                             exe.kernel_count(), s.driver_allocations, s.reuses, s.peak_bytes_in_use);
  }
  return results;
}

BackendRun check_run_on_cuda(const Graph& canonical, PlannerKind planner, const std::vector<Tensor>& inputs) {
  pipeline::CudaCompileOptions options;
  options.warn = [](const std::string&) {};  // stitch check reports the fallback as a failed row
  runtime::cuda::CudaExecutable exe =
      pipeline::compile_cuda(canonical, planner, cuda_context(), cubin_cache(), options);
  BackendRun out;
  out.fallback = exe.fallback();
  if (out.fallback.empty()) out.outputs = exe.run(inputs);
  return out;
}

Tensor run_user_kernel_on_cuda(const UserKernel& kernel, const std::vector<KernelArg>& args) {
  return pipeline::run_user_kernel_cuda(cuda_context(), cubin_cache(), kernel, args);
}

package::Package package_for_cuda(const Graph& graph, const package::PackageRequest& request) {
  return package::build_cuda_package(graph, request, cubin_cache());
}

std::vector<Tensor> run_cuda_package(const package::Package& p, const std::string& path, const InputSpec& spec,
                                     Graph& canonical) {
  runtime::cuda::CudaExecutable exe = package::load_cuda_package(p, path, cuda_context());
  canonical = exe.graph();
  return exe.run(gather_inputs(canonical, spec, ModelInputs{}));
}

#else

namespace {
[[noreturn]] void no_cuda() { throw UserError("--backend cuda: this stitch was built without the CUDA toolkit"); }
}  // namespace

void require_cuda_device() { no_cuda(); }
std::string use_simulated_cuda_driver() { no_cuda(); }
std::vector<Tensor> run_on_cuda(const Graph&, const std::string&, const std::vector<Tensor>&, bool) { no_cuda(); }
BackendRun check_run_on_cuda(const Graph&, PlannerKind, const std::vector<Tensor>&) { no_cuda(); }
Tensor run_user_kernel_on_cuda(const UserKernel&, const std::vector<KernelArg>&) { no_cuda(); }
package::Package package_for_cuda(const Graph&, const package::PackageRequest&) { no_cuda(); }
std::vector<Tensor> run_cuda_package(const package::Package&, const std::string&, const InputSpec&, Graph&) { no_cuda(); }

#endif

}  // namespace stitch::cli
