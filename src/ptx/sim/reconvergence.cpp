#include "ptx/sim/reconvergence.h"

#include <algorithm>
#include <vector>

namespace stitch::ptx::sim {

namespace {

bool ends_block(const DInst& d) {
  return d.control == Control::Branch || d.control == Control::Return || d.control == Control::Exit ||
         d.control == Control::Trap;
}

bool leaves_function(const DInst& d) {
  return d.control == Control::Return || d.control == Control::Exit || d.control == Control::Trap;
}

}  // namespace

void assign_reconvergence(DFunction& f) {
  const uint32_t n = static_cast<uint32_t>(f.code.size());
  if (n == 0) return;
  // Basic blocks: leaders are the entry, branch targets and what follows a block end.
  std::vector<bool> leader(n + 1, false);
  leader[0] = true;
  for (uint32_t pc = 0; pc < n; ++pc) {
    const DInst& d = f.code[pc];
    if (d.control == Control::Branch) leader[d.target] = true;
    if (ends_block(d)) leader[pc + 1] = true;
  }
  std::vector<uint32_t> block_of(n), first;
  for (uint32_t pc = 0; pc < n; ++pc) {
    if (leader[pc]) first.push_back(pc);
    block_of[pc] = static_cast<uint32_t>(first.size() - 1);
  }
  const uint32_t blocks = static_cast<uint32_t>(first.size());
  const uint32_t exit = blocks;  // the virtual exit node
  std::vector<std::vector<uint32_t>> succ(blocks), pred(blocks + 1);
  for (uint32_t b = 0; b < blocks; ++b) {
    const uint32_t last = (b + 1 < blocks ? first[b + 1] : n) - 1;
    const DInst& d = f.code[last];
    const bool guarded = d.guard.kind != OperandKind::None;
    if (d.control == Control::Branch) succ[b].push_back(block_of[d.target]);
    if (leaves_function(d)) succ[b].push_back(exit);
    const bool falls_through = !ends_block(d) || guarded;
    if (falls_through) succ[b].push_back(last + 1 < n ? block_of[last + 1] : exit);
    for (uint32_t s : succ[b]) pred[s].push_back(b);
  }
  // Post-dominators: dominators of the reversed CFG from the exit, by the
  // iterative algorithm of Cooper, Harvey and Kennedy ("A Simple, Fast
  // Dominance Algorithm", 2001) over a reverse post-order of the reversed graph.
  std::vector<uint32_t> order;  // post-order of the reversed graph from exit
  std::vector<uint8_t> seen(blocks + 1, 0);
  std::vector<std::pair<uint32_t, size_t>> stack{{exit, 0}};
  seen[exit] = 1;
  while (!stack.empty()) {
    auto& [node, i] = stack.back();
    if (i < pred[node].size()) {
      const uint32_t p = pred[node][i++];
      if (!seen[p]) {
        seen[p] = 1;
        stack.push_back({p, 0});
      }
    } else {
      order.push_back(node);
      stack.pop_back();
    }
  }
  std::vector<uint32_t> rank(blocks + 1, 0);
  for (uint32_t i = 0; i < order.size(); ++i) rank[order[i]] = i;
  constexpr uint32_t kUndefined = 0xffffffffu;
  std::vector<uint32_t> ipdom(blocks + 1, kUndefined);
  ipdom[exit] = exit;
  auto intersect = [&](uint32_t a, uint32_t b) {
    while (a != b) {
      while (rank[a] < rank[b]) a = ipdom[a];
      while (rank[b] < rank[a]) b = ipdom[b];
    }
    return a;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const uint32_t b = *it;
      if (b == exit) continue;
      uint32_t next = kUndefined;
      for (uint32_t s : succ[b]) {
        if (ipdom[s] == kUndefined) continue;
        next = next == kUndefined ? s : intersect(s, next);
      }
      if (next != ipdom[b]) {
        ipdom[b] = next;
        changed = true;
      }
    }
  }
  for (uint32_t pc = 0; pc < n; ++pc) {
    DInst& d = f.code[pc];
    if (d.control != Control::Branch) continue;
    const uint32_t p = ipdom[block_of[pc]];
    // A block that cannot reach the exit (an endless loop) has no post-dominator.
    d.reconverge = (p == kUndefined || p == exit) ? kNoReconvergence : first[p];
  }
}

}  // namespace stitch::ptx::sim
