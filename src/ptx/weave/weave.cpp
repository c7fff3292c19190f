#include "ptx/weave/weave.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "ptx/cfg.h"
#include "ptx/printer.h"
#include "ptx/weave/kernel_pair.h"
#include "ptx/weave/latency.h"
#include "ptx/weave/merge.h"
#include "ptx/weave/side.h"
#include "ptx/weave/uniformity.h"

namespace stitch::ptx {

namespace {

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
    return integer_operand(grid[static_cast<size_t>(d)]);
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

  const std::string end_label = "$__weave_grid_end";
  const std::string pred = "%__weave_grid_p";
  const std::string id = "%__weave_grid_id";
  std::vector<Statement> declarations{reg_decl(Type::Pred, pred), reg_decl(Type::B32, id)};
  std::vector<Statement> prologue;
  for (int d = 0; d < 3; ++d) {
    if (from_params) {
      declarations.push_back(reg_decl(Type::B32, extent(d).name));
      prologue.push_back(make_instruction("ld", {"param", "u32"}, {extent(d), address_operand(params[static_cast<size_t>(d)])}));
    }
    prologue.push_back(
        make_instruction("mov", {"u32"}, {Operand::reg(id), Operand::reg(fmt::format("%ctaid.{}", kDims[d]))}));
    prologue.push_back(make_instruction("setp", {"ge", "u32"}, {Operand::reg(pred), Operand::reg(id), extent(d)}));
    prologue.push_back(make_instruction("bra", {}, {symbol_operand(end_label)}, Guard{pred, false}));
  }
  // Declarations stay first; the guard goes before the first instruction.
  auto first_code = std::find_if(f.body.begin(), f.body.end(),
                                 [](const Statement& s) { return !std::holds_alternative<VarDecl>(s.node); });
  first_code = f.body.insert(first_code, prologue.begin(), prologue.end());
  f.body.insert(f.body.begin(), declarations.begin(), declarations.end());
  f.body.push_back(Statement{Label{end_label, {}}});
  f.body.push_back(make_instruction("ret", {}, {}));
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
  check_barriers(kernel_a, "A");
  check_barriers(kernel_b, "B");
  MergedModule merged_module = merge_modules(a, b);
  Module& out = merged_module.module;
  const std::set<std::string>& names = merged_module.names;

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

  auto [side_a, side_b] = side_options_for(a, kernel_a, b, kernel_b, merged_module, name);
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
  woven.directives = merge_directives(kernel_a, kernel_b, "a woven kernel");
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
