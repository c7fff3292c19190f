// A function's control-flow graph (docs/ptx.md, CFG): basic blocks over the
// function's instructions in order (nested `{ }` scopes flattened), their
// successors and predecessors, immediate dominators and post-dominators, and
// the CTA barriers in each block. The SIMT interpreter reconverges a
// divergent warp at the branch block's immediate post-dominator.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ptx/ptx_ast.h"

namespace stitch::ptx {

// No such block: the entry's dominator, or an unreachable block's.
inline constexpr int kNoBlock = -1;
// The virtual exit after every ret/exit/trap: the post-dominator of a block
// whose paths meet only when the function ends.
inline constexpr int kExitBlock = -2;

struct BasicBlock {
  int id = 0;
  std::vector<std::string> labels;  // every label that names the block's start
  size_t begin = 0;                 // [begin, end) into ControlFlowGraph::instructions
  size_t end = 0;
  // Successors: a branch's target first, then the fall-through block.
  std::vector<int> successors;
  std::vector<int> predecessors;
  // Ends in ret, exit or trap (guarded or not), or falls off the function's end.
  bool exits = false;
  int idom = kNoBlock;
  // kExitBlock when only the function's end post-dominates the block;
  // kNoBlock when no path from it reaches an exit (an endless loop).
  int ipdom = kNoBlock;
  // Indices into ControlFlowGraph::instructions of the CTA barriers
  // (bar.sync, bar.arrive, bar.red, barrier.*; not bar.warp.sync).
  std::vector<size_t> barriers;
};

struct ControlFlowGraph {
  const Function* function = nullptr;  // must outlive the graph
  std::vector<const Instruction*> instructions;
  std::vector<BasicBlock> blocks;  // blocks[0] is the entry
  std::map<std::string, int> block_of_label;

  // The block holding instructions[index].
  int block_of(size_t index) const;
};

// Whether `in` is a CTA-wide barrier instruction.
bool is_barrier(const Instruction& in);

// UserError at the instruction for a branch to a label the function does not
// define, a label defined twice, or an indirect branch (brx.idx), which the
// CFG does not follow.
ControlFlowGraph build_cfg(const Function& f);

// One line per block, for tests and `stitch ptx cfg`:
//   bb1 $L__BB0_2: [4, 9) barrier@6 -> bb3 bb2; preds bb0; idom bb0; ipdom bb3
std::string print_cfg(const ControlFlowGraph& cfg);

}  // namespace stitch::ptx
