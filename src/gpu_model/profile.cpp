#include "gpu_model/profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "stitch/error.h"

namespace stitch::gpu_model {

KernelProfile profile_launch(const std::string& ptx_text, const std::string& kernel, const ptx::LaunchConfig& config,
                             int static_shared_bytes, const GpuTarget& target, const RunLaunch& run,
                             uint64_t cta_budget) {
  KernelProfile p;
  p.kernel = kernel;
  p.target = target.name;
  p.config = config;
  p.resources = ptxas_resources(ptx_text, kernel, target.device.arch);
  p.registers_used = p.resources.known ? p.resources.registers : kAssumedRegisters;
  const int static_shared = p.resources.known ? p.resources.static_shared_bytes : static_shared_bytes;
  p.shared_bytes = static_shared + static_cast<int>(config.dynamic_shared_bytes);
  const int threads = static_cast<int>(config.block[0] * config.block[1] * config.block[2]);
  p.occupancy = schedule::occupancy(target.device, threads, p.registers_used, p.shared_bytes);
  if (p.occupancy.blocks_per_sm == 0) {
    throw UserError(fmt::format("kernel {}: a CTA of {} threads, {} registers a thread and {} bytes of shared memory "
                                "does not fit on an SM of {}",
                                kernel, threads, p.registers_used, p.shared_bytes, target.name));
  }
  const uint64_t ctas = uint64_t{config.grid[0]} * config.grid[1] * config.grid[2];
  CounterCollector collector(ctas, static_cast<uint64_t>(target.device.sm_count * p.occupancy.blocks_per_sm),
                             static_cast<double>(target.device.l2_bytes));
  ptx::InterpreterOptions options;
  options.observer = &collector;
  options.only_ctas = sample_ctas(ctas, cta_budget);
  if (options.only_ctas.size() == ctas) options.only_ctas.clear();
  const auto start = std::chrono::steady_clock::now();
  run(options);
  p.interpreted_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  p.counters = collector.counters();
  const FittedConstants constants = fitted_constants(target);
  p.prediction = predict(p.counters, p.occupancy, target, constants);
  // The bytes the kernel needs moved: what its lanes asked for, but a value
  // read again (an L2 hit) or by many CTAs (a broadcast) once, as DRAM sees it;
  // a sector fetched for 4 of its 32 bytes counts the 4.
  const double asked = static_cast<double>(p.counters.global_load.bytes + p.counters.global_store.bytes) *
                       p.counters.scale();
  p.footprint_bytes = std::min(asked, p.prediction.dram_read_bytes + p.prediction.dram_write_bytes);
  p.copy_s = copy_seconds(target, constants, p.footprint_bytes);
  return p;
}

}  // namespace stitch::gpu_model
