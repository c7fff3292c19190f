#include "ptx/cfg.h"

#include <fmt/format.h>

#include <algorithm>

namespace stitch::ptx {

namespace {

enum class Flow : uint8_t { Next, Branch, Exit, Indirect };

Flow flow_of(const Instruction& in) {
  if (in.opcode == "bra") return Flow::Branch;
  if (in.opcode == "ret" || in.opcode == "exit" || in.opcode == "trap") return Flow::Exit;
  if (in.opcode == "brx") return Flow::Indirect;
  return Flow::Next;
}

struct Item {
  const Instruction* instruction = nullptr;  // null: a label
  const Label* label = nullptr;
};

void flatten(const std::vector<Statement>& body, std::vector<Item>& out) {
  for (const Statement& s : body) {
    if (const auto* in = std::get_if<Instruction>(&s.node)) {
      out.push_back(Item{in, nullptr});
    } else if (const auto* label = std::get_if<Label>(&s.node)) {
      out.push_back(Item{nullptr, label});
    } else if (const auto* block = std::get_if<Block>(&s.node)) {
      flatten(block->body, out);
    }
  }
}

// Immediate dominators over nodes 0..n-1 from `root` (Cooper, Harvey and
// Kennedy, "A Simple, Fast Dominance Algorithm", 2001): idom[root] == root,
// -1 for a node the root does not reach.
std::vector<int> immediate_dominators(int n, int root, const std::vector<std::vector<int>>& succ,
                                      const std::vector<std::vector<int>>& pred) {
  std::vector<int> postorder_number(static_cast<size_t>(n), -1);
  std::vector<int> postorder;
  // Iterative DFS: a fuzzed function may have thousands of blocks in a chain.
  std::vector<std::pair<int, size_t>> stack{{root, 0}};
  std::vector<bool> visited(static_cast<size_t>(n), false);
  visited[static_cast<size_t>(root)] = true;
  while (!stack.empty()) {
    auto& [node, next_edge] = stack.back();
    const std::vector<int>& edges = succ[static_cast<size_t>(node)];
    if (next_edge < edges.size()) {
      int s = edges[next_edge++];
      if (!visited[static_cast<size_t>(s)]) {
        visited[static_cast<size_t>(s)] = true;
        stack.emplace_back(s, 0);
      }
      continue;
    }
    postorder_number[static_cast<size_t>(node)] = static_cast<int>(postorder.size());
    postorder.push_back(node);
    stack.pop_back();
  }
  std::vector<int> idom(static_cast<size_t>(n), -1);
  idom[static_cast<size_t>(root)] = root;
  auto intersect = [&](int a, int b) {
    while (a != b) {
      while (postorder_number[static_cast<size_t>(a)] < postorder_number[static_cast<size_t>(b)]) {
        a = idom[static_cast<size_t>(a)];
      }
      while (postorder_number[static_cast<size_t>(b)] < postorder_number[static_cast<size_t>(a)]) {
        b = idom[static_cast<size_t>(b)];
      }
    }
    return a;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (auto it = postorder.rbegin(); it != postorder.rend(); ++it) {
      int b = *it;
      if (b == root) continue;
      int chosen = -1;
      for (int p : pred[static_cast<size_t>(b)]) {
        if (idom[static_cast<size_t>(p)] == -1) continue;
        chosen = chosen == -1 ? p : intersect(p, chosen);
      }
      if (chosen != idom[static_cast<size_t>(b)]) {
        idom[static_cast<size_t>(b)] = chosen;
        changed = true;
      }
    }
  }
  return idom;
}

void compute_dominators(ControlFlowGraph& cfg) {
  const int n = static_cast<int>(cfg.blocks.size());
  std::vector<std::vector<int>> succ(static_cast<size_t>(n)), pred(static_cast<size_t>(n));
  for (const BasicBlock& b : cfg.blocks) {
    succ[static_cast<size_t>(b.id)] = b.successors;
    pred[static_cast<size_t>(b.id)] = b.predecessors;
  }
  std::vector<int> idom = immediate_dominators(n, 0, succ, pred);
  for (BasicBlock& b : cfg.blocks) b.idom = b.id == 0 ? kNoBlock : idom[static_cast<size_t>(b.id)];

  // Post-dominators: dominators of the reversed graph rooted at a virtual
  // exit node (index n) that every exiting block flows into.
  std::vector<std::vector<int>> rsucc(static_cast<size_t>(n) + 1), rpred(static_cast<size_t>(n) + 1);
  for (const BasicBlock& b : cfg.blocks) {
    rsucc[static_cast<size_t>(b.id)] = b.predecessors;
    rpred[static_cast<size_t>(b.id)] = b.successors;
    if (b.exits) {
      rsucc[static_cast<size_t>(n)].push_back(b.id);
      rpred[static_cast<size_t>(b.id)].push_back(n);
    }
  }
  std::vector<int> ipdom = immediate_dominators(n + 1, n, rsucc, rpred);
  for (BasicBlock& b : cfg.blocks) {
    int p = ipdom[static_cast<size_t>(b.id)];
    b.ipdom = p == -1 ? kNoBlock : p == n ? kExitBlock : p;
  }
}

std::string block_name(int id) {
  if (id == kNoBlock) return "-";
  if (id == kExitBlock) return "exit";
  return fmt::format("bb{}", id);
}

std::string block_list(const std::vector<int>& ids) {
  if (ids.empty()) return "-";
  std::string out;
  for (int id : ids) out += (out.empty() ? "" : " ") + block_name(id);
  return out;
}

}  // namespace

bool is_barrier(const Instruction& in) {
  return (in.opcode == "bar" || in.opcode == "barrier") && !in.has_modifier("warp");
}

int ControlFlowGraph::block_of(size_t index) const {
  STITCH_ASSERT(index < instructions.size(), "instruction index out of range");
  auto it = std::upper_bound(blocks.begin(), blocks.end(), index,
                             [](size_t i, const BasicBlock& b) { return i < b.begin; });
  // Empty blocks share their begin with the next block; step to the one holding the instruction.
  while (it != blocks.begin() && (it - 1)->end <= index) --it;
  STITCH_ASSERT(it != blocks.begin(), "instruction before the entry block");
  return (it - 1)->id;
}

ControlFlowGraph build_cfg(const Function& f) {
  ControlFlowGraph cfg;
  cfg.function = &f;
  std::vector<Item> items;
  flatten(f.body, items);

  auto open_block = [&]() {
    BasicBlock b;
    b.id = static_cast<int>(cfg.blocks.size());
    b.begin = b.end = cfg.instructions.size();
    cfg.blocks.push_back(std::move(b));
  };
  open_block();
  // Whether the last block was closed by a branch or exit, so the next
  // instruction or label opens a new one.
  bool closed = false;
  for (const Item& item : items) {
    if (item.label != nullptr) {
      if (closed || cfg.blocks.back().end > cfg.blocks.back().begin) open_block();
      closed = false;
      if (!cfg.block_of_label.emplace(item.label->name, cfg.blocks.back().id).second) {
        throw UserError(fmt::format("label {} is defined twice in {}", item.label->name, f.name), item.label->loc);
      }
      cfg.blocks.back().labels.push_back(item.label->name);
      continue;
    }
    if (closed) open_block();
    closed = false;
    const Instruction& in = *item.instruction;
    if (flow_of(in) == Flow::Indirect) {
      throw UserError(fmt::format("{} (an indirect branch) is not supported by the PTX CFG", in.opcode), in.loc);
    }
    BasicBlock& b = cfg.blocks.back();
    if (is_barrier(in)) b.barriers.push_back(cfg.instructions.size());
    cfg.instructions.push_back(&in);
    b.end = cfg.instructions.size();
    closed = flow_of(in) != Flow::Next;
  }

  for (size_t i = 0; i < cfg.blocks.size(); ++i) {
    BasicBlock& b = cfg.blocks[i];
    const bool last = i + 1 == cfg.blocks.size();
    const Instruction* term = b.end > b.begin ? cfg.instructions[b.end - 1] : nullptr;
    Flow flow = term != nullptr ? flow_of(*term) : Flow::Next;
    bool falls_through = flow == Flow::Next || term->guard.has_value();
    if (flow == Flow::Branch) {
      const Operand* target = term->operands.empty() ? nullptr : &term->operands.back();
      if (target == nullptr || target->kind != Operand::Kind::Symbol) {
        throw UserError("bra needs a label operand", term->loc);
      }
      auto it = cfg.block_of_label.find(target->name);
      if (it == cfg.block_of_label.end()) {
        throw UserError(fmt::format("branch to {}, which {} does not define", target->name, f.name), target->loc);
      }
      b.successors.push_back(it->second);
    }
    if (flow == Flow::Exit) b.exits = true;
    if (falls_through) {
      if (last) {
        b.exits = true;
      } else if (std::find(b.successors.begin(), b.successors.end(), b.id + 1) == b.successors.end()) {
        b.successors.push_back(b.id + 1);
      }
    }
  }
  for (const BasicBlock& b : cfg.blocks) {
    for (int s : b.successors) cfg.blocks[static_cast<size_t>(s)].predecessors.push_back(b.id);
  }
  compute_dominators(cfg);
  return cfg;
}

std::string print_cfg(const ControlFlowGraph& cfg) {
  std::string out = fmt::format("cfg {}: {} blocks, {} instructions\n", cfg.function->name, cfg.blocks.size(),
                                cfg.instructions.size());
  for (const BasicBlock& b : cfg.blocks) {
    out += block_name(b.id);
    for (const std::string& l : b.labels) out += " " + l;
    out += fmt::format(": [{}, {})", b.begin, b.end);
    for (size_t i : b.barriers) out += fmt::format(" barrier@{}", i);
    if (b.exits) out += " exits";
    out += fmt::format(" -> {}; preds {}; idom {}; ipdom {}\n", block_list(b.successors), block_list(b.predecessors),
                       block_name(b.idom), block_name(b.ipdom));
  }
  return out;
}

}  // namespace stitch::ptx
