// Latency-aware interleaving of two independent instruction streams
// (docs/goptx.md, Weaving): list scheduling over the dependency DAG of each
// stream with the latencies of latency.h, so that a consumer is placed at
// least its producer's latency after it whenever the other stream has ready
// work to fill the gap.
#pragma once

#include <cstdint>
#include <vector>

#include "ptx/ptx_ast.h"
#include "ptx/weave/weave.h"

namespace stitch::ptx {

// One item of a merged order: statement `index` of stream `side` (0: A, 1: B).
struct WovenItem {
  int side = 0;
  size_t index = 0;
  bool operator==(const WovenItem&) const = default;
};

// Interleaves streams a and b. Each statement is an Instruction or a Block
// (a `{ }` scope, e.g. a call sequence, scheduled as one unit whose effects
// are its instructions' together). Within a stream the order respects every
// register dependency (read after write, write after read, write after
// write), keeps memory accesses that may conflict in order (any two where
// one writes, in the same or an unknown state space; fences and sync points
// order everything), and keeps control instructions last; nothing orders one
// stream against the other. Deterministic; the result holds every statement
// of both streams exactly once.
std::vector<WovenItem> interleave_by_latency(const std::vector<const Statement*>& a,
                                             const std::vector<const Statement*>& b, WeaveArch arch);

// The same streams one after the other: a's, then b's (the concat baseline).
std::vector<WovenItem> concatenate(const std::vector<const Statement*>& a, const std::vector<const Statement*>& b);

// The latency model's estimate of the cycles one warp needs to issue `order`
// in order on one scheduler (one instruction a cycle at most, each waiting for
// its operands' producers to complete), for reports that are estimates, not
// measurements.
int64_t estimate_issue_cycles(const std::vector<const Statement*>& a, const std::vector<const Statement*>& b,
                              const std::vector<WovenItem>& order, WeaveArch arch);

}  // namespace stitch::ptx
