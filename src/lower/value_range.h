// Static bounds of a graph value's elements (docs/lowering.md, Value ranges):
// an interval every element lies in, found from its producers when they are
// sources (iota, scalar constants) and ops whose result interval follows from
// their operands' (affine arithmetic, floor and its kin, clamps, selects,
// casts, layout ops). The resize composite's source indices and weights come
// from iotas this way, so a lowering can tell that a float -> int cast cannot
// saturate and that a gather index cannot leave its axis.
#pragma once

#include <optional>
#include <unordered_map>

#include "stitch/graph.h"

namespace stitch::lower {

// Every element of the value lies in [lo, hi]; both finite, never NaN.
struct Interval {
  double lo = 0;
  double hi = 0;
};

class ValueRanges {
 public:
  explicit ValueRanges(const Graph& g) : g_(g) {}

  // Bounds of every element of `v`, or nullopt where none are known.
  std::optional<Interval> of(ValueId v);

  // Whether a float -> `to` cast of `v` truncates a finite value inside `to`'s
  // range (so it never saturates and never sees NaN).
  bool cast_never_saturates(ValueId v, DType to);

 private:
  std::optional<Interval> compute(const Node& node, int depth);
  std::optional<Interval> of(ValueId v, int depth);

  const Graph& g_;
  std::unordered_map<int, std::optional<Interval>> memo_;
};

}  // namespace stitch::lower
