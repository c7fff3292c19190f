#include "ptx/weave/pack.h"

#include <fmt/format.h>

#include <functional>
#include <map>
#include <set>

#include "ptx/printer.h"
#include "ptx/weave/kernel_pair.h"
#include "ptx/weave/side.h"

namespace stitch::ptx {

namespace {

// Calls f on every operand of the statements, scopes included.
void for_each_operand(std::vector<Statement>& body, const std::function<void(Operand&)>& f) {
  std::function<void(Operand&)> visit = [&](Operand& o) {
    f(o);
    for (Operand& e : o.elements) visit(e);
  };
  for (Statement& s : body) {
    if (auto* block = std::get_if<Block>(&s.node)) for_each_operand(block->body, f);
    if (auto* in = std::get_if<Instruction>(&s.node)) {
      for (Operand& o : in->operands) visit(o);
    }
  }
}

// UserError when the kernel reads a grid coordinate other than x.
void check_one_dimensional(const Function& kernel, const char* which) {
  std::vector<Statement> body = kernel.body;
  for_each_operand(body, [&](Operand& o) {
    for (const char* special : {"%ctaid.y", "%ctaid.z", "%nctaid.y", "%nctaid.z"}) {
      if (o.kind == Operand::Kind::Register && o.name == special) {
        throw UserError(fmt::format("kernel {} '{}' reads {}: packing takes one-dimensional grids only", which,
                                    kernel.name, special));
      }
    }
  });
}

void check_grid(const std::optional<std::array<uint32_t, 3>>& grid, const char* which) {
  if (grid && ((*grid)[1] != 1 || (*grid)[2] != 1)) {
    throw UserError(fmt::format("kernel {}'s grid ({}, {}, {}) is not one-dimensional: packing takes one-dimensional "
                                "grids only",
                                which, (*grid)[0], (*grid)[1], (*grid)[2]));
  }
}

// Not a block index, nor kSideEnd.
constexpr int kNoFallThrough = -2;

// A side's blocks as straight code: each block under its own label, its
// terminator as branches (falling through where the next block follows),
// the kernel's end as ret. Each CTA runs one side, so ending is returning.
void emit_side(const Side& side, const std::string& label_prefix, std::vector<Statement>& out) {
  auto label = [&](int block) { return fmt::format("{}{}", label_prefix, block); };
  auto go_to = [&](int target, int next, std::optional<Guard> guard) {
    if (target == next && !guard) return;
    if (target == kSideEnd) {
      out.push_back(make_instruction("ret", {}, {}, std::move(guard)));
    } else {
      out.push_back(make_instruction("bra", {}, {symbol_operand(label(target))}, std::move(guard)));
    }
  };
  const int count = static_cast<int>(side.blocks.size());
  for (int i = 0; i < count; ++i) {
    const SideBlock& b = side.blocks[static_cast<size_t>(i)];
    out.push_back(Statement{Label{label(i), {}}});
    out.insert(out.end(), b.body.begin(), b.body.end());
    // After the last block comes the other side's code (or nothing): never fall through.
    const int next = i + 1 < count ? i + 1 : kNoFallThrough;
    if (b.predicate.empty()) {
      go_to(b.taken, next, std::nullopt);
    } else {
      go_to(b.taken, next, Guard{b.predicate, b.negated});
      go_to(b.not_taken, next, std::nullopt);
    }
  }
}

// Replaces %ctaid.x and %nctaid.x reads in every block of the side.
void replace_grid_registers(Side& side, const std::string& ctaid, const std::string& nctaid) {
  for (SideBlock& b : side.blocks) {
    for_each_operand(b.body, [&](Operand& o) {
      if (o.kind != Operand::Kind::Register) return;
      if (o.name == "%ctaid.x") o.name = ctaid;
      if (o.name == "%nctaid.x") o.name = nctaid;
    });
  }
}

}  // namespace

Module pack(const Module& a, const Module& b, const PackOptions& options) {
  const Function& kernel_a = find_kernel(a, options.kernel_a, "A");
  const Function& kernel_b = find_kernel(b, options.kernel_b, "B");
  check_one_dimensional(kernel_a, "A");
  check_one_dimensional(kernel_b, "B");
  check_grid(options.grid_a, "A");
  check_grid(options.grid_b, "B");

  MergedModule merged = merge_modules(a, b);
  Module& out = merged.module;
  const std::set<std::string>& names = merged.names;

  const std::string name = options.name.empty() ? kernel_a.name + "_" + kernel_b.name + "_packed" : options.name;
  if (names.contains(name)) throw UserError(fmt::format("the packed kernel's name '{}' is taken in the module", name));

  auto [side_a, side_b] = side_options_for(a, kernel_a, b, kernel_b, merged, name);
  Side first = prepare_side(kernel_a, side_a);
  Side second = prepare_side(kernel_b, side_b);

  // Registers of the CTA split; the sides' registers all start %a_ or %b_.
  const std::string grid_a_param = name + "_grid_a_x";
  const std::string grid_b_param = name + "_grid_b_x";
  const std::string ctaid = "%pack_ctaid";
  const std::string grid_a = "%pack_grid_a";
  const std::string grid_b = "%pack_grid_b";
  const std::string ctaid_b = "%pack_ctaid_b";
  const std::string in_b = "%pack_in_b";
  replace_grid_registers(first, "%ctaid.x", grid_a);
  replace_grid_registers(second, ctaid_b, grid_b);

  Function packed;
  packed.is_entry = true;
  packed.linkage = Linkage::Visible;
  packed.name = name;
  packed.params = first.params;
  packed.params.insert(packed.params.end(), second.params.begin(), second.params.end());
  for (const std::string& p : {grid_a_param, grid_b_param}) {
    VarDecl decl;
    decl.space = StateSpace::Param;
    decl.type = Type::U32;
    decl.name = p;
    packed.params.push_back(decl);
  }
  packed.directives = merge_directives(kernel_a, kernel_b, "a packed kernel");
  packed.has_body = true;
  packed.loc = kernel_a.loc;
  std::vector<Statement>& body = packed.body;
  for (VarDecl& v : first.locals) body.push_back(Statement{std::move(v)});
  for (VarDecl& v : second.locals) body.push_back(Statement{std::move(v)});
  for (const std::string& r : {ctaid, grid_a, grid_b, ctaid_b}) body.push_back(reg_decl(Type::B32, r));
  body.push_back(reg_decl(Type::Pred, in_b));
  body.push_back(make_instruction("ld", {"param", "u32"}, {Operand::reg(grid_a), address_operand(grid_a_param)}));
  body.push_back(make_instruction("mov", {"u32"}, {Operand::reg(ctaid), Operand::reg("%ctaid.x")}));
  body.push_back(make_instruction("setp", {"ge", "u32"}, {Operand::reg(in_b), Operand::reg(ctaid), Operand::reg(grid_a)}));
  body.push_back(make_instruction("bra", {"uni"}, {symbol_operand("$P_b_start")}, Guard{in_b, false}));
  emit_side(first, "$P_a_", body);
  body.push_back(Statement{Label{"$P_b_start", {}}});
  body.push_back(make_instruction("ld", {"param", "u32"}, {Operand::reg(grid_b), address_operand(grid_b_param)}));
  body.push_back(make_instruction("sub", {"u32"}, {Operand::reg(ctaid_b), Operand::reg(ctaid), Operand::reg(grid_a)}));
  emit_side(second, "$P_b_", body);
  out.items.push_back(std::move(packed));
  return out;
}

}  // namespace stitch::ptx
