// A fake CUDA driver for tests on machines without a GPU
// (docs/cuda-allocator-and-cublas.md, The fake driver). It exports every entry
// point of STITCH_CUDA_DRIVER_FUNCTIONS under the symbol the real libcuda.so.1
// uses, so load_driver accepts it, and behaves like one H100 whose memory is
// host memory: copies are memcpy, kernels are recorded, never run.
//
// Test-only: never installed, never loaded outside tests/.
#include "fake_cuda_driver.h"

#include <elf.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/cuda/driver.h"
#include "runtime/cuda/h100_attributes.h"

// The opaque handle types of cuda.h, given a body here: the fake's objects.
struct CUctx_st {
  int unused = 0;
};
struct CUmod_st;
struct CUfunc_st {
  CUmod_st* module = nullptr;
  std::string name;
  std::map<int, int> set_attributes;  // cuFuncSetAttribute's values, by attribute
};
struct CUmod_st {
  std::string image;
  std::map<std::string, std::unique_ptr<CUfunc_st>> functions;
};
struct CUstream_st {
  unsigned flags = 0;
};
struct CUevent_st {
  unsigned flags = 0;
  bool recorded = false;
  std::chrono::steady_clock::time_point when;
};

namespace {

constexpr size_t kDefaultTotalMemory = size_t{80} << 30;
constexpr size_t kAllocationAlignment = 256;  // what cuMemAlloc guarantees
constexpr int kOptInSharedBytes = stitch::runtime::cuda::kH100SharedBytesOptIn;

struct RecordedLaunch {
  StitchFakeCudaLaunch launch{};
  std::vector<std::string> param_bytes;
};

struct FakeState {
  std::mutex mutex;
  std::map<CUdeviceptr, size_t> allocations;  // ordered: a copy's range is looked up by address
  size_t total_memory = kDefaultTotalMemory;
  size_t bytes_allocated = 0;
  int failing_allocations = 0;
  int64_t alloc_calls = 0, free_calls = 0;
  int64_t host_to_device_copies = 0, device_to_host_copies = 0;  // of at least one byte
  std::set<CUstream> streams;
  std::set<CUevent> events;
  std::set<CUmodule> modules;
  int primary_context_retains = 0;
  CUcontext current = nullptr;
  std::vector<RecordedLaunch> launches;
  std::vector<size_t> param_sizes;
  std::vector<StitchFakeCudaStreamOp> stream_ops;
};

FakeState& state() {
  static FakeState s;
  return s;
}

CUctx_st the_primary_context;

bool valid_stream(const FakeState& s, CUstream stream) { return stream == nullptr || s.streams.count(stream) > 0; }

// True when [ptr, ptr + bytes) lies inside one live allocation, as a real
// copy must; a fake that accepted any address would hide the bugs it is for.
bool inside_allocation(const FakeState& s, CUdeviceptr ptr, size_t bytes) {
  auto it = s.allocations.upper_bound(ptr);
  if (it == s.allocations.begin()) return false;
  --it;
  return ptr + bytes <= it->first + it->second;
}

// A cubin is an ELF64 file, and cuModuleLoadData gets no length: the extent is
// the farthest byte the headers and sections reach.
size_t elf_extent(const unsigned char* image) {
  Elf64_Ehdr header;
  std::memcpy(&header, image, sizeof header);
  size_t end = sizeof header;
  end = std::max<size_t>(end, header.e_phoff + size_t{header.e_phnum} * header.e_phentsize);
  end = std::max<size_t>(end, header.e_shoff + size_t{header.e_shnum} * header.e_shentsize);
  for (unsigned i = 0; i < header.e_shnum; ++i) {
    Elf64_Shdr section;
    std::memcpy(&section, image + header.e_shoff + size_t{i} * header.e_shentsize, sizeof section);
    if (section.sh_type != SHT_NOBITS) end = std::max<size_t>(end, section.sh_offset + section.sh_size);
  }
  return end;
}

}  // namespace

// Referencing every listed entry point makes a new one that the fake lacks a
// link error (the target links with --no-undefined), not a test-time surprise.
#define STITCH_FAKE_CUDA_EXPORT(name) reinterpret_cast<const void*>(&::name),
extern "C" const void* const stitch_fake_cuda_exports[] = {STITCH_CUDA_DRIVER_FUNCTIONS(STITCH_FAKE_CUDA_EXPORT)};
#undef STITCH_FAKE_CUDA_EXPORT

CUresult CUDAAPI cuInit(unsigned int) { return CUDA_SUCCESS; }

CUresult CUDAAPI cuDriverGetVersion(int* version) {
  if (!version) return CUDA_ERROR_INVALID_VALUE;
  *version = CUDA_VERSION;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetErrorName(CUresult error, const char** text) {
  switch (error) {
#define STITCH_FAKE_CUDA_NAME(code) \
  case code:                        \
    *text = #code;                  \
    return CUDA_SUCCESS;
    STITCH_FAKE_CUDA_NAME(CUDA_SUCCESS)
    STITCH_FAKE_CUDA_NAME(CUDA_ERROR_INVALID_VALUE)
    STITCH_FAKE_CUDA_NAME(CUDA_ERROR_OUT_OF_MEMORY)
    STITCH_FAKE_CUDA_NAME(CUDA_ERROR_NOT_INITIALIZED)
    STITCH_FAKE_CUDA_NAME(CUDA_ERROR_INVALID_DEVICE)
    STITCH_FAKE_CUDA_NAME(CUDA_ERROR_INVALID_IMAGE)
    STITCH_FAKE_CUDA_NAME(CUDA_ERROR_INVALID_HANDLE)
    STITCH_FAKE_CUDA_NAME(CUDA_ERROR_NOT_FOUND)
    STITCH_FAKE_CUDA_NAME(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)
#undef STITCH_FAKE_CUDA_NAME
    default:
      *text = nullptr;
      return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char** text) {
  if (cuGetErrorName(error, text) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_VALUE;
  *text = "reported by the fake CUDA driver of Stitch's tests";
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetCount(int* count) {
  *count = 1;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice* device, int ordinal) {
  if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
  *device = 0;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetName(char* name, int length, CUdevice device) {
  if (device != 0) return CUDA_ERROR_INVALID_DEVICE;
  if (!name || length <= 0) return CUDA_ERROR_INVALID_VALUE;
  std::string_view fake = "Stitch fake H100 (host memory)";
  const size_t n = std::min(fake.size(), static_cast<size_t>(length - 1));
  std::memcpy(name, fake.data(), n);
  name[n] = '\0';
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice device) {
  if (device != 0) return CUDA_ERROR_INVALID_DEVICE;
  return stitch::runtime::cuda::h100_attribute(attribute, value) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuDeviceTotalMem(size_t* bytes, CUdevice device) {
  if (device != 0) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard<std::mutex> lock(state().mutex);
  *bytes = state().total_memory;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice device) {
  if (device != 0) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard<std::mutex> lock(state().mutex);
  ++state().primary_context_retains;
  *context = &the_primary_context;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice device) {
  if (device != 0) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard<std::mutex> lock(state().mutex);
  if (state().primary_context_retains == 0) return CUDA_ERROR_INVALID_CONTEXT;
  --state().primary_context_retains;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetCurrent(CUcontext context) {
  if (context != nullptr && context != &the_primary_context) return CUDA_ERROR_INVALID_CONTEXT;
  std::lock_guard<std::mutex> lock(state().mutex);
  state().current = context;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSynchronize(void) { return CUDA_SUCCESS; }

CUresult CUDAAPI cuModuleLoadData(CUmodule* module, const void* image) {
  if (!module || !image) return CUDA_ERROR_INVALID_VALUE;
  const auto* bytes = static_cast<const unsigned char*>(image);
  if (std::memcmp(bytes, ELFMAG, SELFMAG) != 0 || bytes[EI_CLASS] != ELFCLASS64) return CUDA_ERROR_INVALID_IMAGE;
  auto loaded = std::make_unique<CUmod_st>();
  loaded->image.assign(reinterpret_cast<const char*>(bytes), elf_extent(bytes));
  std::lock_guard<std::mutex> lock(state().mutex);
  *module = loaded.release();
  state().modules.insert(*module);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleUnload(CUmodule module) {
  std::lock_guard<std::mutex> lock(state().mutex);
  if (state().modules.erase(module) == 0) return CUDA_ERROR_INVALID_HANDLE;
  delete module;
  return CUDA_SUCCESS;
}

// A kernel is "in" the image when its name appears there as a whole
// NUL-terminated string, as in a cubin's string table.
CUresult CUDAAPI cuModuleGetFunction(CUfunction* function, CUmodule module, const char* name) {
  std::lock_guard<std::mutex> lock(state().mutex);
  if (state().modules.count(module) == 0) return CUDA_ERROR_INVALID_HANDLE;
  if (!function || !name || !*name) return CUDA_ERROR_INVALID_VALUE;
  auto& slot = module->functions[name];
  if (!slot) {
    const std::string needle = std::string(1, '\0') + name + std::string(1, '\0');
    if (module->image.find(needle) == std::string::npos) {
      module->functions.erase(name);
      return CUDA_ERROR_NOT_FOUND;
    }
    slot = std::make_unique<CUfunc_st>();
    slot->module = module;
    slot->name = name;
  }
  *function = slot.get();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncSetAttribute(CUfunction function, CUfunction_attribute attribute, int value) {
  if (!function) return CUDA_ERROR_INVALID_HANDLE;
  std::lock_guard<std::mutex> lock(state().mutex);
  switch (attribute) {
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
      if (value < 0 || value > kOptInSharedBytes) return CUDA_ERROR_INVALID_VALUE;
      break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
      if (value < -1 || value > 100) return CUDA_ERROR_INVALID_VALUE;
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;  // read-only attributes, as on the real driver
  }
  function->set_attributes[attribute] = value;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncGetAttribute(int* value, CUfunction_attribute attribute, CUfunction function) {
  if (!function) return CUDA_ERROR_INVALID_HANDLE;
  std::lock_guard<std::mutex> lock(state().mutex);
  if (auto it = function->set_attributes.find(attribute); it != function->set_attributes.end()) {
    *value = it->second;
    return CUDA_SUCCESS;
  }
  switch (attribute) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = 1024; break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *value = 0; break;
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: *value = 0; break;
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *value = 0; break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *value = 32; break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION: *value = 90; break;
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *value = 90; break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *value = stitch::runtime::cuda::kH100SharedBytesPerBlock; break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: *value = -1; break;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

// Checks what the real driver would refuse, then records the launch.
CUresult CUDAAPI cuLaunchKernel(CUfunction function, unsigned int grid_x, unsigned int grid_y, unsigned int grid_z,
                                unsigned int block_x, unsigned int block_y, unsigned int block_z,
                                unsigned int shared_bytes, CUstream stream, void** kernel_params, void**) {
  if (!function) return CUDA_ERROR_INVALID_HANDLE;
  std::lock_guard<std::mutex> lock(state().mutex);
  FakeState& s = state();
  if (!valid_stream(s, stream)) return CUDA_ERROR_INVALID_HANDLE;
  if (s.modules.count(function->module) == 0) return CUDA_ERROR_INVALID_HANDLE;
  if (grid_x == 0 || grid_y == 0 || grid_z == 0 || grid_y > 65535 || grid_z > 65535 || grid_x > 2147483647u) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (block_x == 0 || block_y == 0 || block_z == 0 || block_x > 1024 || block_y > 1024 || block_z > 64 ||
      uint64_t{block_x} * block_y * block_z > 1024) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  int dynamic_limit = stitch::runtime::cuda::kH100SharedBytesPerBlock;
  if (auto it = function->set_attributes.find(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
      it != function->set_attributes.end()) {
    dynamic_limit = it->second;
  }
  if (shared_bytes > static_cast<unsigned>(dynamic_limit)) return CUDA_ERROR_INVALID_VALUE;
  RecordedLaunch r;
  std::strncpy(r.launch.function_name, function->name.c_str(), sizeof r.launch.function_name - 1);
  r.launch.grid[0] = grid_x, r.launch.grid[1] = grid_y, r.launch.grid[2] = grid_z;
  r.launch.block[0] = block_x, r.launch.block[1] = block_y, r.launch.block[2] = block_z;
  r.launch.shared_bytes = shared_bytes;
  r.launch.carveout = -1;
  if (auto it = function->set_attributes.find(CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT);
      it != function->set_attributes.end()) {
    r.launch.carveout = it->second;
  }
  r.launch.stream = stream;
  r.launch.kernel_params = kernel_params;
  if (!s.param_sizes.empty() && !kernel_params) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < s.param_sizes.size(); ++i) {
    r.param_bytes.emplace_back(static_cast<const char*>(kernel_params[i]), s.param_sizes[i]);
  }
  s.stream_ops.push_back({'L', r.launch.stream, nullptr});
  s.launches.push_back(std::move(r));
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAlloc(CUdeviceptr* ptr, size_t bytes) {
  if (!ptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(state().mutex);
  FakeState& s = state();
  if (s.failing_allocations > 0) {
    --s.failing_allocations;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (bytes > s.total_memory - s.bytes_allocated) return CUDA_ERROR_OUT_OF_MEMORY;
  const size_t rounded = (bytes + kAllocationAlignment - 1) / kAllocationAlignment * kAllocationAlignment;
  void* host = std::aligned_alloc(kAllocationAlignment, rounded);
  if (!host) return CUDA_ERROR_OUT_OF_MEMORY;
  // Not zeros: code that reads memory it never wrote sees NaNs and -1s.
  std::memset(host, 0xff, rounded);
  *ptr = reinterpret_cast<CUdeviceptr>(host);
  s.allocations.emplace(*ptr, bytes);
  s.bytes_allocated += bytes;
  ++s.alloc_calls;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemFree(CUdeviceptr ptr) {
  if (ptr == 0) return CUDA_SUCCESS;
  std::lock_guard<std::mutex> lock(state().mutex);
  FakeState& s = state();
  auto it = s.allocations.find(ptr);
  if (it == s.allocations.end()) return CUDA_ERROR_INVALID_VALUE;
  s.bytes_allocated -= it->second;
  std::free(reinterpret_cast<void*>(ptr));
  s.allocations.erase(it);
  ++s.free_calls;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  std::lock_guard<std::mutex> lock(state().mutex);
  *free_bytes = state().total_memory - state().bytes_allocated;
  *total_bytes = state().total_memory;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t bytes, CUstream stream) {
  std::lock_guard<std::mutex> lock(state().mutex);
  if (!valid_stream(state(), stream)) return CUDA_ERROR_INVALID_HANDLE;
  if (bytes == 0) return CUDA_SUCCESS;
  if (!src || !inside_allocation(state(), dst, bytes)) return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(reinterpret_cast<void*>(dst), src, bytes);
  ++state().host_to_device_copies;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyDtoHAsync(void* dst, CUdeviceptr src, size_t bytes, CUstream stream) {
  std::lock_guard<std::mutex> lock(state().mutex);
  if (!valid_stream(state(), stream)) return CUDA_ERROR_INVALID_HANDLE;
  if (bytes == 0) return CUDA_SUCCESS;
  if (!dst || !inside_allocation(state(), src, bytes)) return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(dst, reinterpret_cast<const void*>(src), bytes);
  ++state().device_to_host_copies;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream) {
  std::lock_guard<std::mutex> lock(state().mutex);
  if (!valid_stream(state(), stream)) return CUDA_ERROR_INVALID_HANDLE;
  if (bytes == 0) return CUDA_SUCCESS;
  if (!inside_allocation(state(), dst, bytes) || !inside_allocation(state(), src, bytes)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t count, CUstream stream) {
  std::lock_guard<std::mutex> lock(state().mutex);
  if (!valid_stream(state(), stream)) return CUDA_ERROR_INVALID_HANDLE;
  if (count == 0) return CUDA_SUCCESS;
  if (!inside_allocation(state(), dst, count)) return CUDA_ERROR_INVALID_VALUE;
  std::memset(reinterpret_cast<void*>(dst), value, count);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamCreate(CUstream* stream, unsigned int flags) {
  if (!stream) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(state().mutex);
  *stream = new CUstream_st{flags};
  state().streams.insert(*stream);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamDestroy(CUstream stream) {
  std::lock_guard<std::mutex> lock(state().mutex);
  if (state().streams.erase(stream) == 0) return CUDA_ERROR_INVALID_HANDLE;
  delete stream;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamSynchronize(CUstream stream) {
  std::lock_guard<std::mutex> lock(state().mutex);
  return valid_stream(state(), stream) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult CUDAAPI cuEventCreate(CUevent* event, unsigned int flags) {
  if (!event) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(state().mutex);
  *event = new CUevent_st{flags, false, {}};
  state().events.insert(*event);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventDestroy(CUevent event) {
  std::lock_guard<std::mutex> lock(state().mutex);
  if (state().events.erase(event) == 0) return CUDA_ERROR_INVALID_HANDLE;
  delete event;
  return CUDA_SUCCESS;
}

// Work "finishes" when it is enqueued, so the host's clock at record time is
// the event's time.
CUresult CUDAAPI cuEventRecord(CUevent event, CUstream stream) {
  std::lock_guard<std::mutex> lock(state().mutex);
  if (state().events.count(event) == 0 || !valid_stream(state(), stream)) return CUDA_ERROR_INVALID_HANDLE;
  event->recorded = true;
  event->when = std::chrono::steady_clock::now();
  state().stream_ops.push_back({'R', stream, event});
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamWaitEvent(CUstream stream, CUevent event, unsigned int flags) {
  std::lock_guard<std::mutex> lock(state().mutex);
  if (state().events.count(event) == 0 || !valid_stream(state(), stream)) return CUDA_ERROR_INVALID_HANDLE;
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  state().stream_ops.push_back({'W', stream, event});
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventSynchronize(CUevent event) {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().events.count(event) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult CUDAAPI cuEventElapsedTime(float* milliseconds, CUevent start, CUevent end) {
  std::lock_guard<std::mutex> lock(state().mutex);
  if (state().events.count(start) == 0 || state().events.count(end) == 0) return CUDA_ERROR_INVALID_HANDLE;
  if (!start->recorded || !end->recorded || (start->flags & CU_EVENT_DISABLE_TIMING) ||
      (end->flags & CU_EVENT_DISABLE_TIMING)) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  *milliseconds = std::chrono::duration<float, std::milli>(end->when - start->when).count();
  return CUDA_SUCCESS;
}

// The inspection API (fake_cuda_driver.h).

void stitch_fake_cuda_reset(void) {
  std::lock_guard<std::mutex> lock(state().mutex);
  FakeState& s = state();
  for (const auto& [ptr, bytes] : s.allocations) std::free(reinterpret_cast<void*>(ptr));
  for (CUstream stream : s.streams) delete stream;
  for (CUevent event : s.events) delete event;
  for (CUmodule module : s.modules) delete module;
  s.allocations.clear();
  s.streams.clear();
  s.events.clear();
  s.modules.clear();
  s.total_memory = kDefaultTotalMemory;
  s.bytes_allocated = 0;
  s.failing_allocations = 0;
  s.alloc_calls = s.free_calls = 0;
  s.host_to_device_copies = s.device_to_host_copies = 0;
  s.primary_context_retains = 0;
  s.current = nullptr;
  s.launches.clear();
  s.param_sizes.clear();
  s.stream_ops.clear();
}

int64_t stitch_fake_cuda_live_allocations(void) {
  std::lock_guard<std::mutex> lock(state().mutex);
  return static_cast<int64_t>(state().allocations.size());
}

int64_t stitch_fake_cuda_bytes_allocated(void) {
  std::lock_guard<std::mutex> lock(state().mutex);
  return static_cast<int64_t>(state().bytes_allocated);
}

int64_t stitch_fake_cuda_alloc_calls(void) {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().alloc_calls;
}

int64_t stitch_fake_cuda_free_calls(void) {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().free_calls;
}

int64_t stitch_fake_cuda_host_to_device_copies(void) {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().host_to_device_copies;
}

int64_t stitch_fake_cuda_device_to_host_copies(void) {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().device_to_host_copies;
}

void stitch_fake_cuda_fail_next_allocations(int count) {
  std::lock_guard<std::mutex> lock(state().mutex);
  state().failing_allocations = count;
}

void stitch_fake_cuda_set_total_memory(size_t bytes) {
  std::lock_guard<std::mutex> lock(state().mutex);
  state().total_memory = bytes;
}

int stitch_fake_cuda_launch_count(void) {
  std::lock_guard<std::mutex> lock(state().mutex);
  return static_cast<int>(state().launches.size());
}

int stitch_fake_cuda_get_launch(int index, StitchFakeCudaLaunch* out) {
  std::lock_guard<std::mutex> lock(state().mutex);
  if (index < 0 || static_cast<size_t>(index) >= state().launches.size() || !out) return 0;
  *out = state().launches[index].launch;
  return 1;
}

void stitch_fake_cuda_record_param_sizes(const size_t* sizes, int count) {
  std::lock_guard<std::mutex> lock(state().mutex);
  state().param_sizes.assign(sizes, sizes + std::max(count, 0));
}

int stitch_fake_cuda_get_launch_param(int launch, int param, void* out, size_t size) {
  std::lock_guard<std::mutex> lock(state().mutex);
  const auto& launches = state().launches;
  if (launch < 0 || static_cast<size_t>(launch) >= launches.size() || !out) return 0;
  const auto& params = launches[launch].param_bytes;
  if (param < 0 || static_cast<size_t>(param) >= params.size() || params[param].size() != size) return 0;
  std::memcpy(out, params[param].data(), size);
  return 1;
}

int stitch_fake_cuda_stream_op_count(void) {
  std::lock_guard<std::mutex> lock(state().mutex);
  return static_cast<int>(state().stream_ops.size());
}

int stitch_fake_cuda_get_stream_op(int index, StitchFakeCudaStreamOp* out) {
  std::lock_guard<std::mutex> lock(state().mutex);
  if (index < 0 || static_cast<size_t>(index) >= state().stream_ops.size() || !out) return 0;
  *out = state().stream_ops[index];
  return 1;
}

void stitch_fake_cuda_live_handles(StitchFakeCudaHandles* out) {
  std::lock_guard<std::mutex> lock(state().mutex);
  out->streams = static_cast<int>(state().streams.size());
  out->events = static_cast<int>(state().events.size());
  out->modules = static_cast<int>(state().modules.size());
  out->primary_context_retains = state().primary_context_retains;
}
