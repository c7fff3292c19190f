#include "ptx/weave/weave.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "ptx/cfg.h"
#include "ptx/printer.h"
#include "ptx/weave/latency.h"
#include "ptx/weave/merge.h"
#include "ptx/weave/side.h"
#include "ptx/weave/uniformity.h"

namespace stitch::ptx {

namespace {

std::string item_name(const std::variant<VarDecl, Function>& item) {
  return std::visit([](const auto& x) { return x.name; }, item);
}

bool is_entry(const std::variant<VarDecl, Function>& item) {
  const auto* f = std::get_if<Function>(&item);
  return f != nullptr && f->is_entry;
}

std::string print_item(const std::variant<VarDecl, Function>& item) {
  if (const auto* f = std::get_if<Function>(&item)) return print_function(*f);
  return print_var_decl(std::get<VarDecl>(item));
}

const Function& find_kernel(const Module& m, const std::string& name, const char* which) {
  std::vector<const Function*> entries;
  for (const auto& item : m.items) {
    const auto* f = std::get_if<Function>(&item);
    if (f == nullptr || !f->is_entry) continue;
    if (!name.empty() && f->name == name) return *f;
    entries.push_back(f);
  }
  std::vector<std::string> names;
  for (const Function* f : entries) names.push_back(f->name);
  if (!name.empty()) {
    throw UserError(fmt::format("kernel {}: no .entry named '{}' (the module has: {})", which, name,
                                names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "))));
  }
  if (entries.size() != 1) {
    throw UserError(fmt::format("kernel {}: the module has {} .entry functions ({}); name one with --kernel-{}", which,
                                entries.size(), fmt::join(names, ", "), which[0] == 'A' ? 'a' : 'b'));
  }
  return *entries[0];
}

// `.extern .shared .b8 smem[]`: the names of a module's dynamic shared arrays.
std::vector<std::string> dynamic_shared_names(const Module& m) {
  std::vector<std::string> names;
  for (const auto& item : m.items) {
    const auto* v = std::get_if<VarDecl>(&item);
    if (v != nullptr && v->space == StateSpace::Shared && v->linkage == Linkage::Extern) names.push_back(v->name);
  }
  return names;
}

// Rejects a kernel whose early exits could leave the other kernel's threads
// waiting at one of its barriers (uniformity.h).
void check_barriers(const Function& kernel, const char* which) {
  const ControlFlowGraph cfg = build_cfg(kernel);
  check_barriers_reached_uniformly(cfg, analyze_uniformity(cfg), fmt::format("kernel {} '{}'", which, kernel.name));
}

// The kernel with a guard in front that sends CTAs outside its own grid to
// its end, and %nctaid read as its own grid: the grid is three constants
// (WeaveOptions::grid_a) or three .u32 parameters of the woven kernel
// (WeaveOptions::grid_params), named in `params`.
Function guard_grid(const Function& kernel, const std::array<uint32_t, 3>& grid,
                    const std::vector<std::string>& params) {
  Function f = kernel;
  static const char* const kDims[] = {"x", "y", "z"};
  const bool from_params = !params.empty();
  auto extent = [&](int d) {
    if (from_params) return Operand::reg(fmt::format("%__weave_nctaid_{}", kDims[d]));
    Operand o;
    o.kind = Operand::Kind::Integer;
    o.integer = grid[static_cast<size_t>(d)];
    return o;
  };
  // %nctaid.* is the launch's grid, the larger one: read the kernel's own.
  std::function<void(std::vector<Statement>&)> replace = [&](std::vector<Statement>& body) {
    for (Statement& s : body) {
      if (auto* block = std::get_if<Block>(&s.node)) replace(block->body);
      auto* in = std::get_if<Instruction>(&s.node);
      if (in == nullptr) continue;
      for (Operand& o : in->operands) {
        for (int d = 0; d < 3; ++d) {
          if (o.kind == Operand::Kind::Register && o.name == fmt::format("%nctaid.{}", kDims[d])) o = extent(d);
        }
      }
    }
  };
  replace(f.body);

  auto instruction = [](std::string opcode, std::vector<std::string> modifiers, std::vector<Operand> operands) {
    Instruction in;
    in.opcode = std::move(opcode);
    in.modifiers = std::move(modifiers);
    in.operands = std::move(operands);
    return Statement{std::move(in)};
  };
  auto reg_decl = [](Type type, std::string name) {
    VarDecl v;
    v.space = StateSpace::Reg;
    v.type = type;
    v.name = std::move(name);
    return Statement{v};
  };
  const std::string end_label = "$__weave_grid_end";
  const std::string pred = "%__weave_grid_p";
  const std::string id = "%__weave_grid_id";
  std::vector<Statement> declarations{reg_decl(Type::Pred, pred), reg_decl(Type::B32, id)};
  std::vector<Statement> prologue;
  for (int d = 0; d < 3; ++d) {
    if (from_params) {
      declarations.push_back(reg_decl(Type::B32, extent(d).name));
      Operand address;
      address.kind = Operand::Kind::Address;
      address.name = params[static_cast<size_t>(d)];
      prologue.push_back(instruction("ld", {"param", "u32"}, {extent(d), address}));
    }
    prologue.push_back(instruction("mov", {"u32"}, {Operand::reg(id), Operand::reg(fmt::format("%ctaid.{}", kDims[d]))}));
    prologue.push_back(instruction("setp", {"ge", "u32"}, {Operand::reg(pred), Operand::reg(id), extent(d)}));
    Instruction bra;
    bra.opcode = "bra";
    Operand target;
    target.kind = Operand::Kind::Symbol;
    target.name = end_label;
    bra.operands.push_back(target);
    bra.guard = Guard{pred, false};
    prologue.push_back(Statement{std::move(bra)});
  }
  // Declarations stay first; the guard goes before the first instruction.
  auto first_code = std::find_if(f.body.begin(), f.body.end(),
                                 [](const Statement& s) { return !std::holds_alternative<VarDecl>(s.node); });
  first_code = f.body.insert(first_code, prologue.begin(), prologue.end());
  f.body.insert(f.body.begin(), declarations.begin(), declarations.end());
  f.body.push_back(Statement{Label{end_label, {}}});
  Instruction ret;
  ret.opcode = "ret";
  f.body.push_back(Statement{std::move(ret)});
  // The grid parameters are the woven kernel's: declared here so that
  // prepare_side renames them to themselves.
  for (const std::string& p : params) {
    VarDecl decl;
    decl.space = StateSpace::Param;
    decl.type = Type::U32;
    decl.name = p;
    f.params.push_back(decl);
  }
  return f;
}

std::vector<PerformanceDirective> merge_directives(const Function& a, const Function& b) {
  auto find = [](const Function& f, const char* name) -> const PerformanceDirective* {
    for (const PerformanceDirective& d : f.directives) {
      if (d.name == name) return &d;
    }
    return nullptr;
  };
  auto dims = [](const PerformanceDirective& d) {
    std::array<int64_t, 3> v{1, 1, 1};
    for (size_t i = 0; i < d.values.size() && i < 3; ++i) v[i] = d.values[i];
    return v;
  };
  std::vector<PerformanceDirective> out;
  const PerformanceDirective* req_a = find(a, "reqntid");
  const PerformanceDirective* req_b = find(b, "reqntid");
  if (req_a && req_b && dims(*req_a) != dims(*req_b)) {
    throw UserError(fmt::format("kernels '{}' and '{}' require different blocks (.reqntid); woven kernels share one "
                                "block",
                                a.name, b.name));
  }
  if (req_a || req_b) out.push_back(req_a ? *req_a : *req_b);
  const PerformanceDirective* max_a = find(a, "maxntid");
  const PerformanceDirective* max_b = find(b, "maxntid");
  if (max_a && max_b) {
    PerformanceDirective m{"maxntid", {}};
    const auto da = dims(*max_a);
    const auto db = dims(*max_b);
    for (int i = 0; i < 3; ++i) m.values.push_back(std::min(da[static_cast<size_t>(i)], db[static_cast<size_t>(i)]));
    out.push_back(m);
  } else if (max_a || max_b) {
    out.push_back(max_a ? *max_a : *max_b);
  }
  return out;
}

double version_number(const std::string& v) {
  try {
    return std::stod(v);
  } catch (const std::exception&) {
    return 0;
  }
}

int sm_number(const std::vector<std::string>& target) {
  for (const std::string& t : target) {
    if (t.starts_with("sm_")) {
      try {
        return std::stoi(t.substr(3));
      } catch (const std::exception&) {
      }
    }
  }
  return 0;
}

size_t statements_in(const Side& s) {
  size_t n = 0;
  for (const SideBlock& b : s.blocks) n += b.body.size();
  return n;
}

size_t nonempty_blocks(const Side& s) {
  return static_cast<size_t>(std::count_if(s.blocks.begin(), s.blocks.end(),
                                           [](const SideBlock& b) { return !b.body.empty(); }));
}

int count_instructions(const std::vector<Statement>& body) {
  int n = 0;
  for (const Statement& s : body) {
    if (std::holds_alternative<Instruction>(s.node)) ++n;
    if (const auto* b = std::get_if<Block>(&s.node)) n += count_instructions(b->body);
  }
  return n;
}

}  // namespace

Module weave(const Module& a, const Module& b, const WeaveOptions& options, WeaveReport* report) {
  const Function& kernel_a = find_kernel(a, options.kernel_a, "A");
  const Function& kernel_b = find_kernel(b, options.kernel_b, "B");
  if (a.address_size != b.address_size) {
    throw UserError(fmt::format("the modules' address sizes differ ({} and {})", a.address_size, b.address_size));
  }
  check_barriers(kernel_a, "A");
  check_barriers(kernel_b, "B");

  Module out;
  out.version = version_number(b.version) > version_number(a.version) ? b.version : a.version;
  out.target = sm_number(b.target) > sm_number(a.target) ? b.target : a.target;
  out.address_size = a.address_size;

  // Module-scope items: A's, then B's that A does not already have. Two
  // modules' identically declared .const variables and functions are shared;
  // any other clash renames B's item.
  std::set<std::string> names;
  for (const auto& item : a.items) {
    if (is_entry(item)) continue;
    out.items.push_back(item);
    names.insert(item_name(item));
  }
  std::map<std::string, std::string> renames_b;
  if (&a != &b) {
    std::map<std::string, const std::variant<VarDecl, Function>*> a_items;
    for (const auto& item : a.items) a_items[item_name(item)] = &item;
    std::vector<std::variant<VarDecl, Function>> b_items;
    for (const auto& item : b.items) {
      if (is_entry(item)) continue;
      const std::string name = item_name(item);
      auto it = a_items.find(name);
      if (it != a_items.end() && !is_entry(*it->second)) {
        const auto* v = std::get_if<VarDecl>(&item);
        const bool shareable = v == nullptr || v->space == StateSpace::Const;
        if (shareable && print_item(item) == print_item(*it->second)) continue;
      }
      if (names.contains(name)) {
        std::string renamed = "b_" + name;
        while (names.contains(renamed)) renamed = "b_" + renamed;
        renames_b[name] = renamed;
        names.insert(renamed);
      } else {
        names.insert(name);
      }
      b_items.push_back(item);
    }
    for (auto& item : b_items) {
      if (auto* v = std::get_if<VarDecl>(&item)) {
        if (auto r = renames_b.find(v->name); r != renames_b.end()) v->name = r->second;
      } else {
        auto& f = std::get<Function>(item);
        if (auto r = renames_b.find(f.name); r != renames_b.end()) f.name = r->second;
        for (Statement& s : f.body) rename_statement(s, renames_b);
      }
      out.items.push_back(std::move(item));
    }
  }

  const std::string name = options.name.empty() ? kernel_a.name + "_" + kernel_b.name + "_woven" : options.name;
  if (names.contains(name)) throw UserError(fmt::format("the woven kernel's name '{}' is taken in the module", name));

  // Differing grids: each kernel's code only in CTAs of its own grid.
  Function guarded_a = kernel_a;
  Function guarded_b = kernel_b;
  std::vector<std::string> grid_params_a;
  std::vector<std::string> grid_params_b;
  if (options.grid_params) {
    for (const char* d : {"x", "y", "z"}) {
      grid_params_a.push_back(fmt::format("{}_grid_a_{}", name, d));
      grid_params_b.push_back(fmt::format("{}_grid_b_{}", name, d));
    }
    guarded_a = guard_grid(kernel_a, {}, grid_params_a);
    guarded_b = guard_grid(kernel_b, {}, grid_params_b);
  } else if (options.grid_a && options.grid_b && *options.grid_a != *options.grid_b) {
    guarded_a = guard_grid(kernel_a, *options.grid_a, {});
    guarded_b = guard_grid(kernel_b, *options.grid_b, {});
  }

  SideOptions side_a;
  side_a.prefix = "a_";
  side_a.dynamic_shared_names = dynamic_shared_names(a);
  SideOptions side_b;
  side_b.prefix = "b_";
  side_b.module_renames = renames_b;
  side_b.dynamic_shared_names = dynamic_shared_names(b);
  for (size_t i = 0; i < kernel_a.params.size(); ++i) side_a.param_names.push_back(fmt::format("{}_param_{}", name, i));
  for (size_t i = 0; i < kernel_b.params.size(); ++i) {
    side_b.param_names.push_back(fmt::format("{}_param_{}", name, kernel_a.params.size() + i));
  }
  side_a.param_names.insert(side_a.param_names.end(), grid_params_a.begin(), grid_params_a.end());
  side_b.param_names.insert(side_b.param_names.end(), grid_params_b.begin(), grid_params_b.end());

  Side first = prepare_side(guarded_a, side_a);
  Side second = prepare_side(guarded_b, side_b);
  if (first.uses_dynamic_shared && second.uses_dynamic_shared) {
    throw UserError(fmt::format("kernels '{}' and '{}' both use dynamic shared memory; a woven kernel has one "
                                "dynamic region (not supported)",
                                kernel_a.name, kernel_b.name));
  }

  MergeOptions merge{.strategy = options.strategy,
                     .arch = options.arch.value_or(weave_arch_for_target(out.target)),
                     .max_merged_blocks = options.max_merged_blocks};
  // Adaptive slicing (latency strategy): each kernel's code is cut into about
  // as many slices as the other has blocks, no shorter than
  // slice_instructions; coarsened while the merged graph is over its bound.
  const size_t pieces = std::max(nonempty_blocks(first), nonempty_blocks(second));
  size_t slice_a = 0;
  size_t slice_b = 0;
  if (options.strategy == WeaveStrategy::Latency && options.slice_instructions > 0 && pieces > 1) {
    const size_t least = static_cast<size_t>(options.slice_instructions);
    slice_a = std::max(least, (statements_in(first) + pieces - 1) / pieces);
    slice_b = std::max(least, (statements_in(second) + pieces - 1) / pieces);
  }
  Merged merged;
  for (;;) {
    side_a.slice_statements = static_cast<int>(slice_a);
    side_b.slice_statements = static_cast<int>(slice_b);
    first = prepare_side(guarded_a, side_a);
    second = prepare_side(guarded_b, side_b);
    merged = merge_sides(first, second, merge);
    if (!merged.too_large) break;
    if (slice_a == 0 && slice_b == 0) {
      throw UserError(fmt::format("weaving '{}' and '{}' reaches more than {} merged blocks", kernel_a.name,
                                  kernel_b.name, options.max_merged_blocks));
    }
    slice_a = slice_a > statements_in(first) ? 0 : slice_a * 2;
    slice_b = slice_b > statements_in(second) ? 0 : slice_b * 2;
  }

  Function woven;
  woven.is_entry = true;
  woven.linkage = Linkage::Visible;
  woven.name = name;
  // A's parameters, B's, then (grid_params) A's grid and B's.
  const size_t own_a = kernel_a.params.size();
  const size_t own_b = kernel_b.params.size();
  woven.params.assign(first.params.begin(), first.params.begin() + static_cast<ptrdiff_t>(own_a));
  woven.params.insert(woven.params.end(), second.params.begin(), second.params.begin() + static_cast<ptrdiff_t>(own_b));
  woven.params.insert(woven.params.end(), first.params.begin() + static_cast<ptrdiff_t>(own_a), first.params.end());
  woven.params.insert(woven.params.end(), second.params.begin() + static_cast<ptrdiff_t>(own_b), second.params.end());
  woven.directives = merge_directives(kernel_a, kernel_b);
  woven.has_body = true;
  for (VarDecl& v : first.locals) woven.body.push_back(Statement{std::move(v)});
  for (VarDecl& v : second.locals) woven.body.push_back(Statement{std::move(v)});
  for (Statement& s : merged.body) woven.body.push_back(std::move(s));
  woven.loc = kernel_a.loc;

  if (report != nullptr) {
    report->merged_blocks = merged.merged_blocks;
    report->sliced_blocks = first.sliced_blocks + second.sliced_blocks;
    report->instructions = count_instructions(woven.body);
    report->barriers_merged = merged.barriers_merged;
    report->interleavable_statements = merged.interleavable_statements;
    report->statements = merged.statements;
  }
  out.items.push_back(std::move(woven));
  return out;
}

}  // namespace stitch::ptx
