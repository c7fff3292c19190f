// cvt (docs/ptx-interpreter.md, Conversions): integer widening, narrowing and
// saturation; float-to-float with every rounding modifier (f16, bf16, f32,
// f64); float-to-integer with .rni/.rzi/.rmi/.rpi, clamped to the
// destination's range, NaN to 0; integer-to-float rounded once.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "ptx/sim/decode.h"
#include "ptx/sim/exec.h"
#include "ptx/sim/float.h"
#include "stitch/tensor.h"

namespace stitch::ptx::sim {

namespace {

struct IntRange {
  __int128 lo;
  __int128 hi;
};

IntRange range_of(Type t) {
  const int bits = type_bytes(t) * 8;
  if (is_signed(t)) return {-(static_cast<__int128>(1) << (bits - 1)), (static_cast<__int128>(1) << (bits - 1)) - 1};
  return {0, (static_cast<__int128>(1) << bits) - 1};
}

// A source value: an exact integer or a float held exactly in a double.
struct Source {
  bool is_float;
  __int128 i;
  double f;
};

Source read_source(uint64_t v, Type t, bool ftz) {
  switch (t) {
    case Type::F16: return {true, 0, from_f16_bits(static_cast<uint16_t>(v))};
    case Type::BF16: return {true, 0, from_bf16_bits(static_cast<uint16_t>(v))};
    case Type::F32: {
      float f = as<float>(v);
      if (ftz) f = flush(f);
      return {true, 0, f};
    }
    case Type::F64: return {true, 0, as<double>(v)};
    default: break;
  }
  const int bits = type_bytes(t) * 8;
  const uint64_t mask = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  uint64_t u = v & mask;
  if (is_signed(t)) {
    const int shift = 64 - bits;
    return {false, static_cast<__int128>(static_cast<int64_t>(u << shift) >> shift), 0};
  }
  return {false, static_cast<__int128>(u), 0};
}

FloatFormat format_of(Type t) {
  switch (t) {
    case Type::F16: return kF16;
    case Type::BF16: return kBF16;
    case Type::F32: return kF32;
    default: return kF64;
  }
}

uint64_t float_bits(double v, Type t, bool ftz) {
  switch (t) {
    case Type::F16: return f64_to_f16_bits(v);
    case Type::BF16: return f64_to_bf16_bits(v);
    case Type::F32: {
      float f = static_cast<float>(v);  // exact: v is already rounded to f32
      if (ftz) f = flush(f);
      return bits(f);
    }
    default: return bits(v);
  }
}

// in.size: destination Type; in.width: source Type; in.mode: rounding; flags: ftz, sat.
void convert(Exec& x, const DInst& in, uint32_t mask) {
  const auto a = x.src(in.ops[1], 1);
  uint64_t* d = x.dst(in.ops[0], 0);
  const Type dt = static_cast<Type>(in.size), st = static_cast<Type>(in.width);
  const bool ftz = (in.flags & kFlagFtz) != 0, sat = (in.flags & kFlagSat) != 0;
  const Rounding m = static_cast<Rounding>(in.mode);
  for_lanes(mask, [&](unsigned l) {
    const Source s = read_source(a[l], st, ftz);
    if (is_float(dt)) {
      double v;
      if (s.is_float) {
        // Float to float: rounded once; an integral rounding (cvt.rni.f32.f32) rounds to an integer in place.
        v = (in.flags & 4) ? round_integral(s.f, m) : round_to(s.f, 0, format_of(dt), m);
      } else if (s.i < 0) {
        v = signed_to_float(static_cast<int64_t>(s.i), format_of(dt), m);
      } else {
        v = unsigned_to_float(static_cast<uint64_t>(s.i), format_of(dt), m);
      }
      if (sat) v = saturate(v);
      d[l] = float_bits(v, dt, ftz);
      return;
    }
    const IntRange r = range_of(dt);
    __int128 v;
    if (s.is_float) {
      v = is_signed(dt) ? static_cast<__int128>(float_to_signed(s.f, m, static_cast<int64_t>(r.lo), static_cast<int64_t>(r.hi)))
                        : static_cast<__int128>(float_to_unsigned(s.f, m, static_cast<uint64_t>(r.hi)));
    } else {
      v = s.i;
      if (sat) v = std::min(std::max(v, r.lo), r.hi);
    }
    const int dbits = type_bytes(dt) * 8;
    const uint64_t dmask = dbits == 64 ? ~uint64_t{0} : (uint64_t{1} << dbits) - 1;
    uint64_t out = static_cast<uint64_t>(v) & dmask;
    // Signed narrow results are kept sign-extended, as a wider register reading them expects.
    if (is_signed(dt) && dbits < 64) out = static_cast<uint64_t>(static_cast<int64_t>(out << (64 - dbits)) >> (64 - dbits));
    d[l] = out;
  });
}

// The common index conversions, without the generic path's switches.
template <class D, class S>
void convert_int(Exec& x, const DInst& in, uint32_t mask) {
  const auto a = x.src(in.ops[1], 1);
  uint64_t* d = x.dst(in.ops[0], 0);
  for_lanes(mask, [&](unsigned l) { d[l] = bits(static_cast<D>(as<S>(a[l]))); });
}

}  // namespace

bool decode_convert(const Instruction& in, Mods& mods, OperandDecoder& d, DInst& out) {
  if (in.opcode != "cvt") return false;
  const std::optional<Rounding> frnd = mods.take_rounding(false);
  const std::optional<Rounding> irnd = mods.take_rounding(true);
  const bool ftz = mods.take("ftz");
  const bool sat = mods.take("sat");
  const std::vector<Type> types = mods.take_types();
  if (types.size() != 2) d.fail("expects a destination and a source type");
  const Type dt = types[0], st = types[1];
  for (Type t : types) {
    if (t == Type::Pred || t == Type::B128 || t == Type::F16x2 || t == Type::BF16x2) {
      d.fail(fmt::format("cvt with .{} is not supported by the PTX interpreter", type_name(t)));
    }
  }
  expect_operands(in, 2, d);
  out.ops[0] = d.dest(in.operands[0]);
  out.ops[1] = d.value(in.operands[1], st);
  if (frnd && irnd) d.fail("has two rounding modifiers");
  const bool dfloat = is_float(dt), sfloat = is_float(st);
  Rounding mode = Rounding::Nearest;
  if (dfloat && sfloat) {
    const bool narrowing = format_of(dt).precision < format_of(st).precision;
    if (irnd) {
      if (dt != st) d.fail("an integral rounding (.rni, ...) needs equal float types");
      mode = *irnd;
      out.flags |= 4;
    } else if (frnd) {
      mode = *frnd;
    } else if (narrowing) {
      d.fail("float narrowing needs a rounding modifier (.rn, .rz, .rm or .rp)");
    }
  } else if (sfloat) {
    if (!irnd) d.fail("float-to-integer needs an integer rounding modifier (.rni, .rzi, .rmi or .rpi)");
    mode = *irnd;
  } else if (dfloat) {
    if (!frnd) d.fail("integer-to-float needs a rounding modifier (.rn, .rz, .rm or .rp)");
    mode = *frnd;
  } else if (frnd || irnd) {
    d.fail("integer-to-integer conversions take no rounding modifier");
  }
  if (ftz && dt != Type::F32 && st != Type::F32) d.fail(".ftz applies to .f32 only");
  out.mode = static_cast<uint8_t>(mode);
  out.flags |= static_cast<uint8_t>((ftz ? kFlagFtz : 0) | (sat ? kFlagSat : 0));
  out.size = static_cast<uint8_t>(dt);
  out.width = static_cast<uint8_t>(st);
  out.fn = &convert;
  if (!dfloat && !sfloat && !sat) {
    if (dt == Type::U64 && st == Type::U32) out.fn = &convert_int<uint64_t, uint32_t>;
    if (dt == Type::S64 && st == Type::S32) out.fn = &convert_int<int64_t, int32_t>;
    if ((dt == Type::U32 || dt == Type::S32) && (st == Type::U64 || st == Type::S64)) out.fn = &convert_int<uint32_t, uint64_t>;
  }
  return true;
}

}  // namespace stitch::ptx::sim
