// The schedule stage's view of a CUDA device (docs/cuda-runtime.md, Device
// properties): the queried properties turned into a schedule::GpuTarget, so
// schedules are ranked for the device that will run them rather than a table
// entry; and the shared-memory carveout a kernel asks the driver for, decided
// from that target when its module is loaded.
#pragma once

#include <cstdint>

#include "kir/kernel.h"
#include "runtime/cuda/context.h"
#include "runtime/cuda/cuda_module.h"
#include "runtime/cuda/device.h"
#include "schedule/target.h"

namespace stitch::pipeline {

// The device's limits, clock, bandwidth and L2 as queried; instruction
// latencies and throughputs from the nearest table entry (sm_90 for 9.x and
// later, sm_80 otherwise).
schedule::GpuTarget target_for_device(const runtime::cuda::DeviceProperties& d);

// The target of the context's device.
schedule::GpuTarget device_target(const runtime::cuda::CudaContext& context);

// The carveout (percent of the SM's shared capacity) under which blocks of
// `threads` threads, `registers` registers each and `shared_bytes` of shared
// memory are as many per SM as the threads and registers allow
// (docs/cuda-runtime.md, Shared-memory carveout); -1 (no preference) when the
// block uses no shared memory. Without it the H200's driver may stop short of
// what such kernels need (bench/results/gpu-2026-12-04-h200-notes.md).
int shared_carveout_percent(const schedule::GpuTarget& t, int64_t threads, int64_t registers, int64_t shared_bytes);

// Asks the driver for the carveout kernel `k` (function `f` of `module`)
// needs; a kernel without shared memory keeps the driver's default.
void prefer_shared_carveout(const runtime::cuda::CudaModule& module, const schedule::GpuTarget& target, CUfunction f,
                            const kir::Kernel& k);

}  // namespace stitch::pipeline
