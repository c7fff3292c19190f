#include "ptx/printer.h"

#include <fmt/format.h>

namespace stitch::ptx {

namespace {

const char* linkage_name(Linkage l) {
  switch (l) {
    case Linkage::None: return "";
    case Linkage::Visible: return "visible";
    case Linkage::Extern: return "extern";
    case Linkage::Weak: return "weak";
    case Linkage::Common: return "common";
  }
  STITCH_ASSERT(false, "unknown PTX linkage");
  return "";
}

void append_initializer_values(std::string& out, const std::vector<Operand>& values, size_t& next,
                               const std::vector<int64_t>& dims, size_t dim) {
  out += '{';
  // The outermost extent may be open (`x[] = {...}`): it takes what is left.
  size_t inner = 1;
  for (size_t d = dim + 1; d < dims.size(); ++d) inner *= static_cast<size_t>(dims[d]);
  size_t count = dim + 1 == dims.size() ? values.size() - next : (values.size() - next) / inner;
  if (dims[dim] > 0) count = std::min(count, static_cast<size_t>(dims[dim]));
  for (size_t i = 0; i < count; ++i) {
    if (i > 0) out += ", ";
    if (dim + 1 == dims.size()) {
      out += print_operand(values[next++]);
    } else {
      append_initializer_values(out, values, next, dims, dim + 1);
    }
  }
  out += '}';
}

// A multi-dimensional array's initializer nests its braces when the values
// fill every row; otherwise it prints flat, as parsed.
std::string print_initializer(const VarDecl& v) {
  std::string out;
  if (!v.is_array()) {
    if (v.initializer.size() == 1) return print_operand(v.initializer.front());
    const std::vector<int64_t> flat{static_cast<int64_t>(v.initializer.size())};
    size_t next = 0;
    append_initializer_values(out, v.initializer, next, flat, 0);
    return out;
  }
  size_t inner = 1;
  bool nested = v.array_dims.size() > 1;
  for (size_t d = 1; d < v.array_dims.size(); ++d) inner *= static_cast<size_t>(v.array_dims[d]);
  if (nested && (v.initializer.empty() || v.initializer.size() % inner != 0)) nested = false;
  if (nested && v.array_dims[0] > 0 && v.initializer.size() != inner * static_cast<size_t>(v.array_dims[0])) {
    nested = false;
  }
  const std::vector<int64_t> flat{-1};
  size_t next = 0;
  append_initializer_values(out, v.initializer, next, nested ? v.array_dims : flat, 0);
  return out;
}

void print_statements(std::string& out, const std::vector<Statement>& body, int depth);

void print_statement(std::string& out, const Statement& s, int depth) {
  const std::string indent(static_cast<size_t>(depth), '\t');
  if (const auto* in = std::get_if<Instruction>(&s.node)) {
    out += indent + print_instruction(*in) + "\n";
  } else if (const auto* label = std::get_if<Label>(&s.node)) {
    out += std::string(static_cast<size_t>(depth - 1), '\t') + label->name + ":\n";
  } else if (const auto* v = std::get_if<VarDecl>(&s.node)) {
    out += indent + print_var_decl(*v) + ";\n";
  } else if (const auto* block = std::get_if<Block>(&s.node)) {
    out += indent + "{\n";
    print_statements(out, block->body, depth + 1);
    out += indent + "}\n";
  } else if (const auto* pragma = std::get_if<Pragma>(&s.node)) {
    out += indent + fmt::format(".pragma \"{}\";\n", pragma->text);
  } else {
    STITCH_ASSERT(false, "unknown PTX statement kind");
  }
}

void print_statements(std::string& out, const std::vector<Statement>& body, int depth) {
  for (const Statement& s : body) print_statement(out, s, depth);
}

std::string print_param_list(const std::vector<VarDecl>& params, bool one_per_line) {
  if (params.empty()) return "()";
  std::string out = "(";
  for (size_t i = 0; i < params.size(); ++i) {
    if (one_per_line) out += "\n\t";
    out += print_var_decl(params[i]);
    if (i + 1 < params.size()) out += one_per_line ? "," : ", ";
  }
  out += one_per_line ? "\n)" : ")";
  return out;
}

}  // namespace

const char* state_space_name(StateSpace s) {
  switch (s) {
    case StateSpace::Reg: return "reg";
    case StateSpace::Sreg: return "sreg";
    case StateSpace::Const: return "const";
    case StateSpace::Global: return "global";
    case StateSpace::Local: return "local";
    case StateSpace::Param: return "param";
    case StateSpace::Shared: return "shared";
    case StateSpace::Tex: return "tex";
  }
  STITCH_ASSERT(false, "unknown PTX state space");
  return "";
}

std::string print_operand(const Operand& o) {
  switch (o.kind) {
    case Operand::Kind::Register: {
      std::string out = (o.negated ? "!" : "") + o.name;
      if (!o.second.empty()) out += "|" + o.second;
      return out;
    }
    case Operand::Kind::Sink: return "_";
    case Operand::Kind::Integer: return fmt::format("{}", o.integer);
    case Operand::Kind::Float32: return fmt::format("0f{:08X}", static_cast<uint32_t>(o.bits));
    case Operand::Kind::Float64: return fmt::format("0d{:016X}", o.bits);
    case Operand::Kind::Symbol: return o.name;
    case Operand::Kind::Address:
      if (o.name.empty()) return fmt::format("[{}]", o.integer);
      if (o.integer == 0) return fmt::format("[{}]", o.name);
      return fmt::format("[{}+{}]", o.name, o.integer);
    case Operand::Kind::Vector:
    case Operand::Kind::List: {
      bool vector = o.kind == Operand::Kind::Vector;
      std::string out = vector ? "{" : "(";
      for (size_t i = 0; i < o.elements.size(); ++i) {
        if (i > 0) out += ", ";
        out += print_operand(o.elements[i]);
      }
      out += vector ? "}" : ")";
      return out;
    }
  }
  STITCH_ASSERT(false, "unknown PTX operand kind");
  return "";
}

std::string print_instruction(const Instruction& in) {
  std::string out;
  if (in.guard) out += fmt::format("@{}{} ", in.guard->negated ? "!" : "", in.guard->predicate);
  out += in.opcode;
  for (const std::string& m : in.modifiers) out += "." + m;
  for (size_t i = 0; i < in.operands.size(); ++i) {
    out += i == 0 ? " " : ", ";
    out += print_operand(in.operands[i]);
  }
  out += ';';
  return out;
}

std::string print_var_decl(const VarDecl& v) {
  std::string out;
  if (v.linkage != Linkage::None) out += fmt::format(".{} ", linkage_name(v.linkage));
  out += fmt::format(".{}", state_space_name(v.space));
  if (v.align) out += fmt::format(" .align {}", *v.align);
  if (v.vector_width > 1) out += fmt::format(" .v{}", v.vector_width);
  out += fmt::format(" .{}", type_name(v.type));
  if (v.ptr_space || v.ptr_align) {
    out += " .ptr";
    if (v.ptr_space) out += fmt::format(" .{}", state_space_name(*v.ptr_space));
    if (v.ptr_align) out += fmt::format(" .align {}", *v.ptr_align);
  }
  out += " " + v.name;
  if (v.parameterized_count >= 0) out += fmt::format("<{}>", v.parameterized_count);
  for (int64_t d : v.array_dims) out += d < 0 ? "[]" : fmt::format("[{}]", d);
  if (v.has_initializer) out += " = " + print_initializer(v);
  return out;
}

std::string print_function(const Function& f) {
  std::string out;
  if (f.linkage != Linkage::None) out += fmt::format(".{} ", linkage_name(f.linkage));
  out += f.is_entry ? ".entry " : ".func ";
  if (!f.returns.empty()) out += print_param_list(f.returns, false) + " ";
  out += f.name + print_param_list(f.params, true);
  for (const PerformanceDirective& d : f.directives) {
    out += "\n." + d.name;
    for (size_t i = 0; i < d.values.size(); ++i) out += fmt::format("{}{}", i == 0 ? " " : ", ", d.values[i]);
  }
  if (!f.has_body) {
    out += ";\n";
    return out;
  }
  out += "\n{\n";
  print_statements(out, f.body, 1);
  out += "}\n";
  return out;
}

std::string print_module(const Module& m) {
  std::string out;
  if (!m.version.empty()) out += fmt::format(".version {}\n", m.version);
  if (!m.target.empty()) {
    out += ".target ";
    for (size_t i = 0; i < m.target.size(); ++i) out += (i > 0 ? ", " : "") + m.target[i];
    out += "\n";
  }
  out += fmt::format(".address_size {}\n", m.address_size);
  for (const auto& item : m.items) {
    out += "\n";
    if (const auto* v = std::get_if<VarDecl>(&item)) {
      out += print_var_decl(*v) + ";\n";
    } else {
      out += print_function(std::get<Function>(item));
    }
  }
  return out;
}

}  // namespace stitch::ptx
