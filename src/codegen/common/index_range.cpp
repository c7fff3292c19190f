#include "codegen/common/index_range.h"

#include <algorithm>

namespace stitch::codegen::common {

std::optional<IndexRange> arithmetic_range(OpKind op, const IndexRange& a, const IndexRange& b) {
  const bool constant_divisor = b.first == b.second && b.first > 0 && a.first >= 0;
  switch (op) {
    case OpKind::Add: return IndexRange{a.first + b.first, a.second + b.second};
    case OpKind::Sub: return IndexRange{a.first - b.second, a.second - b.first};
    case OpKind::Mul: {
      const __int128 p[] = {a.first * b.first, a.first * b.second, a.second * b.first, a.second * b.second};
      return IndexRange{*std::min_element(p, p + 4), *std::max_element(p, p + 4)};
    }
    case OpKind::Div:
      if (constant_divisor) return IndexRange{a.first / b.first, a.second / b.first};
      return std::nullopt;
    case OpKind::Rem:
      if (constant_divisor) return IndexRange{0, std::min(a.second, b.first - 1)};
      return std::nullopt;
    default: return std::nullopt;
  }
}

}  // namespace stitch::codegen::common
