// Piece versions of a loop kernel (docs/lowering.md, Piece versions): a
// concat or pad evaluated per element is an if-chain on the index, which
// keeps a vectorised loop from running straight through its loads. Most
// blocks of a loop kernel lie wholly inside one piece (the interior of a
// stencil, one half of a large concat), so the kernel also carries versions
// of its block body in which each concat takes one piece, and each pad its
// interior, without a branch. A version runs only on a block for which every
// range it assumed holds; any other block runs the general body.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kir/expr.h"
#include "stitch/graph.h"
#include "stitch/shape.h"

namespace stitch::lower {

// scale * var + offset, var one of a version's index variables; var empty
// for a constant.
struct AffineCoord {
  std::string var;
  int64_t scale = 0;
  int64_t offset = 0;
};

// `e` as an affine function of one variable named in `vars`; nullopt when it
// is anything else (a product of variables, a division, a load).
std::optional<AffineCoord> affine_in(const kir::Expr& e, const std::map<std::string, int>& vars);

// What a version's body assumed: lo <= coord < hi at every element.
struct PieceGuard {
  AffineCoord coord;
  int64_t lo = 0;
  int64_t hi = 0;
};

// The assumptions under which GroupExpr builds one version's body. It sets
// nothing itself: the loop lowering names the index variables and the piece
// to force; GroupExpr records the guards and the concats it specialised.
struct PieceAssumption {
  // Index variables of the block's elements: the C-order coordinates of the
  // loop's linear index in `shapes[var]`, axis `axes[var]`.
  std::map<std::string, int> axes;
  std::map<std::string, Shape> shapes;
  // A piece is assumed only where it can hold a whole block: at least this
  // many consecutive elements (its extent times the elements of one step
  // along its axis).
  int64_t min_piece_elements = 0;
  // The concat (node index) whose piece this version names, and that piece;
  // every other concat takes its largest piece. -1: every concat its largest.
  int forced_node = -1;
  size_t forced_piece = 0;
  // Filled while the body is built.
  std::vector<PieceGuard> guards;
  std::vector<std::pair<int, size_t>> concats;  // (node, piece) specialised, in order of first use

  // Records `g` unless an equal guard is already there.
  void add_guard(const PieceGuard& g);
  // Index variables registered with their axis in `shape`.
  void add_index(const std::vector<kir::Expr>& idx, const Shape& shape);
};

// Consecutive elements of `concat`'s result that come from input `piece`:
// its extent along the axis times the elements of one step along it; -1 when
// symbolic.
int64_t concat_piece_run(const Graph& g, const Node& concat, size_t piece);

// True when every guard of `a` holds for every element of the block of
// linear indices [lin_lo, lin_hi] (the loop's elements, in C order of the
// registered shapes); absent when `a` assumed nothing.
kir::Expr block_satisfies(const PieceAssumption& a, const kir::Expr& lin_lo, const kir::Expr& lin_hi);

// The same for a block of column strips: rows [row_lo, row_hi] (linear over
// the axes before the last) and columns [column_lo, column_hi] of the last.
kir::Expr strip_satisfies(const PieceAssumption& a, const kir::Expr& row_lo, const kir::Expr& row_hi,
                          const kir::Expr& column_lo, const kir::Expr& column_hi);

}  // namespace stitch::lower
