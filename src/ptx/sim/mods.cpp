// Modifier bookkeeping and small helpers the instruction families share.
#include <fmt/format.h>

#include "ptx/sim/decode.h"

namespace stitch::ptx::sim {

Mods::Mods(const Instruction& in) : in_(in), used_(in.modifiers.size(), false) {}

bool Mods::take(std::string_view m) {
  for (size_t i = 0; i < used_.size(); ++i) {
    if (!used_[i] && in_.modifiers[i] == m) {
      used_[i] = true;
      return true;
    }
  }
  return false;
}

int Mods::take_one(std::initializer_list<std::string_view> options) {
  int index = 0;
  for (std::string_view o : options) {
    if (take(o)) return index;
    ++index;
  }
  return -1;
}

std::vector<Type> Mods::take_types() {
  std::vector<Type> types;
  for (size_t i = 0; i < used_.size(); ++i) {
    if (used_[i]) continue;
    if (auto t = parse_type(in_.modifiers[i])) {
      used_[i] = true;
      types.push_back(*t);
    }
  }
  return types;
}

std::optional<Rounding> Mods::take_rounding(bool integral) {
  const int r = integral ? take_one({"rni", "rzi", "rmi", "rpi"}) : take_one({"rn", "rz", "rm", "rp"});
  if (r < 0) return std::nullopt;
  return static_cast<Rounding>(r);
}

void Mods::drop_memory_hints() {
  static constexpr std::string_view kHints[] = {
      "weak", "relaxed", "volatile", "acquire", "release", "acq_rel", "sc", "mmio", "cta", "gpu", "sys", "cluster",
      "ca",   "cg",      "cs",       "lu",      "cv",      "wb",      "wt", "nc", "unified"};
  for (size_t i = 0; i < used_.size(); ++i) {
    if (used_[i]) continue;
    const std::string& m = in_.modifiers[i];
    if (m.rfind("L1::", 0) == 0 || m.rfind("L2::", 0) == 0) {
      used_[i] = true;
      continue;
    }
    for (std::string_view h : kHints) {
      if (m == h) used_[i] = true;
    }
  }
}

void Mods::finish(const OperandDecoder& d) const {
  for (size_t i = 0; i < used_.size(); ++i) {
    if (!used_[i]) d.fail(fmt::format("modifier .{} is not supported by the PTX interpreter", in_.modifiers[i]));
  }
}

bool is_float(Type t) {
  return t == Type::F16 || t == Type::BF16 || t == Type::F32 || t == Type::F64 || t == Type::F16x2 ||
         t == Type::BF16x2;
}

bool is_signed(Type t) { return t == Type::S8 || t == Type::S16 || t == Type::S32 || t == Type::S64; }

Type single_type(Mods& mods, const OperandDecoder& d, const Instruction& in) {
  std::vector<Type> types = mods.take_types();
  if (types.size() != 1) d.fail(fmt::format("{} expects exactly one type modifier", in.opcode));
  return types[0];
}

void expect_operands(const Instruction& in, size_t n, const OperandDecoder& d) {
  if (in.operands.size() != n) d.fail(fmt::format("expects {} operands, found {}", n, in.operands.size()));
}

}  // namespace stitch::ptx::sim
