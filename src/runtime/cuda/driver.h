// The CUDA driver API, loaded at run time with dlopen (docs/cuda-runtime.md,
// Loading the driver): a CUDA-enabled build of Stitch starts, and its tests
// pass, on a machine with no NVIDIA driver; only `--backend cuda` needs one.
// The toolkit's cuda.h supplies the types and prototypes; no library is linked.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string>

namespace stitch::runtime::cuda {

// Every driver entry point Stitch calls. The names are cuda.h's, whose macros
// select the current ABI version of each (cuMemAlloc is cuMemAlloc_v2), so
// the symbol looked up is the one the prototype describes.
#define STITCH_CUDA_DRIVER_FUNCTIONS(X) \
  X(cuInit)                             \
  X(cuDriverGetVersion)                 \
  X(cuGetErrorName)                     \
  X(cuGetErrorString)                   \
  X(cuDeviceGetCount)                   \
  X(cuDeviceGet)                        \
  X(cuDeviceGetName)                    \
  X(cuDeviceGetAttribute)               \
  X(cuDeviceTotalMem)                   \
  X(cuDevicePrimaryCtxRetain)           \
  X(cuDevicePrimaryCtxRelease)          \
  X(cuCtxSetCurrent)                    \
  X(cuCtxSynchronize)                   \
  X(cuModuleLoadData)                   \
  X(cuModuleUnload)                     \
  X(cuModuleGetFunction)                \
  X(cuFuncSetAttribute)                 \
  X(cuFuncGetAttribute)                 \
  X(cuLaunchKernel)                     \
  X(cuMemAlloc)                         \
  X(cuMemFree)                          \
  X(cuMemGetInfo)                       \
  X(cuMemcpyHtoDAsync)                  \
  X(cuMemcpyDtoHAsync)                  \
  X(cuMemcpyDtoDAsync)                  \
  X(cuMemsetD8Async)                    \
  X(cuStreamCreate)                     \
  X(cuStreamDestroy)                    \
  X(cuStreamSynchronize)                \
  X(cuStreamWaitEvent)                  \
  X(cuEventCreate)                      \
  X(cuEventDestroy)                     \
  X(cuEventRecord)                      \
  X(cuEventSynchronize)                 \
  X(cuEventElapsedTime)

struct DriverApi {
#define STITCH_CUDA_DRIVER_POINTER(name) decltype(&::name) name = nullptr;
  STITCH_CUDA_DRIVER_FUNCTIONS(STITCH_CUDA_DRIVER_POINTER)
#undef STITCH_CUDA_DRIVER_POINTER
  int version = 0;  // cuDriverGetVersion: 12040 for 12.4
  // The simulated driver (docs/cuda-sim.md), which exports the marker
  // stitch_cuda_sim_driver: it loads PTX text instead of cubins.
  bool loads_ptx = false;
};

// The driver, loaded and initialised once per process (thread-safe), or
// nullptr with `why` set: no libcuda.so.1, a missing entry point (a driver
// older than the toolkit's headers), or cuInit failing (no device, a broken
// install). `library` overrides the file name, for tests.
const DriverApi* load_driver(std::string* why, const std::string& library = "libcuda.so.1");

// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)", from the driver when loaded.
std::string describe_result(const DriverApi& api, CUresult result);

// Throws stitch::InternalError "<what> failed: <describe_result>" unless
// `result` is CUDA_SUCCESS: a driver call Stitch made that failed is loud.
void check(const DriverApi& api, CUresult result, const char* what);

}  // namespace stitch::runtime::cuda
