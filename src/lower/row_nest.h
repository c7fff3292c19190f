// The loop nest of a row schedule (docs/lowering.md, Row schedules): the launch,
// the grid loop, the block (and warp) loops, which row each thread reads and
// which position of it, and the reduction that combines a row's threads. The
// reduction and the stitched lowering both lower their row path through it, so
// each schedule kind is spelled once.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "kir/kernel_builder.h"
#include "schedule/row_schedule.h"

namespace stitch::lower {

// What the code of one row sees inside the nest.
struct RowThread {
  // The row this thread reads. When the grid has more row owners than rows
  // (warp schedules, rows not a multiple of rows_per_block), owners past the
  // end read the last row again and store nothing, so no reduction sits under
  // row-dependent control flow.
  kir::Expr row;
  kir::Expr row_valid;  // bool, the owner's row is real; undefined when every owner's is
  kir::Expr lane;       // this thread's position among the row's threads, 0 .. lanes-1
  kir::Expr slot;       // the row's index among the block's rows (0 for block-per-row)
  kir::Expr block;      // the grid's block index; the block owns rows_per_block() rows from block * rows_per_block()
};

class RowNest {
 public:
  // `rows` rows of `len` elements (i64 expressions over the kernel's scalars).
  RowNest(kir::KernelBuilder& kb, const schedule::RowSchedule& schedule, kir::Expr rows, kir::Expr len);

  const schedule::RowSchedule& schedule() const { return schedule_; }
  int64_t threads() const { return threads_; }  // launch block size
  int64_t lanes() const { return lanes_; }      // threads per row: the stride over a row
  int64_t rows_per_block() const { return schedule_.rows_per_block(); }
  int64_t static_len() const { return static_len_; }  // -1 when symbolic
  const kir::Expr& steps() const { return steps_; }   // strided steps over a row
  bool guard() const { return guard_; }               // whether the last step runs past the row's end

  // Shared scratch a block reduction needs (block-per-row only; a no-op for
  // the warp schedules, whose reductions are shuffles).
  void declare_scratch(const std::string& name, DType dtype);

  // The launch, then the nest with `body` innermost.
  void emit(const std::function<void(const RowThread&)>& body);

  // The row's position of strided step `step`: step x lanes + lane.
  kir::Expr position(const RowThread& r, const kir::Expr& step) const;

  // Combines the row's threads: a block reduction through `scratch`, or a
  // (segmented) warp reduction. The result is in every thread of the row.
  kir::Expr reduce(OpKind op, const kir::Expr& value, const std::string& result, const std::string& scratch);
  std::pair<kir::Expr, kir::Expr> arg_reduce(OpKind op, const kir::Expr& value, const kir::Expr& index,
                                             const std::string& result, const std::string& index_result,
                                             const std::string& scratch, const std::string& index_scratch);

  // `fn` for the owners of real rows only (store phases).
  void if_valid(const RowThread& r, const std::function<void()>& fn);
  // `fn` in one thread per real row: per-row results.
  void if_leader(const RowThread& r, const std::function<void()>& fn);

 private:
  kir::KernelBuilder& kb_;
  schedule::RowSchedule schedule_;
  kir::Expr rows_, len_;
  int64_t threads_ = 0, lanes_ = 0, static_len_ = -1;
  kir::Expr steps_;
  bool guard_ = true;
  bool spare_rows_ = false;
};

}  // namespace stitch::lower
