// Backend::Cuda (docs/cuda-runtime.md): one device context and one cubin
// cache per directory for the whole process, as `stitch run --backend cuda`
// keeps one each. Without the CUDA toolkit at build time every entry point
// says so.
#include <memory>
#include <string>

#include "api/backend_executable.h"
#include "stitch/error.h"
#ifdef STITCH_HAVE_CUDA
#include <map>
#include <mutex>

#include "runtime/cuda/context.h"
#include "runtime/cuda/cubin_cache.h"
#include "pipeline/cuda/cuda_route.h"
#include "runtime/cuda/cuda_executable.h"
#include "pipeline/cuda/cuda_tuning.h"
#include "package/cuda/cuda_package.h"
#include "tune/schedule_tuner.h"
#endif

namespace stitch::api {

#ifdef STITCH_HAVE_CUDA

namespace {

struct Device {
  std::shared_ptr<runtime::cuda::CudaContext> context;
  std::string why;  // when context is null
};

// Device 0, opened once: a second open would only find the same answer.
const Device& device() {
  static const Device d = [] {
    Device out;
    std::string why;
    out.context = runtime::cuda::CudaContext::shared(&why);
    if (!out.context) out.why = "no usable NVIDIA GPU and driver: " + why;
    return out;
  }();
  return d;
}

runtime::cuda::CubinCache& cubin_cache(const std::filesystem::path& directory) {
  static std::mutex mutex;
  static std::map<std::filesystem::path, runtime::cuda::CubinCache> caches;
  std::lock_guard<std::mutex> lock(mutex);
  return caches.try_emplace(directory, directory).first->second;
}

}  // namespace

bool cuda_device_available(std::string* why) {
  if (why) *why = device().why;
  return device().context != nullptr;
}

std::unique_ptr<BackendExecutable> load_cuda_package(const package::Package& p, const std::string& path) {
  std::string why;
  if (!cuda_device_available(&why)) throw UserError(path + ": a CUDA package, and Backend::Cuda is not available: " + why);
  return std::make_unique<BackendExecutableOf<runtime::cuda::CudaExecutable>>(
      package::load_cuda_package(p, path, device().context), CacheStats{});
}

std::unique_ptr<BackendExecutable> compile_for_cuda(const Graph& canonical, const BackendRequest& request) {
  std::string why;
  if (!cuda_device_available(&why)) throw UserError("Backend::Cuda is not available: " + why);
  const std::shared_ptr<runtime::cuda::CudaContext>& context = device().context;
  runtime::cuda::CubinCache& cubins = cubin_cache(request.cache_directory);
  pipeline::CudaCompileOptions options;
  options.dump = request.dump;
  options.plan.f32_intermediates = request.f32_intermediates;
  std::unique_ptr<tune::ScheduleTuner> tuner;
  if (request.tune) {
    tuner = std::make_unique<tune::ScheduleTuner>(pipeline::cuda_measurer(context, cubins),
                                                  pipeline::cuda_tuning_directory(cubins));
    tune::ScheduleTuner* t = tuner.get();
    options.tuner = [t](const Graph& g, const FusionPlan& plan, const schedule::RowScheduleTarget& target) {
      return t->choose(g, plan, target);
    };
  }
  // The cubin cache counts for the whole process; this compile's share is
  // the difference (another thread compiling at once may blur it).
  const runtime::cuda::CubinCacheStats before = cubins.stats();
  runtime::cuda::CudaExecutable exe =
      pipeline::compile_cuda(canonical, request.planner, context, cubins, options);
  const runtime::cuda::CubinCacheStats after = cubins.stats();
  const runtime::EntryCounts delta = after - before;
  const CacheStats stats{0, delta.hits, delta.compiles(), delta.remote_hits};
  return std::make_unique<BackendExecutableOf<runtime::cuda::CudaExecutable>>(std::move(exe), stats);
}

#else

bool cuda_device_available(std::string* why) {
  if (why) *why = "this Stitch was built without the CUDA toolkit";
  return false;
}

std::unique_ptr<BackendExecutable> load_cuda_package(const package::Package&, const std::string& path) {
  throw UserError(path + ": a CUDA package, and this Stitch was built without the CUDA toolkit");
}

std::unique_ptr<BackendExecutable> compile_for_cuda(const Graph&, const BackendRequest&) {
  throw UserError("Backend::Cuda: this Stitch was built without the CUDA toolkit");
}

#endif

}  // namespace stitch::api
