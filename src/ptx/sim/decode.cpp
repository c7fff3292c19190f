#include "ptx/sim/decode.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <unordered_map>

#include "ptx/sim/exec.h"
#include "ptx/sim/reconvergence.h"

namespace stitch::ptx::sim {

namespace {

// A name's meaning in a scope.
struct Symbol {
  enum class Kind : uint8_t { Reg, Pred, Special, Global, Shared, Local, KernelParam, FrameParam, Function, Clock };
  Kind kind = Kind::Reg;
  uint64_t value = 0;  // register index, address or offset, function index
};

struct SpecialName {
  const char* name;
  uint32_t index;
};
constexpr SpecialName kSpecials[] = {
    {"%tid.x", kTidX},       {"%tid.y", kTidY},       {"%tid.z", kTidZ},         {"%ntid.x", kNtidX},
    {"%ntid.y", kNtidY},     {"%ntid.z", kNtidZ},     {"%ctaid.x", kCtaidX},     {"%ctaid.y", kCtaidY},
    {"%ctaid.z", kCtaidZ},   {"%nctaid.x", kNctaidX}, {"%nctaid.y", kNctaidY},   {"%nctaid.z", kNctaidZ},
    {"%laneid", kLaneId},    {"%warpid", kWarpId},    {"%nwarpid", kNwarpId},    {"%smid", kSmId},
    {"%nsmid", kNsmId},      {"%gridid", kGridId},    {"%lanemask_eq", kLanemaskEq}, {"%lanemask_le", kLanemaskLe},
    {"%lanemask_lt", kLanemaskLt}, {"%lanemask_ge", kLanemaskGe}, {"%lanemask_gt", kLanemaskGt},
    {"%dynamic_smem_size", kDynamicSmemSize}, {"%total_smem_size", kTotalSmemSize},
};

uint32_t align_up(uint64_t v, uint64_t a) { return static_cast<uint32_t>((v + a - 1) / a * a); }

uint64_t decl_bytes(const VarDecl& v) {
  uint64_t n = static_cast<uint64_t>(type_bytes(v.type)) * static_cast<uint64_t>(v.vector_width);
  for (int64_t d : v.array_dims) n *= static_cast<uint64_t>(std::max<int64_t>(d, 0));
  return n;
}

uint64_t decl_align(const VarDecl& v) {
  if (v.align) return static_cast<uint64_t>(*v.align);
  return static_cast<uint64_t>(type_bytes(v.type)) * static_cast<uint64_t>(v.vector_width);
}

// An initializer's elements as bytes of the declared type.
std::vector<uint8_t> initializer_bytes(const VarDecl& v, uint64_t size) {
  std::vector<uint8_t> bytes(size, 0);
  const int elem = type_bytes(v.type);
  for (size_t i = 0; i < v.initializer.size() && (i + 1) * static_cast<size_t>(elem) <= size; ++i) {
    const Operand& o = v.initializer[i];
    uint64_t bits = 0;
    if (o.kind == Operand::Kind::Integer) {
      if (v.type == Type::F32) {
        bits = std::bit_cast<uint32_t>(static_cast<float>(o.integer));
      } else if (v.type == Type::F64) {
        bits = std::bit_cast<uint64_t>(static_cast<double>(o.integer));
      } else {
        bits = static_cast<uint64_t>(o.integer);
      }
    } else if (o.kind == Operand::Kind::Float32) {
      bits = v.type == Type::F64 ? std::bit_cast<uint64_t>(static_cast<double>(std::bit_cast<float>(
                                       static_cast<uint32_t>(o.bits))))
                                 : o.bits;
    } else if (o.kind == Operand::Kind::Float64) {
      bits = v.type == Type::F32 ? std::bit_cast<uint32_t>(static_cast<float>(std::bit_cast<double>(o.bits))) : o.bits;
    } else {
      throw UserError(fmt::format("initializer of {}: only numbers are supported by the interpreter", v.name), o.loc);
    }
    std::memcpy(bytes.data() + i * static_cast<size_t>(elem), &bits, static_cast<size_t>(elem));
  }
  return bytes;
}

}  // namespace

struct Decoder::State {
  const Module& module;
  std::unordered_map<std::string, Symbol> globals;
  std::vector<const Function*> functions;
  uint32_t shared_end = 0;
  // Body-level .shared declarations, laid out once for the whole module so
  // that the dynamic shared base does not move as more functions are decoded.
  std::unordered_map<const VarDecl*, uint32_t> body_shared;
  std::vector<const VarDecl*> dynamic_shared;
};

namespace {

// Decodes one function body.
class FunctionDecoder final : public OperandDecoder {
 public:
  FunctionDecoder(const std::unordered_map<std::string, Symbol>& globals,
                  const std::unordered_map<const VarDecl*, uint32_t>& body_shared, Program& program, uint32_t index)
      : globals_(globals), body_shared_(body_shared), program_(program), index_(index) {}

  void decode(const Function& f) {
    DFunction& out = program_.functions[index_];
    out.name = f.name;
    out.is_entry = f.is_entry;
    entry_ = f.is_entry;
    scopes_.emplace_back();
    layout_params(f, out);
    collect_labels(f.body, out);
    walk(f.body, out);
    out.num_regs = num_regs_;
    out.num_preds = num_preds_;
    out.local_bytes = local_bytes_;
    out.param_bytes = param_bytes_;
    for (const auto& [pc, label] : branch_fixups_) {
      auto it = labels_.find(label.first);
      if (it == labels_.end()) {
        throw UserError(fmt::format("branch to undefined label {} in {}", label.first, f.name), label.second);
      }
      out.code[pc].target = it->second;
    }
    assign_reconvergence(out);
    out.decoded = true;
  }

  std::vector<uint32_t> callees() const { return callees_; }

  // ---- OperandDecoder ----
  DOperand value(const Operand& o, Type type) override {
    DOperand r;
    switch (o.kind) {
      case Operand::Kind::Register:
      case Operand::Kind::Symbol: return symbol_value(o);
      case Operand::Kind::Integer:
        r.kind = OperandKind::Imm;
        if (type == Type::F32) {
          r.imm = std::bit_cast<uint32_t>(static_cast<float>(o.integer));
        } else if (type == Type::F64) {
          r.imm = std::bit_cast<uint64_t>(static_cast<double>(o.integer));
        } else {
          r.imm = static_cast<uint64_t>(o.integer);
        }
        return r;
      case Operand::Kind::Float32:
        r.kind = OperandKind::Imm;
        r.imm = type == Type::F64
                    ? std::bit_cast<uint64_t>(static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(o.bits))))
                    : o.bits;
        return r;
      case Operand::Kind::Float64:
        r.kind = OperandKind::Imm;
        r.imm = type == Type::F32 ? std::bit_cast<uint32_t>(static_cast<float>(std::bit_cast<double>(o.bits))) : o.bits;
        return r;
      default: fail_at(o, "expected a register or a constant");
    }
  }

  DOperand dest(const Operand& o) override {
    DOperand r;
    if (o.kind == Operand::Kind::Sink) {
      r.kind = OperandKind::Sink;
      return r;
    }
    if (o.kind != Operand::Kind::Register) fail_at(o, "expected a destination register");
    const Symbol& s = lookup(o.name, o);
    if (s.kind == Symbol::Kind::Pred) {
      r.kind = OperandKind::Pred;
    } else if (s.kind == Symbol::Kind::Reg) {
      r.kind = OperandKind::Reg;
    } else {
      fail_at(o, fmt::format("{} cannot be written", o.name));
    }
    r.index = static_cast<uint32_t>(s.value);
    return r;
  }

  DOperand pred(const Operand& o) override {
    DOperand r;
    if (o.kind == Operand::Kind::Integer) {
      r.kind = OperandKind::Imm;
      r.imm = o.integer != 0;
      return r;
    }
    if (o.kind == Operand::Kind::Sink) {
      r.kind = OperandKind::Sink;
      return r;
    }
    if (o.kind != Operand::Kind::Register) fail_at(o, "expected a predicate register");
    const Symbol& s = lookup(o.name, o);
    if (s.kind != Symbol::Kind::Pred) fail_at(o, fmt::format("{} is not a predicate register", o.name));
    r.kind = OperandKind::Pred;
    r.index = static_cast<uint32_t>(s.value);
    r.negated = o.negated;
    return r;
  }

  DOperand address(const Operand& o, Space* space) override {
    if (o.kind != Operand::Kind::Address) fail_at(o, "expected an address [base+offset]");
    DOperand r;
    if (o.name.empty()) {
      r.kind = OperandKind::Imm;
      r.imm = static_cast<uint64_t>(o.integer);
      return r;
    }
    const Symbol& s = lookup(o.name, o);
    const uint64_t off = static_cast<uint64_t>(o.integer);
    auto refine = [&](Space symbol_space) {
      if (*space == Space::Generic) {
        *space = symbol_space;
      } else if (*space == Space::KernelParam && symbol_space == Space::FrameParam) {
        *space = Space::FrameParam;
      } else if (*space == Space::Global && symbol_space == Space::Const) {
        // Module .const variables are global allocations (docs/ptx-interpreter.md, Memory).
      } else if (*space != symbol_space && !(*space == Space::Const && symbol_space == Space::Global)) {
        fail_at(o, fmt::format("{} is not in the instruction's state space", o.name));
      }
    };
    switch (s.kind) {
      case Symbol::Kind::Reg:
        r.kind = OperandKind::Reg;
        r.index = static_cast<uint32_t>(s.value);
        r.imm = off;
        if (*space == Space::KernelParam && !entry_) *space = Space::FrameParam;
        return r;
      case Symbol::Kind::Global:
        refine(Space::Global);
        r.kind = OperandKind::Imm;
        r.imm = s.value + off;
        return r;
      case Symbol::Kind::Shared:
        refine(Space::Shared);
        r.kind = OperandKind::Imm;
        r.imm = s.value + off;
        return r;
      case Symbol::Kind::KernelParam:
        refine(Space::KernelParam);
        r.kind = OperandKind::Imm;
        r.imm = s.value + off;
        return r;
      case Symbol::Kind::Local:
        refine(Space::Local);
        r.kind = OperandKind::LocalAddr;
        r.imm = s.value + off;
        return r;
      case Symbol::Kind::FrameParam:
        refine(Space::FrameParam);
        r.kind = OperandKind::ParamAddr;
        r.imm = s.value + off;
        return r;
      default: fail_at(o, fmt::format("{} cannot be used as an address", o.name));
    }
  }

  bool in_entry() const override { return entry_; }

  [[noreturn]] void fail(const std::string& message) const override {
    throw UserError(fmt::format("{}: {}", current_text_, message), current_loc_);
  }

 private:
  [[noreturn]] void fail_at(const Operand& o, const std::string& message) const {
    throw UserError(fmt::format("{}: {}", current_text_, message), o.loc.known() ? o.loc : current_loc_);
  }

  const Symbol& lookup(const std::string& name, const Operand& o) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto f = it->find(name);
      if (f != it->end()) return f->second;
    }
    auto g = globals_.find(name);
    if (g != globals_.end()) return g->second;
    static thread_local Symbol special;
    for (const SpecialName& s : kSpecials) {
      if (name == s.name) {
        special = {Symbol::Kind::Special, s.index};
        return special;
      }
    }
    if (name == "%clock" || name == "%clock64" || name == "%globaltimer" || name == "%globaltimer_lo") {
      special = {Symbol::Kind::Clock, 0};
      return special;
    }
    if (name.rfind("%envreg", 0) == 0 || name.rfind("%pm", 0) == 0 || name.rfind("%cluster", 0) == 0) {
      fail_at(o, fmt::format("special register {} is not supported by the interpreter", name));
    }
    fail_at(o, fmt::format("undeclared name {}", name));
  }

  DOperand symbol_value(const Operand& o) {
    const Symbol& s = lookup(o.name, o);
    DOperand r;
    switch (s.kind) {
      case Symbol::Kind::Reg: r.kind = OperandKind::Reg; break;
      case Symbol::Kind::Special: r.kind = OperandKind::Special; break;
      case Symbol::Kind::Clock: r.kind = OperandKind::Clock; break;
      case Symbol::Kind::Global:
      case Symbol::Kind::Shared:
      case Symbol::Kind::KernelParam: r.kind = OperandKind::Imm; break;
      case Symbol::Kind::Local: r.kind = OperandKind::LocalAddr; break;
      case Symbol::Kind::FrameParam: r.kind = OperandKind::ParamAddr; break;
      case Symbol::Kind::Pred: fail_at(o, fmt::format("predicate {} used where a value is expected", o.name));
      case Symbol::Kind::Function: fail_at(o, fmt::format("function {} used as a value", o.name));
    }
    if (r.kind == OperandKind::Reg || r.kind == OperandKind::Special) {
      r.index = static_cast<uint32_t>(s.value);
    } else {
      r.imm = s.value;
    }
    return r;
  }

  void layout_params(const Function& f, DFunction& out) {
    uint32_t offset = 0;
    auto place = [&](const VarDecl& v, std::vector<ParamSlot>& slots, Symbol::Kind kind) {
      const uint64_t size = decl_bytes(v);
      offset = align_up(offset, std::max<uint64_t>(decl_align(v), 1));
      slots.push_back({offset, static_cast<uint32_t>(size)});
      scopes_.back()[v.name] = {kind, offset};
      offset += static_cast<uint32_t>(size);
    };
    if (f.is_entry) {
      for (const VarDecl& v : f.params) place(v, out.params, Symbol::Kind::KernelParam);
      return;
    }
    for (const VarDecl& v : f.returns) {
      if (v.space == StateSpace::Reg) throw UserError(".reg return values are not supported by the interpreter", v.loc);
      place(v, out.returns, Symbol::Kind::FrameParam);
    }
    for (const VarDecl& v : f.params) {
      if (v.space == StateSpace::Reg) throw UserError(".reg parameters are not supported by the interpreter", v.loc);
      place(v, out.params, Symbol::Kind::FrameParam);
    }
    param_bytes_ = offset;
  }

  void collect_labels(const std::vector<Statement>& body, DFunction& out) {
    for (const Statement& s : body) {
      if (const auto* l = std::get_if<Label>(&s.node)) {
        labels_[l->name] = label_pc_;
      } else if (std::holds_alternative<Instruction>(s.node)) {
        ++label_pc_;
      } else if (const auto* b = std::get_if<Block>(&s.node)) {
        collect_labels(b->body, out);
      }
    }
  }

  void declare(const VarDecl& v) {
    auto& scope = scopes_.back();
    switch (v.space) {
      case StateSpace::Reg: {
        const bool pred = v.type == Type::Pred;
        uint32_t& counter = pred ? num_preds_ : num_regs_;
        const Symbol::Kind kind = pred ? Symbol::Kind::Pred : Symbol::Kind::Reg;
        if (v.vector_width != 1 || v.is_array()) throw UserError("vector and array registers are not supported", v.loc);
        if (v.parameterized_count >= 0) {
          for (int i = 0; i < v.parameterized_count; ++i) scope[v.name + std::to_string(i)] = {kind, counter++};
        } else {
          scope[v.name] = {kind, counter++};
        }
        return;
      }
      case StateSpace::Local: {
        local_bytes_ = align_up(local_bytes_, std::max<uint64_t>(decl_align(v), 1));
        scope[v.name] = {Symbol::Kind::Local, local_bytes_};
        local_bytes_ += static_cast<uint32_t>(decl_bytes(v));
        return;
      }
      case StateSpace::Param: {
        param_bytes_ = align_up(param_bytes_, std::max<uint64_t>(decl_align(v), 1));
        scope[v.name] = {Symbol::Kind::FrameParam, param_bytes_};
        param_bytes_ += static_cast<uint32_t>(decl_bytes(v));
        return;
      }
      case StateSpace::Shared: {
        auto it = body_shared_.find(&v);
        STITCH_ASSERT(it != body_shared_.end(), "body .shared declaration was not laid out");
        scope[v.name] = {Symbol::Kind::Shared, it->second};
        return;
      }
      default:
        throw UserError(fmt::format("{} declarations inside a function are not supported by the interpreter", v.name),
                        v.loc);
    }
  }

  void walk(const std::vector<Statement>& body, DFunction& out) {
    for (const Statement& s : body) {
      if (const auto* v = std::get_if<VarDecl>(&s.node)) {
        declare(*v);
      } else if (const auto* b = std::get_if<Block>(&s.node)) {
        scopes_.emplace_back();
        walk(b->body, out);
        scopes_.pop_back();
      } else if (const auto* in = std::get_if<Instruction>(&s.node)) {
        instruction(*in, out);
      }
    }
  }

  void instruction(const Instruction& in, DFunction& out) {
    current_loc_ = in.loc;
    current_text_ = in.opcode;
    for (const std::string& m : in.modifiers) current_text_ += "." + m;
    DInst d;
    if (in.guard) {
      Operand g = Operand::reg(in.guard->predicate);
      g.negated = in.guard->negated;
      g.loc = in.loc;
      d.guard = pred(g);
    }
    Mods mods(in);
    if (!control(in, mods, d, out) && !decode_integer(in, mods, *this, d) && !decode_float(in, mods, *this, d) &&
        !decode_convert(in, mods, *this, d) && !decode_compare(in, mods, *this, d) &&
        !decode_memory(in, mods, *this, d) && !decode_warp(in, mods, *this, d)) {
      fail(fmt::format("instruction '{}' is not supported by the PTX interpreter", in.opcode));
    }
    mods.finish(*this);
    STITCH_ASSERT(d.control != Control::Plain || d.fn != nullptr, "decoded instruction without a handler");
    out.code.push_back(d);
    out.info.push_back({current_text_, in.loc});
  }

  // bra, ret, exit, trap, call, bar.sync/barrier.sync.
  bool control(const Instruction& in, Mods& mods, DInst& d, DFunction& out) {
    const std::string& op = in.opcode;
    if (op == "bra") {
      mods.take("uni");
      expect_operands(in, 1, *this);
      const Operand& t = in.operands[0];
      if (t.kind != Operand::Kind::Symbol && t.kind != Operand::Kind::Register) fail("expected a label");
      d.control = Control::Branch;
      branch_fixups_.push_back({static_cast<uint32_t>(out.code.size()), {t.name, t.loc}});
      return true;
    }
    if (op == "ret" || op == "exit" || op == "trap") {
      mods.take("uni");
      expect_operands(in, 0, *this);
      d.control = op == "ret" ? (entry_ ? Control::Exit : Control::Return) : op == "exit" ? Control::Exit : Control::Trap;
      return true;
    }
    if (op == "bar" || op == "barrier") {
      if (in.has_modifier("warp")) return false;  // bar.warp.sync: a warp instruction (ops_warp.cpp)
      if (!mods.take("sync")) {
        fail("only bar.sync/barrier.sync and bar.warp.sync are supported by the PTX interpreter");
      }
      if (mods.take("aligned") || op == "bar") d.flags = kFlagAligned;
      if (in.operands.empty() || in.operands.size() > 2) fail("expects a barrier number and an optional thread count");
      d.control = Control::Barrier;
      d.ops[0] = value(in.operands[0], Type::U32);
      if (in.operands.size() == 2) d.ops[1] = value(in.operands[1], Type::U32);
      return true;
    }
    if (op == "call") {
      mods.take("uni");
      call(in, d, out);
      return true;
    }
    return false;
  }

  void call(const Instruction& in, DInst& d, DFunction& out) {
    size_t callee_at = in.operands.size();
    for (size_t i = 0; i < in.operands.size(); ++i) {
      if (in.operands[i].kind != Operand::Kind::List) {
        callee_at = i;
        break;
      }
    }
    if (callee_at == in.operands.size()) fail("expected the called function's name");
    const Operand& callee = in.operands[callee_at];
    auto g = globals_.find(callee.name);
    if (g == globals_.end() || g->second.kind != Symbol::Kind::Function) {
      fail_at(callee, fmt::format("indirect calls are not supported by the interpreter ({} is not a function)",
                                  callee.name));
    }
    CallSite site;
    site.callee = static_cast<uint32_t>(g->second.value);
    const Operand* rets = callee_at > 0 ? &in.operands[0] : nullptr;
    const Operand* args = callee_at + 1 < in.operands.size() ? &in.operands[callee_at + 1] : nullptr;
    if (callee_at + 2 < in.operands.size()) fail("call with a prototype (an indirect call) is not supported");
    auto param_ref = [&](const Operand& o, std::vector<DOperand>& into) {
      if (o.kind == Operand::Kind::Symbol || o.kind == Operand::Kind::Register) {
        const Symbol& s = lookup(o.name, o);
        if (s.kind == Symbol::Kind::FrameParam) {
          DOperand r;
          r.kind = OperandKind::ParamAddr;
          r.imm = s.value;
          into.push_back(r);
          return;
        }
      }
      fail_at(o, "call arguments and results must be .param variables in the interpreter");
    };
    if (rets != nullptr) {
      for (const Operand& o : rets->elements) param_ref(o, site.rets);
    }
    if (args != nullptr) {
      for (const Operand& o : args->elements) param_ref(o, site.args);
    }
    callees_.push_back(site.callee);
    d.control = Control::Call;
    d.target = static_cast<uint32_t>(out.calls.size());
    out.calls.push_back(std::move(site));
  }

  const std::unordered_map<std::string, Symbol>& globals_;
  const std::unordered_map<const VarDecl*, uint32_t>& body_shared_;
  Program& program_;
  uint32_t index_;
  bool entry_ = false;
  std::vector<std::unordered_map<std::string, Symbol>> scopes_;
  std::unordered_map<std::string, uint32_t> labels_;
  uint32_t label_pc_ = 0;
  std::vector<std::pair<uint32_t, std::pair<std::string, SourceLoc>>> branch_fixups_;
  std::vector<uint32_t> callees_;
  uint32_t num_regs_ = 0;
  uint32_t num_preds_ = 0;
  uint32_t local_bytes_ = 0;
  uint32_t param_bytes_ = 0;
  SourceLoc current_loc_;
  std::string current_text_;
};

void collect_body_shared(const std::vector<Statement>& body, std::vector<const VarDecl*>& into) {
  for (const Statement& s : body) {
    if (const auto* v = std::get_if<VarDecl>(&s.node); v != nullptr && v->space == StateSpace::Shared) {
      into.push_back(v);
    } else if (const auto* b = std::get_if<Block>(&s.node)) {
      collect_body_shared(b->body, into);
    }
  }
}

}  // namespace

Decoder::Decoder(const Module& module) : state_(std::make_unique<State>(State{module, {}, {}, 0, {}, {}})) {
  State& st = *state_;
  uint64_t global_end = kGlobalBase;
  uint32_t shared_end = 0;
  auto place_shared = [&](const VarDecl& v) {
    const uint64_t align = std::max<uint64_t>(decl_align(v), 1);
    if (v.is_array() && v.array_dims.front() < 0) {
      st.dynamic_shared.push_back(&v);
      program_.dynamic_shared_align = std::max<uint32_t>(program_.dynamic_shared_align, static_cast<uint32_t>(align));
      return uint32_t{0};
    }
    shared_end = align_up(shared_end, align);
    const uint32_t at = shared_end;
    shared_end += static_cast<uint32_t>(decl_bytes(v));
    return at;
  };
  for (const auto& item : module.items) {
    if (const auto* v = std::get_if<VarDecl>(&item)) {
      if (v->space == StateSpace::Shared) {
        const uint32_t at = place_shared(*v);
        if (!(v->is_array() && v->array_dims.front() < 0)) st.globals[v->name] = {Symbol::Kind::Shared, at};
      } else if (v->space == StateSpace::Global || v->space == StateSpace::Const) {
        const uint64_t size = decl_bytes(*v);
        global_end = align_up(global_end, std::max<uint64_t>(decl_align(*v), 256));
        ModuleVariable mv{v->name, global_end, initializer_bytes(*v, size), v->space == StateSpace::Const};
        program_.variables.push_back(std::move(mv));
        st.globals[v->name] = {Symbol::Kind::Global, global_end};
        // A gap after each variable, so that running off its end is an error, not a neighbour's bytes.
        global_end += size + 256;
      } else {
        throw UserError(fmt::format("module-scope {} declarations are not supported by the interpreter", v->name),
                        v->loc);
      }
    } else {
      const Function& f = std::get<Function>(item);
      auto it = st.globals.find(f.name);
      if (it != st.globals.end() && it->second.kind == Symbol::Kind::Function) {
        // A prototype and its definition: keep the one with a body.
        if (f.has_body) st.functions[it->second.value] = &f;
        continue;
      }
      st.globals[f.name] = {Symbol::Kind::Function, st.functions.size()};
      st.functions.push_back(&f);
    }
  }
  for (const Function* f : st.functions) {
    std::vector<const VarDecl*> decls;
    collect_body_shared(f->body, decls);
    for (const VarDecl* v : decls) st.body_shared[v] = place_shared(*v);
  }
  program_.static_shared_bytes = shared_end;
  const uint32_t dynamic_base = align_up(shared_end, program_.dynamic_shared_align);
  for (const VarDecl* v : st.dynamic_shared) st.body_shared[v] = dynamic_base;
  for (const auto& item : module.items) {
    if (const auto* v = std::get_if<VarDecl>(&item); v != nullptr && v->space == StateSpace::Shared &&
                                                       v->is_array() && v->array_dims.front() < 0) {
      st.globals[v->name] = {Symbol::Kind::Shared, dynamic_base};
    }
  }
  program_.global_end = global_end;
  program_.functions.resize(st.functions.size());
  for (size_t i = 0; i < st.functions.size(); ++i) program_.functions[i].name = st.functions[i]->name;
}

Decoder::~Decoder() = default;

const Program& Decoder::prepare(std::string_view kernel, uint32_t* kernel_index) {
  State& st = *state_;
  auto it = st.globals.find(std::string(kernel));
  if (it == st.globals.end() || it->second.kind != Symbol::Kind::Function) {
    std::string names;
    for (const Function* f : st.functions) {
      if (f->is_entry) names += (names.empty() ? "" : ", ") + f->name;
    }
    throw UserError(fmt::format("no kernel named {} in the module (kernels: {})", kernel, names.empty() ? "none" : names));
  }
  const uint32_t index = static_cast<uint32_t>(it->second.value);
  if (!st.functions[index]->is_entry) throw UserError(fmt::format("{} is a .func, not a kernel (.entry)", kernel));
  std::vector<uint32_t> work{index};
  while (!work.empty()) {
    const uint32_t f = work.back();
    work.pop_back();
    if (program_.functions[f].decoded) continue;
    const Function& fn = *st.functions[f];
    if (!fn.has_body) throw UserError(fmt::format("{} is declared but not defined in the module", fn.name), fn.loc);
    FunctionDecoder d(st.globals, st.body_shared, program_, f);
    d.decode(fn);
    for (uint32_t c : d.callees()) work.push_back(c);
  }
  *kernel_index = index;
  return program_;
}

}  // namespace stitch::ptx::sim
