#include "runtime/cuda/driver.h"

#include <map>
#include <memory>
#include <mutex>

#include <fmt/format.h>

#include "runtime/cuda/dl_symbols.h"
#include "stitch/error.h"

namespace stitch::runtime::cuda {
namespace {

using Loaded = LoadedApi<DriverApi>;

Loaded load(const std::string& library) {
  Loaded out;
  DlSymbols lib(library);
  if (!lib.opened()) {
    out.why = fmt::format("the NVIDIA driver library could not be loaded ({})", lib.error());
    return out;
  }
  auto api = std::make_unique<DriverApi>();
#define STITCH_CUDA_RESOLVE(name) lib.resolve(api->name, STITCH_DL_SYMBOL_TEXT(name));
  STITCH_CUDA_DRIVER_FUNCTIONS(STITCH_CUDA_RESOLVE)
#undef STITCH_CUDA_RESOLVE
  if (!lib.missing().empty()) {
    out.why = fmt::format("{} lacks {}: the driver is older than CUDA {}.{}, the toolkit Stitch was built with",
                          library, lib.missing(), CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10);
    return out;
  }
  api->loads_ptx = lib.has("stitch_cuda_sim_driver");
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
