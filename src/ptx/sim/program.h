// The SIMT interpreter's decoded program (docs/ptx-interpreter.md): each PTX
// function pre-decoded once into a flat array of compact instructions whose
// operands are register indices, immediates or frame-relative addresses, and
// whose semantics is a handler chosen at decode time, so that execution does
// no string compares or map lookups.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "stitch/error.h"

namespace stitch::ptx::sim {

inline constexpr int kWarpSize = 32;
inline constexpr uint32_t kFullMask = 0xffffffffu;
// A branch whose block has no post-dominator but the function's exit
// reconverges nowhere: its paths end in ret/exit.
inline constexpr uint32_t kNoReconvergence = 0xffffffffu;

// Address windows of the generic address space (docs/ptx-interpreter.md,
// Memory). Global allocations (kernel arguments, module variables) live at
// kGlobalBase and up; shared and local memory are seen through windows that
// cvta maps onto the state-space addresses (which start at 0).
inline constexpr uint64_t kGlobalBase = uint64_t{1} << 32;
inline constexpr uint64_t kSharedWindow = uint64_t{0x7e} << 40;
inline constexpr uint64_t kLocalWindow = uint64_t{0x7f} << 40;
inline constexpr uint64_t kWindowSize = uint64_t{1} << 40;

enum class OperandKind : uint8_t {
  None,
  Reg,        // a register of the current frame: index
  Special,    // %tid.x and friends: index into the warp's special registers
  Imm,        // imm (already in the instruction type's bits)
  Pred,       // a predicate register of the current frame (negated: !%p)
  Sink,       // _: the result is dropped
  LocalAddr,  // a .local variable: imm + the frame's local base
  ParamAddr,  // a .param variable of a .func frame: imm + the frame's param base
  Clock,      // %clock, %clock64, %globaltimer: the warp's instruction count
};

struct DOperand {
  OperandKind kind = OperandKind::None;
  bool negated = false;
  uint32_t index = 0;
  uint64_t imm = 0;
};

// How the warp loop treats an instruction; Plain ones only call the handler.
enum class Control : uint8_t { Plain, Branch, Return, Exit, Call, Barrier, Trap };

enum class Space : uint8_t { Generic, Global, Shared, Local, KernelParam, FrameParam, Const };

struct Exec;
struct DInst;
using Handler = void (*)(Exec&, const DInst&, uint32_t mask);

struct DInst {
  Handler fn = nullptr;
  Control control = Control::Plain;
  Space space = Space::Generic;
  uint8_t width = 1;  // ld/st vector width; bytes of a memory element
  uint8_t mode = 0;   // handler-specific: rounding mode, comparison, atomic op, shuffle mode
  uint8_t flags = 0;  // handler-specific: ftz, sat, ...
  uint8_t size = 0;   // handler-specific: access size in bytes
  DOperand guard;     // Pred or None
  std::array<DOperand, 6> ops;
  uint32_t target = 0;                         // Branch: pc; Call: index into DFunction::calls
  uint32_t reconverge = kNoReconvergence;      // Branch: first pc of the immediate post-dominator
};

// Handler flag bits shared by the float handlers.
inline constexpr uint8_t kFlagFtz = 1;
inline constexpr uint8_t kFlagSat = 2;
// Barrier: bar.sync or barrier.sync.aligned, which every thread of a warp
// must execute together; barrier.sync alone may be reached divergently.
inline constexpr uint8_t kFlagAligned = 1;

enum class Rounding : uint8_t { Nearest, Zero, Down, Up };

// A .param slot of a .func (parameter or return value): where it lives in
// the frame's param area.
struct ParamSlot {
  uint32_t offset = 0;
  uint32_t size = 0;
};

struct CallSite {
  uint32_t callee = 0;             // index into Program::functions
  std::vector<DOperand> args;      // caller-frame param addresses (ParamAddr) or values
  std::vector<uint32_t> arg_sizes; // bytes copied per argument
  std::vector<DOperand> rets;      // caller-frame param addresses receiving the return values
};

struct InstInfo {
  std::string text;  // "ld.global.f32", for messages
  SourceLoc loc;
};

struct DFunction {
  std::string name;
  bool is_entry = false;
  std::vector<DInst> code;
  std::vector<InstInfo> info;   // parallel to code
  uint32_t num_regs = 0;
  uint32_t num_preds = 0;
  uint32_t local_bytes = 0;     // per thread
  uint32_t param_bytes = 0;     // per thread (.func params, returns and body .param variables)
  std::vector<ParamSlot> params;   // .func: in the frame param area; .entry: in the kernel param buffer
  std::vector<ParamSlot> returns;
  std::vector<CallSite> calls;
  bool decoded = false;
};

// A module-scope .global or .const variable: a global allocation at a fixed address.
struct ModuleVariable {
  std::string name;
  uint64_t address = 0;
  std::vector<uint8_t> init;  // its bytes (zeros without an initializer)
  bool read_only = false;     // .const
};

struct Program {
  std::vector<DFunction> functions;
  std::vector<ModuleVariable> variables;
  uint32_t static_shared_bytes = 0;
  uint32_t dynamic_shared_align = 16;
  uint64_t global_end = kGlobalBase;  // first address after the module variables
};

}  // namespace stitch::ptx::sim
