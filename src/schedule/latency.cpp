#include "schedule/latency.h"

#include <algorithm>
#include <cstdint>
#include <limits>

namespace stitch::schedule {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_up(int64_t a, int64_t unit) { return ceil_div(a, unit) * unit; }

// CPI of a class with `warps` resident warps per SM: a warp waits the
// latency, or its turn among the warps queueing for the class's units.
double class_cpi(const InstructionCost& c, double warps) { return std::max(c.latency, warps / c.per_cycle); }

}  // namespace

std::string_view occupancy_limit_name(OccupancyLimit l) {
  switch (l) {
    case OccupancyLimit::Threads: return "threads";
    case OccupancyLimit::Registers: return "registers";
    case OccupancyLimit::SharedMemory: return "shared";
    case OccupancyLimit::Blocks: return "blocks";
    case OccupancyLimit::Unlaunchable: return "unlaunchable";
  }
  return "";
}

Occupancy occupancy(const GpuTarget& t, int64_t threads, int64_t registers, int64_t shared_bytes) {
  Occupancy o;
  if (threads <= 0 || threads > t.max_threads_per_block || registers > t.max_registers_per_thread ||
      shared_bytes > t.shared_bytes_per_block_optin)
    return o;
  const int64_t warps = ceil_div(threads, t.warp_size);
  const int64_t registers_per_warp = round_up(std::max<int64_t>(registers, 1) * t.warp_size, t.register_alloc_unit);
  // Registers are allocated within each of the SM's four sub-partitions (one
  // warp scheduler each), and the launch check counts a block's warps rounded
  // up to a multiple of four (cuda_occupancy.h, cudaOccMaxBlocksPerSMRegsLimit;
  // this rule agreed with it on 1.39 million Hopper cases).
  constexpr int64_t kSubPartitions = 4;
  if (registers_per_warp * round_up(warps, kSubPartitions) > t.max_registers_per_block) return o;
  o.by_threads = t.max_warps_per_sm() / warps;
  o.by_registers = t.registers_per_sm / kSubPartitions / registers_per_warp * kSubPartitions / warps;
  o.by_shared = t.shared_bytes_per_sm / round_up(shared_bytes + t.shared_reserved_per_block, t.shared_alloc_unit);
  o.by_blocks = t.max_blocks_per_sm;
  // Ties name the first limit in this order: threads, registers, shared, blocks.
  const std::pair<int64_t, OccupancyLimit> limits[] = {{o.by_threads, OccupancyLimit::Threads},
                                                       {o.by_registers, OccupancyLimit::Registers},
                                                       {o.by_shared, OccupancyLimit::SharedMemory},
                                                       {o.by_blocks, OccupancyLimit::Blocks}};
  o.blocks_per_sm = o.by_threads;
  o.limit = OccupancyLimit::Threads;
  for (const auto& [blocks, limit] : limits) {
    if (blocks < o.blocks_per_sm) {
      o.blocks_per_sm = blocks;
      o.limit = limit;
    }
  }
  if (o.blocks_per_sm == 0) o.limit = OccupancyLimit::Unlaunchable;
  o.fraction = static_cast<double>(o.blocks_per_sm * warps) / static_cast<double>(t.max_warps_per_sm());
  return o;
}

LatencyEstimate estimate_latency(const GpuTarget& t, const KernelCandidate& k) {
  LatencyEstimate e;
  e.occ = occupancy(t, k.threads_per_block, k.registers_per_thread, k.shared_bytes_per_block);
  e.seconds = std::numeric_limits<double>::infinity();
  e.cycles = e.seconds;
  if (e.occ.blocks_per_sm == 0 || k.blocks <= 0) return e;
  e.launchable = true;
  const int64_t warps_per_block = ceil_div(k.threads_per_block, t.warp_size);
  e.waves = ceil_div(k.blocks, e.occ.blocks_per_sm * t.sm_count);
  // The first wave is the fullest: a grid smaller than the machine leaves SMs
  // with fewer resident blocks, and fewer warps to hide latency with.
  const int64_t blocks_per_sm = std::min(e.occ.blocks_per_sm, ceil_div(k.blocks, t.sm_count));
  e.warps_per_sm = blocks_per_sm * warps_per_block;
  const double warps = static_cast<double>(e.warps_per_sm);

  const InstructionMix& n = k.per_thread;
  // Global memory: a warp-instruction moves this many DRAM bytes, and the SM
  // gets its share of the bandwidth; up to kMemoryLevelParallelism of a
  // thread's loads overlap their latency.
  const double warp_memory_instructions = static_cast<double>(k.blocks * warps_per_block) * n.memory;
  if (n.memory > 0 && warp_memory_instructions > 0) {
    const double bytes_per_instruction =
        static_cast<double>(k.bytes_moved) * k.fetch_per_useful_byte / warp_memory_instructions;
    const double overlap = std::clamp(n.memory, 1.0, static_cast<double>(kMemoryLevelParallelism));
    const InstructionCost memory{t.memory_latency / overlap,
                                 t.memory_bytes_per_cycle_per_sm() / std::max(bytes_per_instruction, 1.0)};
    e.cpi_memory = class_cpi(memory, warps);
  }
  e.cpi_alu = class_cpi(t.alu, warps);
  e.cpi_sfu = class_cpi(t.sfu, warps);
  e.cpi_shared = class_cpi(t.shared, warps);
  e.cpi_sync = class_cpi(t.sync, warps);
  e.wave_cycles = n.memory * e.cpi_memory + n.alu * e.cpi_alu + n.sfu * e.cpi_sfu + n.shared * e.cpi_shared +
                  n.sync * e.cpi_sync;
  e.cpi = n.total() > 0 ? e.wave_cycles / n.total() : 0;
  e.cycles = static_cast<double>(e.waves) * e.wave_cycles;
  e.seconds = e.cycles / t.clock_hz;
  return e;
}

}  // namespace stitch::schedule
