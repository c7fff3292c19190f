#include "stitch/ops.h"

#include <iterator>

#include "stitch/error.h"

namespace stitch {

namespace {

constexpr OpInfo kOpTable[] = {
#define OP(name, text, category, min_in, max_in) \
  {OpKind::name, text, OpCategory::category, min_in, max_in},
#include "stitch/ops.def"
#undef OP
};

}  // namespace

const OpInfo& op_info(OpKind k) {
  auto i = static_cast<size_t>(k);
  STITCH_ASSERT(i < std::size(kOpTable), "op kind out of range");
  return kOpTable[i];
}

std::optional<OpKind> parse_op_kind(std::string_view name) {
  for (const OpInfo& info : kOpTable) {
    if (info.name == name) return info.kind;
  }
  return std::nullopt;
}

int op_kind_count() { return static_cast<int>(std::size(kOpTable)); }

std::string_view category_name(OpCategory c) {
  switch (c) {
    case OpCategory::LightElementwise: return "light-elementwise";
    case OpCategory::HeavyElementwise: return "heavy-elementwise";
    case OpCategory::Broadcast: return "broadcast";
    case OpCategory::Layout: return "layout";
    case OpCategory::Gather: return "gather";
    case OpCategory::Source: return "source";
    case OpCategory::Reduction: return "reduction";
    case OpCategory::Dot: return "dot";
  }
  STITCH_ASSERT(false, "unknown op category");
}

bool is_unary_elementwise(OpKind k) { return k >= OpKind::Neg && k <= OpKind::IsInf; }
bool is_binary_elementwise(OpKind k) { return k >= OpKind::Add && k <= OpKind::Ge; }
bool is_comparison(OpKind k) { return k >= OpKind::Eq && k <= OpKind::Ge; }
bool is_elementwise(OpKind k) {
  return is_unary_elementwise(k) || is_binary_elementwise(k) || k == OpKind::Select ||
         k == OpKind::Clamp || k == OpKind::Cast;
}
bool is_reduction(OpKind k) { return k >= OpKind::ReduceSum && k <= OpKind::ArgMin; }

}  // namespace stitch
