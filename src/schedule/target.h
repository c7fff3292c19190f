// The machines schedules are chosen for (docs/schedule.md, Targets): GPU
// targets as table entries per compute capability, and the host CPU. A real
// device query will fill a GpuTarget from the driver later; until then the
// tables below are the only source, each entry naming where its numbers come
// from.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fusion/delta_evaluator.h"
#include "schedule/template.h"

namespace stitch::schedule {

// Issue model of one instruction class on one SM (docs/schedule.md, Latency
// evaluator): a warp-instruction of the class takes `latency` cycles before a
// dependent one can issue, and the SM completes `per_cycle` of them per cycle.
struct InstructionCost {
  double latency = 1;
  double per_cycle = 1;
};

struct GpuTarget {
  std::string arch;     // "sm_90"
  std::string product;  // the part the SM count, clock and bandwidth are for
  int64_t sm_count = 0;
  int64_t warp_size = 32;
  int64_t max_threads_per_sm = 0;
  int64_t max_threads_per_block = 0;
  int64_t max_blocks_per_sm = 0;
  int64_t registers_per_sm = 0;          // 32-bit registers
  int64_t max_registers_per_block = 0;
  int64_t max_registers_per_thread = 0;
  int64_t register_alloc_unit = 256;     // registers are given to a warp in units of this many
  int64_t shared_bytes_per_sm = 0;       // the largest carve-out
  int64_t shared_bytes_per_block = 0;    // static allocations, without opting in
  int64_t shared_bytes_per_block_optin = 0;
  int64_t shared_reserved_per_block = 0; // taken by the system from the SM's shared memory per resident block
  int64_t shared_alloc_unit = 128;
  // The SM's L1 data cache and shared memory together (one array, split by
  // the carve-out): what re-read rows are served from (candidates.cpp).
  int64_t l1_shared_bytes_per_sm = 0;
  double clock_hz = 0;                   // boost clock
  double memory_bytes_per_second = 0;    // DRAM peak
  int64_t l2_bytes = 0;
  // Per instruction class; memory's per_cycle is derived from the bandwidth.
  InstructionCost alu, sfu, shared, sync;
  double memory_latency = 0;             // cycles from a global load's issue to its data
  std::string source;                    // where the numbers come from

  int64_t max_warps_per_sm() const { return max_threads_per_sm / warp_size; }
  // DRAM bytes one SM is served per cycle when every SM streams.
  double memory_bytes_per_cycle_per_sm() const { return memory_bytes_per_second / clock_hz / static_cast<double>(sm_count); }
  ScheduleLimits limits() const { return {warp_size, max_threads_per_block, shared_bytes_per_block}; }
};

// Compute capability 8.0 on an A100-SXM4-40GB, and 9.0 on an H100-SXM5-80GB.
const GpuTarget& sm80_target();
const GpuTarget& sm90_target();
// "sm_80" / "sm_90"; nullopt for an arch without a table entry.
std::optional<GpuTarget> gpu_target(std::string_view arch);
std::vector<std::string> gpu_target_names();

struct CpuTarget {
  int64_t cores = 1;
  int64_t vector_bytes = 16;      // widest SIMD register the host runs
  int64_t l1d_bytes = 0;          // 0 when unknown
  int64_t l2_bytes = 0;
  int64_t l3_bytes = 0;
  bool caches_from_sysfs = false; // false: the sizes above are unknown (0)
  TargetModel memory;             // the measured bandwidth curve M(V) and launch cost (src/fusion)
};

// The machine this runs on: cores from std::thread::hardware_concurrency,
// vector width from the CPU's feature bits, cache sizes from `cache_dir`
// (cpu0's sysfs cache directory), memory from cpu_target_model().
CpuTarget host_cpu_target(const std::string& cache_dir = "/sys/devices/system/cpu/cpu0/cache");

// "32K", "1024K", "8M" as sysfs writes cache sizes; nullopt when malformed.
std::optional<int64_t> parse_cache_size(std::string_view text);

}  // namespace stitch::schedule
