#include "lower/transpose_tiles.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <vector>

#include "lower/group_expr.h"
#include "lower/lower_loop_group.h"
#include "stitch/error.h"

namespace stitch::lower {
namespace {

using kir::Expr;

constexpr size_t kMaxTiledTransposes = 4;

// What a group's tiles are: the transposes that move their operand's innermost
// axis (all of the tile shape, all putting that axis at `row_axis`), and the
// shape the squares cover, over `row_axis` and the innermost axis.
struct Tiling {
  std::vector<int> tiled;
  Shape shape;
  size_t row_axis = 0;
  std::set<int> downstream;  // the tiled transposes and the nodes reading them
};

int64_t element_count(const Shape& s) {
  int64_t n = 1;
  for (const Dim& d : s) n *= d.extent();
  return n;
}

// The group's tiling, or a reason the group is not taken. Every tiled
// transpose has the tile shape and puts its operand's innermost axis at one
// row axis; every node that reads one, directly or not, must be elementwise of
// the tile shape (so that a transpose is only ever read at the index its root
// is stored at) or a reshape that is a root; no transpose may feed another's
// operand. Roots of another shape (of as many elements) are computed in their
// own order: block b computes their elements b * side^2 to (b + 1) * side^2 - 1.
std::string find_tiled(const Graph& g, const FusionGroup& group, bool gpu, Tiling* tiling) {
  const int64_t side = gpu ? kGpuTransposeTile : kTransposeTile;
  if (group.kind != GroupKind::Loop || group.roots.empty()) return "not a loop group";
  std::vector<int>& tiled = tiling->tiled;
  for (int n : group.nodes) {
    const Node& node = g.nodes()[n];
    if (!is_loop_lowerable(node.op)) return fmt::format("op {} is not loop-lowerable", op_name(node.op));
    if (node.op != OpKind::Transpose) continue;
    const size_t rank = g.type(node.output).shape.size();
    const std::vector<int64_t> perm = transpose_permutation(node, rank);
    if (perm.empty() || perm.back() == static_cast<int64_t>(perm.size()) - 1) continue;  // the innermost axis stays
    const size_t row_axis = static_cast<size_t>(std::find(perm.begin(), perm.end(), static_cast<int64_t>(rank) - 1) - perm.begin());
    if (tiled.empty()) {
      tiling->shape = g.type(node.output).shape;
      tiling->row_axis = row_axis;
    } else if (g.type(node.output).shape != tiling->shape) {
      return "transposes of different shapes";
    } else if (row_axis != tiling->row_axis) {
      return "transposes that move their operands' innermost axes to different axes";
    }
    tiled.push_back(n);
  }
  if (tiled.empty()) return "no transpose moves an innermost axis";
  if (tiled.size() > kMaxTiledTransposes) return "more than 4 transposes to tile";
  const Shape& shape = tiling->shape;
  for (const Dim& d : shape) {
    if (!d.is_static()) return "a symbolic dimension";
  }
  // On the CPU the squares at the ends of axes that are not multiples of the
  // side are partial (their reads clamped, their stores guarded); the GPU's
  // lowering takes whole squares only.
  const bool partial = shape.back().extent() % side != 0 || shape[tiling->row_axis].extent() % side != 0;
  if (partial && gpu) return fmt::format("the transposed axes are not multiples of {}", side);
  // A transposed operand whose rows are shorter than a side is read almost
  // contiguously by strips already (3 elements a row: a gather within one
  // cache line), where a square would stage mostly copies.
  if (shape[tiling->row_axis].extent() < side) return fmt::format("the transposed rows are shorter than {}", side);
  for (int r : group.roots) {
    const Shape& rs = g.type(g.nodes()[r].output).shape;
    for (const Dim& d : rs) {
      if (!d.is_static()) return "a symbolic dimension";
    }
    if (element_count(rs) != element_count(shape)) return "roots of other sizes than the transposes'";
  }
  const std::set<int> members(group.nodes.begin(), group.nodes.end());
  const std::set<int> roots(group.roots.begin(), group.roots.end());
  // Downstream of a tiled transpose: elementwise of the tile shape, or a
  // reshape that is a root (nothing else can read it: its shape is not the
  // tile's).
  std::set<int>& downstream = tiling->downstream;
  downstream.insert(tiled.begin(), tiled.end());
  for (int n : group.nodes) {  // group nodes are in topological order
    const Node& node = g.nodes()[n];
    bool reads = false;
    for (ValueId in : node.inputs) reads = reads || downstream.count(g.value(in).producer) > 0;
    if (!reads) continue;
    const bool elementwise = is_elementwise(node.op) && g.type(node.output).shape == shape;
    const bool root_reshape = node.op == OpKind::Reshape && roots.count(n) && g.type(node.inputs[0]).shape == shape;
    if (!elementwise && !root_reshape) {
      return fmt::format("{} reads a transpose other than elementwise", g.value_name(node.output));
    }
    downstream.insert(n);
  }
  // A root of another shape that reads no transpose is computed side^2
  // elements a block, which partial squares would not cover exactly.
  for (int r : group.roots) {
    if (partial && !downstream.count(r) && g.type(g.nodes()[r].output).shape != shape) {
      return fmt::format("partial squares and a root of another shape ({})", g.value_name(g.nodes()[r].output));
    }
  }
  // Upstream of a tiled transpose's operand: no other tiled transpose.
  for (int t : tiled) {
    std::vector<int> stack{t};
    std::set<int> seen;
    while (!stack.empty()) {
      const int n = stack.back();
      stack.pop_back();
      for (ValueId in : g.nodes()[n].inputs) {
        const int p = g.value(in).producer;
        if (p < 0 || !members.count(p) || !seen.insert(p).second) continue;
        if (downstream.count(p)) return "a transpose feeds another transpose's operand";
        stack.push_back(p);
      }
    }
  }
  return "";
}

class TransposeTileLowerer {
 public:
  TransposeTileLowerer(const Graph& g, const FusionGroup& group, const std::string& name, bool gpu)
      : g_(g), group_(group), gpu_(gpu), side_(gpu ? kGpuTransposeTile : kTransposeTile),
        pitch_(gpu ? side_ + 1 : side_), kb_(name) {}

  kir::Kernel run() {
    const std::string problem = find_tiled(g_, group_, gpu_, &tiling_);
    STITCH_ASSERT(problem.empty(), "lower_transpose_tiles: " + problem);
    const std::vector<int>& tiled = tiling_.tiled;
    ex_.declare_params(loop_group_signature(g_, group_));
    const Shape& shape = tiling_.shape;
    const size_t rank = shape.size();
    const size_t row_axis = tiling_.row_axis;
    // The squares cover the row axis and the innermost; the other axes lead.
    Shape leading;
    for (size_t d = 0; d + 1 < rank; ++d) {
      if (d != row_axis) leading.push_back(shape[d]);
    }
    const int64_t rows = shape[row_axis].extent(), columns = shape[rank - 1].extent();
    const int64_t row_tiles = (rows + side_ - 1) / side_;
    const int64_t column_tiles = (columns + side_ - 1) / side_;
    const bool partial = rows % side_ != 0 || columns % side_ != 0;
    int64_t squares = 1;
    for (const Dim& d : leading) squares *= d.extent();
    const int64_t per_square = row_tiles * column_tiles;
    for (size_t k = 0; k < tiled.size(); ++k) {
      kb_.shared(tile_name(k), g_.type(g_.nodes()[tiled[k]].output).dtype, side_ * pitch_);
    }
    kb_.launch(kir::int_const(squares * per_square), side_);
    // Blocks walk along the rows of tiles, so consecutive blocks continue
    // the same output rows and the threads' static shares are row ranges.
    kb_.grid("blk", kir::int_const(squares * per_square), [&](const Expr& b) {
      Square sq;
      sq.block = b;
      sq.outer = ex_.delinearize(kir::op(OpKind::Div, {b, kir::int_const(per_square)}), leading, "o");
      const Expr in_square = kir::op(OpKind::Rem, {b, kir::int_const(per_square)});
      // Expressions, not lets: the C++ emitter bounds them through the grid
      // index, so the index arithmetic of the thread loops is plain and the
      // loops' accesses contiguous vectors (docs/cpu-backend.md, Thread loops).
      sq.row0 = mul_i(kir::op(OpKind::Div, {in_square, kir::int_const(column_tiles)}), kir::int_const(side_));
      sq.col0 = mul_i(kir::op(OpKind::Rem, {in_square, kir::int_const(column_tiles)}), kir::int_const(side_));
      if (!partial) {
        square(sq, nullptr);
        return;
      }
      // Whole squares as above; a square at the end of the rows or columns
      // moves back or clamps, per axis (Partial).
      const Expr whole = kir::op(OpKind::And, {kir::op(OpKind::Le, {add_i(sq.row0, kir::int_const(side_)), kir::int_const(rows)}),
                                               kir::op(OpKind::Le, {add_i(sq.col0, kir::int_const(side_)), kir::int_const(columns)})});
      Partial how;
      Square moved = sq;
      if (rows % side_ != 0) {  // rows are at least a side long (find_tiled)
        how.keep_row = sq.row0;
        moved.row0 = kir::op(OpKind::Min, {sq.row0, kir::int_const(rows - side_)});
      }
      if (columns % side_ != 0) {
        how.clamp_columns = columns < side_;
        if (!how.clamp_columns) {
          how.keep_column = sq.col0;
          moved.col0 = kir::op(OpKind::Min, {sq.col0, kir::int_const(columns - side_)});
        }
      }
      if (how.clamp_columns) {  // no square is whole
        square(moved, &how);
        return;
      }
      kb_.if_then(
          whole, [&] { ex_.scoped([&] { square(sq, nullptr); }); }, [&] { ex_.scoped([&] { square(moved, &how); }); });
    });
    return kb_.finish();
  }

 private:
  // One block's square: the leading axes' index, the first row and column.
  struct Square {
    Expr block;
    Index outer;
    Expr row0, col0;
  };

  // How a square that reaches past the end of the rows or the columns is
  // handled, per axis. An axis at least a side long moves the square back to
  // end at the axis' end and stores only from the square's own first row or
  // column (`keep_*`: the ones before it are the previous square's); columns
  // fewer than a side clamp their reads into the axis (filling entries nothing
  // stores) and store only inside it (`clamp_columns`). Rows are never fewer
  // than a side (find_tiled).
  struct Partial {
    bool clamp_columns = false;
    Expr keep_row, keep_column;  // undefined: no such guard
  };

  // The block's threads over one square; `partial` null: a whole square.
  void square(const Square& sq, const Partial* partial) {
    const std::vector<int>& tiled = tiling_.tiled;
    const Shape& shape = tiling_.shape;
    const size_t rank = shape.size();
    const size_t row_axis = tiling_.row_axis;
    const Expr last_column = kir::int_const(shape[rank - 1].extent() - 1);
    // The index of the tile shape at (row, column) of this block's square.
    auto at_square = [&](const Expr& row, const Expr& column) {
      Index idx;
      size_t o = 0;
      for (size_t d = 0; d + 1 < rank; ++d) idx.push_back(d == row_axis ? row : sq.outer[o++]);
      idx.push_back(column);
      return idx;
    };
    auto clamped = [&](const Expr& i, bool clamp, const Expr& last) { return clamp ? kir::op(OpKind::Min, {i, last}) : i; };
    const bool clamp_columns = partial && partial->clamp_columns;
    // Loop variables are unique in a kernel: the partial square's are suffixed.
    const std::string suffix = partial ? "_p" : "";
    kb_.block("thr" + suffix, side_, [&](const Expr& t) {
      // Stage: tile[k][t] = the transpose at (row0 + t, col0 + k), which is
      // its operand's innermost axis at row0 + t: one row of the operand.
      for (size_t k = 0; k < tiled.size(); ++k) {
        const Node& node = g_.nodes()[tiled[k]];
        const std::vector<int64_t> perm = transpose_permutation(node, rank);
        kb_.loop(fmt::format("s{}{}", k, suffix), kir::int_const(side_), kir::LoopLevel::Unroll, [&](const Expr& s) {
          ex_.scoped([&] {
            const Index out = at_square(kb_.let(ex_.fresh("r"), add_i(sq.row0, t)),
                                        kb_.let(ex_.fresh("c"), clamped(add_i(sq.col0, s), clamp_columns, last_column)));
            Index in(rank);
            for (size_t d = 0; d < rank; ++d) in[static_cast<size_t>(perm[d])] = out[d];
            kb_.store(tile_name(k), {add_i(mul_i(s, kir::int_const(pitch_)), t)}, ex_.eval(node.inputs[0], in));
          });
        });
        if (!gpu_) kb_.transpose_tile(tile_name(k), side_);
      }
      // The GPU reads the staged columns back as rows below: every lane's
      // stores must be seen first.
      if (gpu_) kb_.barrier();
      // Compute: row j of every (transposed) tile is the transpose at (row0 + j, col0 + t);
      // on the GPU that is column j of the staged tile.
      kb_.loop("j" + suffix, kir::int_const(side_), kir::LoopLevel::Serial, [&](const Expr& j) {
        const Expr row = kb_.let(ex_.fresh("r"), add_i(sq.row0, j));
        const Expr column = kb_.let(ex_.fresh("c"), add_i(sq.col0, t));
        auto compute = [&] {
          ex_.scoped([&] { store_roots(sq, j, t, at_square(row, column)); });
        };
        std::vector<Expr> guards;
        if (partial && partial->keep_row.defined()) guards.push_back(kir::op(OpKind::Ge, {row, partial->keep_row}));
        if (clamp_columns) guards.push_back(kir::op(OpKind::Le, {column, last_column}));
        if (partial && partial->keep_column.defined()) guards.push_back(kir::op(OpKind::Ge, {column, partial->keep_column}));
        if (guards.empty()) {
          compute();
          return;
        }
        Expr all = guards[0];
        for (size_t g = 1; g < guards.size(); ++g) all = kir::op(OpKind::And, {all, guards[g]});
        kb_.if_then(all, compute);
      });
    });
  }

  // Every root at `idx` of the tile shape, the tiled transposes read from the tiles.
  void store_roots(const Square& sq, const Expr& j, const Expr& t, const Index& idx) {
    const Shape& shape = tiling_.shape;
    const Expr at = gpu_ ? add_i(mul_i(t, kir::int_const(pitch_)), j) : add_i(mul_i(j, kir::int_const(pitch_)), t);
    for (size_t k = 0; k < tiling_.tiled.size(); ++k) {
      ex_.bind(g_.nodes()[tiling_.tiled[k]].output, kb_.load(tile_name(k), {at}));
    }
    for (int r : group_.roots) {
      const ValueId out = g_.nodes()[r].output;
      const Shape& root_shape = g_.type(out).shape;
      Index at_root = idx;
      if (root_shape != shape) {
        // A reshape of the square's values: at the same linear index. Any
        // other root: in its own order, this block's side^2 elements along rows.
        const Expr linear = tiling_.downstream.count(r)
                                ? ex_.linearize(idx, shape)
                                : add_i(add_i(mul_i(sq.block, kir::int_const(side_ * side_)), mul_i(j, kir::int_const(side_))), t);
        at_root = ex_.delinearize(linear, root_shape, ex_.fresh("q"));
      }
      kb_.store(ex_.buffer(out), at_root, ex_.eval(out, at_root));
    }
  }

  static std::string tile_name(size_t k) { return fmt::format("tile{}", k); }

  const Graph& g_;
  const FusionGroup& group_;
  const bool gpu_;
  const int64_t side_;   // the square's side, and the block's threads
  const int64_t pitch_;  // elements between the tile's staged rows
  Tiling tiling_;
  kir::KernelBuilder kb_;
  GroupExpr ex_{g_, group_, kb_};
};

}  // namespace

std::string transpose_tiles_problem(const Graph& g, const FusionGroup& group, bool gpu) {
  Tiling tiling;
  return find_tiled(g, group, gpu, &tiling);
}

kir::Kernel lower_transpose_tiles(const Graph& g, const FusionGroup& group, const std::string& kernel_name, bool gpu) {
  return TransposeTileLowerer(g, group, kernel_name, gpu).run();
}

}  // namespace stitch::lower
