#include "ptx/weave/side.h"

#include <fmt/format.h>

#include <cctype>
#include <set>

#include "ptx/cfg.h"
#include "ptx/weave/effects.h"
#include "ptx/weave/uniformity.h"

namespace stitch::ptx {

namespace {

// The names a kernel body declares, and what they become.
struct Renamer {
  std::map<std::string, std::string> plain;       // %r1 -> %a_r1, smem -> a_smem, param -> woven param
  std::map<std::string, std::string> families;    // %r (from %r<15>) -> %a_r

  void declare(const VarDecl& v, const std::string& prefix) {
    if (v.space == StateSpace::Reg && v.parameterized_count >= 0) {
      families[v.name] = rename_register(v.name, prefix);
    } else if (v.space == StateSpace::Reg) {
      plain[v.name] = rename_register(v.name, prefix);
    } else {
      plain[v.name] = prefix + v.name;
    }
  }

  static std::string rename_register(const std::string& name, const std::string& prefix) {
    return name.starts_with('%') ? "%" + prefix + name.substr(1) : prefix + name;
  }

  std::map<std::string, std::string> as_map() const { return plain; }

  std::string operator()(const std::string& name) const {
    if (auto it = plain.find(name); it != plain.end()) return it->second;
    // The family's own declaration: %r of `.reg .b32 %r<15>`.
    if (auto it = families.find(name); it != families.end()) return it->second;
    // %r12 of a %r<N> family.
    size_t digits = name.size();
    while (digits > 0 && std::isdigit(static_cast<unsigned char>(name[digits - 1]))) --digits;
    if (digits < name.size()) {
      if (auto it = families.find(name.substr(0, digits)); it != families.end()) {
        return it->second + name.substr(digits);
      }
    }
    return name;
  }
};

template <class F>
void rename_operand(Operand& o, const F& rename) {
  switch (o.kind) {
    case Operand::Kind::Register:
      o.name = rename(o.name);
      if (!o.second.empty()) o.second = rename(o.second);
      break;
    case Operand::Kind::Symbol:
    case Operand::Kind::Address:
      if (!o.name.empty()) o.name = rename(o.name);
      break;
    case Operand::Kind::Vector:
    case Operand::Kind::List:
      for (Operand& e : o.elements) rename_operand(e, rename);
      break;
    default:
      break;
  }
}

template <class F>
void rename_in(Statement& s, const F& rename) {
  if (auto* in = std::get_if<Instruction>(&s.node)) {
    if (in->guard) in->guard->predicate = rename(in->guard->predicate);
    for (Operand& o : in->operands) rename_operand(o, rename);
  } else if (auto* block = std::get_if<Block>(&s.node)) {
    for (Statement& inner : block->body) rename_in(inner, rename);
  } else if (auto* decl = std::get_if<VarDecl>(&s.node)) {
    decl->name = rename(decl->name);
    for (Operand& o : decl->initializer) rename_operand(o, rename);
  }
}

bool contains_label(const std::vector<Statement>& body) {
  for (const Statement& s : body) {
    if (std::holds_alternative<Label>(s.node)) return true;
    if (const auto* b = std::get_if<Block>(&s.node); b != nullptr && contains_label(b->body)) return true;
  }
  return false;
}

bool references(const Operand& o, const std::set<std::string>& names) {
  if ((o.kind == Operand::Kind::Symbol || o.kind == Operand::Kind::Address) && names.contains(o.name)) return true;
  for (const Operand& e : o.elements) {
    if (references(e, names)) return true;
  }
  return false;
}

bool references(const std::vector<Statement>& body, const std::set<std::string>& names) {
  for (const Statement& s : body) {
    if (const auto* in = std::get_if<Instruction>(&s.node)) {
      for (const Operand& o : in->operands) {
        if (references(o, names)) return true;
      }
    } else if (const auto* b = std::get_if<Block>(&s.node); b != nullptr && references(b->body, names)) {
      return true;
    }
  }
  return false;
}

// Per instruction of `kernel` in the CFG's flattened order: whether it lies in
// a divergent region (SideBlock::divergent), the blocks reachable from a
// data-dependent divergent branch before its immediate post-dominator; and
// whether it is such a branch (SideBlock::splits).
struct DivergenceFlags {
  std::vector<bool> in_region;
  std::vector<bool> splits;
};

DivergenceFlags divergent_instructions(const Function& kernel) {
  const ControlFlowGraph cfg = build_cfg(kernel);
  // Data-dependent divergence only: a bounds check on a thread index splits
  // at most the warps across the bound, and freezing the other kernel behind
  // every bounds check would leave nothing to interleave.
  const Uniformity uniformity = analyze_uniformity(cfg, {.thread_index_is_divergent = false});
  std::vector<bool> in_region(cfg.blocks.size(), false);
  for (int branch : uniformity.divergent_branches) {
    const int meet = cfg.blocks[static_cast<size_t>(branch)].ipdom;
    std::vector<int> stack(cfg.blocks[static_cast<size_t>(branch)].successors);
    while (!stack.empty()) {
      const int b = stack.back();
      stack.pop_back();
      if (b < 0 || b == meet || in_region[static_cast<size_t>(b)]) continue;
      in_region[static_cast<size_t>(b)] = true;
      for (int s : cfg.blocks[static_cast<size_t>(b)].successors) stack.push_back(s);
    }
  }
  DivergenceFlags flags{std::vector<bool>(cfg.instructions.size(), false),
                        std::vector<bool>(cfg.instructions.size(), false)};
  for (const BasicBlock& b : cfg.blocks) {
    for (size_t i = b.begin; i < b.end; ++i) flags.in_region[i] = in_region[static_cast<size_t>(b.id)];
    if (b.end > b.begin && uniformity.divergent_branches.contains(b.id)) flags.splits[b.end - 1] = true;
  }
  return flags;
}

size_t instructions_in(const Statement& s) {
  if (std::holds_alternative<Instruction>(s.node)) return 1;
  size_t n = 0;
  if (const auto* b = std::get_if<Block>(&s.node)) {
    for (const Statement& inner : b->body) n += instructions_in(inner);
  }
  return n;
}

// Blocks under construction: terminators name labels until resolved.
struct Draft {
  SideBlock block;
  std::string taken_label;  // a branch target, resolved into block.taken
  bool falls_through = true;         // no unconditional terminator: continue to the next block
  bool conditional_exit = false;     // `@p ret`: taken is the end
  bool ends = false;                 // unconditional ret/exit/trap
};

// The drafts' terminators resolved into block indices, the blocks appended to `side`.
void resolve_terminators(const Function& kernel, std::vector<Draft>& drafts,
                         const std::map<std::string, int>& block_of_label, Side& side) {
  const int count = static_cast<int>(drafts.size());
  for (int i = 0; i < count; ++i) {
    Draft& d = drafts[static_cast<size_t>(i)];
    const int next = i + 1 < count ? i + 1 : kSideEnd;
    SideBlock& b = d.block;
    if (!d.taken_label.empty()) {
      auto it = block_of_label.find(d.taken_label);
      if (it == block_of_label.end()) {
        throw UserError(fmt::format("kernel '{}': branch to undefined label '{}'", kernel.name, d.taken_label),
                        kernel.loc);
      }
      b.taken = it->second;
      b.not_taken = d.falls_through ? next : kSideEnd;
    } else if (d.conditional_exit) {
      b.taken = kSideEnd;
      b.not_taken = next;
    } else if (d.ends) {
      b.taken = kSideEnd;
    } else {
      b.taken = next;
    }
    if (b.predicate.empty()) b.not_taken = kSideEnd;
    side.blocks.push_back(std::move(b));
  }
}

// Adaptive slicing: blocks longer than `slice` statements (and a half)
// become chains of slices, so that the other kernel's successive blocks pair
// with successive parts of this one.
void slice_long_blocks(Side& side, size_t slice) {
  const size_t original = side.blocks.size();
  for (size_t i = 0; i < original; ++i) {
    // A sync block stays whole: its later sync points need the warp together.
    if (side.blocks[i].sync || side.blocks[i].body.size() <= slice + slice / 2) continue;
    ++side.sliced_blocks;
    SideBlock whole = std::move(side.blocks[i]);
    std::vector<Statement> rest(std::make_move_iterator(whole.body.begin() + static_cast<ptrdiff_t>(slice)),
                                std::make_move_iterator(whole.body.end()));
    whole.body.resize(slice);
    SideBlock head;
    head.body = std::move(whole.body);
    head.sync = whole.sync;
    head.origin = whole.origin;
    head.divergent = whole.divergent;
    int previous = static_cast<int>(i);
    side.blocks[i] = std::move(head);
    size_t at = 0;
    while (at < rest.size()) {
      const size_t take = rest.size() - at <= slice + slice / 2 ? rest.size() - at : slice;
      SideBlock part;
      part.body.assign(std::make_move_iterator(rest.begin() + static_cast<ptrdiff_t>(at)),
                       std::make_move_iterator(rest.begin() + static_cast<ptrdiff_t>(at + take)));
      part.origin = whole.origin.empty() ? "" : whole.origin + "+slice";
      part.divergent = whole.divergent;
      at += take;
      side.blocks.push_back(std::move(part));
      const int id = static_cast<int>(side.blocks.size()) - 1;
      side.blocks[static_cast<size_t>(previous)].taken = id;
      previous = id;
    }
    SideBlock& last = side.blocks[static_cast<size_t>(previous)];
    last.splits = whole.splits;
    last.predicate = whole.predicate;
    last.negated = whole.negated;
    last.taken = whole.taken;
    last.not_taken = whole.not_taken;
  }
}

}  // namespace

void rename_statement(Statement& s, const std::map<std::string, std::string>& renames) {
  rename_in(s, [&](const std::string& n) {
    auto it = renames.find(n);
    return it == renames.end() ? n : it->second;
  });
}

Side prepare_side(const Function& kernel, const SideOptions& options) {
  if (!kernel.has_body) throw UserError(fmt::format("kernel '{}' has no body", kernel.name), kernel.loc);
  Side side;
  side.kernel = kernel.name;
  side.prefix = options.prefix;

  const std::set<std::string> dynamic_shared(options.dynamic_shared_names.begin(),
                                             options.dynamic_shared_names.end());
  side.uses_dynamic_shared = references(kernel.body, dynamic_shared);

  Renamer renamer;
  renamer.plain = options.module_renames;
  if (options.param_names.size() != kernel.params.size()) {
    throw std::logic_error("prepare_side: one woven name per parameter");
  }
  for (size_t i = 0; i < kernel.params.size(); ++i) {
    renamer.plain[kernel.params[i].name] = options.param_names[i];
    VarDecl p = kernel.params[i];
    p.name = options.param_names[i];
    side.params.push_back(std::move(p));
  }
  for (const Statement& s : kernel.body) {
    if (const auto* v = std::get_if<VarDecl>(&s.node)) renamer.declare(*v, options.prefix);
  }
  const auto rename = [&](const std::string& n) { return renamer(n); };

  std::vector<Draft> drafts(1);
  std::map<std::string, int> block_of_label;
  auto current = [&]() -> Draft& { return drafts.back(); };
  auto start_block = [&]() {
    if (current().block.body.empty() && current().falls_through && current().taken_label.empty() &&
        !current().ends && !current().conditional_exit) {
      return;  // the current block is still empty: reuse it
    }
    drafts.emplace_back();
  };

  // Each block is divergent as its first instruction is (blocks never
  // straddle the CFG's, which cut at the same labels and branches).
  const DivergenceFlags divergence = divergent_instructions(kernel);
  size_t instruction = 0;
  auto mark = [&](Draft& d) {
    if (d.block.body.empty() && instruction < divergence.in_region.size()) {
      d.block.divergent = divergence.in_region[instruction];
    }
  };
  for (const Statement& s : kernel.body) {
    if (std::holds_alternative<VarDecl>(s.node)) {
      Statement copy = s;
      rename_in(copy, rename);
      side.locals.push_back(std::get<VarDecl>(copy.node));
      continue;
    }
    if (std::holds_alternative<Pragma>(s.node)) continue;  // hints only ("nounroll")
    if (const auto* label = std::get_if<Label>(&s.node)) {
      // A label starts a block unless the current one is still empty.
      if (!current().block.body.empty() || !current().falls_through || !current().taken_label.empty() ||
          current().ends || current().conditional_exit) {
        drafts.emplace_back();
      }
      block_of_label[label->name] = static_cast<int>(drafts.size()) - 1;
      if (current().block.origin.empty()) current().block.origin = label->name;
      continue;
    }
    if (const auto* scope = std::get_if<Block>(&s.node)) {
      if (contains_label(scope->body)) {
        throw UserError(fmt::format("kernel '{}': a label inside a {{ }} scope cannot be woven", kernel.name),
                        scope->loc);
      }
      Statement copy = s;
      rename_in(copy, rename);
      mark(current());
      current().block.body.push_back(std::move(copy));
      instruction += instructions_in(s);
      continue;
    }
    const Instruction& in = std::get<Instruction>(s.node);
    if (in.opcode == "brx") {
      throw UserError(fmt::format("kernel '{}': an indirect branch (brx.idx) cannot be woven", kernel.name), in.loc);
    }
    if (in.opcode == "bra" || in.opcode == "ret" || in.opcode == "exit") {
      Draft& d = current();
      mark(d);
      d.block.splits = instruction < divergence.splits.size() && divergence.splits[instruction];
      ++instruction;
      if (in.guard) {
        d.block.predicate = rename(in.guard->predicate);
        d.block.negated = in.guard->negated;
      }
      if (in.opcode == "bra") {
        if (in.operands.empty() || in.operands[0].kind != Operand::Kind::Symbol) {
          throw UserError(fmt::format("kernel '{}': a branch without a label target", kernel.name), in.loc);
        }
        d.taken_label = in.operands[0].name;
        d.falls_through = in.guard.has_value();
      } else if (in.guard) {
        d.conditional_exit = true;
      } else {
        d.ends = true;
        d.falls_through = false;
      }
      drafts.emplace_back();
      continue;
    }
    // A sync point starts a sync block, unless the current block is one: its
    // code runs with the warp together in one merged block (merge.h), so
    // later sync points on the same straight line are safe in it too.
    if (effects_of(in).sync != SyncKind::None && !current().block.sync) {
      start_block();
      current().block.sync = true;
    }
    Statement copy = s;
    rename_in(copy, rename);
    mark(current());
    current().block.body.push_back(std::move(copy));
    ++instruction;
    if (in.opcode == "trap" && !in.guard) {
      current().ends = true;
      current().falls_through = false;
      drafts.emplace_back();
    }
  }

  resolve_terminators(kernel, drafts, block_of_label, side);
  const size_t slice = static_cast<size_t>(options.slice_statements);
  if (slice > 0) slice_long_blocks(side, slice);
  return side;
}

}  // namespace stitch::ptx
