// The inspection side of the fake CUDA driver (docs/cuda-allocator-and-cublas.md,
// The fake driver): tests load the fake through load_driver like the real
// libcuda.so.1, then look these functions up on the same, already loaded,
// library to see what the code under test asked the "device" to do.
//
// Test-only: the library is never installed and nothing outside tests/ loads it.
#pragma once

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// One cuLaunchKernel call as the fake saw it; nothing is executed.
typedef struct StitchFakeCudaLaunch {
  char function_name[256];
  unsigned grid[3];
  unsigned block[3];
  unsigned shared_bytes;
  int carveout;  // the function's preferred shared-memory carveout at launch; -1 when never set
  CUstream stream;
  // The caller's array, only meaningful while the caller keeps it alive; the
  // argument bytes themselves are copied when stitch_fake_cuda_record_param_sizes
  // said how many there are and how large each one is.
  void** kernel_params;
} StitchFakeCudaLaunch;

// What orders work between streams, in call order: 'R' an event recorded on
// `stream`, 'W' `stream` made to wait for `event`, 'L' a kernel launched on
// `stream` (event null).
typedef struct StitchFakeCudaStreamOp {
  char kind;
  CUstream stream;
  CUevent event;
} StitchFakeCudaStreamOp;

typedef struct StitchFakeCudaHandles {
  int streams;
  int events;
  int modules;
  int primary_context_retains;
} StitchFakeCudaHandles;

// Frees every allocation and forgets launches, handles, injected failures and
// the configured memory size: the state of a freshly loaded fake.
void stitch_fake_cuda_reset(void);
int64_t stitch_fake_cuda_live_allocations(void);
int64_t stitch_fake_cuda_bytes_allocated(void);  // sum of the live allocations' requested sizes
int64_t stitch_fake_cuda_alloc_calls(void);      // successful cuMemAlloc calls since the reset
int64_t stitch_fake_cuda_free_calls(void);       // successful cuMemFree calls since the reset
// Successful copies of at least one byte since the reset, each way.
int64_t stitch_fake_cuda_host_to_device_copies(void);
int64_t stitch_fake_cuda_device_to_host_copies(void);
// The next `count` cuMemAlloc calls return CUDA_ERROR_OUT_OF_MEMORY.
void stitch_fake_cuda_fail_next_allocations(int count);
// The device memory cuMemGetInfo and cuDeviceTotalMem report; an allocation
// that would take the live total above it fails with CUDA_ERROR_OUT_OF_MEMORY.
void stitch_fake_cuda_set_total_memory(size_t bytes);
int stitch_fake_cuda_launch_count(void);
// 1 and *out filled for 0 <= index < launch_count, else 0.
int stitch_fake_cuda_get_launch(int index, StitchFakeCudaLaunch* out);
// Later launches copy the bytes of their first `count` arguments, argument i
// being sizes[i] bytes (a kernel's parameter list is not knowable from void**).
void stitch_fake_cuda_record_param_sizes(const size_t* sizes, int count);
// 1 and `size` bytes of argument `param` of launch `launch` in *out, when that
// argument was recorded with exactly that size; else 0.
int stitch_fake_cuda_get_launch_param(int launch, int param, void* out, size_t size);
void stitch_fake_cuda_live_handles(StitchFakeCudaHandles* out);
int stitch_fake_cuda_stream_op_count(void);
// 1 and *out filled for 0 <= index < stream_op_count, else 0.
int stitch_fake_cuda_get_stream_op(int index, StitchFakeCudaStreamOp* out);

#ifdef __cplusplus
}  // extern "C"
#endif

#define STITCH_FAKE_CUDA_INSPECTION_FUNCTIONS(X) \
  X(stitch_fake_cuda_reset)                      \
  X(stitch_fake_cuda_live_allocations)           \
  X(stitch_fake_cuda_bytes_allocated)            \
  X(stitch_fake_cuda_alloc_calls)                \
  X(stitch_fake_cuda_free_calls)                 \
  X(stitch_fake_cuda_host_to_device_copies)      \
  X(stitch_fake_cuda_device_to_host_copies)      \
  X(stitch_fake_cuda_fail_next_allocations)      \
  X(stitch_fake_cuda_set_total_memory)           \
  X(stitch_fake_cuda_launch_count)               \
  X(stitch_fake_cuda_get_launch)                 \
  X(stitch_fake_cuda_record_param_sizes)         \
  X(stitch_fake_cuda_get_launch_param)           \
  X(stitch_fake_cuda_live_handles)               \
  X(stitch_fake_cuda_stream_op_count)            \
  X(stitch_fake_cuda_get_stream_op)

#ifdef __cplusplus
#include <dlfcn.h>

#include <string>

namespace stitch::fake_cuda {

// The inspection functions of the fake already loaded from `path` (by
// load_driver, RTLD_LOCAL, so its symbols are reachable only through its own
// handle): RTLD_NOLOAD finds that handle without loading a second copy.
struct Inspection {
#define STITCH_FAKE_CUDA_POINTER(name) decltype(&::name) name = nullptr;
  STITCH_FAKE_CUDA_INSPECTION_FUNCTIONS(STITCH_FAKE_CUDA_POINTER)
#undef STITCH_FAKE_CUDA_POINTER

  // False with `why` set when the fake is not loaded or lacks a function.
  bool open(const char* path, std::string* why) {
    void* handle = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (!handle) {
      *why = std::string("the fake CUDA driver is not loaded: ") + path;
      return false;
    }
#define STITCH_FAKE_CUDA_RESOLVE(name)                                     \
  name = reinterpret_cast<decltype(name)>(dlsym(handle, #name));           \
  if (!name) {                                                             \
    *why = std::string("the fake CUDA driver lacks ") + #name;             \
    return false;                                                          \
  }
    STITCH_FAKE_CUDA_INSPECTION_FUNCTIONS(STITCH_FAKE_CUDA_RESOLVE)
#undef STITCH_FAKE_CUDA_RESOLVE
    return true;
  }
};

}  // namespace stitch::fake_cuda
#endif
