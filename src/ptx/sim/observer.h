// What a launch observer sees (docs/gpu-model.md, Counters): every warp
// instruction as it issues, with the addresses of its memory access, so that
// the GPU model (src/gpu_model) counts sectors, bank conflicts, instruction
// classes and memory-level parallelism from the interpreter's real run.
// The interpreter calls it only when InterpreterOptions::observer is set.
#pragma once

#include <array>
#include <cstdint>

#include "ptx/sim/program.h"

namespace stitch::ptx::sim {

// A load, store or atomic on global, shared or local memory, its space
// resolved (a generic address classified by its window); shared and local
// addresses are offsets in their space.
struct MemoryAccess {
  Space space = Space::Global;  // Global, Shared or Local
  bool write = false;
  bool atomic = false;
  uint32_t bytes = 0;  // per lane: element size times vector width
  std::array<uint64_t, kWarpSize> address{};  // for the lanes in the instruction's mask
};

class Observer {
 public:
  virtual ~Observer() = default;
  virtual void begin_cta(const std::array<uint32_t, 3>& id, uint32_t warps) = 0;
  virtual void end_cta() = 0;
  // Before instruction `pc` of `function` runs for the lanes in `mask` (its
  // guard applied; zero when the guard fails everywhere: it still issued).
  // `reg_base`: the frame's first register, so that register indices of
  // different frames do not meet. `access` is set for memory instructions.
  virtual void issue(uint32_t warp, const DFunction& function, uint32_t pc, const DInst& in, uint32_t reg_base,
                     uint32_t mask, const MemoryAccess* access) = 0;
};

// Which instructions access memory, decided once per function from its text:
// 0 none, else the MemoryAccess's direction (1 load, 2 store, 3 atomic).
inline constexpr uint8_t kNoAccess = 0, kLoadAccess = 1, kStoreAccess = 2, kAtomicAccess = 3;

}  // namespace stitch::ptx::sim
