#include "lower/transpose_tiles.h"

#include <fmt/format.h>

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

// The group's transposes that move the operand's innermost axis, or a reason
// the group is not taken. Each must put that axis second-to-last and have the
// roots' shape; every node that reads one, directly or not, must be
// elementwise of the roots' shape, so that a transpose is only ever read at
// the index its root is stored at; no transpose may feed another's operand.
std::string find_tiled(const Graph& g, const FusionGroup& group, int64_t side, std::vector<int>* tiled) {
  if (group.kind != GroupKind::Loop || group.roots.empty()) return "not a loop group";
  const Shape& shape = g.type(g.nodes()[group.roots.front()].output).shape;
  const size_t rank = shape.size();
  if (rank < 2) return "roots of rank below 2";
  for (const Dim& d : shape) {
    if (!d.is_static()) return "a symbolic dimension";
  }
  if (shape[rank - 1].extent() % side != 0 || shape[rank - 2].extent() % side != 0) {
    return fmt::format("the last two dimensions are not multiples of {}", side);
  }
  for (int r : group.roots) {
    if (g.type(g.nodes()[r].output).shape != shape) return "roots of different shapes";
  }
  const std::set<int> members(group.nodes.begin(), group.nodes.end());
  for (int n : group.nodes) {
    const Node& node = g.nodes()[n];
    if (!is_loop_lowerable(node.op)) return fmt::format("op {} is not loop-lowerable", op_name(node.op));
    if (node.op != OpKind::Transpose) continue;
    const std::vector<int64_t> perm = transpose_permutation(node, g.type(node.output).shape.size());
    if (perm.empty() || perm.back() == static_cast<int64_t>(perm.size()) - 1) continue;  // the innermost axis stays
    if (g.type(node.output).shape != shape) return "a transpose of another shape than the roots'";
    if (perm[rank - 2] != static_cast<int64_t>(rank) - 1) {
      return "a transpose that does not move its operand's innermost axis to the roots' second-to-last";
    }
    tiled->push_back(n);
  }
  if (tiled->empty()) return "no transpose moves an innermost axis";
  if (tiled->size() > kMaxTiledTransposes) return "more than 4 transposes to tile";
  // Downstream of a tiled transpose: elementwise of the roots' shape only.
  std::set<int> downstream(tiled->begin(), tiled->end());
  for (int n : group.nodes) {  // group nodes are in topological order
    const Node& node = g.nodes()[n];
    bool reads = false;
    for (ValueId in : node.inputs) reads = reads || downstream.count(g.value(in).producer) > 0;
    if (!reads) continue;
    if (!is_elementwise(node.op) || g.type(node.output).shape != shape) {
      return fmt::format("{} reads a transpose other than elementwise", g.value_name(node.output));
    }
    downstream.insert(n);
  }
  // Upstream of a tiled transpose's operand: no other tiled transpose.
  for (int t : *tiled) {
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
    const std::string problem = find_tiled(g_, group_, side_, &tiled_);
    STITCH_ASSERT(problem.empty(), "lower_transpose_tiles: " + problem);
    ex_.declare_params(loop_group_signature(g_, group_));
    const Shape& shape = g_.type(g_.nodes()[group_.roots.front()].output).shape;
    const size_t rank = shape.size();
    const Shape leading(shape.begin(), shape.end() - 2);
    const int64_t row_tiles = shape[rank - 2].extent() / side_;
    const int64_t column_tiles = shape[rank - 1].extent() / side_;
    int64_t squares = 1;
    for (const Dim& d : leading) squares *= d.extent();
    const int64_t per_square = row_tiles * column_tiles;
    for (size_t k = 0; k < tiled_.size(); ++k) {
      kb_.shared(tile_name(k), g_.type(g_.nodes()[tiled_[k]].output).dtype, side_ * pitch_);
    }
    kb_.launch(kir::int_const(squares * per_square), side_);
    // Blocks walk along the rows of tiles, so consecutive blocks continue
    // the same output rows and the threads' static shares are row ranges.
    kb_.grid("blk", kir::int_const(squares * per_square), [&](const Expr& b) {
      Index outer = ex_.delinearize(kir::op(OpKind::Div, {b, kir::int_const(per_square)}), leading, "o");
      const Expr in_square = kir::op(OpKind::Rem, {b, kir::int_const(per_square)});
      // Expressions, not lets: the C++ emitter bounds them through the grid
      // index, so the index arithmetic of the thread loops is plain and the
      // loops' accesses contiguous vectors (docs/cpu-backend.md, Thread loops).
      const Expr row0 = mul_i(kir::op(OpKind::Div, {in_square, kir::int_const(column_tiles)}), kir::int_const(side_));
      const Expr col0 = mul_i(kir::op(OpKind::Rem, {in_square, kir::int_const(column_tiles)}), kir::int_const(side_));
      kb_.block("thr", side_, [&](const Expr& t) {
        // Stage: tile[k][t] = the transpose at (row0 + t, col0 + k), which is
        // its operand's innermost axis at row0 + t: one row of the operand.
        for (size_t k = 0; k < tiled_.size(); ++k) {
          const Node& node = g_.nodes()[tiled_[k]];
          const std::vector<int64_t> perm = transpose_permutation(node, rank);
          kb_.loop(fmt::format("s{}", k), kir::int_const(side_), kir::LoopLevel::Unroll, [&](const Expr& s) {
            ex_.scoped([&] {
              Index out = outer;
              out.push_back(kb_.let(ex_.fresh("r"), add_i(row0, t)));
              out.push_back(kb_.let(ex_.fresh("c"), add_i(col0, s)));
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
        kb_.loop("j", kir::int_const(side_), kir::LoopLevel::Serial, [&](const Expr& j) {
          ex_.scoped([&] {
            Index idx = outer;
            idx.push_back(kb_.let(ex_.fresh("r"), add_i(row0, j)));
            idx.push_back(kb_.let(ex_.fresh("c"), add_i(col0, t)));
            const Expr at = gpu_ ? add_i(mul_i(t, kir::int_const(pitch_)), j) : add_i(mul_i(j, kir::int_const(pitch_)), t);
            for (size_t k = 0; k < tiled_.size(); ++k) {
              ex_.bind(g_.nodes()[tiled_[k]].output, kb_.load(tile_name(k), {at}));
            }
            for (int r : group_.roots) {
              const ValueId out = g_.nodes()[r].output;
              kb_.store(ex_.buffer(out), idx, ex_.eval(out, idx));
            }
          });
        });
      });
    });
    return kb_.finish();
  }

 private:
  static std::string tile_name(size_t k) { return fmt::format("tile{}", k); }

  const Graph& g_;
  const FusionGroup& group_;
  const bool gpu_;
  const int64_t side_;   // the square's side, and the block's threads
  const int64_t pitch_;  // elements between the tile's staged rows
  std::vector<int> tiled_;
  kir::KernelBuilder kb_;
  GroupExpr ex_{g_, group_, kb_};
};

}  // namespace

std::string transpose_tiles_problem(const Graph& g, const FusionGroup& group, bool gpu) {
  std::vector<int> tiled;
  return find_tiled(g, group, gpu ? kGpuTransposeTile : kTransposeTile, &tiled);
}

kir::Kernel lower_transpose_tiles(const Graph& g, const FusionGroup& group, const std::string& kernel_name, bool gpu) {
  return TransposeTileLowerer(g, group, kernel_name, gpu).run();
}

}  // namespace stitch::lower
