// Decoding PTX functions into the interpreter's compact form
// (docs/ptx-interpreter.md, Decoding): registers and predicates numbered per
// function, symbols resolved to addresses, each instruction's handler chosen
// by the instruction family that owns its opcode (sim_ops_*.cpp).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptx/ptx_ast.h"
#include "ptx/sim/program.h"

namespace stitch::ptx::sim {

// The module's functions decoded on demand: a kernel and the functions it
// calls are decoded when first launched, so that an unsupported instruction
// in a kernel that is not run is no error.
class Decoder {
 public:
  explicit Decoder(const Module& module);
  ~Decoder();
  // The program with `kernel` (an .entry) and its callees decoded; UserError
  // for a missing kernel, an unsupported instruction or a malformed operand.
  const Program& prepare(std::string_view kernel, uint32_t* kernel_index);
  const Program& program() const { return program_; }

 private:
  struct State;
  std::unique_ptr<State> state_;
  Program program_;
};

// What an instruction family's decoder uses to turn operands and modifiers
// into a DInst (decode.cpp implements it).
class OperandDecoder {
 public:
  virtual ~OperandDecoder() = default;
  // A source: register, special register, immediate (converted to `type`'s
  // bits), or a symbol's address.
  virtual DOperand value(const Operand& o, Type type) = 0;
  // A destination register, or _ (Sink).
  virtual DOperand dest(const Operand& o) = 0;
  // A predicate register, possibly negated, or an immediate 0/1.
  virtual DOperand pred(const Operand& o) = 0;
  // An address operand [base+offset]: base register (offset in imm) or a
  // symbol's address folded into imm. Sets `space` from a symbol when it is
  // Generic (ld [shared_var] means ld.shared).
  virtual DOperand address(const Operand& o, Space* space) = 0;
  // Whether the function being decoded is a kernel (.entry).
  virtual bool in_entry() const = 0;
  [[noreturn]] virtual void fail(const std::string& message) const = 0;
};

// Modifiers of one instruction, consumed as a family recognises them, so that
// one it does not know is an error naming it.
class Mods {
 public:
  explicit Mods(const Instruction& in);
  bool take(std::string_view m);
  // The first of `options` present, as its index; -1 when none is.
  int take_one(std::initializer_list<std::string_view> options);
  // The type modifiers in source order (consumed).
  std::vector<Type> take_types();
  // rn/rz/rm/rp (or rni/rzi/rmi/rpi when `integral`); nullopt when absent.
  std::optional<Rounding> take_rounding(bool integral = false);
  // Drops memory-ordering and cache modifiers that do not change the result
  // of a single-threaded-per-lane execution (weak, relaxed, volatile, scopes,
  // cache operators, L1::/L2:: hints).
  void drop_memory_hints();
  // A UserError naming the first modifier no family consumed.
  void finish(const OperandDecoder& d) const;

 private:
  const Instruction& in_;
  std::vector<bool> used_;
};

// Instruction families: each returns false when `in.opcode` is not one of its
// own, else fills `out` (handler, control, operands) or fails through `d`.
bool decode_integer(const Instruction& in, Mods& mods, OperandDecoder& d, DInst& out);
bool decode_float(const Instruction& in, Mods& mods, OperandDecoder& d, DInst& out);
bool decode_convert(const Instruction& in, Mods& mods, OperandDecoder& d, DInst& out);
bool decode_compare(const Instruction& in, Mods& mods, OperandDecoder& d, DInst& out);
bool decode_memory(const Instruction& in, Mods& mods, OperandDecoder& d, DInst& out);
bool decode_warp(const Instruction& in, Mods& mods, OperandDecoder& d, DInst& out);

// Helpers the families share.
bool is_float(Type t);
bool is_signed(Type t);
// "add.s32": the type when there is exactly one, else a UserError.
Type single_type(Mods& mods, const OperandDecoder& d, const Instruction& in);
void expect_operands(const Instruction& in, size_t n, const OperandDecoder& d);

}  // namespace stitch::ptx::sim
