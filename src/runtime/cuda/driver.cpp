#include "runtime/cuda/driver.h"

#include <dlfcn.h>

#include <map>
#include <memory>
#include <mutex>

#include <fmt/format.h>

#include "stitch/error.h"

namespace stitch::runtime::cuda {
namespace {

// The symbol a cuda.h name stands for: the macro expansion, spelled as text.
#define STITCH_CUDA_SYMBOL_TEXT(name) STITCH_CUDA_SYMBOL_TEXT_EXPANDED(name)
#define STITCH_CUDA_SYMBOL_TEXT_EXPANDED(name) #name

struct Loaded {
  std::unique_ptr<DriverApi> api;
  std::string why;
};

Loaded load(const std::string& library) {
  Loaded out;
  // RTLD_NODELETE: the driver keeps threads of its own; it stays mapped until exit.
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!handle) {
    const char* error = dlerror();
    out.why = fmt::format("the NVIDIA driver library could not be loaded ({})", error ? error : library);
    return out;
  }
  auto api = std::make_unique<DriverApi>();
  std::string missing;
#define STITCH_CUDA_RESOLVE(name)                                                              \
  api->name = reinterpret_cast<decltype(api->name)>(dlsym(handle, STITCH_CUDA_SYMBOL_TEXT(name))); \
  if (!api->name) missing += (missing.empty() ? "" : ", ") + std::string(STITCH_CUDA_SYMBOL_TEXT(name));
  STITCH_CUDA_DRIVER_FUNCTIONS(STITCH_CUDA_RESOLVE)
#undef STITCH_CUDA_RESOLVE
  if (!missing.empty()) {
    out.why = fmt::format("{} lacks {}: the driver is older than CUDA {}.{}, the toolkit Stitch was built with",
                          library, missing, CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10);
    return out;
  }
  api->loads_ptx = dlsym(handle, "stitch_cuda_sim_driver") != nullptr;
  if (CUresult r = api->cuInit(0); r != CUDA_SUCCESS) {
    out.why = fmt::format("cuInit failed: {}", describe_result(*api, r));
    return out;
  }
  api->cuDriverGetVersion(&api->version);
  int count = 0;
  if (CUresult r = api->cuDeviceGetCount(&count); r != CUDA_SUCCESS || count == 0) {
    out.why = r != CUDA_SUCCESS ? fmt::format("cuDeviceGetCount failed: {}", describe_result(*api, r))
                                : std::string("the NVIDIA driver reports no CUDA device");
    return out;
  }
  out.api = std::move(api);
  return out;
}

}  // namespace

const DriverApi* load_driver(std::string* why, const std::string& library) {
  // One attempt per library name and process: a failed load is not retried.
  static std::mutex mutex;
  static std::map<std::string, Loaded> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = loaded.find(library);
  if (it == loaded.end()) it = loaded.emplace(library, load(library)).first;
  if (!it->second.api && why) *why = it->second.why;
  return it->second.api.get();
}

std::string describe_result(const DriverApi& api, CUresult result) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (api.cuGetErrorName) api.cuGetErrorName(result, &name);
  if (api.cuGetErrorString) api.cuGetErrorString(result, &text);
  return fmt::format("{} ({})", name ? name : fmt::format("CUresult {}", static_cast<int>(result)),
                     text ? text : "no description");
}

void check(const DriverApi& api, CUresult result, const char* what) {
  if (result != CUDA_SUCCESS) fail_internal(fmt::format("{} failed: {}", what, describe_result(api, result)), __FILE__, __LINE__);
}

}  // namespace stitch::runtime::cuda
