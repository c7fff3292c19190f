#include "runtime/cuda/launch_geometry.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

#include "stitch/error.h"

namespace stitch::runtime::cuda {
namespace {

int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

}  // namespace

int64_t evaluate_index_expr(const kir::Expr& e, const std::map<std::string, int64_t>& scalars) {
  const kir::ExprNode& n = e.node();
  switch (n.kind) {
    case kir::ExprKind::Const:
      STITCH_ASSERT(!is_float(n.dtype), "a launch expression holds a float literal");
      return n.int_value;
    case kir::ExprKind::Var: {
      auto it = scalars.find(n.name);
      STITCH_ASSERT(it != scalars.end(), fmt::format("launch expression: no value for scalar '{}'", n.name));
      return it->second;
    }
    case kir::ExprKind::Load:
      break;
    case kir::ExprKind::Op: {
      std::vector<int64_t> v;
      for (const kir::Expr& operand : n.operands) v.push_back(evaluate_index_expr(operand, scalars));
      switch (n.op) {
        case OpKind::Add: return v[0] + v[1];
        case OpKind::Sub: return v[0] - v[1];
        case OpKind::Mul: return v[0] * v[1];
        case OpKind::Div:
          STITCH_ASSERT(v[1] != 0, "launch expression divides by zero");
          return floor_div(v[0], v[1]);
        case OpKind::Rem:
          STITCH_ASSERT(v[1] != 0, "launch expression divides by zero");
          return v[0] - floor_div(v[0], v[1]) * v[1];
        case OpKind::Min: return std::min(v[0], v[1]);
        case OpKind::Max: return std::max(v[0], v[1]);
        case OpKind::Eq: return v[0] == v[1];
        case OpKind::Ne: return v[0] != v[1];
        case OpKind::Lt: return v[0] < v[1];
        case OpKind::Le: return v[0] <= v[1];
        case OpKind::Gt: return v[0] > v[1];
        case OpKind::Ge: return v[0] >= v[1];
        case OpKind::And: return v[0] && v[1];
        case OpKind::Or: return v[0] || v[1];
        case OpKind::Select: return v[0] ? v[1] : v[2];
        case OpKind::Cast: return v[0];
        default: break;
      }
      break;
    }
  }
  throw InternalError(fmt::format("launch expression: {} is not evaluated on the host",
                                  n.kind == kir::ExprKind::Load ? std::string("a load") : std::string(op_name(n.op))),
                      __FILE__, __LINE__);
}

int64_t grid_blocks(const kir::Kernel& kernel, const std::map<std::string, int64_t>& scalars) {
  const int64_t blocks = evaluate_index_expr(kernel.launch.grid, scalars);
  STITCH_ASSERT(blocks >= 0, fmt::format("kernel {}: a negative grid ({})", kernel.name, blocks));
  constexpr int64_t kMaxGridX = (int64_t{1} << 31) - 1;
  if (blocks > kMaxGridX) {
    throw UserError(fmt::format("kernel {} needs {} blocks; a CUDA grid holds at most {} (the tensors are too large "
                                "for --backend cuda's one-dimensional grids)",
                                kernel.name, blocks, kMaxGridX));
  }
  return blocks;
}

}  // namespace stitch::runtime::cuda
