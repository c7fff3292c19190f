// Which values and branches of a kernel may differ between the threads of a
// CTA (docs/goptx.md, Barrier safety), and the check that weaving needs: a
// kernel must not let some threads leave it (ret/exit) on a divergent path
// while others can still reach a CTA barrier. On a GPU a thread that exited
// no longer counts at a barrier; in the woven kernel the thread that left
// one kernel still runs the other and never arrives, so the CTA deadlocks.
#pragma once

#include <set>
#include <string>

#include "ptx/cfg.h"

namespace stitch::ptx {

struct Uniformity {
  // Registers whose value may differ between threads of one CTA: those
  // computed from %tid, %laneid, %warpid, %clock*, loads from memory other
  // than kernel parameters and .const, atomics, shuffles, votes, and
  // anything computed from those or assigned under a divergent branch.
  std::set<std::string> divergent_registers;
  // CFG blocks ending in a conditional branch whose predicate may differ
  // between threads.
  std::set<int> divergent_branches;
};

struct UniformityOptions {
  // Whether %tid, %laneid and the like are sources. Without them the
  // analysis finds data-dependent divergence only: branches on loaded
  // values, atomics, shuffles... A branch on a thread index (a bounds check
  // `i < n`) splits at most the warps that straddle the bound; a branch on
  // data may split any warp (the weaver's divergent regions, side.h).
  bool thread_index_is_divergent = true;
};

Uniformity analyze_uniformity(const ControlFlowGraph& cfg, const UniformityOptions& options = {});

// UserError naming the kernel and the branch instruction when a thread can
// leave the kernel on a path that skips a CTA barrier (SyncKind::Cta,
// effects.h) that other threads of the CTA may still reach: some divergent
// branch has a path to an exit with no barrier on it and a path to a
// barrier. (`kernel_label` names the kernel in the message: "kernel A 'k'".)
void check_barriers_reached_uniformly(const ControlFlowGraph& cfg, const Uniformity& uniformity,
                                      const std::string& kernel_label);

}  // namespace stitch::ptx
