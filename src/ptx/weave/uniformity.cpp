// Which values and branches may differ between the threads of a CTA, and
// the barrier check weaving needs (docs/goptx.md, Barrier safety).
#include "ptx/weave/uniformity.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string_view>
#include <vector>

#include "ptx/weave/effects.h"

namespace stitch::ptx {
namespace {

// Special registers that differ between the threads of one CTA. %ctaid,
// %ntid, %nctaid, %smid, %envreg and the shared-memory sizes do not.
bool is_thread_dependent_special(std::string_view name) {
  if (!is_special_register(name)) return false;
  std::string_view base = name.substr(1);
  base = base.substr(0, base.find('.'));
  for (std::string_view prefix : {"tid", "laneid", "warpid", "clock", "lanemask_", "globaltimer", "pm"}) {
    if (base.substr(0, prefix.size()) == prefix) return true;
  }
  return false;
}

bool is_kernel_parameter(const ControlFlowGraph& cfg, const std::string& name) {
  if (cfg.function == nullptr || !cfg.function->is_entry) return false;
  for (const VarDecl& p : cfg.function->params) {
    if (p.name == name) return true;
  }
  return false;
}

// Whether `in` produces a value that may differ between threads whatever its
// operands: a read of %tid and the like, a load from memory that threads may
// see differently, an atomic, a warp collective, a call's results.
bool is_divergence_source(const ControlFlowGraph& cfg, const Instruction& in, const InstructionEffects& e,
                          const UniformityOptions& options) {
  for (const Operand& o : in.operands) {
    if (o.kind == Operand::Kind::Register && options.thread_index_is_divergent && is_thread_dependent_special(o.name)) {
      return true;
    }
  }
  if (e.sync == SyncKind::Warp) return true;
  if (in.opcode == "call" || in.opcode == "atom" || in.opcode == "tex" || in.opcode == "suld") return true;
  if (in.opcode == "ld" || in.opcode == "ldu") {
    if (e.space == "const") return false;
    if (in.has_modifier("param")) {
      // A kernel's parameters are the same for every thread; a .func's
      // parameters and a call's return values are not.
      for (const Operand& o : in.operands) {
        if (o.kind == Operand::Kind::Address) return !is_kernel_parameter(cfg, o.name);
      }
      return true;
    }
    return true;
  }
  return false;
}

// The guard predicate of a block's last instruction when it is a conditional
// bra (not .uni), ret or exit; nullptr otherwise.
const Instruction* conditional_terminator(const ControlFlowGraph& cfg, const BasicBlock& b) {
  if (b.end == b.begin) return nullptr;
  const Instruction* term = cfg.instructions[b.end - 1];
  if (!term->guard) return nullptr;
  if (term->opcode == "bra" && !term->has_modifier("uni") && b.successors.size() >= 2) return term;
  if (term->opcode == "ret" || term->opcode == "exit") return term;
  return nullptr;
}

// control_parents[x]: the blocks ending in a conditional terminator that x is
// control dependent on (x lies between the branch and its post-dominator).
std::vector<std::vector<int>> control_dependences(const ControlFlowGraph& cfg) {
  std::vector<std::vector<int>> parents(cfg.blocks.size());
  for (const BasicBlock& b : cfg.blocks) {
    if (conditional_terminator(cfg, b) == nullptr) continue;
    for (int s : b.successors) {
      int runner = s;
      // Bounded: the post-dominator chain is a tree path; the bound only
      // guards against a malformed graph.
      for (size_t steps = 0; runner >= 0 && runner != b.ipdom && steps <= cfg.blocks.size(); ++steps) {
        auto& list = parents[static_cast<size_t>(runner)];
        if (std::find(list.begin(), list.end(), b.id) == list.end()) list.push_back(b.id);
        runner = cfg.blocks[static_cast<size_t>(runner)].ipdom;
      }
    }
  }
  return parents;
}

bool ends_in_trap(const ControlFlowGraph& cfg, const BasicBlock& b) {
  return b.end > b.begin && cfg.instructions[b.end - 1]->opcode == "trap";
}

// Depth-first over the blocks reached from `from`'s successors, never at or
// past `stop`: `visit(id, block)` gives what the search stops with, or nullopt
// and whether to go on past the block (`through`).
template <class T, class Visit>
std::optional<T> first_reached(const ControlFlowGraph& cfg, const BasicBlock& from, int stop, Visit visit) {
  std::vector<bool> seen(cfg.blocks.size(), false);
  std::vector<int> work(from.successors.rbegin(), from.successors.rend());
  while (!work.empty()) {
    int id = work.back();
    work.pop_back();
    if (id < 0 || id == stop || seen[static_cast<size_t>(id)]) continue;
    seen[static_cast<size_t>(id)] = true;
    const BasicBlock& b = cfg.blocks[static_cast<size_t>(id)];
    bool through = true;
    if (std::optional<T> found = visit(id, b, through)) return found;
    if (!through) continue;
    for (auto it = b.successors.rbegin(); it != b.successors.rend(); ++it) work.push_back(*it);
  }
  return std::nullopt;
}

// A block reached from `from`'s successors that ends the kernel (ret, exit,
// or falling off the end; a trap ends the whole grid and cannot deadlock)
// with no CTA barrier on the way and before `stop`.
std::optional<int> barrier_free_exit(const ControlFlowGraph& cfg, const BasicBlock& from, int stop) {
  return first_reached<int>(cfg, from, stop, [&cfg](int id, const BasicBlock& b, bool& through) -> std::optional<int> {
    through = b.barriers.empty();
    if (through && b.exits && !ends_in_trap(cfg, b)) return id;
    return std::nullopt;
  });
}

// The first CTA barrier reachable from `from`'s successors before `stop`, as
// an index into cfg.instructions.
std::optional<size_t> reachable_barrier(const ControlFlowGraph& cfg, const BasicBlock& from, int stop) {
  return first_reached<size_t>(cfg, from, stop, [](int, const BasicBlock& b, bool&) -> std::optional<size_t> {
    if (!b.barriers.empty()) return b.barriers.front();
    return std::nullopt;
  });
}

std::string where(const SourceLoc& loc) {
  return loc.known() ? fmt::format("line {}", loc.line) : std::string("an unknown line");
}

}  // namespace

Uniformity analyze_uniformity(const ControlFlowGraph& cfg, const UniformityOptions& options) {
  Uniformity u;
  const std::vector<std::vector<int>> parents = control_dependences(cfg);
  std::vector<InstructionEffects> effects;
  effects.reserve(cfg.instructions.size());
  for (const Instruction* in : cfg.instructions) effects.push_back(effects_of(*in));

  // Taint to a fixed point: the sets only grow, so this ends after at most
  // (registers + blocks) rounds.
  bool changed = true;
  while (changed) {
    changed = false;
    for (const BasicBlock& b : cfg.blocks) {
      bool under_divergent_branch = false;
      for (int p : parents[static_cast<size_t>(b.id)]) under_divergent_branch |= u.divergent_branches.count(p) > 0;
      for (size_t i = b.begin; i < b.end; ++i) {
        const InstructionEffects& e = effects[i];
        bool divergent = under_divergent_branch || is_divergence_source(cfg, *cfg.instructions[i], e, options);
        for (const std::string& r : e.reads) divergent = divergent || u.divergent_registers.count(r) > 0;
        if (!divergent) continue;
        for (const std::string& w : e.writes) changed |= u.divergent_registers.insert(w).second;
      }
      const Instruction* term = conditional_terminator(cfg, b);
      if (term != nullptr && (under_divergent_branch || u.divergent_registers.count(term->guard->predicate) > 0)) {
        changed |= u.divergent_branches.insert(b.id).second;
      }
    }
  }
  return u;
}

void check_barriers_reached_uniformly(const ControlFlowGraph& cfg, const Uniformity& uniformity,
                                      const std::string& kernel_label) {
  for (int id : uniformity.divergent_branches) {
    const BasicBlock& b = cfg.blocks[static_cast<size_t>(id)];
    const Instruction* term = conditional_terminator(cfg, b);
    if (term == nullptr) continue;
    // The threads split at this branch and meet again at its post-dominator.
    // A deadlock needs some of them to leave the kernel while others wait at
    // a barrier: either they leave before meeting again and a barrier lies
    // anywhere ahead, or a barrier lies before the meeting point and some
    // path from the branch leaves without one.
    const bool exits_here = term->opcode == "ret" || term->opcode == "exit";
    std::optional<int> exit_block = exits_here ? std::optional<int>(id) : barrier_free_exit(cfg, b, b.ipdom);
    std::optional<size_t> barrier;
    if (exit_block) {
      barrier = reachable_barrier(cfg, b, kNoBlock);
    } else {
      barrier = reachable_barrier(cfg, b, b.ipdom);
      if (barrier) exit_block = barrier_free_exit(cfg, b, kNoBlock);
    }
    if (!exit_block || !barrier) continue;
    const BasicBlock& leaving = cfg.blocks[static_cast<size_t>(*exit_block)];
    const SourceLoc exit_loc = leaving.end > leaving.begin ? cfg.instructions[leaving.end - 1]->loc : SourceLoc{};
    throw UserError(
        fmt::format("{} cannot be woven: this branch on {} may go different ways for threads of one CTA, and the "
                    "threads that leave the kernel at {} never reach the CTA barrier at {} that the others reach; "
                    "in the woven kernel those threads still run the other kernel, so the barrier would wait for "
                    "them forever (deadlock)",
                    kernel_label, term->guard->predicate, where(exit_loc), where(cfg.instructions[*barrier]->loc)),
        term->loc);
  }
}

}  // namespace stitch::ptx
