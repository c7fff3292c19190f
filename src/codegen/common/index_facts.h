// What an emitter can prove about i64 index expressions of one kernel
// (docs/cpu-backend.md, Thread loops; docs/cuda-backend.md, Linear offsets): value ranges from loop extents and
// literals, known factors, and the linear value behind a
// delinearised index. It looks through the lets the emitter recomputes.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "codegen/common/index_range.h"
#include "kir/kernel.h"

namespace stitch::codegen::common {

class IndexFacts {
 public:
  using Range = common::IndexRange;

  // `lets`: the varying index lets the emitter recomputes (name -> definition),
  // owned and updated by the emitter per thread region.
  explicit IndexFacts(const std::map<std::string, const kir::LetStmt*>& lets) : lets_(lets) {}

  // Loop variables of constant extent (names are unique in a kernel).
  void note_loop_extent(const std::string& var, const kir::Expr& extent);
  void set_extent(const std::string& var, int64_t extent) { loop_extent_[var] = extent; }
  int64_t extent(const std::string& var) const { return loop_extent_.at(var); }

  // A recomputed let that stays opaque until released: resolve() stops at it
  // and nothing is known of its value (a moved-back partial step prints it
  // shifted, so its definition no longer holds: emit_shifted_tail).
  void hold(const std::string& name) { held_.insert(name); }
  void release(const std::string& name) { held_.erase(name); }

  // The definition behind a recomputed let, or `e` itself.
  const kir::Expr& resolve(const kir::Expr& e) const;
  // Bounds of `e` when every intermediate provably stays within 2^62.
  std::optional<Range> value_range(const kir::Expr& e) const;
  // A number known to divide `e` (a literal factor, the gcd of a sum's
  // terms): 1 when nothing is known, 0 when `e` is 0.
  int64_t known_multiple(const kir::Expr& e) const;
  // A row-major index that delinearises one linear value X in the buffer's
  // own shape: X, else nothing.
  std::optional<kir::Expr> cancelled_offset(const kir::BufferParam& b, const std::vector<kir::Expr>& index) const;

 private:
  const std::map<std::string, const kir::LetStmt*>& lets_;
  std::map<std::string, int64_t> loop_extent_;
  std::set<std::string> held_;

  const kir::LetStmt* let_of(const std::string& name) const;
};

// `dividend / c` or `dividend % c` (the C text of `e`'s first operand) in
// 32-bit unsigned arithmetic, when `e` is an i64 division or remainder by a
// positive literal c whose dividend provably lies in [0, 2^32)
// (`dividend_range`): x86 vector units divide 32-bit lanes by a constant but
// not 64-bit ones (a loop with one 64-bit `lin % 688` stays scalar, its
// vector math too), and a GPU's 64-bit division is a long sequence. Nothing
// otherwise.
std::optional<std::string> narrow_division_text(const kir::Expr& e, const std::string& dividend,
                                                const std::optional<IndexRange>& dividend_range);

}  // namespace stitch::codegen::common
