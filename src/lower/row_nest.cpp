#include "lower/row_nest.h"

#include <cstdint>

#include "lower/group_expr.h"
#include "lower/reduction_ops.h"
#include "stitch/error.h"

namespace stitch::lower {

using kir::Expr;
using schedule::RowScheduleKind;

RowNest::RowNest(kir::KernelBuilder& kb, const schedule::RowSchedule& schedule, Expr rows, Expr len)
    : kb_(kb), schedule_(schedule), rows_(std::move(rows)), len_(std::move(len)) {
  STITCH_ASSERT(schedule_.threads % kir::kWarpSize == 0 && schedule_.threads >= kir::kWarpSize &&
                    schedule_.threads <= 1024,
                "row schedule with " + std::to_string(schedule_.threads) + " threads");
  if (schedule_.kind == RowScheduleKind::BlockPerRow) {
    const RowGeometry geometry = row_geometry(len_, schedule_.threads);
    static_len_ = geometry.static_len;
    threads_ = lanes_ = geometry.threads;
    steps_ = geometry.steps;
    guard_ = geometry.guard;
    return;
  }
  kir::is_int_constant(len_, &static_len_);
  threads_ = schedule_.threads;
  lanes_ = schedule_.kind == RowScheduleKind::WarpPerRow ? kir::kWarpSize : schedule_.lanes;
  STITCH_ASSERT(lanes_ >= 2 && lanes_ <= kir::kWarpSize && (lanes_ & (lanes_ - 1)) == 0,
                "row schedule with " + std::to_string(lanes_) + " lanes per row");
  steps_ = ceil_div_i(len_, lanes_);
  guard_ = static_len_ < 0 || static_len_ % lanes_ != 0;
  int64_t static_rows = 0;
  spare_rows_ = !kir::is_int_constant(rows_, &static_rows) || static_rows % rows_per_block() != 0;
}

void RowNest::declare_scratch(const std::string& name, DType dtype) {
  if (schedule_.kind == RowScheduleKind::BlockPerRow) kb_.shared(name, dtype, threads_ / kir::kWarpSize);
}

void RowNest::emit(const std::function<void(const RowThread&)>& body) {
  const Expr blocks = ceil_div_i(rows_, rows_per_block());
  kb_.launch(blocks, threads_);
  kb_.grid("blk", blocks, [&](const Expr& b) {
    if (schedule_.kind == RowScheduleKind::BlockPerRow) {
      kb_.block("thr", threads_, [&](const Expr& t) { body(RowThread{b, Expr(), t, kir::int_const(0), b}); });
      return;
    }
    const int64_t warps = threads_ / kir::kWarpSize;
    kb_.block("wrp", warps, [&](const Expr& w) {
      kb_.warp("lane", [&](const Expr& lane) {
        RowThread r;
        r.block = b;
        Expr owner = add_i(mul_i(b, kir::int_const(warps)), w);
        if (schedule_.kind == RowScheduleKind::WarpPerRow) {
          r.lane = lane;
          r.slot = w;
        } else {
          const int64_t per_warp = kir::kWarpSize / lanes_;
          Expr segment = kb_.let("seg", lane / lanes_);
          r.lane = kb_.let("seg_lane", lane % lanes_);
          owner = add_i(mul_i(owner, kir::int_const(per_warp)), segment);
          r.slot = kb_.let("slot", add_i(mul_i(w, kir::int_const(per_warp)), segment));
        }
        Expr row = kb_.let("row", owner);
        if (spare_rows_) {
          // No block is launched when rows is 0, so rows - 1 >= 0 here.
          r.row = kb_.let("row_read", kir::op(OpKind::Min, {row, sub_i(rows_, kir::int_const(1))}));
          r.row_valid = kir::op(OpKind::Lt, {row, rows_});
        } else {
          r.row = row;
        }
        body(r);
      });
    });
  });
}

Expr RowNest::position(const RowThread& r, const Expr& step) const {
  return add_i(mul_i(step, kir::int_const(lanes_)), r.lane);
}

Expr RowNest::reduce(OpKind op, const Expr& value, const std::string& result, const std::string& scratch) {
  if (schedule_.kind == RowScheduleKind::BlockPerRow) return kb_.block_reduce(op, value, result, scratch);
  return kb_.warp_reduce(op, value, result, lanes_);
}

std::pair<Expr, Expr> RowNest::arg_reduce(OpKind op, const Expr& value, const Expr& index, const std::string& result,
                                          const std::string& index_result, const std::string& scratch,
                                          const std::string& index_scratch) {
  if (schedule_.kind == RowScheduleKind::BlockPerRow) {
    return kb_.block_arg_reduce(op, value, index, result, index_result, scratch, index_scratch);
  }
  return kb_.warp_arg_reduce(op, value, index, result, index_result, lanes_);
}

void RowNest::if_valid(const RowThread& r, const std::function<void()>& fn) {
  if (r.row_valid.defined()) {
    kb_.if_then(r.row_valid, fn);
  } else {
    fn();
  }
}

void RowNest::if_leader(const RowThread& r, const std::function<void()>& fn) {
  Expr leader = kir::op(OpKind::Eq, {r.lane, kir::int_const(0)});
  if (r.row_valid.defined()) leader = kir::op(OpKind::And, {r.row_valid, leader});
  kb_.if_then(leader, fn);
}

}  // namespace stitch::lower
