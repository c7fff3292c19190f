#include "ptx/weave/merge.h"

#include <fmt/format.h>

#include <map>

#include "ptx/weave/schedule.h"

namespace stitch::ptx {

namespace {

struct Pair {
  int a = kSideEnd;
  int b = kSideEnd;
  auto operator<=>(const Pair&) const = default;
};

// One side's move out of a merged block: where it goes when its condition
// holds and when it does not (equal when unconditional or not advancing).
struct Move {
  std::string predicate;  // "" unconditional
  bool negated = false;
  int taken = kSideEnd;
  int not_taken = kSideEnd;
};

struct Node {
  Pair pair;
  bool advance_a = false;
  bool advance_b = false;
  Move a, b;
};

bool at_sync(const Side& side, int block) { return block != kSideEnd && side.blocks[static_cast<size_t>(block)].sync; }

bool splitting(const SideBlock& block) { return block.divergent || block.splits; }

// Which sides run their block in the pair's merged block.
void decide(const Side& a, const Side& b, Node& n, WeaveStrategy strategy) {
  const int x = n.pair.a;
  const int y = n.pair.b;
  if (strategy == WeaveStrategy::Concat) {
    n.advance_a = x != kSideEnd;
    n.advance_b = x == kSideEnd && y != kSideEnd;
    return;
  }
  const bool sync_a = at_sync(a, x);
  const bool sync_b = at_sync(b, y);
  if (x == kSideEnd || y == kSideEnd) {
    n.advance_a = x != kSideEnd;
    n.advance_b = y != kSideEnd;
  } else if (sync_a != sync_b) {
    // The side at a sync point waits for the other to reach one (or its end).
    n.advance_a = !sync_a;
    n.advance_b = !sync_b;
  } else if (splitting(a.blocks[static_cast<size_t>(x)]) || splitting(b.blocks[static_cast<size_t>(y)])) {
    // Where one kernel may split the warp on data, and inside the region
    // until its parts meet again, the other waits: the parts run that region
    // one after another, and would each run the other kernel's code too
    // (both: A goes first).
    n.advance_a = splitting(a.blocks[static_cast<size_t>(x)]);
    n.advance_b = !n.advance_a;
  } else {
    n.advance_a = n.advance_b = true;
  }
}

Move move_of(const Side& side, int block, bool advance) {
  Move m;
  if (!advance) {
    m.taken = m.not_taken = block;
    return m;
  }
  const SideBlock& sb = side.blocks[static_cast<size_t>(block)];
  m.predicate = sb.predicate;
  m.negated = sb.negated;
  m.taken = sb.taken;
  m.not_taken = sb.predicate.empty() ? sb.taken : sb.not_taken;
  return m;
}

Instruction make_branch(const std::string& label, const std::string& predicate = "", bool negated = false) {
  Instruction in;
  in.opcode = "bra";
  in.operands.push_back(Operand{});
  in.operands.back().kind = Operand::Kind::Symbol;
  in.operands.back().name = label;
  if (!predicate.empty()) in.guard = Guard{predicate, negated};
  return in;
}

Statement statement(Instruction in) { return Statement{std::move(in)}; }
Statement label_statement(const std::string& name) { return Statement{Label{name, {}}}; }

const Instruction* instruction_of(const Statement& s) { return std::get_if<Instruction>(&s.node); }

// bar.sync/bar.red/bar.arrive are .aligned: every thread must execute the
// same instruction. In the woven kernel a barrier of one kernel may be
// reached in several merged blocks (the other kernel elsewhere), so each
// becomes the non-aligned barrier.* form, which only counts arrivals.
void unalign_barrier(Statement& s) {
  auto* in = std::get_if<Instruction>(&s.node);
  if (in == nullptr) return;
  if (in->opcode == "bar" && !in->modifiers.empty() &&
      (in->modifiers[0] == "sync" || in->modifiers[0] == "red" || in->modifiers[0] == "arrive")) {
    in->opcode = "barrier";
  } else if (in->opcode == "barrier") {
    std::erase(in->modifiers, std::string("aligned"));
  }
}

// `bar.sync 0` / `barrier.sync 0` without a thread count or guard: all threads of the CTA.
bool is_full_cta_barrier(const Statement& s) {
  const Instruction* in = instruction_of(s);
  if (in == nullptr || in->guard || in->operands.size() != 1) return false;
  if (in->opcode != "bar" && in->opcode != "barrier") return false;
  if (in->modifiers.empty() || in->modifiers[0] != "sync") return false;
  for (size_t i = 1; i < in->modifiers.size(); ++i) {
    if (in->modifiers[i] != "aligned") return false;
  }
  return in->operands[0].kind == Operand::Kind::Integer && in->operands[0].integer == 0;
}

class Emitter {
 public:
  Emitter(const Side& a, const Side& b, const MergeOptions& options) : a_(a), b_(b), options_(options) {}

  Merged run() {
    Merged merged;
    discover();
    if (static_cast<int>(nodes_.size()) > options_.max_merged_blocks) {
      merged.too_large = true;
      merged.merged_blocks = static_cast<int>(nodes_.size());
      return merged;
    }
    const std::vector<int> order = emission_order();
    for (size_t k = 0; k < order.size(); ++k) {
      const int next = k + 1 < order.size() ? order[k + 1] : -1;
      emit(order[k], next, merged);
    }
    merged.merged_blocks = static_cast<int>(nodes_.size());
    return merged;
  }

 private:
  int node_of(Pair p) {
    auto [it, inserted] = index_.try_emplace(p, static_cast<int>(nodes_.size()));
    if (inserted) {
      Node n;
      n.pair = p;
      decide(a_, b_, n, options_.strategy);
      n.a = move_of(a_, p.a, n.advance_a);
      n.b = move_of(b_, p.b, n.advance_b);
      nodes_.push_back(n);
      pending_.push_back(it->second);
    }
    return it->second;
  }

  // The pairs reachable from the entry pair; stops early once over the bound.
  void discover() {
    node_of(Pair{a_.blocks.empty() ? kSideEnd : 0, b_.blocks.empty() ? kSideEnd : 0});
    while (!pending_.empty() && static_cast<int>(nodes_.size()) <= options_.max_merged_blocks) {
      const int id = pending_.back();
      pending_.pop_back();
      const Node n = nodes_[static_cast<size_t>(id)];
      if (n.pair.a == kSideEnd && n.pair.b == kSideEnd) continue;
      for (int ta : {n.a.taken, n.a.not_taken}) {
        for (int tb : {n.b.taken, n.b.not_taken}) successors_[id].push_back(node_of(Pair{ta, tb}));
      }
    }
  }

  // Depth first from the entry, each node followed by its fall-through
  // successor (both conditions false) when that is not placed yet.
  std::vector<int> emission_order() const {
    std::vector<int> order;
    std::vector<bool> placed(nodes_.size(), false);
    std::vector<int> stack{0};
    while (!stack.empty()) {
      int id = stack.back();
      stack.pop_back();
      while (id >= 0 && !placed[static_cast<size_t>(id)]) {
        placed[static_cast<size_t>(id)] = true;
        order.push_back(id);
        auto it = successors_.find(id);
        if (it == successors_.end()) break;
        // successors_: (taken,taken) (taken,not) (not,taken) (not,not).
        const std::vector<int>& s = it->second;
        for (size_t i = 0; i + 1 < s.size(); ++i) stack.push_back(s[i]);
        id = s.back();
      }
    }
    return order;
  }

  std::string label(int id) const { return fmt::format("{}_{}", options_.label_prefix, id); }

  std::string comment_of(const Side& side, int block, bool advance) const {
    if (block == kSideEnd) return "done";
    const std::string& origin = side.blocks[static_cast<size_t>(block)].origin;
    return fmt::format("{}{}{}", advance ? "" : "waits at ", origin.empty() ? fmt::format("block {}", block) : origin,
                       side.blocks[static_cast<size_t>(block)].sync ? " (sync)" : "");
  }

  void emit(int id, int next, Merged& merged) {
    const Node& n = nodes_[static_cast<size_t>(id)];
    std::vector<Statement>& out = merged.body;
    out.push_back(label_statement(label(id)));
    if (n.pair.a == kSideEnd && n.pair.b == kSideEnd) {
      Instruction ret;
      ret.opcode = "ret";
      out.push_back(statement(std::move(ret)));
      return;
    }
    emit_body(n, merged);
    emit_branches(id, next, out);
  }

  void emit_body(const Node& n, Merged& merged) {
    std::vector<Statement>& out = merged.body;
    const std::vector<Statement> none;
    const std::vector<Statement>& body_a = n.advance_a ? a_.blocks[static_cast<size_t>(n.pair.a)].body : none;
    const std::vector<Statement>& body_b = n.advance_b ? b_.blocks[static_cast<size_t>(n.pair.b)].body : none;
    const bool sync_a = n.advance_a && a_.blocks[static_cast<size_t>(n.pair.a)].sync;
    const bool sync_b = n.advance_b && b_.blocks[static_cast<size_t>(n.pair.b)].sync;
    size_t skip_a = 0;
    size_t skip_b = 0;
    // Sync points first, A's then B's; two full-CTA barriers as one.
    if (sync_a) {
      out.push_back(body_a[0]);
      unalign_barrier(out.back());
      skip_a = 1;
    }
    if (sync_b) {
      if (sync_a && is_full_cta_barrier(body_a[0]) && is_full_cta_barrier(body_b[0])) {
        ++merged.barriers_merged;
      } else {
        out.push_back(body_b[0]);
        unalign_barrier(out.back());
      }
      skip_b = 1;
    }
    std::vector<const Statement*> stream_a;
    std::vector<const Statement*> stream_b;
    for (size_t i = skip_a; i < body_a.size(); ++i) stream_a.push_back(&body_a[i]);
    for (size_t i = skip_b; i < body_b.size(); ++i) stream_b.push_back(&body_b[i]);
    std::vector<WovenItem> order;
    if (options_.strategy == WeaveStrategy::Latency && !stream_a.empty() && !stream_b.empty()) {
      order = interleave_by_latency(stream_a, stream_b, options_.arch);
    } else {
      order = concatenate(stream_a, stream_b);
    }
    for (const WovenItem& item : order) {
      out.push_back(*(item.side == 0 ? stream_a : stream_b)[item.index]);
      unalign_barrier(out.back());
    }
    const int emitted = static_cast<int>(skip_a + skip_b + order.size());
    merged.statements += emitted;
    if (!stream_a.empty() && !stream_b.empty()) merged.interleavable_statements += static_cast<int>(order.size());
  }

  // Both conditions decide the successor pair: a branch tree on A's
  // predicate, then B's (both true, only one, neither).
  void emit_branches(int id, int next, std::vector<Statement>& out) {
    const Node& n = nodes_[static_cast<size_t>(id)];
    auto target = [&](int x, int y) { return index_.at(Pair{x, y}); };
    auto jump = [&](int to) {
      if (to != next) out.push_back(statement(make_branch(label(to))));
    };
    // B's choice given where A goes.
    auto branch_on_b = [&](int xa, bool last) {
      const int t = target(xa, n.b.taken);
      const int f = target(xa, n.b.not_taken);
      if (!n.b.predicate.empty() && t != f) {
        out.push_back(statement(make_branch(label(t), n.b.predicate, n.b.negated)));
      }
      if (last) {
        jump(f);
      } else {
        out.push_back(statement(make_branch(label(f))));
      }
    };
    const bool a_branches = !n.a.predicate.empty() && n.a.taken != n.a.not_taken;
    if (!a_branches) {
      branch_on_b(n.a.taken, true);
      return;
    }
    const std::string when_a = fmt::format("{}_{}_a", options_.label_prefix, id);
    out.push_back(statement(make_branch(when_a, n.a.predicate, n.a.negated)));
    branch_on_b(n.a.not_taken, false);
    out.push_back(label_statement(when_a));
    branch_on_b(n.a.taken, true);
  }

  const Side& a_;
  const Side& b_;
  const MergeOptions& options_;
  std::vector<Node> nodes_;
  std::map<Pair, int> index_;
  std::map<int, std::vector<int>> successors_;
  std::vector<int> pending_;
};

}  // namespace

Merged merge_sides(const Side& a, const Side& b, const MergeOptions& options) {
  return Emitter(a, b, options).run();
}

}  // namespace stitch::ptx
