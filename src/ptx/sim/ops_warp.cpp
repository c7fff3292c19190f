// Warp-level instructions (docs/ptx-interpreter.md, Warp operations):
// shfl.sync in all four modes with clamp and segment masks, vote, activemask,
// redux.sync, bar.warp.sync, and the fences, which order nothing in an
// interpreter that runs one lane at a time.
#include <fmt/format.h>

#include "ptx/sim/decode.h"
#include "ptx/sim/exec.h"

namespace stitch::ptx::sim {

namespace {

// The .sync instructions wait for every lane named in membermask; a lane
// that is live but on another path of a divergent branch would deadlock here
// (the interpreter runs one path at a time), and a lane running it without
// being named is undefined behaviour: both are errors.
void check_members(Exec& x, uint32_t mask, uint32_t members) {
  if ((mask & ~members) != 0) {
    x.fail(static_cast<unsigned>(__builtin_ctz(mask & ~members)),
           fmt::format("the executing lane is not in membermask 0x{:08x}", members));
  }
  const uint32_t missing = members & x.warp.live & ~mask;
  if (missing != 0) {
    x.fail(static_cast<unsigned>(__builtin_ctz(mask)),
           fmt::format("membermask 0x{:08x} names lanes 0x{:08x} that are on another path of a divergent branch", members,
                       missing));
  }
}

uint32_t uniform_member_mask(Exec& x, const DOperand& o, uint32_t mask) {
  const auto m = x.src(o, 5);
  const uint32_t first = static_cast<uint32_t>(m[static_cast<unsigned>(__builtin_ctz(mask))]);
  for_lanes(mask, [&](unsigned l) {
    if (static_cast<uint32_t>(m[l]) != first) x.fail(l, "lanes of one warp disagree on membermask");
  });
  return first;
}

// ops: d, p, a, b, c, membermask; mode: 0 up, 1 down, 2 bfly, 3 idx.
void shfl(Exec& x, const DInst& in, uint32_t mask) {
  check_members(x, mask, uniform_member_mask(x, in.ops[5], mask));
  const auto a = x.src(in.ops[2], 2);
  const auto b = x.src(in.ops[3], 3);
  const auto c = x.src(in.ops[4], 4);
  std::array<uint64_t, kWarpSize> value{};
  uint32_t in_range = 0;
  for_lanes(mask, [&](unsigned lane) {
    const int bval = static_cast<int>(b[lane] & 31), cval = static_cast<int>(c[lane] & 31);
    const int segmask = static_cast<int>((c[lane] >> 8) & 31);
    const int max_lane = (static_cast<int>(lane) & segmask) | (cval & ~segmask);
    const int min_lane = static_cast<int>(lane) & segmask;
    int j = 0;
    bool ok = false;
    switch (in.mode) {
      case 0: j = static_cast<int>(lane) - bval; ok = j >= max_lane; break;
      case 1: j = static_cast<int>(lane) + bval; ok = j <= max_lane; break;
      case 2: j = static_cast<int>(lane) ^ bval; ok = j <= max_lane; break;
      default: j = min_lane | (bval & ~segmask); ok = j <= max_lane; break;
    }
    if (!ok) j = static_cast<int>(lane);
    value[lane] = static_cast<uint32_t>(a[static_cast<unsigned>(j)]);
    if (ok) in_range |= 1u << lane;
  });
  uint64_t* d = x.dst(in.ops[0], 0);
  for_lanes(mask, [&](unsigned l) { d[l] = value[l]; });
  x.set_pred(in.ops[1], in_range, mask);
}

// ops: d, a (predicate), membermask; mode: 0 all, 1 any, 2 uni, 3 ballot.
void vote(Exec& x, const DInst& in, uint32_t mask) {
  if (in.ops[2].kind != OperandKind::None) check_members(x, mask, uniform_member_mask(x, in.ops[2], mask));
  const uint32_t p = x.pred(in.ops[1]) & mask;
  if (in.mode == 3) {
    uint64_t* d = x.dst(in.ops[0], 0);
    for_lanes(mask, [&](unsigned l) { d[l] = p; });
    return;
  }
  const bool r = in.mode == 0 ? p == mask : in.mode == 1 ? p != 0 : (p == 0 || p == mask);
  x.set_pred(in.ops[0], r ? kFullMask : 0, mask);
}

void activemask(Exec& x, const DInst& in, uint32_t mask) {
  uint64_t* d = x.dst(in.ops[0], 0);
  for_lanes(mask, [&](unsigned l) { d[l] = mask; });
}

void warp_sync(Exec& x, const DInst& in, uint32_t mask) { check_members(x, mask, uniform_member_mask(x, in.ops[5], mask)); }

// ops: d, a, -, -, -, membermask; mode: 0 add, 1 min, 2 max, 3 and, 4 or, 5 xor.
template <class T>
void redux(Exec& x, const DInst& in, uint32_t mask) {
  check_members(x, mask, uniform_member_mask(x, in.ops[5], mask));
  const auto a = x.src(in.ops[1], 1);
  T acc = as<T>(a[static_cast<unsigned>(__builtin_ctz(mask))]);
  bool first = true;
  for_lanes(mask, [&](unsigned l) {
    const T v = as<T>(a[l]);
    if (first) {
      first = false;
      return;
    }
    switch (in.mode) {
      case 0: acc = static_cast<T>(acc + v); break;
      case 1: acc = v < acc ? v : acc; break;
      case 2: acc = v > acc ? v : acc; break;
      case 3: acc &= v; break;
      case 4: acc |= v; break;
      default: acc ^= v; break;
    }
  });
  uint64_t* d = x.dst(in.ops[0], 0);
  for_lanes(mask, [&](unsigned l) { d[l] = bits(acc); });
}

void nothing(Exec&, const DInst&, uint32_t) {}

}  // namespace

bool decode_warp(const Instruction& in, Mods& mods, OperandDecoder& d, DInst& out) {
  const std::string& op = in.opcode;
  if (op == "shfl") {
    if (!mods.take("sync")) d.fail("only shfl.sync is supported (shfl without .sync was removed for sm_70+)");
    const int mode = mods.take_one({"up", "down", "bfly", "idx"});
    if (mode < 0) d.fail("needs .up, .down, .bfly or .idx");
    if (single_type(mods, d, in) != Type::B32) d.fail("needs .b32");
    expect_operands(in, 5, d);
    const Operand& dst = in.operands[0];
    out.ops[0] = d.dest(dst);
    if (!dst.second.empty()) {
      Operand p = Operand::reg(dst.second);
      p.loc = dst.loc;
      out.ops[1] = d.pred(p);
    }
    for (int i = 1; i <= 4; ++i) out.ops[i == 4 ? 5 : i + 1] = d.value(in.operands[i], Type::B32);
    out.mode = static_cast<uint8_t>(mode);
    out.fn = &shfl;
    return true;
  }
  if (op == "vote") {
    const bool sync = mods.take("sync");
    const int mode = mods.take_one({"all", "any", "uni", "ballot"});
    if (mode < 0) d.fail("needs .all, .any, .uni or .ballot");
    const Type t = single_type(mods, d, in);
    if ((mode == 3) != (t == Type::B32) || (mode != 3 && t != Type::Pred)) d.fail("vote.ballot needs .b32, the others .pred");
    expect_operands(in, sync ? 3 : 2, d);
    out.ops[0] = mode == 3 ? d.dest(in.operands[0]) : d.pred(in.operands[0]);
    out.ops[1] = d.pred(in.operands[1]);
    if (sync) out.ops[2] = d.value(in.operands[2], Type::B32);
    out.mode = static_cast<uint8_t>(mode);
    out.fn = &vote;
    return true;
  }
  if (op == "activemask") {
    if (single_type(mods, d, in) != Type::B32) d.fail("needs .b32");
    expect_operands(in, 1, d);
    out.ops[0] = d.dest(in.operands[0]);
    out.fn = &activemask;
    return true;
  }
  if (op == "bar" || op == "barrier") {
    if (!mods.take("warp") || !mods.take("sync")) return false;
    expect_operands(in, 1, d);
    out.ops[5] = d.value(in.operands[0], Type::B32);
    out.fn = &warp_sync;
    return true;
  }
  if (op == "redux") {
    if (!mods.take("sync")) d.fail("needs .sync");
    const int mode = mods.take_one({"add", "min", "max", "and", "or", "xor"});
    if (mode < 0) d.fail("needs an operation");
    const Type t = single_type(mods, d, in);
    expect_operands(in, 3, d);
    out.ops[0] = d.dest(in.operands[0]);
    out.ops[1] = d.value(in.operands[1], t);
    out.ops[5] = d.value(in.operands[2], Type::B32);
    out.mode = static_cast<uint8_t>(mode);
    out.fn = t == Type::S32 ? &redux<int32_t> : (t == Type::U32 || t == Type::B32) ? &redux<uint32_t> : nullptr;
    if (out.fn == nullptr) d.fail("needs .u32, .s32 or .b32");
    return true;
  }
  if (op == "membar" || op == "fence" || op == "nanosleep") {
    for (const std::string& m : in.modifiers) mods.take(m);
    if (op == "nanosleep" && in.operands.size() == 1) (void)d.value(in.operands[0], Type::U32);
    out.fn = &nothing;
    return true;
  }
  return false;
}

}  // namespace stitch::ptx::sim
