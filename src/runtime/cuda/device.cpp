#include "runtime/cuda/device.h"

#include <cstdint>

#include <fmt/format.h>

namespace stitch::runtime::cuda {

double DeviceProperties::memory_bytes_per_second() const {
  return 2.0 * static_cast<double>(memory_clock_khz) * 1e3 * static_cast<double>(memory_bus_bits) / 8.0;
}

std::string DeviceProperties::summary() const {
  return fmt::format("{} ({}, {} SMs, {:.1f} GiB, driver {}.{})", name, arch(), sm_count,
                     static_cast<double>(total_memory_bytes) / (1 << 30), driver_version / 1000,
                     driver_version % 1000 / 10);
}

DeviceProperties query_device(const DriverApi& api, int ordinal) {
  DeviceProperties d;
  d.ordinal = ordinal;
  d.driver_version = api.version;
  CUdevice device = 0;
  check(api, api.cuDeviceGet(&device, ordinal), "cuDeviceGet");
  char name[256] = {};
  check(api, api.cuDeviceGetName(name, sizeof name - 1, device), "cuDeviceGetName");
  d.name = name;
  size_t total = 0;
  check(api, api.cuDeviceTotalMem(&total, device), "cuDeviceTotalMem");
  d.total_memory_bytes = static_cast<int64_t>(total);
  auto attribute = [&](CUdevice_attribute a, const char* what) {
    int value = 0;
    check(api, api.cuDeviceGetAttribute(&value, a, device), what);
    return static_cast<int64_t>(value);
  };
  d.major = static_cast<int>(attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "compute capability"));
  d.minor = static_cast<int>(attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "compute capability"));
  d.sm_count = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "SM count");
  d.warp_size = attribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE, "warp size");
  d.max_threads_per_block = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "threads per block");
  d.max_threads_per_sm = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, "threads per SM");
  d.max_blocks_per_sm = attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, "blocks per SM");
  d.registers_per_block = attribute(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, "registers per block");
  d.registers_per_sm = attribute(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, "registers per SM");
  d.shared_bytes_per_block = attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, "shared per block");
  d.shared_bytes_per_block_optin =
      attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, "opt-in shared per block");
  d.shared_bytes_per_sm = attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, "shared per SM");
  d.shared_reserved_per_block = attribute(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, "reserved shared");
  d.l2_bytes = attribute(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, "L2 size");
  d.clock_khz = attribute(CU_DEVICE_ATTRIBUTE_CLOCK_RATE, "clock rate");
  d.memory_clock_khz = attribute(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, "memory clock rate");
  d.memory_bus_bits = attribute(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, "memory bus width");
  return d;
}

}  // namespace stitch::runtime::cuda
