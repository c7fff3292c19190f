// The merged control-flow graph of two kernels (docs/goptx.md, Merged CFG):
// the product of their block graphs, built from the entry pair by a worklist
// of reached pairs, each pair emitted as one merged block whose code is both
// blocks' statements woven together, followed by a branch tree on both
// kernels' conditions (both true, only one, neither).
//
// Sync points are ordered so that no kernel's barrier can deadlock the other:
// a kernel standing at a sync block waits (its side does not advance) while
// the other runs up to its own next sync block or its end; when both stand at
// sync blocks, both sync points are executed in the pair's block, A's first.
// Because each kernel reaches its CTA barriers in one sequence in all threads
// of a CTA (uniformity.h checks what it can), every thread then executes the
// same merged sequence of barriers.
#pragma once

#include <string>
#include <vector>

#include "ptx/weave/side.h"
#include "ptx/weave/weave.h"

namespace stitch::ptx {

struct MergeOptions {
  WeaveStrategy strategy = WeaveStrategy::Latency;
  WeaveArch arch = WeaveArch::Sm90;
  int max_merged_blocks = 4096;
  std::string label_prefix = "$W";
};

struct Merged {
  std::vector<Statement> body;  // labels and statements, ending in ret
  int merged_blocks = 0;
  int barriers_merged = 0;
  // Statements emitted in merged blocks where both kernels advance (those the
  // latency strategy can interleave), and all statements emitted.
  int interleavable_statements = 0;
  int statements = 0;
  bool too_large = false;  // more than max_merged_blocks pairs were reached; body is empty
};

Merged merge_sides(const Side& a, const Side& b, const MergeOptions& options);

}  // namespace stitch::ptx
