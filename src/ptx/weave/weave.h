// GoPTX-style weaving (docs/goptx.md): two independent kernels become one
// .entry whose instruction streams are interleaved, so that one kernel's
// long-latency instructions are overlapped with the other's work.
//
//   ptx::Module woven = ptx::weave(a, b, {.strategy = ptx::WeaveStrategy::Latency});
//
// The woven kernel takes A's parameters followed by B's and, launched with the
// grid and block both were meant for, does what A and B do. Each thread runs
// both kernels' code on a merged control-flow graph (the product of the two
// CFGs); CTA barriers and warp-synchronous instructions are sync points that
// both sides reach in one order in every thread, so neither kernel's barrier
// can deadlock the other. UserError when a kernel cannot be woven safely
// (named, with the reason).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "ptx/ptx_ast.h"

namespace stitch::ptx {

enum class WeaveStrategy : uint8_t {
  Concat,   // A's code, then B's: the baseline
  Latency,  // both CFGs advanced together; merged blocks list-scheduled by latency
};

// Latency tables (src/ptx/weave/latency.h).
enum class WeaveArch : uint8_t { Sm80, Sm90 };

struct WeaveOptions {
  std::string kernel_a;  // the .entry to take from A; "" when A has exactly one
  std::string kernel_b;
  WeaveStrategy strategy = WeaveStrategy::Latency;
  std::string name;  // the woven .entry; "" for <a>_<b>_woven
  // The latency table; nullopt: from A's .target (sm_80..sm_89 -> Sm80, else Sm90).
  std::optional<WeaveArch> arch;
  // Adaptive slicing: blocks longer than this many instructions may be split
  // so that the other kernel's blocks interleave with each part (0: never).
  int slice_instructions = 24;
  // Upper bound on merged blocks; past it slices are coarsened, then UserError.
  int max_merged_blocks = 4096;
  // Differing grids: when set, the woven kernel is launched with the larger
  // grid and each kernel's code runs only in CTAs inside its own grid
  // (%ctaid within grid_*; %nctaid reads the kernel's own grid). Blocks must
  // be the same for both.
  std::optional<std::array<uint32_t, 3>> grid_a;
  std::optional<std::array<uint32_t, 3>> grid_b;
  // Grids known only at launch: the woven kernel takes six more .u32
  // parameters after B's (A's grid x, y, z, then B's) and guards each
  // kernel's code by them, as grid_a/grid_b do with constants.
  bool grid_params = false;
};

struct WeaveReport {
  int merged_blocks = 0;
  int sliced_blocks = 0;  // blocks of A or B split by slicing
  int instructions = 0;   // in the woven kernel
  int barriers_merged = 0;  // pairs of full-CTA bar.sync emitted as one
  // Statements (instructions, `{ }` scopes) of the two kernels placed in
  // merged blocks where both advance, which the latency strategy interleaves;
  // and all of the two kernels' statements placed (code in several merged
  // blocks counts each time).
  int interleavable_statements = 0;
  int statements = 0;
};

// UserError (a weaving refusal, or a kernel that is missing or ambiguous).
Module weave(const Module& a, const Module& b, const WeaveOptions& options, WeaveReport* report = nullptr);

}  // namespace stitch::ptx
