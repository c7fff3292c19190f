// Counters of one kernel launch from the PTX interpreter's real run
// (docs/gpu-model.md, Counters): what a profiler would report, counted on the
// instructions and addresses the interpreter executes. A large grid is
// sampled (sample_ctas) and the per-CTA counts extrapolated; the output says so.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ptx/sim/observer.h"

namespace stitch::gpu_model {

enum class InstructionClass : uint8_t {
  Fp32, Fp64, Sfu, Integer, Convert, GlobalLoad, GlobalStore, SharedLoad, SharedStore, LocalMemory, Atomic,
  Shuffle, Control, Barrier, Other,
};
inline constexpr int kInstructionClasses = 15;
const char* class_name(InstructionClass c);
// The class of a PTX instruction from its text ("fma.rn.f32", "ex2.approx.ftz.f32"):
// memory classes only for ld/st/atom/red on global, shared or local memory.
InstructionClass class_of(std::string_view text, const ptx::sim::MemoryAccess* access);

// Warp-level requests to one memory space.
struct AccessCounts {
  uint64_t requests = 0;  // warp instructions with at least one active lane
  uint64_t bytes = 0;     // bytes asked for by the active lanes
  uint64_t sectors = 0;   // distinct 32-byte sectors per request, summed
  uint64_t lines = 0;     // distinct 128-byte lines per request, summed
};

struct KernelCounters {
  uint64_t ctas_in_grid = 0;
  uint64_t ctas_run = 0;  // the sample
  uint32_t warps_per_cta = 0;
  // Per class: warp instructions issued.
  std::array<uint64_t, kInstructionClasses> issued{};
  uint64_t thread_instructions = 0;  // active lanes summed
  AccessCounts global_load, global_store, local, atomic;
  uint64_t shared_requests = 0, shared_wavefronts = 0;
  uint64_t barriers = 0;  // warp-level barrier instructions
  // Per lane access width: 1, 2, 4, 8 and 16 bytes (global loads and stores).
  std::array<uint64_t, 5> access_width{};
  // The L2 model's result (bytes, the sample's, before extrapolation; see scale()).
  uint64_t dram_read_private = 0, dram_read_shared = 0;    // private: touched by one sampled CTA only
  uint64_t dram_write_private = 0, dram_write_shared = 0;
  uint64_t l2_reread_hits = 0, l2_reread_misses = 0;  // sectors a CTA read again
  // Memory-level parallelism: the global loads a warp has in flight together
  // before it waits for them, as batches of bytes (counters.cpp,
  // track_dependencies: the loads of a basic block, as ptxas schedules them).
  uint64_t load_batches = 0, load_batch_bytes = 0;
  uint64_t load_batches_dram = 0;  // of those, batches with a sector the L2 model sends to DRAM
  uint64_t max_batches_per_warp = 0;

  // Sampled counts times this give the whole grid's.
  double scale() const { return ctas_run == 0 ? 0 : static_cast<double>(ctas_in_grid) / static_cast<double>(ctas_run); }
  double dram_read_bytes() const { return dram_read_private * scale() + dram_read_shared; }
  double dram_write_bytes() const { return dram_write_private * scale() + dram_write_shared; }
  double sectors_per_request() const;  // global loads and stores
};

// Which CTAs to run for a grid of `ctas`: all of them up to `budget`, else the
// first and last `budget / 4` (the first wave's and the tail's) and the rest
// evenly spaced; ascending linear indices.
std::vector<uint64_t> sample_ctas(uint64_t ctas, uint64_t budget);

// The observer that counts (ptx/sim/observer.h). `concurrent_ctas`: CTAs the
// target holds at once (SMs times CTAs per SM), for the L2 model's reuse
// distance; `l2_bytes`: the target's L2.
class CounterCollector : public ptx::sim::Observer {
 public:
  CounterCollector(uint64_t ctas_in_grid, uint64_t concurrent_ctas, double l2_bytes);
  void begin_cta(const std::array<uint32_t, 3>& id, uint32_t warps) override;
  void end_cta() override;
  void issue(uint32_t warp, const ptx::sim::DFunction& function, uint32_t pc, const ptx::sim::DInst& in,
             uint32_t reg_base, uint32_t mask, const ptx::sim::MemoryAccess* access) override;
  // The counts so far, with the L2 model's sectors summed up.
  KernelCounters counters() const;

 private:
  struct WarpState {
    std::vector<uint32_t> pending;  // registers a global load in flight writes
    uint64_t batch_bytes = 0;
    bool batch_dram = false;  // a sector of the batch comes from DRAM
    bool waited = false;      // an instruction of this block used a load of the batch
    bool stored = false;      // a store came after the batch's first load
    uint64_t batches = 0;
    uint64_t clock = 0;       // bytes of the sectors this warp has touched, each touch counted
  };
  struct Sector {
    uint32_t cta = 0;        // the first sampled CTA to touch it (its sample index)
    uint64_t last_touch = 0; // that CTA's clock (cta_clock_) at its last touch
    uint32_t warp = 0;       // the warp of that CTA that touched it last
    uint64_t warp_touch = 0; // that warp's clock (WarpState::clock) then
    bool shared = false;     // touched by more than one sampled CTA
    bool read_first = false; // its first touch was a read: one DRAM read
    bool written = false;
    uint32_t reread_misses = 0;
  };
  // Returns whether a sector of the access goes to DRAM.
  bool global_access(const ptx::sim::MemoryAccess& access, uint32_t mask, bool write, uint32_t warp);
  void shared_access(const ptx::sim::MemoryAccess& access, uint32_t mask);
  void track_dependencies(WarpState& w, const ptx::sim::DInst& in, uint32_t reg_base, uint32_t mask,
                          const ptx::sim::MemoryAccess* access, InstructionClass c, bool non_coherent, bool dram);
  void close_batch(WarpState& w);

  KernelCounters counts_;
  uint64_t concurrent_ctas_;
  double l2_bytes_;
  uint32_t cta_index_ = 0;  // in the sample
  uint64_t cta_clock_ = 0;  // bytes of the sectors this CTA has touched, each touch counted
  std::vector<WarpState> warps_;
  std::unordered_map<uint64_t, Sector> sectors_;
  std::unordered_map<const ptx::sim::DFunction*, std::vector<uint8_t>> classes_;  // per pc: class + 1 (0: not yet)
};

}  // namespace stitch::gpu_model
