// Memory instructions (docs/ptx-interpreter.md, Memory): ld/st with vector
// widths and state spaces, cvta between generic and state-space addresses,
// and atomics (atom, red) on global and shared memory, executed lane by lane.
#include <fmt/format.h>

#include <cstring>

#include "ptx/sim/decode.h"
#include "ptx/sim/exec.h"
#include "ptx/sim/float.h"

namespace stitch::ptx::sim {

namespace {

// ops[0]: address; ops[1..width]: values. size: element bytes; flags bit 0: sign-extend.
// Each lane reads only its own address slot, so writing a lane's destination
// (which may be the address register) before the next lane's load is safe.
template <uint32_t kSize, bool kSigned>
void load_scalar(Exec& x, const DInst& in, uint32_t mask) {
  const auto base = x.src(in.ops[0], 0);
  const uint64_t offset = in.ops[0].kind == OperandKind::Reg ? in.ops[0].imm : 0;
  uint64_t* d = x.dst(in.ops[1], 1);
  const Space space = in.space;
  for_lanes(mask, [&](unsigned l) {
    const std::byte* p = x.memory(space, base[l] + offset, kSize, false, l);
    uint64_t v = 0;
    std::memcpy(&v, p, kSize);
    if constexpr (kSigned && kSize < 8) {
      v = static_cast<uint64_t>(static_cast<int64_t>(v << (64 - 8 * kSize)) >> (64 - 8 * kSize));
    }
    d[l] = v;
  });
}

void load(Exec& x, const DInst& in, uint32_t mask) {
  const auto base = x.src(in.ops[0], 0);
  const uint64_t offset = in.ops[0].kind == OperandKind::Reg ? in.ops[0].imm : 0;
  const uint32_t size = in.size, width = in.width;
  std::array<uint64_t*, 4> d{};
  for (uint32_t i = 0; i < width; ++i) d[i] = x.dst(in.ops[1 + i], 1 + static_cast<int>(i));
  for_lanes(mask, [&](unsigned l) {
    const std::byte* p = x.memory(in.space, base[l] + offset, size * width, false, l);
    for (uint32_t i = 0; i < width; ++i) {
      uint64_t v = 0;
      std::memcpy(&v, p + i * size, size);
      if ((in.flags & 1) && size < 8) {
        const int shift = 64 - 8 * static_cast<int>(size);
        v = static_cast<uint64_t>(static_cast<int64_t>(v << shift) >> shift);
      }
      d[i][l] = v;
    }
  });
}

Handler load_handler(uint32_t size, uint32_t width, bool is_signed) {
  if (width != 1) return &load;
  switch (size) {
    case 1: return is_signed ? &load_scalar<1, true> : &load_scalar<1, false>;
    case 2: return is_signed ? &load_scalar<2, true> : &load_scalar<2, false>;
    case 4: return is_signed ? &load_scalar<4, true> : &load_scalar<4, false>;
    default: return &load_scalar<8, false>;
  }
}

void store(Exec& x, const DInst& in, uint32_t mask) {
  const auto base = x.src(in.ops[0], 0);
  const uint64_t offset = in.ops[0].kind == OperandKind::Reg ? in.ops[0].imm : 0;
  const uint32_t size = in.size, width = in.width;
  std::array<Exec::Lanes, 4> values{};
  for (uint32_t i = 0; i < width; ++i) values[i] = x.src(in.ops[1 + i], 1 + static_cast<int>(i));
  for_lanes(mask, [&](unsigned l) {
    std::byte* p = x.memory(static_cast<Space>(in.space), base[l] + offset, size * width, true, l);
    for (uint32_t i = 0; i < width; ++i) {
      const uint64_t v = values[i][l];
      std::memcpy(p + i * size, &v, size);
    }
  });
}

// mode: 0 to generic, 1 from generic; space: which window.
void cvta(Exec& x, const DInst& in, uint32_t mask) {
  const auto a = x.src(in.ops[1], 1);
  uint64_t* d = x.dst(in.ops[0], 0);
  const Space s = static_cast<Space>(in.space);
  const uint64_t window = s == Space::Shared ? kSharedWindow : s == Space::Local ? kLocalWindow : 0;
  const bool to_generic = in.mode == 0;
  const uint64_t keep = in.size == 4 ? 0xffffffffu : ~uint64_t{0};
  for_lanes(mask, [&](unsigned l) { d[l] = (to_generic ? a[l] + window : a[l] - window) & keep; });
}

enum AtomOp : uint8_t { kAnd, kOr, kXor, kCas, kExch, kAdd, kInc, kDec, kMin, kMax };

template <class T>
T atom_apply(uint8_t op, T old, T b, T c) {
  switch (op) {
    case kAnd:
      if constexpr (std::is_integral_v<T>) return old & b;
      break;
    case kOr:
      if constexpr (std::is_integral_v<T>) return old | b;
      break;
    case kXor:
      if constexpr (std::is_integral_v<T>) return old ^ b;
      break;
    case kCas: return old == b ? c : old;
    case kExch: return b;
    case kAdd:
      if constexpr (std::is_same_v<T, float>) {
        // atom.add.f32 flushes subnormal inputs and results (PTX ISA, atom).
        return flush(flush(old) + flush(b));
      } else if constexpr (std::is_integral_v<T>) {
        return static_cast<T>(static_cast<std::make_unsigned_t<T>>(old) + static_cast<std::make_unsigned_t<T>>(b));
      } else {
        return old + b;
      }
    case kInc:
      if constexpr (std::is_integral_v<T>) return old >= b ? T{0} : static_cast<T>(old + 1);
      break;
    case kDec:
      if constexpr (std::is_integral_v<T>) return (old == 0 || old > b) ? b : static_cast<T>(old - 1);
      break;
    case kMin: return old < b ? old : b;
    case kMax: return old > b ? old : b;
    default: break;
  }
  return old;
}

// ops[0]: address; ops[1]: old value (or sink); ops[2]: b; ops[3]: c (cas).
template <class T>
void atom(Exec& x, const DInst& in, uint32_t mask) {
  const auto base = x.src(in.ops[0], 0);
  const uint64_t offset = in.ops[0].kind == OperandKind::Reg ? in.ops[0].imm : 0;
  const auto b = x.src(in.ops[2], 2);
  const auto c = x.src(in.ops[3], 3);
  std::array<uint64_t, kWarpSize> old{};
  // Lanes update one after another, in lane order: one of the orders the hardware may pick.
  for_lanes(mask, [&](unsigned l) {
    std::byte* p = x.memory(static_cast<Space>(in.space), base[l] + offset, sizeof(T), true, l, true);
    T v;
    std::memcpy(&v, p, sizeof(T));
    const T r = atom_apply<T>(in.mode, v, as<T>(b[l]), as<T>(c[l]));
    std::memcpy(p, &r, sizeof(T));
    old[l] = bits(v);
  });
  uint64_t* d = x.dst(in.ops[1], 1);
  for_lanes(mask, [&](unsigned l) { d[l] = old[l]; });
}

Space take_space(Mods& mods, const OperandDecoder& d) {
  const int s = mods.take_one({"global", "shared", "local", "param", "const", "shared::cta"});
  switch (s) {
    case 0: return Space::Global;
    case 1:
    case 5: return Space::Shared;
    case 2: return Space::Local;
    case 3: return d.in_entry() ? Space::KernelParam : Space::FrameParam;
    case 4: return Space::Const;
    default: break;
  }
  if (mods.take("shared::cluster")) d.fail("cluster shared memory is not supported by the PTX interpreter");
  return Space::Generic;
}

bool decode_ld_st(const Instruction& in, Mods& mods, OperandDecoder& d, DInst& out) {
  const bool is_load = in.opcode == "ld" || in.opcode == "ldu";
  mods.drop_memory_hints();
  Space space = take_space(mods, d);
  const int vec = mods.take_one({"v2", "v4"});
  const uint8_t width = vec == 0 ? 2 : vec == 1 ? 4 : 1;
  const Type t = single_type(mods, d, in);
  if (t == Type::B128 || t == Type::F16x2 || t == Type::BF16x2) {
    d.fail(fmt::format(".{} accesses are not supported by the PTX interpreter", type_name(t)));
  }
  expect_operands(in, 2, d);
  const Operand& addr = in.operands[is_load ? 1 : 0];
  const Operand& val = in.operands[is_load ? 0 : 1];
  out.ops[0] = d.address(addr, &space);
  if (!is_load && (space == Space::KernelParam || space == Space::Const)) d.fail("cannot store to a read-only state space");
  if ((val.kind == Operand::Kind::Vector) != (width > 1) ||
      (width > 1 && val.elements.size() != width)) {
    d.fail("the value operand does not match the vector width");
  }
  for (uint8_t i = 0; i < width; ++i) {
    const Operand& e = width > 1 ? val.elements[i] : val;
    out.ops[1 + i] = is_load ? d.dest(e) : d.value(e, t);
  }
  out.space = space;
  out.width = width;
  out.size = static_cast<uint8_t>(type_bytes(t));
  out.flags = is_signed(t) ? 1 : 0;
  out.fn = is_load ? load_handler(out.size, width, is_signed(t)) : &store;
  return true;
}

}  // namespace

bool decode_memory(const Instruction& in, Mods& mods, OperandDecoder& d, DInst& out) {
  const std::string& op = in.opcode;
  if (op == "ld" || op == "ldu" || op == "st") return decode_ld_st(in, mods, d, out);
  if (op == "cvta") {
    const bool from_generic = mods.take("to");
    const Space s = take_space(mods, d);
    const Type t = single_type(mods, d, in);
    if (t != Type::U32 && t != Type::U64) d.fail("needs .u32 or .u64");
    if (s == Space::Generic || s == Space::KernelParam || s == Space::FrameParam) {
      d.fail("cvta supports .global, .shared, .local and .const in the PTX interpreter");
    }
    expect_operands(in, 2, d);
    out.ops[0] = d.dest(in.operands[0]);
    out.ops[1] = d.value(in.operands[1], t);
    out.space = s;
    out.mode = from_generic ? 1 : 0;
    out.size = static_cast<uint8_t>(type_bytes(t));
    out.fn = &cvta;
    return true;
  }
  if (op == "atom" || op == "red") {
    mods.drop_memory_hints();
    Space space = take_space(mods, d);
    if (space != Space::Generic && space != Space::Global && space != Space::Shared) d.fail("atomics apply to global or shared memory");
    const int a = mods.take_one({"and", "or", "xor", "cas", "exch", "add", "inc", "dec", "min", "max"});
    if (a < 0) d.fail("needs an operation (.add, .cas, ...)");
    const Type t = single_type(mods, d, in);
    const bool is_red = op == "red";
    const size_t sources = a == kCas ? 2 : 1;
    expect_operands(in, (is_red ? 1 : 2) + sources, d);
    size_t i = 0;
    if (!is_red) out.ops[1] = d.dest(in.operands[i++]);
    else out.ops[1].kind = OperandKind::Sink;
    out.ops[0] = d.address(in.operands[i++], &space);
    out.ops[2] = d.value(in.operands[i++], t);
    if (sources == 2) out.ops[3] = d.value(in.operands[i], t);
    out.space = space;
    out.mode = static_cast<uint8_t>(a);
    const bool bitwise = a == kAnd || a == kOr || a == kXor;
    if (t == Type::F32 && (a == kAdd || a == kExch || a == kMin || a == kMax)) {
      out.fn = &atom<float>;
    } else if (t == Type::F64 && (a == kAdd || a == kExch)) {
      out.fn = &atom<double>;
    } else if ((bitwise || a == kCas || a == kExch) && (t == Type::B32 || t == Type::B64)) {
      out.fn = t == Type::B32 ? &atom<uint32_t> : &atom<uint64_t>;
    } else if (!bitwise && !is_float(t) && type_bytes(t) >= 4 && a != kInc && a != kDec) {
      out.fn = with_int_type(t, [](auto v) -> Handler { return &atom<decltype(v)>; }, Handler{nullptr});
    } else if ((a == kInc || a == kDec) && t == Type::U32) {
      out.fn = &atom<uint32_t>;
    }
    if (out.fn == nullptr) d.fail(fmt::format("this atomic operation on .{} is not supported by the PTX interpreter", type_name(t)));
    return true;
  }
  if (op == "prefetch" || op == "prefetchu") {
    out.fn = [](Exec&, const DInst&, uint32_t) {};
    for (size_t i = 0; i < in.modifiers.size(); ++i) mods.take(in.modifiers[i]);
    return true;
  }
  return false;
}

}  // namespace stitch::ptx::sim
