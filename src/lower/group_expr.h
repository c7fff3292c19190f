// Shared machinery of the group lowerings (docs/lowering.md, Expressions):
// index arithmetic with literal folding, the buffer parameters of a group's
// signature, and the evaluation of a group's value at a multi-index, walking
// backwards through elementwise and layout ops. Loop and reduction kernels
// differ only in how they iterate; both evaluate values through GroupExpr.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "fusion/fusion_plan.h"
#include "kir/kernel_builder.h"
#include "lower/lower_loop_group.h"
#include "lower/piece_versions.h"
#include "lower/value_range.h"
#include "stitch/graph.h"

namespace stitch::lower {

using Index = std::vector<kir::Expr>;

// KIR names are emitted unchanged as C++ identifiers, so graph names are
// reduced to [A-Za-z0-9_].
std::string sanitize(const std::string& name);
std::string symbol_param(const std::string& symbol);

kir::Expr add_i(const kir::Expr& a, const kir::Expr& b);
kir::Expr sub_i(const kir::Expr& a, const kir::Expr& b);
kir::Expr mul_i(const kir::Expr& a, const kir::Expr& b);
// ceil(a / b) for a >= 0 and b > 0, folded when `a` is a literal.
kir::Expr ceil_div_i(const kir::Expr& a, int64_t b);
kir::Expr dim_expr(const Dim& d);
kir::Expr element_count_expr(const Shape& s);
kir::Expr literal(double value, DType dtype);
kir::Expr literal(const AttrValue& value, DType dtype);
// A transpose node's permutation of `rank` axes: output axis k is input axis
// perm[k]; axes its `perm` attribute leaves out are reversed (as the
// interpreter reads it).
std::vector<int64_t> transpose_permutation(const Node& node, size_t rank);

class GroupExpr {
 public:
  GroupExpr(const Graph& g, const FusionGroup& group, kir::KernelBuilder& kb);

  // Declares the scalar and buffer parameters of `sig` (in_/out_ names).
  void declare_params(const GroupSignature& sig);
  const std::string& buffer(ValueId v) const { return buffer_of_.at(v.index); }

  // The value of `v` at `idx`: a load when v comes from outside the group,
  // otherwise the expression of its producer, memoised per (value, index).
  kir::Expr eval(ValueId v, const Index& idx);

  // From now on `v`, a node of the group already computed (a stitched
  // kernel's reduction total, docs/lowering.md, Stitched groups), is `e` at
  // every index: the caller guarantees it is only read at the row it holds.
  void bind(ValueId v, const kir::Expr& e) { bound_[v.index] = e; }
  // The same for a value held per position (a tile kernel's reduction
  // results in shared memory, docs/lowering.md, Tile groups): `at(idx)` is
  // v's value at idx.
  void bind(ValueId v, std::function<kir::Expr(const Index&)> at) { bound_at_[v.index] = std::move(at); }
  // The memoised value of `v` at `idx` in the current scopes, if evaluated;
  // and a value to use for `v` at `idx` in the current scope (a cached copy).
  std::optional<kir::Expr> memoised(ValueId v, const Index& idx) const;
  void remember(ValueId v, const Index& idx, const kir::Expr& e) { memo_.back()[memo_key(v, idx)] = e; }
  // From now on a value from outside the group is looked up in the memo too,
  // so a copy `remember` gave it (a row held in registers) replaces its load.
  void hold(ValueId v) { held_.insert(v.index); }

  // While set, concats and pads take the pieces `a` assumes, recording the
  // guards in it (piece_versions.h); nullptr: every piece is a branch.
  void assume(PieceAssumption* a) { assume_ = a; }

  // The loads of values from outside the group built since the last call,
  // each with its index.
  std::vector<std::pair<ValueId, Index>> take_loads() { return std::exchange(loads_, {}); }
  // How many heavy elementwise ops (transcendentals, division) have been
  // evaluated so far: a lowering compares two counts to learn whether a body
  // it built computes one.
  int heavy_evaluated() const { return heavy_evaluated_; }

  // C-order multi-index of `lin` in `shape`, one local per dimension, named
  // `<prefix><k>` when a prefix is given, fresh `j<n>` names otherwise.
  Index delinearize(const kir::Expr& lin, const Shape& shape, const std::string& prefix = "");
  kir::Expr linearize(const Index& idx, const Shape& shape);
  // The index in `to` of the element at `idx` in `from` (a reshape keeps the
  // linear index), memoised per scope: the linear index of an index is made
  // once, and an index made here maps back to the linear index it came from,
  // so a value reached through reshapes by two paths (a stitched column
  // kernel's root stored at its own shape, and its reduction reading it
  // reshaped) is evaluated at one index, once.
  Index reshaped(const Index& idx, const Shape& from, const Shape& to);

  // Runs fn with a fresh memo scope: locals defined in a nested body are out
  // of scope after it, so their memo entries must be forgotten.
  void scoped(const std::function<void()>& fn);
  std::string fresh(const std::string& prefix) { return prefix + std::to_string(counter_++); }

 private:
  std::string memo_key(ValueId v, const Index& idx) const;
  const kir::Expr* find_memo(const std::string& key) const;
  kir::Expr eval_node(const Node& node, const Index& idx);
  kir::Expr eval_concat(const Node& node, const Index& idx);
  kir::Expr eval_pad(const Node& node, const Index& idx);
  std::optional<kir::Expr> eval_assumed_concat(const Node& node, const Index& idx);
  std::optional<kir::Expr> eval_assumed_pad(const Node& node, const Index& idx);
  kir::Expr eval_gather(const Node& node, const Index& idx);
  // Whether every element of `v` is known to lie in [0, extent) (value_range.h:
  // the resize composite's indices, clamped by constants).
  bool known_in_range(ValueId v, int64_t extent);
  kir::Expr eval_dot(const Node& node, const Index& idx);

  const Graph& g_;
  kir::KernelBuilder& kb_;
  std::unordered_set<int> in_group_;
  std::unordered_map<int, std::string> buffer_of_;
  std::unordered_set<int> held_;  // outside values looked up in the memo (hold)
  std::unordered_map<int, kir::Expr> bound_;
  std::unordered_map<int, std::function<kir::Expr(const Index&)>> bound_at_;
  std::string status_buffer_;  // set by declare_params when the signature has one
  std::vector<std::map<std::string, kir::Expr>> memo_{1};
  // reshaped's memos, scoped as memo_: an index (printed, with its shape) ->
  // its linear index, and a linear index with a shape -> the index made.
  std::vector<std::map<std::string, kir::Expr>> linear_of_{1};
  std::vector<std::map<std::string, Index>> reshaped_{1};
  int counter_ = 0;
  PieceAssumption* assume_ = nullptr;
  std::vector<std::pair<ValueId, Index>> loads_;
  int heavy_evaluated_ = 0;
  ValueRanges ranges_;
};

}  // namespace stitch::lower
