// The SIMT interpreter's execution state (docs/ptx-interpreter.md): warps of
// 32 lanes with registers in flat [register][lane] arrays, predicates as lane
// masks, a reconvergence stack and call frames per warp; CTAs with shared
// memory; and `Exec`, what an instruction handler sees.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "ptx/ptx_ast.h"
#include "ptx/sim/memory.h"
#include "ptx/sim/program.h"

namespace stitch::ptx::sim {

// Special registers, each one slot of 32 lanes in Warp::special.
enum SpecialReg : uint32_t {
  kTidX, kTidY, kTidZ, kNtidX, kNtidY, kNtidZ,
  kCtaidX, kCtaidY, kCtaidZ, kNctaidX, kNctaidY, kNctaidZ,
  kLaneId, kWarpId, kNwarpId, kSmId, kNsmId, kGridId,
  kLanemaskEq, kLanemaskLe, kLanemaskLt, kLanemaskGe, kLanemaskGt,
  kDynamicSmemSize, kTotalSmemSize,
  kNumSpecial,
};

struct StackEntry {
  uint32_t pc = 0;
  uint32_t rpc = kNoReconvergence;  // where this entry's lanes rejoin the entry below
  uint32_t mask = 0;
  // The lanes arrived at a non-aligned barrier while others of the warp had
  // not: the entry waits (pc is past the barrier) until the rest arrive.
  bool parked = false;
};

struct Frame {
  uint32_t function = 0;
  uint32_t reg_base = 0;    // in registers (each kWarpSize slots)
  uint32_t pred_base = 0;
  uint32_t local_base = 0;  // per-thread .local address of the frame's variables
  uint32_t param_base = 0;  // per-thread .param address of the frame's parameters
  uint32_t stack_base = 0;  // reconvergence-stack depth where the frame's entries start
  uint32_t call_site = 0;   // in the caller's DFunction::calls
  uint32_t call_mask = 0;   // lanes that made the call
};

struct Warp {
  uint32_t index = 0;  // in the CTA
  uint32_t live = 0;   // lanes that exist and have not exited
  std::vector<uint64_t> regs;
  std::vector<uint32_t> preds;
  std::vector<uint64_t> special;  // kNumSpecial x kWarpSize
  std::vector<Frame> frames;
  std::vector<StackEntry> stack;
  ThreadStack local;
  ThreadStack params;
  uint32_t carry = 0;    // CC.CF per lane, for add.cc/addc and friends
  bool waiting = false;  // at a barrier
  uint32_t barrier = 0;  // which one
  uint32_t arrived = 0;  // lanes parked at a non-aligned barrier (barrier.sync), the warp not all there yet
  bool done = false;
  uint64_t instructions = 0;
};

struct Launch;

struct Cta {
  std::array<uint32_t, 3> id{};
  std::vector<Warp> warps;
  std::vector<std::byte> shared;
  uint32_t interval = 0;  // barrier interval, for SharedShadow (unique across the launch's CTAs)
};

// What a handler reads and writes: the current warp and frame, resolved.
struct Exec {
  Launch& launch;
  Cta& cta;
  Warp& warp;
  const GlobalMemory* global = nullptr;
  const DFunction* function = nullptr;
  uint32_t pc = 0;
  uint64_t* regs = nullptr;  // the frame's registers
  uint32_t* preds = nullptr;
  const Frame* frame = nullptr;
  std::array<std::array<uint64_t, kWarpSize>, 6> scratch{};  // computed operands, sunk results

  // An operand's per-lane values: lane l is p[l * stride].
  struct Lanes {
    const uint64_t* p;
    uint32_t stride;
    uint64_t operator[](unsigned lane) const { return p[lane * stride]; }
  };
  Lanes src(const DOperand& o, int slot) {
    switch (o.kind) {
      case OperandKind::Reg: return {regs + size_t{o.index} * kWarpSize, 1};
      case OperandKind::Imm: return {&o.imm, 0};
      case OperandKind::Special: return {warp.special.data() + size_t{o.index} * kWarpSize, 1};
      default: return computed(o, slot);
    }
  }
  uint64_t* dst(const DOperand& o, int slot) {
    if (o.kind == OperandKind::Reg) return regs + size_t{o.index} * kWarpSize;
    return scratch[slot].data();
  }
  // A predicate operand as a lane mask (negation applied).
  uint32_t pred(const DOperand& o) const {
    uint32_t m = o.kind == OperandKind::Pred ? preds[o.index] : (o.imm != 0 ? kFullMask : 0);
    return o.negated ? ~m : m;
  }
  void set_pred(const DOperand& o, uint32_t value, uint32_t mask) {
    if (o.kind != OperandKind::Pred) return;
    preds[o.index] = (preds[o.index] & ~mask) | (value & mask);
  }

  // Memory of `space` at [addr, addr + size) for `lane`; a UserError naming the
  // thread and instruction when it is out of bounds or misaligned, or (shared
  // memory, not atomic) when it races with another warp in this barrier interval.
  std::byte* memory(Space space, uint64_t addr, uint32_t size, bool write, unsigned lane, bool atomic = false) {
    // Fast path: an aligned global access to the buffer the last one hit.
    if ((space == Space::Global || space == Space::Generic) && addr < kSharedWindow && (addr & (size - 1)) == 0) {
      if (std::byte* p = global->find_cached(addr, size, write)) return p;
    }
    return resolve(space, addr, size, write, lane, atomic);
  }

  // "file:line:col: error: ld.global.f32 in thread (x,y,z) of block (x,y,z): message".
  [[noreturn]] void fail(unsigned lane, const std::string& message) const;
  // "thread (x,y,z) of block (x,y,z)".
  std::string thread_name(unsigned lane) const;

 private:
  Lanes computed(const DOperand& o, int slot);
  std::byte* resolve(Space space, uint64_t addr, uint32_t size, bool write, unsigned lane, bool atomic);
};

// Iterates the set bits of a lane mask.
template <class F>
inline void for_lanes(uint32_t mask, F&& f) {
  while (mask != 0) {
    const unsigned lane = static_cast<unsigned>(__builtin_ctz(mask));
    mask &= mask - 1;
    f(lane);
  }
}

}  // namespace stitch::ptx::sim

namespace stitch::ptx::sim {

// A register slot's bits read as T (low bits; readers always truncate) and
// T's bits for a slot (integers zero-extended; floats as their bit pattern).
template <class T>
inline T as(uint64_t bits) {
  if constexpr (std::is_same_v<T, float>) {
    return std::bit_cast<float>(static_cast<uint32_t>(bits));
  } else if constexpr (std::is_same_v<T, double>) {
    return std::bit_cast<double>(bits);
  } else {
    return static_cast<T>(bits);
  }
}
template <class T>
inline uint64_t bits(T v) {
  if constexpr (std::is_same_v<T, float>) {
    return std::bit_cast<uint32_t>(v);
  } else if constexpr (std::is_same_v<T, double>) {
    return std::bit_cast<uint64_t>(v);
  } else if constexpr (std::is_same_v<T, bool>) {
    return v ? 1 : 0;
  } else {
    return static_cast<uint64_t>(static_cast<std::make_unsigned_t<T>>(v));
  }
}

// Calls f with a value of the C++ type of integer PTX type `t` (b/u: unsigned)
// and returns its result; `fallback` for other types.
template <class F, class R>
inline R with_int_type(Type t, F&& f, R fallback) {
  switch (t) {
    case Type::B8:
    case Type::U8: return f(uint8_t{});
    case Type::S8: return f(int8_t{});
    case Type::B16:
    case Type::U16: return f(uint16_t{});
    case Type::S16: return f(int16_t{});
    case Type::B32:
    case Type::U32: return f(uint32_t{});
    case Type::S32: return f(int32_t{});
    case Type::B64:
    case Type::U64: return f(uint64_t{});
    case Type::S64: return f(int64_t{});
    default: return fallback;
  }
}

}  // namespace stitch::ptx::sim
