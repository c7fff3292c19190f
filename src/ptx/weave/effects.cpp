// What one PTX instruction reads and writes (docs/goptx.md, Dependencies).
#include "ptx/weave/effects.h"

#include <algorithm>
#include <array>
#include <string_view>

#include "ptx/cfg.h"

namespace stitch::ptx {
namespace {

bool is_one_of(std::string_view s, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), s) != names.end();
}

// Instructions whose operand 0 is never a register result: stores and
// reductions name an address first, the rest have no result at all.
bool has_no_destination(const Instruction& in) {
  return is_one_of(in.opcode, {"st", "stu", "red", "bar", "barrier", "bra", "brx", "ret", "exit", "trap", "membar",
                               "fence", "prefetch", "prefetchu", "cp", "call", "sust", "sured", "stmatrix", "pmevent",
                               "nanosleep", "griddepcontrol", "discard", "applypriority", "setmaxnreg"});
}

bool names_register(const std::string& name) { return !name.empty() && name[0] == '%' && !is_special_register(name); }

void add_unique(std::vector<std::string>& list, const std::string& name) {
  if (std::find(list.begin(), list.end(), name) == list.end()) list.push_back(name);
}

// Registers an operand reads when it is a source (a Vector's elements, an
// Address's base register; symbols, immediates and sinks read nothing).
void collect_reads(const Operand& o, std::vector<std::string>& reads) {
  switch (o.kind) {
    case Operand::Kind::Register:
      if (names_register(o.name)) add_unique(reads, o.name);
      if (names_register(o.second)) add_unique(reads, o.second);
      break;
    case Operand::Kind::Address:
      if (names_register(o.name)) add_unique(reads, o.name);
      break;
    case Operand::Kind::Vector:
    case Operand::Kind::List:
      for (const Operand& e : o.elements) collect_reads(e, reads);
      break;
    default:
      break;
  }
}

// Registers an operand writes when it is the destination: `%r`, `%r|%p`,
// `{%f1, _, %f3}`; a sink `_` writes nothing.
void collect_writes(const Operand& o, std::vector<std::string>& writes) {
  switch (o.kind) {
    case Operand::Kind::Register:
      if (names_register(o.name)) add_unique(writes, o.name);
      if (names_register(o.second)) add_unique(writes, o.second);
      break;
    case Operand::Kind::Vector:
    case Operand::Kind::List:
      for (const Operand& e : o.elements) collect_writes(e, writes);
      break;
    default:
      break;
  }
}

// "global", "shared" (also shared::cta / shared::cluster), "local", "param",
// "const", or "" for a generic address.
std::string state_space_of(const Instruction& in) {
  for (const std::string& m : in.modifiers) {
    std::string_view base = std::string_view(m).substr(0, m.find("::"));
    if (is_one_of(base, {"global", "shared", "local", "param", "const"})) return std::string(base);
  }
  return "";
}

MemoryEffect memory_effect_of(const Instruction& in, const std::string& space) {
  const std::string& op = in.opcode;
  // A kernel's or function's .param is read-only while it runs; a call
  // sequence's st.param/ld.param pair is kept in order by the call between
  // them, which is a Fence and a control instruction.
  if ((op == "ld" || op == "ldu") && space == "param") return MemoryEffect::None;
  if (is_one_of(op, {"ld", "ldu", "tex", "tld4", "suld", "prefetch", "prefetchu", "ldmatrix", "isspacep"})) {
    return op == "isspacep" ? MemoryEffect::None : MemoryEffect::Read;
  }
  if (is_one_of(op, {"st", "stu", "red", "sust", "sured", "stmatrix"})) return MemoryEffect::Write;
  if (op == "cp") {
    // cp.async.commit_group / wait_group / wait_all order the copies before them.
    if (in.has_modifier("commit_group") || in.has_modifier("wait_group") || in.has_modifier("wait_all")) {
      return MemoryEffect::Fence;
    }
    return MemoryEffect::Write;
  }
  if (op == "atom" || op == "mbarrier") return MemoryEffect::ReadWrite;
  if (is_one_of(op, {"membar", "fence", "call", "trap"})) return MemoryEffect::Fence;
  return MemoryEffect::None;
}

SyncKind sync_of(const Instruction& in) {
  if (is_barrier(in)) return SyncKind::Cta;
  const std::string& op = in.opcode;
  if (op == "bar" && in.has_modifier("warp")) return SyncKind::Warp;
  if (is_one_of(op, {"shfl", "vote", "match", "redux", "activemask", "elect"})) return SyncKind::Warp;
  // Warp-collective matrix instructions (mma.sync.aligned, ldmatrix.sync.aligned ...).
  if (in.has_modifier("sync") && in.has_modifier("aligned")) return SyncKind::Warp;
  return SyncKind::None;
}

}  // namespace

bool is_special_register(std::string_view name) {
  if (name.empty() || name[0] != '%') return false;
  std::string_view base = name.substr(1);
  base = base.substr(0, base.find('.'));  // %tid.x -> tid
  static constexpr std::array<std::string_view, 21> kExact = {
      "tid",       "ntid",          "laneid",       "warpid",         "nwarpid",        "ctaid",
      "nctaid",    "smid",          "nsmid",        "gridid",         "clock",          "clock64",
      "clock_hi",  "globaltimer",   "globaltimer_lo", "globaltimer_hi", "total_smem_size", "dynamic_smem_size",
      "aggr_smem_size", "is_explicit_cluster", "current_graph_exec"};
  if (std::find(kExact.begin(), kExact.end(), base) != kExact.end()) return true;
  // Families with a suffix: %envreg0..31, %pm0..7 / %pm0_64, %lanemask_eq,
  // %cluster*, %ncluster*, %reserved_smem_offset_*.
  for (std::string_view prefix : {"envreg", "lanemask_", "cluster", "nclusterid", "reserved_smem_offset"}) {
    if (base.substr(0, prefix.size()) == prefix) return true;
  }
  if (base.size() >= 3 && base.substr(0, 2) == "pm" && base[2] >= '0' && base[2] <= '9') return true;
  return false;
}

InstructionEffects effects_of(const Instruction& in) {
  InstructionEffects e;
  if (in.guard) add_unique(e.reads, in.guard->predicate);

  if (in.opcode == "call") {
    // call (returns), func, (arguments): NVRTC passes .param names, which are
    // no registers, but hand-written PTX may pass registers.
    bool seen_function = false;
    for (const Operand& o : in.operands) {
      if (o.kind == Operand::Kind::Symbol || o.kind == Operand::Kind::Register) {
        if (!seen_function && o.kind == Operand::Kind::Register) collect_reads(o, e.reads);  // indirect call target
        seen_function = true;
        continue;
      }
      if (o.kind == Operand::Kind::List && !seen_function) {
        collect_writes(o, e.writes);
      } else {
        collect_reads(o, e.reads);
      }
    }
  } else {
    const bool destination = !in.operands.empty() && !has_no_destination(in) &&
                             (in.operands[0].kind == Operand::Kind::Register ||
                              in.operands[0].kind == Operand::Kind::Sink ||
                              in.operands[0].kind == Operand::Kind::Vector);
    for (size_t i = 0; i < in.operands.size(); ++i) {
      if (i == 0 && destination) {
        collect_writes(in.operands[0], e.writes);
      } else {
        collect_reads(in.operands[i], e.reads);
      }
    }
  }

  e.space = state_space_of(in);
  e.memory = memory_effect_of(in, e.space);
  if (e.memory == MemoryEffect::None || e.memory == MemoryEffect::Fence) e.space.clear();
  e.sync = sync_of(in);
  e.is_control = is_one_of(in.opcode, {"bra", "brx", "ret", "exit", "trap", "call"});
  return e;
}

}  // namespace stitch::ptx
