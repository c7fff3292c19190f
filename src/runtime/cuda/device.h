// One CUDA device as the runtime sees it (docs/cuda-runtime.md, Device
// properties): queried from the driver. The compile layer turns it into the
// schedule module's GpuTarget (pipeline/cuda/device_target.h).
#pragma once

#include <cstdint>
#include <string>

#include "runtime/cuda/driver.h"

namespace stitch::runtime::cuda {

struct DeviceProperties {
  int ordinal = 0;
  std::string name;            // "NVIDIA H100 80GB HBM3"
  int major = 0, minor = 0;    // compute capability
  int64_t sm_count = 0;
  int64_t warp_size = 32;
  int64_t max_threads_per_block = 0;
  int64_t max_threads_per_sm = 0;
  int64_t max_blocks_per_sm = 0;
  int64_t registers_per_block = 0;
  int64_t registers_per_sm = 0;
  int64_t shared_bytes_per_block = 0;        // without opting in
  int64_t shared_bytes_per_block_optin = 0;  // cuFuncSetAttribute's maximum
  int64_t shared_bytes_per_sm = 0;
  int64_t shared_reserved_per_block = 0;
  int64_t l2_bytes = 0;
  int64_t clock_khz = 0;          // SM clock
  int64_t memory_clock_khz = 0;
  int64_t memory_bus_bits = 0;
  int64_t total_memory_bytes = 0;
  int driver_version = 0;

  std::string arch() const { return "sm_" + std::to_string(major * 10 + minor); }
  // Peak DRAM bandwidth: double data rate over the bus.
  double memory_bytes_per_second() const;
  // "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 79.1 GiB, driver 12.4)"
  std::string summary() const;
};

DeviceProperties query_device(const DriverApi& api, int ordinal = 0);


}  // namespace stitch::runtime::cuda
