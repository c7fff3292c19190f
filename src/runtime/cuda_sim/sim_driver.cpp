// The simulated CUDA driver (docs/cuda-sim.md): libstitch_cuda_sim.so
// implements the driver entry points Stitch calls (STITCH_CUDA_DRIVER_FUNCTIONS)
// on the PTX interpreter, so the CUDA back end's kernels and its runtime run
// end to end on a machine without a GPU. It reports one device like an H100
// (compute capability 9.0), loads PTX text (not cubins), keeps device memory
// as host buffers at fixed simulated addresses, and runs every launch at
// once, synchronously; streams and events are trivial.
//
// Loaded with dlopen like libcuda.so.1; the exported marker
// stitch_cuda_sim_driver tells load_driver that this driver wants PTX.
//
// With $STITCH_CUDA_SIM_PTX_DIR set, every module loaded is also written there
// as <hash>.ptx, so CI can round-trip exactly the PTX that NVRTC made for the
// suites through `stitch ptx print` and ptxas (tests/ptx/roundtrip_files.sh).
#include <cuda.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "gpu_model/profile.h"
#include "gpu_model/profile_json.h"
#include "options/options.h"
#include "ptx/sim/interpreter.h"
#include "ptx/parser.h"
#include "runtime/cuda/driver.h"
#include "runtime/cuda/h100_attributes.h"
#include "stitch/error.h"

struct CUctx_st {
  int unused = 0;
};

struct CUmod_st {
  std::unique_ptr<stitch::ptx::Interpreter> interpreter;
  std::string text;  // the PTX, for ptxas -v when launches are profiled
  std::set<CUfunction> functions;
};

struct CUfunc_st {
  CUmod_st* module = nullptr;
  std::string name;
  int max_dynamic_shared = 48 * 1024;
};

struct CUstream_st {
  int unused = 0;
};

struct CUevent_st {
  std::chrono::steady_clock::time_point recorded{};
  bool was_recorded = false;
};

namespace {

constexpr int kOptInSharedBytes = stitch::runtime::cuda::kH100SharedBytesOptIn;
constexpr size_t kTotalMemory = size_t{80} << 30;

// One device allocation: the bytes behind [address, address + bytes.size()).
struct Allocation {
  std::vector<std::byte> bytes;
};

struct State {
  std::mutex mutex;  // the driver may be called from any thread
  CUctx_st primary;
  int primary_retains = 0;
  // Addresses are never reused, so a kernel that touches freed memory faults
  // instead of reading a later allocation's bytes.
  uint64_t next_address = stitch::ptx::kFirstRegionAddress;
  std::map<uint64_t, Allocation> allocations;
  size_t bytes_allocated = 0;
  // Set by stitch_cuda_sim_profile: each launch is profiled by the GPU model
  // (docs/gpu-model.md) instead of run whole, and its profile kept as JSON.
  std::optional<stitch::gpu_model::GpuTarget> profile_target;
  uint64_t profile_cta_budget = 0;
  nlohmann::ordered_json profiles = nlohmann::ordered_json::array();
  std::string profile_out;  // $STITCH_CUDA_SIM_PROFILE_OUT: profiles appended there as JSON lines
};

// $STITCH_CUDA_SIM_PROFILE=h100|h200 profiles every launch from the start,
// appending each profile as one JSON line to $STITCH_CUDA_SIM_PROFILE_OUT:
// how a stitch built before the model (an old commit's kernels, for the
// model's validation: docs/gpu-model.md, Fitting) is profiled by this driver.
struct EnvironmentProfile {
  std::optional<stitch::gpu_model::GpuTarget> target;
  std::string out;
};

// The environment's options (options/options.h); a bad value ends the
// process with status 2, as the program that loaded the driver would.
stitch::EnvironmentOptions sim_options() {
  try {
    return stitch::environment_options();
  } catch (const stitch::UserError& e) {
    std::fprintf(stderr, "stitch_cuda_sim: %s\n", e.what());
    std::exit(2);
  }
}

EnvironmentProfile environment_profile() {
  EnvironmentProfile e;
  const stitch::EnvironmentOptions env = sim_options();
  const std::string& target = env.cuda_sim_profile;
  if (target.empty()) return e;
  e.target = stitch::gpu_model::target_named(target);
  const std::string& out = env.cuda_sim_profile_out;
  if (!e.target || out.empty()) {
    std::fprintf(stderr, "stitch_cuda_sim: $STITCH_CUDA_SIM_PROFILE=%s needs a known target (h100, h200) and "
                 "$STITCH_CUDA_SIM_PROFILE_OUT naming the file for the profiles\n", target.c_str());
    std::exit(2);
  }
  e.out = out;
  return e;
}

State& state() {
  static State s;
  static const bool configured = [] {
    EnvironmentProfile e = environment_profile();
    s.profile_target = e.target;
    s.profile_cta_budget = stitch::gpu_model::kDefaultCtaBudget;
    s.profile_out = e.out;
    return true;
  }();
  (void)configured;
  return s;
}

// The message of the last failed module load or launch: cuGetErrorString
// appends it to the code's text, which is how the runtime's loud failures
// (driver.h, describe_result) carry the interpreter's diagnosis.
thread_local std::string last_message;

CUresult fail(CUresult code, std::string message) {
  last_message = std::move(message);
  return code;
}

// The allocation holding [address, address + bytes), or null.
std::byte* find(State& s, CUdeviceptr address, size_t bytes) {
  auto it = s.allocations.upper_bound(address);
  if (it == s.allocations.begin()) return nullptr;
  --it;
  const uint64_t at = address - it->first;
  if (at > it->second.bytes.size() || it->second.bytes.size() - at < bytes) return nullptr;
  return it->second.bytes.data() + at;
}

const char* error_name(CUresult error) {
  switch (error) {
    case CUDA_SUCCESS: return "CUDA_SUCCESS";
    case CUDA_ERROR_INVALID_VALUE: return "CUDA_ERROR_INVALID_VALUE";
    case CUDA_ERROR_OUT_OF_MEMORY: return "CUDA_ERROR_OUT_OF_MEMORY";
    case CUDA_ERROR_INVALID_DEVICE: return "CUDA_ERROR_INVALID_DEVICE";
    case CUDA_ERROR_INVALID_IMAGE: return "CUDA_ERROR_INVALID_IMAGE";
    case CUDA_ERROR_INVALID_PTX: return "CUDA_ERROR_INVALID_PTX";
    case CUDA_ERROR_INVALID_HANDLE: return "CUDA_ERROR_INVALID_HANDLE";
    case CUDA_ERROR_NOT_FOUND: return "CUDA_ERROR_NOT_FOUND";
    case CUDA_ERROR_NOT_SUPPORTED: return "CUDA_ERROR_NOT_SUPPORTED";
    case CUDA_ERROR_ILLEGAL_ADDRESS: return "CUDA_ERROR_ILLEGAL_ADDRESS";
    case CUDA_ERROR_LAUNCH_FAILED: return "CUDA_ERROR_LAUNCH_FAILED";
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: return "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES";
    default: return nullptr;
  }
}

const char* error_text(CUresult error) {
  switch (error) {
    case CUDA_SUCCESS: return "no error";
    case CUDA_ERROR_INVALID_VALUE: return "invalid argument";
    case CUDA_ERROR_OUT_OF_MEMORY: return "out of memory";
    case CUDA_ERROR_INVALID_DEVICE: return "invalid device ordinal";
    case CUDA_ERROR_INVALID_IMAGE: return "device kernel image is invalid";
    case CUDA_ERROR_INVALID_PTX: return "a PTX JIT compilation failed";
    case CUDA_ERROR_INVALID_HANDLE: return "invalid resource handle";
    case CUDA_ERROR_NOT_FOUND: return "named symbol not found";
    case CUDA_ERROR_NOT_SUPPORTED: return "operation not supported";
    case CUDA_ERROR_ILLEGAL_ADDRESS: return "an illegal memory access was encountered";
    case CUDA_ERROR_LAUNCH_FAILED: return "unspecified launch failure";
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: return "too many resources requested for launch";
    default: return nullptr;
  }
}

// A failed run's code: memory faults are illegal addresses as on a GPU;
// everything else (trap, barrier misuse, a race, an unsupported instruction)
// is a launch failure. The interpreter's message says which.
CUresult launch_error(const std::string& message) {
  for (const char* word : {"out-of-bounds", "misaligned"}) {
    if (message.find(word) != std::string::npos) return CUDA_ERROR_ILLEGAL_ADDRESS;
  }
  return CUDA_ERROR_LAUNCH_FAILED;
}

// Keeps a copy of a loaded module's text in $STITCH_CUDA_SIM_PTX_DIR, named by
// its hash so a module loaded twice is kept once; written to a temporary name
// and renamed, so a reader never sees half a file.
void keep_module_text(const char* text) {
  const std::string dir = sim_options().cuda_sim_ptx_dir;
  if (dir.empty()) return;
  const std::string_view view(text);
  const std::string name = fmt::format("{}/{:016x}.ptx", dir, std::hash<std::string_view>{}(view));
  const std::string temporary = fmt::format("{}.tmp{}", name, static_cast<long>(getpid()));
  std::FILE* file = std::fopen(temporary.c_str(), "wb");
  if (!file) {
    std::fprintf(stderr, "stitch cuda-sim: cannot write %s: %s\n", temporary.c_str(), std::strerror(errno));
    return;
  }
  const bool written = std::fwrite(view.data(), 1, view.size(), file) == view.size();
  if (std::fclose(file) == 0 && written) {
    std::rename(temporary.c_str(), name.c_str());
  } else {
    std::fprintf(stderr, "stitch cuda-sim: cannot write %s\n", temporary.c_str());
    std::remove(temporary.c_str());
  }
}

}  // namespace

extern "C" {

// The marker load_driver looks for: this driver loads PTX, not cubins.
// (`extern`: a namespace-scope const would otherwise have internal linkage.)
extern const int stitch_cuda_sim_driver;
const int stitch_cuda_sim_driver = 1;

// Profiling for `stitch bench --backend cuda-sim --profile` (docs/gpu-model.md):
// from this call on, each launch interprets a sample of its CTAs and keeps
// the GPU model's profile for `target` ("h100", "h200"); a null target stops.
// Returns 0, or -1 for an unknown target.
int stitch_cuda_sim_profile(const char* target, unsigned long long cta_budget) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (target == nullptr) {
    s.profile_target.reset();
    return 0;
  }
  s.profile_target = stitch::gpu_model::target_named(target);
  s.profile_cta_budget = cta_budget == 0 ? stitch::gpu_model::kDefaultCtaBudget : cta_budget;
  return s.profile_target ? 0 : -1;
}

// The profiles of the launches since the last call, as a JSON array, in a
// malloc'd string the caller frees.
char* stitch_cuda_sim_take_profiles() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const std::string text = s.profiles.dump();
  s.profiles = nlohmann::ordered_json::array();
  return strdup(text.c_str());
}

CUresult CUDAAPI cuInit(unsigned int) { return CUDA_SUCCESS; }

CUresult CUDAAPI cuDriverGetVersion(int* version) {
  if (!version) return CUDA_ERROR_INVALID_VALUE;
  *version = CUDA_VERSION;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetErrorName(CUresult error, const char** text) {
  if (!text) return CUDA_ERROR_INVALID_VALUE;
  *text = error_name(error);
  return *text ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char** text) {
  if (!text) return CUDA_ERROR_INVALID_VALUE;
  const char* base = error_text(error);
  if (!base) {
    *text = nullptr;
    return CUDA_ERROR_INVALID_VALUE;
  }
  // The thread's last diagnosis goes with the code it failed with.
  static thread_local std::string described;
  described = last_message.empty() ? std::string(base) : fmt::format("{}: {}", base, last_message);
  *text = described.c_str();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetCount(int* count) {
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  *count = 1;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice* device, int ordinal) {
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
  *device = 0;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetName(char* name, int length, CUdevice device) {
  if (!name || length <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (device != 0) return CUDA_ERROR_INVALID_DEVICE;
  std::snprintf(name, static_cast<size_t>(length), "%s", "Stitch PTX interpreter (sm_90)");
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice device) {
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  if (device != 0) return CUDA_ERROR_INVALID_DEVICE;
  // Launches run one at a time, and copies at once: no concurrency to report.
  if (attribute == CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS || attribute == CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT) {
    *value = 0;
    return CUDA_SUCCESS;
  }
  return stitch::runtime::cuda::h100_attribute(attribute, value) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuDeviceTotalMem(size_t* bytes, CUdevice device) {
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  if (device != 0) return CUDA_ERROR_INVALID_DEVICE;
  *bytes = kTotalMemory;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice device) {
  if (!context) return CUDA_ERROR_INVALID_VALUE;
  if (device != 0) return CUDA_ERROR_INVALID_DEVICE;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  ++s.primary_retains;
  *context = &s.primary;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice device) {
  if (device != 0) return CUDA_ERROR_INVALID_DEVICE;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.primary_retains == 0) return CUDA_ERROR_INVALID_CONTEXT;
  --s.primary_retains;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetCurrent(CUcontext) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuCtxSynchronize(void) { return CUDA_SUCCESS; }

CUresult CUDAAPI cuModuleLoadData(CUmodule* module, const void* image) {
  if (!module || !image) return CUDA_ERROR_INVALID_VALUE;
  const char* text = static_cast<const char*>(image);
  if (std::memcmp(text, "\x7f" "ELF", 4) == 0) {
    return fail(CUDA_ERROR_INVALID_IMAGE,
                "the simulated driver runs PTX text; this is a cubin (ELF), which only a GPU can load");
  }
  // Fault injection for the fallback tests (docs/cuda-sim.md): a driver
  // that refuses every module, as a GPU's would refuse a bad image.
  if (sim_options().cuda_sim_fail == "load") {
    return fail(CUDA_ERROR_INVALID_PTX, "module load refused (STITCH_CUDA_SIM_FAIL=load)");
  }
  try {
    keep_module_text(text);
    auto m = std::make_unique<CUmod_st>();
    m->interpreter = std::make_unique<stitch::ptx::Interpreter>(stitch::ptx::parse_module(text, "module.ptx"));
    m->text = text;
    *module = m.release();
    return CUDA_SUCCESS;
  } catch (const stitch::UserError& e) {
    return fail(CUDA_ERROR_INVALID_PTX, e.formatted());
  } catch (const std::exception& e) {
    return fail(CUDA_ERROR_INVALID_PTX, e.what());
  }
}

CUresult CUDAAPI cuModuleUnload(CUmodule module) {
  if (!module) return CUDA_ERROR_INVALID_HANDLE;
  for (CUfunction f : module->functions) delete f;
  delete module;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleGetFunction(CUfunction* function, CUmodule module, const char* name) {
  if (!function || !name) return CUDA_ERROR_INVALID_VALUE;
  if (!module) return CUDA_ERROR_INVALID_HANDLE;
  try {
    module->interpreter->kernel_params(name);
  } catch (const std::exception& e) {
    return fail(CUDA_ERROR_NOT_FOUND, e.what());
  }
  auto f = std::make_unique<CUfunc_st>();
  f->module = module;
  f->name = name;
  *function = f.get();
  module->functions.insert(f.release());
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncSetAttribute(CUfunction function, CUfunction_attribute attribute, int value) {
  if (!function) return CUDA_ERROR_INVALID_HANDLE;
  switch (attribute) {
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
      if (value < 0 || value > kOptInSharedBytes) return CUDA_ERROR_INVALID_VALUE;
      function->max_dynamic_shared = value;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult CUDAAPI cuFuncGetAttribute(int* value, CUfunction_attribute attribute, CUfunction function) {
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  if (!function) return CUDA_ERROR_INVALID_HANDLE;
  // Resource usage the interpreter does not model is reported as zero.
  switch (attribute) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = 1024; break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *value = 0; break;
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: *value = 0; break;
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *value = 0; break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *value = 32; break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION: *value = 90; break;
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *value = 90; break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *value = function->max_dynamic_shared; break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: *value = -1; break;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLaunchKernel(CUfunction function, unsigned int grid_x, unsigned int grid_y, unsigned int grid_z,
                                unsigned int block_x, unsigned int block_y, unsigned int block_z,
                                unsigned int shared_bytes, CUstream, void** kernel_params, void** extra) {
  if (!function) return CUDA_ERROR_INVALID_HANDLE;
  if (extra) return fail(CUDA_ERROR_NOT_SUPPORTED, "the simulated driver takes arguments as kernelParams only");
  if (shared_bytes > static_cast<unsigned>(function->max_dynamic_shared)) {
    return fail(CUDA_ERROR_INVALID_VALUE,
                fmt::format("{} asks for {} bytes of dynamic shared memory; its limit is {}", function->name,
                            shared_bytes, function->max_dynamic_shared));
  }
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  std::vector<stitch::ptx::GlobalRegion> memory;
  memory.reserve(s.allocations.size());
  for (auto& [address, allocation] : s.allocations) {
    memory.push_back({address, allocation.bytes.data(), allocation.bytes.size(),
                      fmt::format("device allocation {:#x}", address)});
  }
  stitch::ptx::LaunchConfig config;
  config.grid = {grid_x, grid_y, grid_z};
  config.block = {block_x, block_y, block_z};
  config.dynamic_shared_bytes = shared_bytes;
  try {
    stitch::ptx::Interpreter& interp = *function->module->interpreter;
    if (s.profile_target) {
      const stitch::gpu_model::KernelProfile profile = stitch::gpu_model::profile_launch(
          function->module->text, function->name, config, 0, *s.profile_target,
          [&](const stitch::ptx::InterpreterOptions& options) {
            interp.run_with_memory(function->name, config, memory, kernel_params, options);
          },
          s.profile_cta_budget);
      if (s.profile_out.empty()) {
        s.profiles.push_back(stitch::gpu_model::profile_json(profile));
      } else {
        std::ofstream out(s.profile_out, std::ios::app);
        out << stitch::gpu_model::profile_json(profile).dump() << "\n";
        if (!out) return fail(CUDA_ERROR_UNKNOWN, "cannot append the launch's profile to " + s.profile_out);
      }
    } else {
      interp.run_with_memory(function->name, config, memory, kernel_params);
    }
  } catch (const stitch::UserError& e) {  // with the instruction's source location
    const std::string message = fmt::format("{}: {}", function->name, e.formatted());
    return fail(launch_error(message), message);
  } catch (const std::exception& e) {
    const std::string message = fmt::format("{}: {}", function->name, e.what());
    return fail(launch_error(message), message);
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAlloc(CUdeviceptr* ptr, size_t bytes) {
  if (!ptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (bytes > kTotalMemory - s.bytes_allocated) return CUDA_ERROR_OUT_OF_MEMORY;
  // 256-aligned as cudaMalloc's blocks, with an unmapped gap after each.
  const uint64_t address = s.next_address;
  if (address + bytes + 4096 >= stitch::ptx::kEndRegionAddress) return CUDA_ERROR_OUT_OF_MEMORY;
  s.next_address = (address + bytes + 4096 + 255) & ~uint64_t{255};
  // cuMemAlloc's memory is not initialised: all-ones bytes (NaN floats, -1
  // integers) make a kernel that reads what nothing wrote visibly wrong
  // instead of quietly reading zeros.
  s.allocations[address].bytes.assign(bytes, std::byte{0xff});
  s.bytes_allocated += bytes;
  *ptr = address;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemFree(CUdeviceptr ptr) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.allocations.find(ptr);
  if (it == s.allocations.end()) return CUDA_ERROR_INVALID_VALUE;
  s.bytes_allocated -= it->second.bytes.size();
  s.allocations.erase(it);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  if (!free_bytes || !total_bytes) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  *total_bytes = kTotalMemory;
  *free_bytes = kTotalMemory - s.bytes_allocated;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t bytes, CUstream) {
  if (bytes == 0) return CUDA_SUCCESS;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  std::byte* to = find(s, dst, bytes);
  if (!to || !src) return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(to, src, bytes);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyDtoHAsync(void* dst, CUdeviceptr src, size_t bytes, CUstream) {
  if (bytes == 0) return CUDA_SUCCESS;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const std::byte* from = find(s, src, bytes);
  if (!from || !dst) return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(dst, from, bytes);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream) {
  if (bytes == 0) return CUDA_SUCCESS;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  std::byte* to = find(s, dst, bytes);
  const std::byte* from = find(s, src, bytes);
  if (!to || !from) return CUDA_ERROR_INVALID_VALUE;
  std::memmove(to, from, bytes);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t count, CUstream) {
  if (count == 0) return CUDA_SUCCESS;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  std::byte* to = find(s, dst, count);
  if (!to) return CUDA_ERROR_INVALID_VALUE;
  std::memset(to, value, count);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamCreate(CUstream* stream, unsigned int) {
  if (!stream) return CUDA_ERROR_INVALID_VALUE;
  *stream = new CUstream_st();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamDestroy(CUstream stream) {
  if (!stream) return CUDA_ERROR_INVALID_HANDLE;
  delete stream;
  return CUDA_SUCCESS;
}

// Work runs when it is queued, so there is never anything to wait for.
CUresult CUDAAPI cuStreamSynchronize(CUstream) { return CUDA_SUCCESS; }

CUresult CUDAAPI cuEventCreate(CUevent* event, unsigned int) {
  if (!event) return CUDA_ERROR_INVALID_VALUE;
  *event = new CUevent_st();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventDestroy(CUevent event) {
  if (!event) return CUDA_ERROR_INVALID_HANDLE;
  delete event;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventRecord(CUevent event, CUstream) {
  if (!event) return CUDA_ERROR_INVALID_HANDLE;
  event->recorded = std::chrono::steady_clock::now();
  event->was_recorded = true;
  return CUDA_SUCCESS;
}

// Every stream's work is done when queued: waiting on an event is checked only.
CUresult CUDAAPI cuStreamWaitEvent(CUstream, CUevent event, unsigned int) {
  return event ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult CUDAAPI cuEventSynchronize(CUevent event) { return event ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE; }

// The host time between the records: the interpreter's run time, which says
// nothing about a GPU's.
CUresult CUDAAPI cuEventElapsedTime(float* milliseconds, CUevent start, CUevent end) {
  if (!milliseconds) return CUDA_ERROR_INVALID_VALUE;
  if (!start || !end) return CUDA_ERROR_INVALID_HANDLE;
  if (!start->was_recorded || !end->was_recorded) return CUDA_ERROR_INVALID_HANDLE;
  *milliseconds = std::chrono::duration<float, std::milli>(end->recorded - start->recorded).count();
  return CUDA_SUCCESS;
}

}  // extern "C"

// Referencing every listed entry point makes one this driver lacks a link
// error (the library links with --no-undefined).
#define STITCH_CUDA_SIM_EXPORT(name) reinterpret_cast<const void*>(&::name),
extern "C" const void* const stitch_cuda_sim_exports[] = {STITCH_CUDA_DRIVER_FUNCTIONS(STITCH_CUDA_SIM_EXPORT)};
#undef STITCH_CUDA_SIM_EXPORT
