// PTX as a syntax tree (docs/ptx.md): what the parser builds from the PTX
// that NVRTC and nvcc emit, what the printer prints canonically, and what the
// CFG builder and the SIMT interpreter read.
//
// The tree keeps instructions generic (an opcode, its dot-modifiers in source
// order, operands), as the ISA spells them, so that parsing and printing do
// not need to know every instruction; the interpreter decodes the ones it
// executes and refuses the others by name.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "stitch/error.h"

namespace stitch::ptx {

enum class StateSpace : uint8_t { Reg, Sreg, Const, Global, Local, Param, Shared, Tex };

// The fundamental types a declaration or an instruction's modifier names.
enum class Type : uint8_t {
  Pred,
  B8, B16, B32, B64, B128,
  U8, U16, U32, U64,
  S8, S16, S32, S64,
  F16, F16x2, BF16, BF16x2, F32, F64,
};

// ".u32" -> Type::U32; nullopt for a name that is not a type.
std::optional<Type> parse_type(std::string_view name);
// Type::U32 -> "u32" (no dot).
const char* type_name(Type t);
// Size in bytes (Pred: 1, as a predicate stored to memory is a byte).
int type_bytes(Type t);

enum class Linkage : uint8_t { None, Visible, Extern, Weak, Common };

// One operand of an instruction.
struct Operand {
  enum class Kind : uint8_t {
    Register,   // %r1, %tid.x, %envreg3 (special registers are registers by name); `negated`: !%p1
    Sink,       // _ (a discarded result)
    Integer,    // 42, -1, 0x1F (value as written, sign-extended to 64 bits)
    Float32,    // 0f3F800000 (bits), or a decimal literal where the instruction's type is f32
    Float64,    // 0d3FF0000000000000 (bits), or a decimal literal
    Symbol,     // a variable, function or label name used as a value: mov.u64 %rd1, shared_buf;
    Address,    // [base+offset]: base is a register, a symbol, or empty (an absolute address)
    Vector,     // {%f1, %f2, _, %f4}: `elements`
    List,       // (a, b, c): call's return and argument lists: `elements`
  };
  Kind kind = Kind::Register;
  std::string name;         // Register, Symbol; Address: the base register or symbol ("" for none)
  bool negated = false;     // Register: a predicate read as its negation
  // Register: the predicate after '|' in a two-destination result, as in
  // `shfl.sync.down.b32 %r5|%p1, ...` or `setp.lt.s32 %p1|%p2, ...`; "" for none.
  std::string second;
  int64_t integer = 0;      // Integer; Address: the byte offset
  uint64_t bits = 0;        // Float32 (low 32 bits), Float64
  std::vector<Operand> elements;  // Vector, List
  SourceLoc loc;

  static Operand reg(std::string n) {
    Operand o;
    o.kind = Kind::Register;
    o.name = std::move(n);
    return o;
  }
};

// `@%p` or `@!%p` before an instruction.
struct Guard {
  std::string predicate;
  bool negated = false;
};

struct Instruction {
  std::string opcode;                  // "ld", "shfl", "setp"
  std::vector<std::string> modifiers;  // in source order, without dots: {"global", "nc", "f32"}
  std::optional<Guard> guard;
  std::vector<Operand> operands;
  SourceLoc loc;

  bool has_modifier(std::string_view m) const {
    for (const std::string& s : modifiers) {
      if (s == m) return true;
    }
    return false;
  }
};

// A variable or parameter declaration: module scope (.global, .shared,
// .const), a function's parameters and return values, or a function body's
// .reg/.local/.shared/.param declarations.
struct VarDecl {
  StateSpace space = StateSpace::Reg;
  Linkage linkage = Linkage::None;
  Type type = Type::B32;
  int vector_width = 1;            // .v2 / .v4 declarations
  std::optional<int> align;        // .align N
  std::string name;
  // %r<37>: 37 registers %r0 .. %r36; -1 for a plain name.
  int parameterized_count = -1;
  // name[4][8]; an empty extent (-1) for `extern .shared .b8 smem[]`.
  std::vector<int64_t> array_dims;
  bool is_array() const { return !array_dims.empty(); }
  // `= {1, 2, 3}` or `= 5`: integers or floats (Integer/Float32/Float64 operands), flattened.
  std::vector<Operand> initializer;
  bool has_initializer = false;
  // .ptr .global .align 16 on a kernel parameter (kept so printing round-trips).
  std::optional<StateSpace> ptr_space;
  std::optional<int> ptr_align;
  SourceLoc loc;
};

struct Statement;

// `{ ... }` inside a function body: a scope (NVRTC puts call sequences in one).
struct Block {
  std::vector<Statement> body;
  SourceLoc loc;
};

struct Label {
  std::string name;
  SourceLoc loc;
};

// `.pragma "nounroll";` and similar, kept as written.
struct Pragma {
  std::string text;  // without quotes
  SourceLoc loc;
};

struct Statement {
  std::variant<Instruction, Label, VarDecl, Block, Pragma> node;
};

// `.maxntid 256, 1, 1`, `.reqntid`, `.minnctapersm`, `.maxnreg`, `.noreturn`, ...
struct PerformanceDirective {
  std::string name;  // without the dot
  std::vector<int64_t> values;
};

struct Function {
  bool is_entry = false;  // .entry (a kernel) or .func
  Linkage linkage = Linkage::None;
  std::string name;
  std::vector<VarDecl> returns;  // .func (.reg .b32 rv) f(...)
  std::vector<VarDecl> params;
  std::vector<PerformanceDirective> directives;
  bool has_body = false;  // false for a prototype: `.extern .func f(...);`
  std::vector<Statement> body;
  SourceLoc loc;
};

struct Module {
  std::string version;                 // "9.0"
  std::vector<std::string> target;     // {"sm_90"} or {"sm_90a", "texmode_independent"}
  int address_size = 64;
  // Module-scope declarations and functions, in source order.
  std::vector<std::variant<VarDecl, Function>> items;

  const Function* find_function(std::string_view name) const {
    for (const auto& item : items) {
      if (const Function* f = std::get_if<Function>(&item); f != nullptr && f->name == name) return f;
    }
    return nullptr;
  }
};

}  // namespace stitch::ptx
