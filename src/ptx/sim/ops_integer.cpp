// Integer, bit-manipulation, move and predicate-logic instructions
// (docs/ptx-interpreter.md, Integer arithmetic): wraparound arithmetic, the
// high and wide halves of products, shifts clamped at the operand width, and
// the results the hardware gives for division by zero.
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "ptx/sim/decode.h"
#include "ptx/sim/exec.h"

namespace stitch::ptx::sim {

namespace {

template <class T, class Op>
void binary(Exec& x, const DInst& in, uint32_t mask) {
  const auto a = x.src(in.ops[1], 1);
  const auto b = x.src(in.ops[2], 2);
  uint64_t* d = x.dst(in.ops[0], 0);
  for_lanes(mask, [&](unsigned l) { d[l] = bits(Op::template apply<T>(as<T>(a[l]), as<T>(b[l]))); });
}

template <class T, class Op>
void unary(Exec& x, const DInst& in, uint32_t mask) {
  const auto a = x.src(in.ops[1], 1);
  uint64_t* d = x.dst(in.ops[0], 0);
  for_lanes(mask, [&](unsigned l) { d[l] = bits(Op::template apply<T>(as<T>(a[l]))); });
}

template <class T, class Op>
void ternary(Exec& x, const DInst& in, uint32_t mask) {
  const auto a = x.src(in.ops[1], 1);
  const auto b = x.src(in.ops[2], 2);
  const auto c = x.src(in.ops[3], 3);
  uint64_t* d = x.dst(in.ops[0], 0);
  for_lanes(mask, [&](unsigned l) { d[l] = Op::template apply<T>(a[l], b[l], c[l]); });
}

template <class T>
using U = std::make_unsigned_t<T>;

// A wider type for the products' high and wide halves.
template <class T>
struct Wide;
template <> struct Wide<uint16_t> { using type = uint32_t; };
template <> struct Wide<int16_t> { using type = int32_t; };
template <> struct Wide<uint32_t> { using type = uint64_t; };
template <> struct Wide<int32_t> { using type = int64_t; };
template <> struct Wide<uint64_t> { using type = unsigned __int128; };
template <> struct Wide<int64_t> { using type = __int128; };

struct Add { template <class T> static T apply(T a, T b) { return static_cast<T>(static_cast<U<T>>(a) + static_cast<U<T>>(b)); } };
struct Sub { template <class T> static T apply(T a, T b) { return static_cast<T>(static_cast<U<T>>(a) - static_cast<U<T>>(b)); } };
struct MulLo { template <class T> static T apply(T a, T b) { return static_cast<T>(static_cast<U<T>>(a) * static_cast<U<T>>(b)); } };
struct MulHi {
  template <class T> static T apply(T a, T b) {
    using W = typename Wide<T>::type;
    return static_cast<T>((static_cast<W>(a) * static_cast<W>(b)) >> (8 * sizeof(T)));
  }
};
struct AddSat {
  template <class T> static T apply(T a, T b) {
    T r;
    if (__builtin_add_overflow(a, b, &r)) return b > 0 ? std::numeric_limits<T>::max() : std::numeric_limits<T>::min();
    return r;
  }
};
struct SubSat {
  template <class T> static T apply(T a, T b) {
    T r;
    if (__builtin_sub_overflow(a, b, &r)) return b < 0 ? std::numeric_limits<T>::max() : std::numeric_limits<T>::min();
    return r;
  }
};
// Division by zero gives all ones (unsigned) or -1 (signed), and the
// remainder the dividend, as the hardware does; PTX leaves both unspecified.
struct Div {
  template <class T> static T apply(T a, T b) {
    if (b == 0) return static_cast<T>(-1);
    if constexpr (std::is_signed_v<T>) {
      if (a == std::numeric_limits<T>::min() && b == -1) return a;
    }
    return static_cast<T>(a / b);
  }
};
struct Rem {
  template <class T> static T apply(T a, T b) {
    if (b == 0) return a;
    if constexpr (std::is_signed_v<T>) {
      if (b == -1) return 0;
    }
    return static_cast<T>(a % b);
  }
};
struct Min { template <class T> static T apply(T a, T b) { return a < b ? a : b; } };
struct Max { template <class T> static T apply(T a, T b) { return a > b ? a : b; } };
struct And { template <class T> static T apply(T a, T b) { return a & b; } };
struct Or { template <class T> static T apply(T a, T b) { return a | b; } };
struct Xor { template <class T> static T apply(T a, T b) { return a ^ b; } };
struct Not { template <class T> static T apply(T a) { return static_cast<T>(~a); } };
struct CNot { template <class T> static T apply(T a) { return a == 0 ? 1 : 0; } };
struct Neg { template <class T> static T apply(T a) { return static_cast<T>(U<T>{0} - static_cast<U<T>>(a)); } };
struct Abs { template <class T> static T apply(T a) { return a < 0 ? Neg::apply(a) : a; } };
struct Popc { template <class T> static uint32_t apply(T a) { return static_cast<uint32_t>(__builtin_popcountll(static_cast<U<T>>(a))); } };
struct Clz {
  template <class T> static uint32_t apply(T a) {
    const uint64_t v = static_cast<U<T>>(a);
    return v == 0 ? 8 * sizeof(T) : static_cast<uint32_t>(__builtin_clzll(v) - (64 - 8 * sizeof(T)));
  }
};
struct Brev {
  template <class T> static T apply(T a) {
    U<T> v = static_cast<U<T>>(a), r = 0;
    for (size_t i = 0; i < 8 * sizeof(T); ++i) r = static_cast<U<T>>((r << 1) | ((v >> i) & 1));
    return static_cast<T>(r);
  }
};
struct Mov { template <class T> static T apply(T a) { return a; } };

// Shifts take a u32 amount; amounts past the width clamp to it.
template <class T, bool kLeft>
void shift(Exec& x, const DInst& in, uint32_t mask) {
  const auto a = x.src(in.ops[1], 1);
  const auto b = x.src(in.ops[2], 2);
  uint64_t* d = x.dst(in.ops[0], 0);
  constexpr uint32_t kBits = 8 * sizeof(T);
  for_lanes(mask, [&](unsigned l) {
    const T v = as<T>(a[l]);
    const uint32_t n = static_cast<uint32_t>(b[l]);
    T r;
    if (kLeft) {
      r = n >= kBits ? T{0} : static_cast<T>(static_cast<U<T>>(v) << n);
    } else if (n >= kBits) {
      r = (std::is_signed_v<T> && v < 0) ? static_cast<T>(-1) : T{0};
    } else {
      r = static_cast<T>(v >> n);
    }
    d[l] = bits(r);
  });
}

template <class T, int kHalf>  // 0: lo, 1: hi, 2: wide
void mad(Exec& x, const DInst& in, uint32_t mask) {
  const auto a = x.src(in.ops[1], 1);
  const auto b = x.src(in.ops[2], 2);
  const auto c = x.src(in.ops[3], 3);
  uint64_t* d = x.dst(in.ops[0], 0);
  using W = typename Wide<T>::type;
  for_lanes(mask, [&](unsigned l) {
    if constexpr (kHalf == 0) {
      d[l] = bits(Add::apply(MulLo::apply(as<T>(a[l]), as<T>(b[l])), as<T>(c[l])));
    } else if constexpr (kHalf == 1) {
      d[l] = bits(Add::apply(MulHi::apply(as<T>(a[l]), as<T>(b[l])), as<T>(c[l])));
    } else {
      const W p = static_cast<W>(as<T>(a[l])) * static_cast<W>(as<T>(b[l]));
      d[l] = bits(Add::apply(p, as<W>(c[l])));
    }
  });
}

// Extended-precision arithmetic through CC.CF (Warp::carry, a bit per lane):
// add.cc/addc, sub.cc/subc (the flag is a borrow), mad.lo/hi.cc and madc.
// NVRTC's 64-bit integer helpers in double-precision math (pow) use them.
enum class CarryKind { Add, Sub, MadLo, MadHi };

template <class T, CarryKind kKind, bool kIn, bool kOut>
void carry_op(Exec& x, const DInst& in, uint32_t mask) {
  using UT = U<T>;
  using W = std::conditional_t<sizeof(T) == 8, unsigned __int128, uint64_t>;
  constexpr unsigned kBits = 8 * sizeof(T);
  const auto a = x.src(in.ops[1], 1);
  const auto b = x.src(in.ops[2], 2);
  uint64_t* d = x.dst(in.ops[0], 0);
  const uint32_t carry_in = x.warp.carry;
  uint32_t carry_out = 0;
  auto lane = [&](unsigned l, W c) {
    const W cin = kIn ? W{(carry_in >> l) & 1u} : W{0};
    const UT ua = static_cast<UT>(as<T>(a[l])), ub = static_cast<UT>(as<T>(b[l]));
    W r;
    bool out;
    if constexpr (kKind == CarryKind::Sub) {
      r = W{ua} - W{ub} - cin;
      out = W{ua} < W{ub} + cin;
    } else {
      W first = ua;  // add: a + b (+ cin); mad: (a * b).lo/hi + c (+ cin)
      W second = ub;
      if constexpr (kKind == CarryKind::MadLo) first = static_cast<UT>(MulLo::apply(as<T>(a[l]), as<T>(b[l])));
      if constexpr (kKind == CarryKind::MadHi) first = static_cast<UT>(MulHi::apply(as<T>(a[l]), as<T>(b[l])));
      if constexpr (kKind == CarryKind::MadLo || kKind == CarryKind::MadHi) second = c;
      r = first + second + cin;
      out = ((r >> kBits) & 1) != 0;
    }
    d[l] = bits(static_cast<T>(static_cast<UT>(r)));
    if (out) carry_out |= uint32_t{1} << l;
  };
  if constexpr (kKind == CarryKind::MadLo || kKind == CarryKind::MadHi) {
    const auto c = x.src(in.ops[3], 3);
    for_lanes(mask, [&](unsigned l) { lane(l, W{static_cast<UT>(as<T>(c[l]))}); });
  } else {
    for_lanes(mask, [&](unsigned l) { lane(l, W{0}); });
  }
  if constexpr (kOut) x.warp.carry = (x.warp.carry & ~mask) | carry_out;
}

template <class T, CarryKind kKind>
Handler carry_handler(bool carry_in, bool carry_out) {
  if (carry_in) return carry_out ? &carry_op<T, kKind, true, true> : &carry_op<T, kKind, true, false>;
  return carry_out ? &carry_op<T, kKind, false, true> : &carry_op<T, kKind, false, false>;
}

template <class T>
void mul_wide(Exec& x, const DInst& in, uint32_t mask) {
  const auto a = x.src(in.ops[1], 1);
  const auto b = x.src(in.ops[2], 2);
  uint64_t* d = x.dst(in.ops[0], 0);
  using W = typename Wide<T>::type;
  for_lanes(mask, [&](unsigned l) { d[l] = bits(static_cast<W>(static_cast<W>(as<T>(a[l])) * static_cast<W>(as<T>(b[l])))); });
}

template <class T>
void bfe(Exec& x, const DInst& in, uint32_t mask) {
  const auto a = x.src(in.ops[1], 1);
  const auto b = x.src(in.ops[2], 2);
  const auto c = x.src(in.ops[3], 3);
  uint64_t* d = x.dst(in.ops[0], 0);
  constexpr uint32_t kMsb = 8 * sizeof(T) - 1;
  for_lanes(mask, [&](unsigned l) {
    const uint64_t v = static_cast<U<T>>(as<T>(a[l]));
    const uint32_t pos = static_cast<uint32_t>(b[l]) & 0xff, len = static_cast<uint32_t>(c[l]) & 0xff;
    uint64_t sbit = 0;
    if (std::is_signed_v<T> && len != 0) sbit = (v >> std::min(pos + len - 1, kMsb)) & 1;
    U<T> r = 0;
    for (uint32_t i = 0; i <= kMsb; ++i) {
      const uint64_t bit = (i < len && pos + i <= kMsb) ? (v >> (pos + i)) & 1 : sbit;
      r = static_cast<U<T>>(r | (static_cast<U<T>>(bit) << i));
    }
    d[l] = bits(r);
  });
}

template <class T>
void bfi(Exec& x, const DInst& in, uint32_t mask) {
  const auto a = x.src(in.ops[1], 1);
  const auto b = x.src(in.ops[2], 2);
  const auto c = x.src(in.ops[3], 3);
  const auto e = x.src(in.ops[4], 4);
  uint64_t* d = x.dst(in.ops[0], 0);
  constexpr uint32_t kMsb = 8 * sizeof(T) - 1;
  for_lanes(mask, [&](unsigned l) {
    const T f = as<T>(a[l]);
    T r = as<T>(b[l]);
    const uint32_t pos = static_cast<uint32_t>(c[l]) & 0xff, len = static_cast<uint32_t>(e[l]) & 0xff;
    for (uint32_t i = 0; i < len && pos + i <= kMsb; ++i) {
      const T bit = static_cast<T>((f >> i) & 1);
      r = static_cast<T>((r & ~(T{1} << (pos + i))) | (bit << (pos + i)));
    }
    d[l] = bits(r);
  });
}

// dp4a.atype.btype: c plus the products of a's and b's four bytes, each byte
// signed when its operand's type is .s32; the sum wraps to 32 bits.
template <bool ASigned, bool BSigned>
struct Dp4a {
  template <class T> static uint64_t apply(uint64_t a, uint64_t b, uint64_t c) {
    auto byte = [](uint64_t v, int i, bool sign) -> int64_t {
      const uint32_t u = (static_cast<uint32_t>(v) >> (8 * i)) & 0xff;
      return sign ? static_cast<int8_t>(u) : static_cast<int64_t>(u);
    };
    uint64_t sum = static_cast<uint32_t>(c);
    for (int i = 0; i < 4; ++i) sum += static_cast<uint64_t>(byte(a, i, ASigned) * byte(b, i, BSigned));
    return static_cast<uint32_t>(sum);
  }
};

// dp2a.lo/.hi.atype.btype: c plus a's two 16-bit halves times b's bytes 0
// and 1 (.lo) or 2 and 3 (.hi), each signed per its operand's type.
template <bool Hi, bool ASigned, bool BSigned>
struct Dp2a {
  template <class T> static uint64_t apply(uint64_t a, uint64_t b, uint64_t c) {
    uint64_t sum = static_cast<uint32_t>(c);
    for (int i = 0; i < 2; ++i) {
      const uint32_t h = (static_cast<uint32_t>(a) >> (16 * i)) & 0xffff;
      const uint32_t u = (static_cast<uint32_t>(b) >> (8 * (i + (Hi ? 2 : 0)))) & 0xff;
      const int64_t av = ASigned ? static_cast<int16_t>(h) : static_cast<int64_t>(h);
      const int64_t bv = BSigned ? static_cast<int8_t>(u) : static_cast<int64_t>(u);
      sum += static_cast<uint64_t>(av * bv);
    }
    return static_cast<uint32_t>(sum);
  }
};

struct Prmt {
  template <class T> static uint64_t apply(uint64_t a, uint64_t b, uint64_t c) {
    const uint64_t src = (static_cast<uint64_t>(static_cast<uint32_t>(b)) << 32) | static_cast<uint32_t>(a);
    uint32_t r = 0;
    for (int i = 0; i < 4; ++i) {
      const uint32_t sel = (static_cast<uint32_t>(c) >> (4 * i)) & 0xf;
      uint32_t byte = (src >> (8 * (sel & 7))) & 0xff;
      if (sel & 8) byte = (byte & 0x80) ? 0xff : 0;
      r |= byte << (8 * i);
    }
    return r;
  }
};

void lop3(Exec& x, const DInst& in, uint32_t mask) {
  const auto a = x.src(in.ops[1], 1);
  const auto b = x.src(in.ops[2], 2);
  const auto c = x.src(in.ops[3], 3);
  const uint32_t lut = static_cast<uint32_t>(in.ops[4].imm);
  uint64_t* d = x.dst(in.ops[0], 0);
  for_lanes(mask, [&](unsigned l) {
    const uint32_t va = static_cast<uint32_t>(a[l]), vb = static_cast<uint32_t>(b[l]), vc = static_cast<uint32_t>(c[l]);
    uint32_t r = 0;
    for (int k = 0; k < 8; ++k) {
      if ((lut >> k) & 1) r |= ((k & 4) ? va : ~va) & ((k & 2) ? vb : ~vb) & ((k & 1) ? vc : ~vc);
    }
    d[l] = r;
  });
}

template <bool kLeft, bool kWrap>
void funnel_shift(Exec& x, const DInst& in, uint32_t mask) {
  const auto a = x.src(in.ops[1], 1);
  const auto b = x.src(in.ops[2], 2);
  const auto c = x.src(in.ops[3], 3);
  uint64_t* d = x.dst(in.ops[0], 0);
  for_lanes(mask, [&](unsigned l) {
    const uint64_t pair = (static_cast<uint64_t>(static_cast<uint32_t>(b[l])) << 32) | static_cast<uint32_t>(a[l]);
    const uint32_t n = kWrap ? static_cast<uint32_t>(c[l]) & 31 : std::min<uint32_t>(static_cast<uint32_t>(c[l]), 32);
    d[l] = kLeft ? static_cast<uint32_t>((pair << n) >> 32) : static_cast<uint32_t>(pair >> n);
  });
}

// Predicate logic works on whole lane masks.
template <int kOp>  // 0 and, 1 or, 2 xor, 3 not, 4 mov
void pred_logic(Exec& x, const DInst& in, uint32_t mask) {
  const uint32_t a = x.pred(in.ops[1]);
  const uint32_t b = kOp < 3 ? x.pred(in.ops[2]) : 0;
  const uint32_t r = kOp == 0 ? a & b : kOp == 1 ? a | b : kOp == 2 ? a ^ b : kOp == 3 ? ~a : a;
  x.set_pred(in.ops[0], r, mask);
}

// mov.b64 %rd, {%r1, %r2} and mov.b64 {%r1, %r2}, %rd: parts little-endian.
template <int kTotalBits, int kParts, bool kPack>
void pack(Exec& x, const DInst& in, uint32_t mask) {
  constexpr int kPartBits = kTotalBits / kParts;
  constexpr uint64_t kPartMask = (uint64_t{1} << kPartBits) - 1;
  if constexpr (kPack) {
    uint64_t* d = x.dst(in.ops[0], 0);
    std::array<Exec::Lanes, kParts> parts{};
    for (int i = 0; i < kParts; ++i) parts[i] = x.src(in.ops[1 + i], 1 + i);
    for_lanes(mask, [&](unsigned l) {
      uint64_t r = 0;
      for (int i = 0; i < kParts; ++i) r |= (parts[i][l] & kPartMask) << (i * kPartBits);
      d[l] = r;
    });
  } else {
    const auto a = x.src(in.ops[kParts], kParts);
    std::array<uint64_t, kWarpSize> v{};
    for_lanes(mask, [&](unsigned l) { v[l] = a[l]; });
    for (int i = 0; i < kParts; ++i) {
      uint64_t* d = x.dst(in.ops[i], i);
      for_lanes(mask, [&](unsigned l) { d[l] = (v[l] >> (i * kPartBits)) & kPartMask; });
    }
  }
}

template <class Op>
Handler binary_for(Type t) {
  return with_int_type(t, [](auto v) -> Handler { return &binary<decltype(v), Op>; }, Handler{nullptr});
}
template <class Op>
Handler unary_for(Type t) {
  return with_int_type(t, [](auto v) -> Handler { return &unary<decltype(v), Op>; }, Handler{nullptr});
}

// The signed or unsigned type of `t` (b32 reads as u32).
Type integer_type(Type t, const OperandDecoder& d) {
  if (is_float(t) || t == Type::Pred || t == Type::B128) d.fail(fmt::format("type .{} is not an integer type", type_name(t)));
  return t;
}

bool decode_mov(const Instruction& in, Mods& mods, OperandDecoder& d, DInst& out) {
  const Type t = single_type(mods, d, in);
  expect_operands(in, 2, d);
  const Operand& dst = in.operands[0];
  const Operand& src = in.operands[1];
  if (t == Type::Pred) {
    out.fn = &pred_logic<4>;
    out.ops[0] = d.pred(dst);
    out.ops[1] = d.pred(src);
    return true;
  }
  const int total = type_bytes(t) * 8;
  const bool pack_in = src.kind == Operand::Kind::Vector, pack_out = dst.kind == Operand::Kind::Vector;
  if (pack_in || pack_out) {
    const Operand& vec = pack_in ? src : dst;
    const int parts = static_cast<int>(vec.elements.size());
    if (pack_in) {
      out.ops[0] = d.dest(dst);
      for (int i = 0; i < parts; ++i) out.ops[1 + i] = d.value(vec.elements[i], Type::B32);
    } else {
      for (int i = 0; i < parts; ++i) out.ops[i] = d.dest(vec.elements[i]);
      out.ops[parts] = d.value(src, t);
    }
    if (total == 64 && parts == 2) out.fn = pack_in ? &pack<64, 2, true> : &pack<64, 2, false>;
    if (total == 64 && parts == 4) out.fn = pack_in ? &pack<64, 4, true> : &pack<64, 4, false>;
    if (total == 32 && parts == 2) out.fn = pack_in ? &pack<32, 2, true> : &pack<32, 2, false>;
    if (total == 32 && parts == 4) out.fn = pack_in ? &pack<32, 4, true> : &pack<32, 4, false>;
    if (total == 16 && parts == 2) out.fn = pack_in ? &pack<16, 2, true> : &pack<16, 2, false>;
    if (out.fn == nullptr) d.fail("unsupported vector mov");
    return true;
  }
  out.ops[0] = d.dest(dst);
  out.ops[1] = d.value(src, t);
  out.fn = total == 64 ? &unary<uint64_t, Mov> : total == 32 ? &unary<uint32_t, Mov> : total == 16 ? &unary<uint16_t, Mov>
                                                                                                  : &unary<uint8_t, Mov>;
  return true;
}

// Sets the destination of an instruction of `sources` source operands.
void decode_dest(const Instruction& in, OperandDecoder& d, DInst& out, int sources) {
  expect_operands(in, static_cast<size_t>(sources + 1), d);
  out.ops[0] = d.dest(in.operands[0]);
}

// The destination and `sources` source operands, all of type `t`.
void decode_sources(const Instruction& in, OperandDecoder& d, DInst& out, int sources, Type t) {
  decode_dest(in, d, out, sources);
  for (int i = 1; i <= sources; ++i) out.ops[i] = d.value(in.operands[static_cast<size_t>(i)], t);
}

// add/sub/mad with a carry flag in or out (.cc, addc, subc, madc).
bool decode_carry(const Instruction& in, Mods& mods, OperandDecoder& d, DInst& out, bool carry_in) {
  const std::string& op = in.opcode;
  const bool carry_out = mods.take("cc");
  const bool is_mad = op == "mad" || op == "madc";
  const int half = is_mad ? mods.take_one({"lo", "hi"}) : 0;
  if (half < 0) d.fail("needs .lo or .hi");
  const Type t = integer_type(single_type(mods, d, in), d);
  if (type_bytes(t) != 4 && (is_mad || type_bytes(t) != 8)) d.fail("unsupported type");
  decode_sources(in, d, out, is_mad ? 3 : 2, t);
  auto pick = [&](auto v) -> Handler {
    using T = decltype(v);
    if constexpr (sizeof(T) < 4) {
      return nullptr;
    } else {
      if (is_mad) {
        return half == 0 ? carry_handler<T, CarryKind::MadLo>(carry_in, carry_out)
                         : carry_handler<T, CarryKind::MadHi>(carry_in, carry_out);
      }
      return op[0] == 'a' ? carry_handler<T, CarryKind::Add>(carry_in, carry_out)
                          : carry_handler<T, CarryKind::Sub>(carry_in, carry_out);
    }
  };
  out.fn = with_int_type(t, pick, Handler{nullptr});
  if (out.fn == nullptr) d.fail("unsupported type");
  return true;
}

// mul and mad: .lo, .hi or .wide.
bool decode_mul_mad(const Instruction& in, Mods& mods, OperandDecoder& d, DInst& out) {
  const std::string& op = in.opcode;
  const int half = mods.take_one({"lo", "hi", "wide"});
  if (half < 0) d.fail("needs .lo, .hi or .wide");
  const Type t = integer_type(single_type(mods, d, in), d);
  if (type_bytes(t) < 2 || (half == 2 && type_bytes(t) == 8)) d.fail("unsupported type");
  const bool is_mad = op == "mad";
  decode_sources(in, d, out, is_mad ? 3 : 2, t);
  auto pick = [&](auto v) -> Handler {
    using T = decltype(v);
    if constexpr (sizeof(T) == 1) {
      return nullptr;
    } else if (is_mad) {
      if (half == 0) return &mad<T, 0>;
      if (half == 1) return &mad<T, 1>;
      if constexpr (sizeof(T) < 8) return &mad<T, 2>;
      return nullptr;
    } else {
      if (half == 0) return &binary<T, MulLo>;
      if (half == 1) return &binary<T, MulHi>;
      if constexpr (sizeof(T) < 8) return &mul_wide<T>;
      return nullptr;
    }
  };
  out.fn = with_int_type(t, pick, Handler{nullptr});
  return true;
}

// dp4a and dp2a (.lo/.hi): byte or half-word dot products with a 32-bit accumulator.
bool decode_dot_product(const Instruction& in, Mods& mods, OperandDecoder& d, DInst& out) {
  const std::string& op = in.opcode;
  const int half = op == "dp2a" ? mods.take_one({"lo", "hi"}) : 0;
  if (half < 0) d.fail("dp2a needs .lo or .hi");
  const std::vector<Type> types = mods.take_types();
  const auto is_word = [](Type t) { return t == Type::U32 || t == Type::S32; };
  if (types.size() != 2 || !is_word(types[0]) || !is_word(types[1])) d.fail(op + " needs .u32 or .s32 for a and for b");
  const bool a_signed = types[0] == Type::S32, b_signed = types[1] == Type::S32;
  decode_dest(in, d, out, 3);
  out.ops[1] = d.value(in.operands[1], types[0]);
  out.ops[2] = d.value(in.operands[2], types[1]);
  out.ops[3] = d.value(in.operands[3], a_signed || b_signed ? Type::S32 : Type::U32);
  if (op == "dp4a") {
    out.fn = a_signed ? (b_signed ? &ternary<uint32_t, Dp4a<true, true>> : &ternary<uint32_t, Dp4a<true, false>>)
                      : (b_signed ? &ternary<uint32_t, Dp4a<false, true>> : &ternary<uint32_t, Dp4a<false, false>>);
  } else if (half == 0) {
    out.fn = a_signed ? (b_signed ? &ternary<uint32_t, Dp2a<false, true, true>> : &ternary<uint32_t, Dp2a<false, true, false>>)
                      : (b_signed ? &ternary<uint32_t, Dp2a<false, false, true>> : &ternary<uint32_t, Dp2a<false, false, false>>);
  } else {
    out.fn = a_signed ? (b_signed ? &ternary<uint32_t, Dp2a<true, true, true>> : &ternary<uint32_t, Dp2a<true, true, false>>)
                      : (b_signed ? &ternary<uint32_t, Dp2a<true, false, true>> : &ternary<uint32_t, Dp2a<true, false, false>>);
  }
  return true;
}

}  // namespace

bool decode_integer(const Instruction& in, Mods& mods, OperandDecoder& d, DInst& out) {
  const std::string& op = in.opcode;
  if (op == "mov") return decode_mov(in, mods, d, out);
  const bool logic = op == "and" || op == "or" || op == "xor" || op == "not";
  if (logic && in.has_modifier("pred")) {
    mods.take("pred");
    const bool is_not = op == "not";
    expect_operands(in, is_not ? 2 : 3, d);
    out.ops[0] = d.pred(in.operands[0]);
    out.ops[1] = d.pred(in.operands[1]);
    if (!is_not) out.ops[2] = d.pred(in.operands[2]);
    out.fn = op == "and" ? &pred_logic<0> : op == "or" ? &pred_logic<1> : op == "xor" ? &pred_logic<2> : &pred_logic<3>;
    return true;
  }
  struct Simple {
    const char* name;
    int arity;
    Handler (*pick)(Type);
  };
  static const Simple kSimple[] = {
      {"and", 2, &binary_for<And>},   {"or", 2, &binary_for<Or>},       {"xor", 2, &binary_for<Xor>},
      {"not", 1, &unary_for<Not>},    {"cnot", 1, &unary_for<CNot>},    {"min", 2, &binary_for<Min>},
      {"max", 2, &binary_for<Max>},   {"div", 2, &binary_for<Div>},     {"rem", 2, &binary_for<Rem>},
      {"popc", 1, &unary_for<Popc>},  {"clz", 1, &unary_for<Clz>},      {"brev", 1, &unary_for<Brev>},
  };
  const bool carry_in = op == "addc" || op == "subc" || op == "madc";
  const bool integer_op = carry_in || op == "add" || op == "sub" || op == "mul" || op == "mad" || op == "neg" || op == "abs" ||
                          op == "shl" || op == "shr" || op == "bfe" || op == "bfi" || op == "prmt" || op == "lop3" ||
                          op == "shf" || op == "dp4a" || op == "dp2a";
  const Simple* simple = nullptr;
  for (const Simple& s : kSimple) {
    if (op == s.name) simple = &s;
  }
  if (simple == nullptr && !integer_op) return false;
  // Float instructions share these opcodes: leave them to decode_float.
  for (const std::string& m : in.modifiers) {
    if (auto t = parse_type(m); t && is_float(*t)) return false;
  }
  auto operands = [&](int sources) {
    expect_operands(in, static_cast<size_t>(sources + 1), d);
    out.ops[0] = d.dest(in.operands[0]);
  };
  if (simple != nullptr) {
    const Type t = integer_type(single_type(mods, d, in), d);
    operands(simple->arity);
    for (int i = 0; i < simple->arity; ++i) out.ops[1 + i] = d.value(in.operands[1 + i], t);
    out.fn = simple->pick(t);
    if (out.fn == nullptr) d.fail("unsupported type");
    return true;
  }
  if (carry_in || ((op == "add" || op == "sub" || op == "mad") &&
                   std::find(in.modifiers.begin(), in.modifiers.end(), "cc") != in.modifiers.end())) {
    return decode_carry(in, mods, d, out, carry_in);
  }
  if (op == "add" || op == "sub") {
    const bool sat = mods.take("sat");
    const Type t = integer_type(single_type(mods, d, in), d);
    if (sat && t != Type::S32) d.fail(".sat needs .s32");
    operands(2);
    out.ops[1] = d.value(in.operands[1], t);
    out.ops[2] = d.value(in.operands[2], t);
    out.fn = sat ? (op == "add" ? &binary<int32_t, AddSat> : &binary<int32_t, SubSat>)
                 : (op == "add" ? binary_for<Add>(t) : binary_for<Sub>(t));
    return true;
  }
  if (op == "mul" || op == "mad") return decode_mul_mad(in, mods, d, out);
  if (op == "neg" || op == "abs") {
    const Type t = integer_type(single_type(mods, d, in), d);
    operands(1);
    out.ops[1] = d.value(in.operands[1], t);
    out.fn = op == "neg" ? unary_for<Neg>(t) : unary_for<Abs>(t);
    return true;
  }
  if (op == "shl" || op == "shr") {
    const Type t = integer_type(single_type(mods, d, in), d);
    operands(2);
    out.ops[1] = d.value(in.operands[1], t);
    out.ops[2] = d.value(in.operands[2], Type::U32);
    const bool left = op == "shl";
    out.fn = with_int_type(t, [&](auto v) -> Handler {
      using T = decltype(v);
      return left ? &shift<std::make_unsigned_t<T>, true> : &shift<T, false>;
    }, Handler{nullptr});
    return true;
  }
  if (op == "bfe" || op == "bfi") {
    const Type t = integer_type(single_type(mods, d, in), d);
    const bool insert = op == "bfi";
    operands(insert ? 4 : 3);
    out.ops[1] = d.value(in.operands[1], t);
    out.ops[2] = d.value(in.operands[2], insert ? t : Type::U32);
    out.ops[3] = d.value(in.operands[3], Type::U32);
    if (insert) out.ops[4] = d.value(in.operands[4], Type::U32);
    out.fn = with_int_type(t, [&](auto v) -> Handler {
      using T = decltype(v);
      if constexpr (sizeof(T) < 4) {
        return nullptr;
      } else {
        return insert ? &bfi<std::make_unsigned_t<T>> : &bfe<T>;
      }
    }, Handler{nullptr});
    if (out.fn == nullptr) d.fail("unsupported type");
    return true;
  }
  if (op == "dp4a" || op == "dp2a") return decode_dot_product(in, mods, d, out);
  if (op == "prmt") {
    if (single_type(mods, d, in) != Type::B32) d.fail("needs .b32");
    if (!mods.take_types().empty() || in.modifiers.size() != 1) d.fail("only the default prmt mode is supported");
    operands(3);
    for (int i = 1; i <= 3; ++i) out.ops[i] = d.value(in.operands[i], Type::B32);
    out.fn = &ternary<uint32_t, Prmt>;
    return true;
  }
  if (op == "lop3") {
    if (single_type(mods, d, in) != Type::B32) d.fail("needs .b32");
    operands(4);
    for (int i = 1; i <= 3; ++i) out.ops[i] = d.value(in.operands[i], Type::B32);
    out.ops[4] = d.value(in.operands[4], Type::B32);
    if (out.ops[4].kind != OperandKind::Imm) d.fail("the lookup table must be a constant");
    out.fn = &lop3;
    return true;
  }
  // shf.l/.r with .wrap/.clamp
  const int dir = mods.take_one({"l", "r"});
  const int wrap = mods.take_one({"wrap", "clamp"});
  if (dir < 0 || wrap < 0 || single_type(mods, d, in) != Type::B32) d.fail("needs .l/.r, .wrap/.clamp and .b32");
  operands(3);
  for (int i = 1; i <= 3; ++i) out.ops[i] = d.value(in.operands[i], Type::B32);
  out.fn = dir == 0 ? (wrap == 0 ? &funnel_shift<true, true> : &funnel_shift<true, false>)
                    : (wrap == 0 ? &funnel_shift<false, true> : &funnel_shift<false, false>);
  return true;
}

}  // namespace stitch::ptx::sim
