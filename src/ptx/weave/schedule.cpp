// Latency-aware interleaving of two instruction streams (docs/goptx.md,
// Dependencies): a dependency DAG per stream, then list scheduling, one
// issue a cycle, critical path first.
#include "ptx/weave/schedule.h"

#include <algorithm>
#include <array>
#include <limits>
#include <string>
#include <vector>

#include "ptx/weave/effects.h"
#include "ptx/weave/latency.h"
#include "stitch/error.h"

namespace stitch::ptx {
namespace {

// One schedulable statement: an instruction, or a `{ }` scope taken whole.
struct Unit {
  InstructionEffects effects;
  int latency = 1;     // cycles from issue until its results can be read
  int issue_cost = 1;  // issue slots it occupies (a scope: its instruction count)
  bool pinned = false;  // a label or declaration outside a scope: ordered with everything
};

struct Edge {
  size_t to = 0;
  int delay = 1;  // the successor issues at least this many cycles after this unit
};

struct StreamGraph {
  std::vector<Unit> units;
  std::vector<std::vector<Edge>> successors;
  std::vector<int> predecessor_count;
  std::vector<int64_t> priority;  // latency-weighted longest path to the stream's end
};

void collect_instructions(const std::vector<Statement>& body, std::vector<const Instruction*>& out) {
  for (const Statement& s : body) {
    if (const auto* in = std::get_if<Instruction>(&s.node)) out.push_back(in);
    if (const auto* b = std::get_if<Block>(&s.node)) collect_instructions(b->body, out);
  }
}

void merge_into(InstructionEffects& into, const InstructionEffects& e) {
  auto add = [](std::vector<std::string>& list, const std::vector<std::string>& more) {
    for (const std::string& r : more) {
      if (std::find(list.begin(), list.end(), r) == list.end()) list.push_back(r);
    }
  };
  add(into.reads, e.reads);
  add(into.writes, e.writes);
  if (e.memory != MemoryEffect::None) {
    if (into.memory == MemoryEffect::None) {
      into.memory = e.memory;
      into.space = e.space;
    } else if (into.memory != e.memory || into.space != e.space) {
      // Mixed accesses in one scope: order it like a read-write of any space.
      into.memory = into.memory == MemoryEffect::Fence || e.memory == MemoryEffect::Fence ? MemoryEffect::Fence
                                                                                          : MemoryEffect::ReadWrite;
      if (into.space != e.space) into.space.clear();
    }
  }
  // A CTA barrier dominates a warp collective.
  if (e.sync == SyncKind::Cta || (e.sync == SyncKind::Warp && into.sync == SyncKind::None)) into.sync = e.sync;
  into.is_control = into.is_control || e.is_control;
}

// Cycles until the last result of `instructions`, issued in order on one scheduler.
int serial_completion(const std::vector<const Instruction*>& instructions, WeaveArch arch) {
  std::vector<std::pair<std::string, int64_t>> ready_at;
  int64_t cycle = 0;
  int64_t done = 0;
  for (const Instruction* in : instructions) {
    const InstructionEffects e = effects_of(*in);
    for (const std::string& r : e.reads) {
      for (const auto& [name, at] : ready_at) {
        if (name == r) cycle = std::max(cycle, at);
      }
    }
    const int latency = instruction_latency(*in, arch);
    for (const std::string& w : e.writes) ready_at.emplace_back(w, cycle + latency);
    done = std::max(done, cycle + latency);
    ++cycle;
  }
  return static_cast<int>(std::max(done, cycle));
}

Unit unit_of(const Statement& s, WeaveArch arch) {
  Unit u;
  if (const auto* in = std::get_if<Instruction>(&s.node)) {
    u.effects = effects_of(*in);
    u.latency = instruction_latency(*in, arch);
    return u;
  }
  if (const auto* b = std::get_if<Block>(&s.node)) {
    std::vector<const Instruction*> instructions;
    collect_instructions(b->body, instructions);
    bool has_call = false;
    for (const Instruction* in : instructions) {
      InstructionEffects e = effects_of(*in);
      if (in->opcode == "call") {
        has_call = true;
        e.is_control = false;  // a call returns: the scope is not a block end
      }
      merge_into(u.effects, e);
    }
    if (has_call) u.effects.memory = MemoryEffect::Fence;
    if (has_call) u.effects.space.clear();
    u.latency = std::max(1, serial_completion(instructions, arch));
    u.issue_cost = std::max<int>(1, static_cast<int>(instructions.size()));
    return u;
  }
  u.pinned = true;
  return u;
}

bool intersects(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  for (const std::string& x : a) {
    if (std::find(b.begin(), b.end(), x) != b.end()) return true;
  }
  return false;
}

bool memory_conflict(const InstructionEffects& a, const InstructionEffects& b) {
  if (a.memory == MemoryEffect::None || b.memory == MemoryEffect::None) return false;
  if (a.memory == MemoryEffect::Fence || b.memory == MemoryEffect::Fence) return true;
  const bool a_writes = a.memory != MemoryEffect::Read;
  const bool b_writes = b.memory != MemoryEffect::Read;
  if (!a_writes && !b_writes) return false;
  return a.space.empty() || b.space.empty() || a.space == b.space;
}

bool orders_everything(const Unit& u) {
  return u.pinned || u.effects.sync != SyncKind::None || u.effects.is_control;
}

// The delay an edge from `before` to `after` needs; 0 when they are independent.
int dependence_delay(const Unit& before, const Unit& after) {
  if (intersects(before.effects.writes, after.effects.reads)) return std::max(before.latency, before.issue_cost);
  if (orders_everything(before) || orders_everything(after) ||
      intersects(before.effects.reads, after.effects.writes) ||
      intersects(before.effects.writes, after.effects.writes) || memory_conflict(before.effects, after.effects)) {
    return before.issue_cost;
  }
  return 0;
}

StreamGraph build_graph(const std::vector<const Statement*>& stream, WeaveArch arch) {
  StreamGraph g;
  for (const Statement* s : stream) {
    STITCH_ASSERT(s != nullptr, "null statement in a weave stream");
    g.units.push_back(unit_of(*s, arch));
  }
  const size_t n = g.units.size();
  g.successors.assign(n, {});
  g.predecessor_count.assign(n, 0);
  // Quadratic in the stream's length; streams are basic blocks or slices of them.
  for (size_t j = 0; j < n; ++j) {
    for (size_t i = 0; i < j; ++i) {
      const int delay = dependence_delay(g.units[i], g.units[j]);
      if (delay == 0) continue;
      g.successors[i].push_back({j, delay});
      ++g.predecessor_count[j];
    }
  }
  g.priority.assign(n, 0);
  for (size_t k = n; k-- > 0;) {
    int64_t below = 0;
    for (const Edge& e : g.successors[k]) below = std::max(below, g.priority[e.to]);
    g.priority[k] = g.units[k].latency + below;
  }
  return g;
}

// Issue state of one stream during scheduling.
struct StreamState {
  const StreamGraph* graph = nullptr;
  std::vector<int> waiting;         // predecessors not yet issued
  std::vector<int64_t> earliest;    // cycle from which the unit may issue
  std::vector<bool> issued;
  size_t issued_count = 0;
};

// A stream's last statement when it is a branch, return or exit: it ends the
// merged code, so it waits for the other stream's work too.
bool is_trailing_control(const StreamGraph& g, size_t index) {
  return index + 1 == g.units.size() && g.units[index].effects.is_control;
}

size_t work_before_end(const StreamGraph& g) {
  return g.units.empty() || !is_trailing_control(g, g.units.size() - 1) ? g.units.size() : g.units.size() - 1;
}

StreamState start(const StreamGraph& g) {
  StreamState s;
  s.graph = &g;
  s.waiting = g.predecessor_count;
  s.earliest.assign(g.units.size(), 0);
  s.issued.assign(g.units.size(), false);
  return s;
}

void issue(StreamState& s, size_t index, int64_t cycle) {
  s.issued[index] = true;
  ++s.issued_count;
  for (const Edge& e : s.graph->successors[index]) {
    --s.waiting[e.to];
    s.earliest[e.to] = std::max(s.earliest[e.to], cycle + e.delay);
  }
}

struct Candidate {
  int side = -1;
  size_t index = 0;
};

}  // namespace

std::vector<WovenItem> interleave_by_latency(const std::vector<const Statement*>& a,
                                             const std::vector<const Statement*>& b, WeaveArch arch) {
  const std::array<StreamGraph, 2> graphs = {build_graph(a, arch), build_graph(b, arch)};
  std::array<StreamState, 2> states = {start(graphs[0]), start(graphs[1])};
  const size_t total = a.size() + b.size();
  std::vector<WovenItem> order;
  order.reserve(total);
  int64_t cycle = 0;
  int last_side = 1;  // so that A goes first on a tie at the start
  auto may_issue = [&](int side, size_t i) {
    const StreamState& s = states[static_cast<size_t>(side)];
    if (s.issued[i] || s.waiting[i] > 0) return false;
    if (!is_trailing_control(graphs[static_cast<size_t>(side)], i)) return true;
    const StreamState& other = states[static_cast<size_t>(1 - side)];
    return other.issued_count >= work_before_end(*other.graph);
  };
  while (order.size() < total) {
    // Ready: every predecessor issued and every producer's latency elapsed.
    Candidate best;
    for (int side = 0; side < 2; ++side) {
      const StreamState& s = states[side];
      for (size_t i = 0; i < s.issued.size(); ++i) {
        if (!may_issue(side, i) || s.earliest[i] > cycle) continue;
        if (best.side < 0) {
          best = {side, i};
          continue;
        }
        const int64_t p = graphs[side].priority[i];
        const int64_t q = graphs[best.side].priority[best.index];
        const bool better = p != q ? p > q : side != best.side ? side != last_side : i < best.index;
        if (better) best = {side, i};
      }
    }
    if (best.side < 0) {
      // Nothing is ready this cycle: wait for whichever unit becomes ready first.
      int64_t next = std::numeric_limits<int64_t>::max();
      for (int side = 0; side < 2; ++side) {
        const StreamState& s = states[static_cast<size_t>(side)];
        for (size_t i = 0; i < s.issued.size(); ++i) {
          if (may_issue(side, i)) next = std::min(next, s.earliest[i]);
        }
      }
      STITCH_ASSERT(next != std::numeric_limits<int64_t>::max(), "weave scheduler: no unit can become ready");
      cycle = std::max(cycle + 1, next);
      continue;
    }
    issue(states[best.side], best.index, cycle);
    order.push_back({best.side, best.index});
    last_side = best.side;
    cycle += graphs[best.side].units[best.index].issue_cost;
  }
  return order;
}

std::vector<WovenItem> concatenate(const std::vector<const Statement*>& a, const std::vector<const Statement*>& b) {
  std::vector<WovenItem> order;
  order.reserve(a.size() + b.size());
  for (size_t i = 0; i < a.size(); ++i) order.push_back({0, i});
  for (size_t i = 0; i < b.size(); ++i) order.push_back({1, i});
  return order;
}

int64_t estimate_issue_cycles(const std::vector<const Statement*>& a, const std::vector<const Statement*>& b,
                              const std::vector<WovenItem>& order, WeaveArch arch) {
  const std::array<StreamGraph, 2> graphs = {build_graph(a, arch), build_graph(b, arch)};
  std::array<StreamState, 2> states = {start(graphs[0]), start(graphs[1])};
  STITCH_ASSERT(order.size() == a.size() + b.size(), "estimate_issue_cycles: order is not a permutation");
  int64_t cycle = 0;
  int64_t done = 0;
  for (const WovenItem& item : order) {
    STITCH_ASSERT(item.side == 0 || item.side == 1, "estimate_issue_cycles: side out of range");
    StreamState& s = states[item.side];
    STITCH_ASSERT(item.index < s.issued.size() && !s.issued[item.index],
                  "estimate_issue_cycles: order is not a permutation");
    STITCH_ASSERT(s.waiting[item.index] == 0, "estimate_issue_cycles: order breaks a dependency");
    cycle = std::max(cycle, s.earliest[item.index]);
    issue(s, item.index, cycle);
    const Unit& u = graphs[item.side].units[item.index];
    done = std::max(done, cycle + std::max(u.latency, u.issue_cost));
    cycle += u.issue_cost;
  }
  return std::max(done, cycle);
}

}  // namespace stitch::ptx
