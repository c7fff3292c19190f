// Running a grid (docs/ptx-interpreter.md, Execution): CTAs one after
// another; in a CTA, each warp runs until it reaches a barrier or ends, and
// a barrier releases when every thread of the CTA has reached it.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "ptx/sim/exec.h"
#include "ptx/sim/observer.h"

namespace stitch::ptx::sim {

struct Launch {
  const Program* program = nullptr;
  uint32_t kernel = 0;  // index into program->functions
  GlobalMemory* global = nullptr;
  std::vector<std::byte> params;  // the kernel parameter buffer
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> block{1, 1, 1};
  uint32_t dynamic_shared = 0;
  uint32_t shared_bytes = 0;  // static + dynamic, per CTA
  bool detect_races = true;
  SharedShadow shadow;
  uint32_t next_interval = 1;
  uint64_t max_warp_instructions = 0;  // 0: no limit
  // Statistics.
  uint64_t warp_instructions = 0;
  uint64_t thread_instructions = 0;
  // Per function of the program, per pc: warp executions (null: not counted,
  // InterpreterOptions::count_instructions off).
  std::vector<std::vector<uint64_t>>* pc_counts = nullptr;
  // With an observer (InterpreterOptions::observer): per function, per pc,
  // kNoAccess or the access's direction (observer.h).
  Observer* observer = nullptr;
  std::vector<std::vector<uint8_t>> access_kind;
  // The CTAs to run, as linear indices (x fastest), ascending; empty: all.
  const std::vector<uint64_t>* only_ctas = nullptr;
};

// The access kinds of every function of `program`, from each instruction's text.
std::vector<std::vector<uint8_t>> access_kinds(const Program& program);

// Runs every CTA of the launch; UserError on a trap, a memory error, a
// barrier misuse, or when max_warp_instructions is exceeded.
void run_grid(Launch& launch);

}  // namespace stitch::ptx::sim
