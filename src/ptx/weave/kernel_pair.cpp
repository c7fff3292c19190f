#include "ptx/weave/kernel_pair.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "ptx/printer.h"

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

double version_number(const std::string& v) {
  try {
    return std::stod(v);
  } catch (const std::exception&) {
    return 0;
  }
}

int sm_number(const std::vector<std::string>& target) {
  for (const std::string& t : target) {
    if (!t.starts_with("sm_")) continue;
    try {
      return std::stoi(t.substr(3));
    } catch (const std::exception&) {
    }
  }
  return 0;
}

}  // namespace

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

MergedModule merge_modules(const Module& a, const Module& b) {
  if (a.address_size != b.address_size) {
    throw UserError(fmt::format("the modules' address sizes differ ({} and {})", a.address_size, b.address_size));
  }
  MergedModule merged;
  Module& out = merged.module;
  out.version = version_number(b.version) > version_number(a.version) ? b.version : a.version;
  out.target = sm_number(b.target) > sm_number(a.target) ? b.target : a.target;
  out.address_size = a.address_size;
  std::map<std::string, const std::variant<VarDecl, Function>*> a_items;
  for (const auto& item : a.items) {
    if (is_entry(item)) continue;
    out.items.push_back(item);
    merged.names.insert(item_name(item));
    a_items[item_name(item)] = &item;
  }
  if (&a == &b) return merged;
  std::vector<std::variant<VarDecl, Function>> b_items;
  for (const auto& item : b.items) {
    if (is_entry(item)) continue;
    const std::string name = item_name(item);
    if (auto it = a_items.find(name); it != a_items.end()) {
      const auto* v = std::get_if<VarDecl>(&item);
      const bool shareable = v == nullptr || v->space == StateSpace::Const;
      if (shareable && print_item(item) == print_item(*it->second)) continue;
    }
    if (merged.names.contains(name)) {
      std::string renamed = "b_" + name;
      while (merged.names.contains(renamed)) renamed = "b_" + renamed;
      merged.renames_b[name] = renamed;
      merged.names.insert(renamed);
    } else {
      merged.names.insert(name);
    }
    b_items.push_back(item);
  }
  for (auto& item : b_items) {
    if (auto* v = std::get_if<VarDecl>(&item)) {
      if (auto r = merged.renames_b.find(v->name); r != merged.renames_b.end()) v->name = r->second;
    } else {
      auto& f = std::get<Function>(item);
      if (auto r = merged.renames_b.find(f.name); r != merged.renames_b.end()) f.name = r->second;
      for (Statement& s : f.body) rename_statement(s, merged.renames_b);
    }
    out.items.push_back(std::move(item));
  }
  return merged;
}

std::vector<std::string> dynamic_shared_names(const Module& m) {
  std::vector<std::string> names;
  for (const auto& item : m.items) {
    const auto* v = std::get_if<VarDecl>(&item);
    if (v != nullptr && v->space == StateSpace::Shared && v->linkage == Linkage::Extern) names.push_back(v->name);
  }
  return names;
}

std::pair<SideOptions, SideOptions> side_options_for(const Module& a, const Function& kernel_a, const Module& b,
                                                     const Function& kernel_b, const MergedModule& merged,
                                                     const std::string& name) {
  SideOptions side_a;
  side_a.prefix = "a_";
  side_a.dynamic_shared_names = dynamic_shared_names(a);
  SideOptions side_b;
  side_b.prefix = "b_";
  side_b.module_renames = merged.renames_b;
  side_b.dynamic_shared_names = dynamic_shared_names(b);
  for (size_t i = 0; i < kernel_a.params.size(); ++i) side_a.param_names.push_back(fmt::format("{}_param_{}", name, i));
  for (size_t i = 0; i < kernel_b.params.size(); ++i) {
    side_b.param_names.push_back(fmt::format("{}_param_{}", name, kernel_a.params.size() + i));
  }
  return {side_a, side_b};
}

std::vector<PerformanceDirective> merge_directives(const Function& a, const Function& b, const std::string& made) {
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
    throw UserError(fmt::format("kernels '{}' and '{}' require different blocks (.reqntid); {} has one block", a.name,
                                b.name, made));
  }
  if (req_a || req_b) out.push_back(req_a ? *req_a : *req_b);
  const PerformanceDirective* max_a = find(a, "maxntid");
  const PerformanceDirective* max_b = find(b, "maxntid");
  if (max_a && max_b) {
    PerformanceDirective m{"maxntid", {}};
    const auto da = dims(*max_a);
    const auto db = dims(*max_b);
    for (size_t i = 0; i < 3; ++i) m.values.push_back(std::min(da[i], db[i]));
    out.push_back(m);
  } else if (max_a || max_b) {
    out.push_back(max_a ? *max_a : *max_b);
  }
  return out;
}

Statement make_instruction(std::string opcode, std::vector<std::string> modifiers, std::vector<Operand> operands,
                           std::optional<Guard> guard) {
  Instruction in;
  in.opcode = std::move(opcode);
  in.modifiers = std::move(modifiers);
  in.operands = std::move(operands);
  in.guard = std::move(guard);
  return Statement{std::move(in)};
}

Operand symbol_operand(std::string name) {
  Operand o;
  o.kind = Operand::Kind::Symbol;
  o.name = std::move(name);
  return o;
}

Operand address_operand(std::string name) {
  Operand o;
  o.kind = Operand::Kind::Address;
  o.name = std::move(name);
  return o;
}

Operand integer_operand(int64_t value) {
  Operand o;
  o.kind = Operand::Kind::Integer;
  o.integer = value;
  return o;
}

Statement reg_decl(Type type, std::string name) {
  VarDecl v;
  v.space = StateSpace::Reg;
  v.type = type;
  v.name = std::move(name);
  return Statement{v};
}

}  // namespace stitch::ptx
