// Comparisons and selection (docs/ptx-interpreter.md): setp with ordered and
// unordered float comparisons and an optional predicate combination, set,
// and selp. Results are lane masks.
#include <fmt/format.h>

#include <cmath>

#include "ptx/sim/decode.h"
#include "ptx/sim/exec.h"
#include "ptx/sim/float.h"

namespace stitch::ptx::sim {

namespace {

enum Cmp : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe, kEqu, kNeu, kLtu, kLeu, kGtu, kGeu, kNum, kNan };

template <class T>
bool compare(T a, T b, uint8_t cmp) {
  if constexpr (std::is_floating_point_v<T>) {
    const bool unordered = std::isnan(a) || std::isnan(b);
    switch (cmp) {
      case kEq: return !unordered && a == b;
      case kNe: return !unordered && a != b;
      case kLt: return !unordered && a < b;
      case kLe: return !unordered && a <= b;
      case kGt: return !unordered && a > b;
      case kGe: return !unordered && a >= b;
      case kEqu: return unordered || a == b;
      case kNeu: return unordered || a != b;
      case kLtu: return unordered || a < b;
      case kLeu: return unordered || a <= b;
      case kGtu: return unordered || a > b;
      case kGeu: return unordered || a >= b;
      case kNum: return !unordered;
      default: return unordered;
    }
  } else {
    switch (cmp) {
      case kEq: return a == b;
      case kNe: return a != b;
      case kLt: return a < b;
      case kLe: return a <= b;
      case kGt: return a > b;
      default: return a >= b;
    }
  }
}

template <class T>
T read(uint64_t v, bool ftz) {
  T x = as<T>(v);
  if constexpr (std::is_same_v<T, float>) {
    if (ftz) x = flush(x);
  }
  return x;
}

// flags bit 0: ftz; mode: comparison; size: 0 none, 1 and, 2 or, 3 xor with ops[3].
// The comparison is a template argument, so the lane loop has no switch.
template <class T, uint8_t kCmp>
void setp(Exec& x, const DInst& in, uint32_t mask) {
  const auto a = x.src(in.ops[2], 2);
  const auto b = x.src(in.ops[3], 3);
  const bool ftz = (in.flags & kFlagFtz) != 0;
  uint32_t r = 0;
  for_lanes(mask, [&](unsigned l) {
    if (compare(read<T>(a[l], ftz), read<T>(b[l], ftz), kCmp)) r |= 1u << l;
  });
  uint32_t p = r, q = ~r;
  if (in.size != 0) {
    const uint32_t c = x.pred(in.ops[4]);
    if (in.size == 1) {
      p &= c;
      q &= c;
    } else if (in.size == 2) {
      p |= c;
      q |= c;
    } else {
      p ^= c;
      q ^= c;
    }
  }
  x.set_pred(in.ops[0], p, mask);
  x.set_pred(in.ops[1], q, mask);
}

// set: 1.0f / all ones when true, 0 when false (combination as setp).
template <class T, class D>
void set(Exec& x, const DInst& in, uint32_t mask) {
  const auto a = x.src(in.ops[1], 1);
  const auto b = x.src(in.ops[2], 2);
  uint64_t* d = x.dst(in.ops[0], 0);
  const bool ftz = (in.flags & kFlagFtz) != 0;
  const uint32_t c = in.size != 0 ? x.pred(in.ops[3]) : 0;
  for_lanes(mask, [&](unsigned l) {
    bool v = compare(read<T>(a[l], ftz), read<T>(b[l], ftz), in.mode);
    const bool cv = (c >> l) & 1;
    if (in.size == 1) v = v && cv;
    if (in.size == 2) v = v || cv;
    if (in.size == 3) v = v != cv;
    if constexpr (std::is_same_v<D, float>) {
      d[l] = bits(v ? 1.0f : 0.0f);
    } else {
      d[l] = bits(v ? static_cast<D>(-1) : D{0});
    }
  });
}

template <class T>
void selp(Exec& x, const DInst& in, uint32_t mask) {
  const auto a = x.src(in.ops[1], 1);
  const auto b = x.src(in.ops[2], 2);
  const uint32_t c = x.pred(in.ops[3]);
  uint64_t* d = x.dst(in.ops[0], 0);
  for_lanes(mask, [&](unsigned l) { d[l] = bits(as<T>(((c >> l) & 1) ? a[l] : b[l])); });
}

template <class T>
Handler setp_cmp(uint8_t cmp) {
  switch (cmp) {
    case kEq: return &setp<T, kEq>;
    case kNe: return &setp<T, kNe>;
    case kLt: return &setp<T, kLt>;
    case kLe: return &setp<T, kLe>;
    case kGt: return &setp<T, kGt>;
    case kGe: return &setp<T, kGe>;
    default: break;
  }
  if constexpr (std::is_floating_point_v<T>) {
    switch (cmp) {
      case kEqu: return &setp<T, kEqu>;
      case kNeu: return &setp<T, kNeu>;
      case kLtu: return &setp<T, kLtu>;
      case kLeu: return &setp<T, kLeu>;
      case kGtu: return &setp<T, kGtu>;
      case kGeu: return &setp<T, kGeu>;
      case kNum: return &setp<T, kNum>;
      default: return &setp<T, kNan>;
    }
  }
  return nullptr;
}

Handler setp_for(Type t, uint8_t cmp) {
  switch (t) {
    case Type::F32: return setp_cmp<float>(cmp);
    case Type::F64: return setp_cmp<double>(cmp);
    default: return with_int_type(t, [cmp](auto v) -> Handler { return setp_cmp<decltype(v)>(cmp); }, Handler{nullptr});
  }
}

int take_comparison(Mods& mods, bool& unsigned_only) {
  const int c = mods.take_one({"eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan",
                               "lo", "ls", "hi", "hs"});
  unsigned_only = c >= 14;
  return c >= 14 ? c - 14 + kLt : c;
}

}  // namespace

bool decode_compare(const Instruction& in, Mods& mods, OperandDecoder& d, DInst& out) {
  const std::string& op = in.opcode;
  if (op == "selp") {
    const Type t = single_type(mods, d, in);
    expect_operands(in, 4, d);
    out.ops[0] = d.dest(in.operands[0]);
    out.ops[1] = d.value(in.operands[1], t);
    out.ops[2] = d.value(in.operands[2], t);
    out.ops[3] = d.pred(in.operands[3]);
    const int bytes = type_bytes(t);
    out.fn = bytes == 8 ? &selp<uint64_t> : bytes == 4 ? &selp<uint32_t> : bytes == 2 ? &selp<uint16_t> : nullptr;
    if (out.fn == nullptr) d.fail("unsupported type");
    return true;
  }
  if (op != "setp" && op != "set") return false;
  bool unsigned_only = false;
  const int cmp = take_comparison(mods, unsigned_only);
  if (cmp < 0) d.fail("needs a comparison (.eq, .lt, .gtu, ...)");
  const int combine = mods.take_one({"and", "or", "xor"});
  out.flags = mods.take("ftz") ? kFlagFtz : 0;
  std::vector<Type> types = mods.take_types();
  const size_t want_types = op == "setp" ? 1 : 2;
  if (types.size() != want_types) d.fail(fmt::format("expects {} type modifier(s)", want_types));
  Type t = types.back();
  if (unsigned_only && (is_float(t) || is_signed(t))) d.fail("lo/ls/hi/hs compare unsigned integers");
  if (!is_float(t) && cmp > kGe) d.fail("unordered comparisons apply to floats only");
  if (is_float(t) && t != Type::F32 && t != Type::F64) d.fail(fmt::format("{} comparisons are not supported", type_name(t)));
  out.mode = static_cast<uint8_t>(cmp);
  out.size = static_cast<uint8_t>(combine + 1);
  const size_t n = combine >= 0 ? 4 : 3;
  expect_operands(in, n, d);
  if (op == "setp") {
    const Operand& dst = in.operands[0];
    out.ops[0] = d.pred(dst);
    if (!dst.second.empty()) {
      Operand q = Operand::reg(dst.second);
      q.loc = dst.loc;
      out.ops[1] = d.pred(q);
    }
    out.ops[2] = d.value(in.operands[1], t);
    out.ops[3] = d.value(in.operands[2], t);
    if (combine >= 0) out.ops[4] = d.pred(in.operands[3]);
    out.fn = setp_for(t, out.mode);
    return true;
  }
  const Type dt = types[0];
  out.ops[0] = d.dest(in.operands[0]);
  out.ops[1] = d.value(in.operands[1], t);
  out.ops[2] = d.value(in.operands[2], t);
  if (combine >= 0) out.ops[3] = d.pred(in.operands[3]);
  if (dt == Type::F32) {
    out.fn = t == Type::F32 ? &set<float, float> : t == Type::F64 ? &set<double, float> : nullptr;
    if (out.fn == nullptr) {
      out.fn = with_int_type(t, [](auto v) -> Handler { return &set<decltype(v), float>; }, Handler{nullptr});
    }
  } else if (dt == Type::U32 || dt == Type::S32 || dt == Type::B32) {
    out.fn = t == Type::F32 ? &set<float, uint32_t> : t == Type::F64 ? &set<double, uint32_t> : nullptr;
    if (out.fn == nullptr) {
      out.fn = with_int_type(t, [](auto v) -> Handler { return &set<decltype(v), uint32_t>; }, Handler{nullptr});
    }
  }
  if (out.fn == nullptr) d.fail("unsupported types");
  return true;
}

}  // namespace stitch::ptx::sim
