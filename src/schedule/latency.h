// The latency evaluator (paper 2021, "latency-evaluator cost model";
// DESIGN.md, Schedules and compositions; docs/schedule.md, Latency evaluator):
//   occupancy  = resident blocks per SM, limited by threads, registers,
//                shared memory and the block limit
//   N_wave     = ceil(blocks / (blocks_per_SM x SMs))
//   L          = N_wave x sum over classes (N_instr,class x CPI_class)
// with each class's CPI the larger of its latency (what one warp waits) and
// its throughput share (what the SM's resident warps queue for); global
// memory's throughput is the SM's share of DRAM bandwidth.
#pragma once

#include <cstdint>
#include <string>

#include "schedule/target.h"

namespace stitch::schedule {

// Independent global loads one thread keeps in flight: the emitters unroll a
// thread's strided loop by this much (docs/schedule.md, Constants).
inline constexpr int64_t kMemoryLevelParallelism = 4;

// Warp-instructions one thread issues, by class.
struct InstructionMix {
  double memory = 0;  // global loads and stores
  double alu = 0;     // integer and fp32 arithmetic, compares, selects
  double sfu = 0;     // exp, log, rsqrt, division: the special function units
  double shared = 0;  // shared-memory loads/stores and warp shuffles: on-chip exchange
  double sync = 0;    // block barriers

  double total() const { return memory + alu + sfu + shared + sync; }
};

// One kernel as the evaluator sees it: a launch and what each thread does.
struct KernelCandidate {
  std::string strategy;       // "warp-per-row", ...: what a reader calls this shape
  ScheduleTemplate schedule;  // the template that implements it
  int64_t blocks = 0;
  int64_t threads_per_block = 0;
  int64_t registers_per_thread = 32;
  int64_t shared_bytes_per_block = 0;  // static + dynamic
  InstructionMix per_thread;
  int64_t bytes_moved = 0;             // DRAM bytes of the whole kernel, useful ones
  // DRAM bytes a warp's memory instruction fetches per useful byte (1 when
  // coalesced; 8 for fp32 lanes 128 bytes apart: a 32-byte sector per lane).
  double fetch_per_useful_byte = 1;
};

enum class OccupancyLimit : uint8_t { Threads, Registers, SharedMemory, Blocks, Unlaunchable };
std::string_view occupancy_limit_name(OccupancyLimit l);

struct Occupancy {
  int64_t blocks_per_sm = 0;  // 0: the block does not fit an SM at all
  int64_t by_threads = 0, by_registers = 0, by_shared = 0, by_blocks = 0;
  OccupancyLimit limit = OccupancyLimit::Unlaunchable;
  double fraction = 0;  // resident warps / the SM's maximum
};

// Resident blocks of `threads` threads using `registers` registers each and
// `shared_bytes` of shared memory per block, as NVIDIA's occupancy calculator
// counts them: registers are given per warp in register_alloc_unit units,
// shared memory per block in shared_alloc_unit units plus the system's
// reserve, and a block may use up to the opt-in maximum.
Occupancy occupancy(const GpuTarget& t, int64_t threads, int64_t registers, int64_t shared_bytes);

struct LatencyEstimate {
  Occupancy occ;
  int64_t waves = 0;
  int64_t warps_per_sm = 0;  // resident warps per SM in a full wave
  double cpi = 0;            // average cycles per warp-instruction in a wave
  double wave_cycles = 0;    // N_instr x CPI
  double cycles = 0;         // N_wave x wave_cycles
  double seconds = 0;
  bool launchable = false;   // false: the block cannot run on the target; seconds is +inf
  // CPI per class in a wave, for --explain.
  double cpi_memory = 0, cpi_alu = 0, cpi_sfu = 0, cpi_shared = 0, cpi_sync = 0;
};

LatencyEstimate estimate_latency(const GpuTarget& t, const KernelCandidate& k);

}  // namespace stitch::schedule
