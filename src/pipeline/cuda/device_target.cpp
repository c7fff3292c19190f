#include "pipeline/cuda/device_target.h"

#include <algorithm>

#include <fmt/format.h>

#include "schedule/latency.h"

namespace stitch::pipeline {

schedule::GpuTarget target_for_device(const runtime::cuda::DeviceProperties& d) {
  schedule::GpuTarget t = d.major >= 9 ? schedule::sm90_target() : schedule::sm80_target();
  t.arch = d.arch();
  t.product = d.name;
  t.sm_count = d.sm_count;
  t.warp_size = d.warp_size;
  t.max_threads_per_sm = d.max_threads_per_sm;
  t.max_threads_per_block = d.max_threads_per_block;
  t.max_blocks_per_sm = d.max_blocks_per_sm;
  t.registers_per_sm = d.registers_per_sm;
  t.max_registers_per_block = d.registers_per_block;
  t.shared_bytes_per_sm = d.shared_bytes_per_sm;
  t.shared_bytes_per_block = d.shared_bytes_per_block;
  t.shared_bytes_per_block_optin = d.shared_bytes_per_block_optin;
  t.shared_reserved_per_block = d.shared_reserved_per_block;
  if (d.clock_khz > 0) t.clock_hz = static_cast<double>(d.clock_khz) * 1e3;
  if (d.memory_bytes_per_second() > 0) t.memory_bytes_per_second = d.memory_bytes_per_second();
  if (d.l2_bytes > 0) t.l2_bytes = d.l2_bytes;
  t.source = fmt::format("queried from {}; instruction costs of the {} table entry", d.summary(),
                         d.major >= 9 ? "sm_90" : "sm_80");
  return t;
}

schedule::GpuTarget device_target(const runtime::cuda::CudaContext& context) {
  return target_for_device(context.device());
}

int shared_carveout_percent(const schedule::GpuTarget& t, int64_t threads, int64_t registers, int64_t shared_bytes) {
  if (shared_bytes <= 0 || t.shared_bytes_per_sm <= 0) return -1;
  // The blocks the threads and registers allow (shared memory left out), each
  // holding its bytes and the per-block reservation in allocation units.
  const schedule::Occupancy without_shared = schedule::occupancy(t, threads, registers, 0);
  if (without_shared.blocks_per_sm == 0) return -1;
  const int64_t unit = std::max<int64_t>(t.shared_alloc_unit, 1);
  const int64_t per_block = (shared_bytes + t.shared_reserved_per_block + unit - 1) / unit * unit;
  const int64_t needed = without_shared.blocks_per_sm * per_block;
  const int64_t percent = (needed * 100 + t.shared_bytes_per_sm - 1) / t.shared_bytes_per_sm;
  return static_cast<int>(std::min<int64_t>(percent, 100));
}

void prefer_shared_carveout(const runtime::cuda::CudaModule& module, const schedule::GpuTarget& target, CUfunction f,
                            const kir::Kernel& k) {
  const int64_t shared = runtime::cuda::kernel_shared_bytes(k);
  if (shared == 0) return;
  const int percent = shared_carveout_percent(target, k.launch.block_size, module.registers(f), shared);
  if (percent >= 0) module.set_shared_carveout(f, percent);
}

}  // namespace stitch::pipeline
