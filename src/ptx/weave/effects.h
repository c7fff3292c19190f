// What one PTX instruction reads and writes (docs/goptx.md, Dependencies): the
// registers (predicates included; special registers such as %tid.x are not
// registers here), its memory access, and whether it is a sync point. The
// weaver's scheduler and uniformity analysis are built on it.
#pragma once

#include <string>
#include <vector>

#include "ptx/ptx_ast.h"

namespace stitch::ptx {

enum class MemoryEffect : uint8_t {
  None,
  Read,        // ld (any space but .param of a kernel, which is None), tex, ldu, prefetch
  Write,       // st, red, cp.async (both read and write are treated as Write)
  ReadWrite,   // atom
  Fence,       // membar, fence, and anything else ordered with all memory (call, trap)
};

enum class SyncKind : uint8_t {
  None,
  Cta,   // bar.sync, bar.arrive, bar.red, barrier.* (ptx::is_barrier)
  Warp,  // shfl.sync, vote.sync, bar.warp.sync, match.sync, redux.sync, activemask
};

struct InstructionEffects {
  std::vector<std::string> reads;   // registers read, the guard predicate included
  std::vector<std::string> writes;  // registers written (both halves of `%r|%p`)
  MemoryEffect memory = MemoryEffect::None;
  // Which state space a memory access names ("global", "shared", "local",
  // "param", "const", "" for generic or none).
  std::string space;
  SyncKind sync = SyncKind::None;
  bool is_control = false;  // bra, ret, exit, trap, call (ends a block or leaves it)
};

InstructionEffects effects_of(const Instruction& in);

// Whether `name` is a special register (%tid.x, %ctaid.y, %laneid, %clock64,
// %envreg3, %dynamic_smem_size ...), which no instruction writes.
bool is_special_register(std::string_view name);

}  // namespace stitch::ptx
