// One kernel prepared for weaving (docs/goptx.md, Sides): its body cut into
// blocks of schedulable statements with an explicit terminator, every name the
// kernel owns renamed apart from the other kernel's, and sync points (CTA
// barriers, warp-synchronous instructions) starting blocks of their own.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ptx/ptx_ast.h"

namespace stitch::ptx {

// A block successor meaning "this kernel is done" (ret or exit).
inline constexpr int kSideEnd = -1;

struct SideBlock {
  // Instructions and `{ }` scopes (each scope one unit), without the
  // terminating branch, ret or exit. A sync block holds its sync point first.
  std::vector<Statement> body;
  bool sync = false;
  // The terminator: always `taken`; with a predicate, `taken` when it holds
  // (or, when negated, fails) and `not_taken` otherwise.
  std::string predicate;  // "" for an unconditional successor
  bool negated = false;
  int taken = kSideEnd;
  int not_taken = kSideEnd;
  std::string origin;  // the kernel's label for the block, or "" (for comments)
  // Inside a divergent region: between a branch on data that may split the
  // threads of any warp (uniformity.h, without thread indices as sources) and
  // its immediate post-dominator, where they meet again. The other kernel's
  // code does not advance there, or every part of the split warp would
  // execute it again (merge.h). Bounds checks on a thread index split only
  // the warps that straddle the bound and do not make regions.
  bool divergent = false;
  // Ends in such a branch: the warp may split here. The other kernel does not
  // advance in the same merged block, so the parts meet again in the merged
  // block of this kernel's post-dominator with the other kernel where it was.
  bool splits = false;
};

struct Side {
  std::string kernel;        // the kernel's name in its module
  std::string prefix;        // "a_" or "b_"
  std::vector<VarDecl> params;          // renamed
  std::vector<VarDecl> locals;          // the body's .reg/.local/.shared declarations, renamed
  std::vector<SideBlock> blocks;        // blocks[0] is the entry
  bool uses_dynamic_shared = false;     // references an `.extern .shared` array
  int sliced_blocks = 0;
};

struct SideOptions {
  std::string prefix;  // for registers ("%a_r1"), body variables and parameters
  // Renamings of module-scope names (variables, functions) the woven module
  // had to give this kernel's module items.
  std::map<std::string, std::string> module_renames;
  // Module-scope `.extern .shared` arrays of the kernel's module.
  std::vector<std::string> dynamic_shared_names;
  // Blocks longer than this many statements are cut into slices (0: never).
  int slice_statements = 0;
  // Woven-parameter names, in order, for this kernel's parameters.
  std::vector<std::string> param_names;
};

// UserError for what the weaver cannot take: a label inside a `{ }` scope, an
// indirect branch (brx.idx), or a function without a body.
Side prepare_side(const Function& kernel, const SideOptions& options);

// Renames a statement's registers, variables and labels in place by `renames`
// (names not in the map are kept; special registers are never in it).
void rename_statement(Statement& s, const std::map<std::string, std::string>& renames);

}  // namespace stitch::ptx
