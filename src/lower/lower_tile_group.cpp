// Tile-group lowering (docs/lowering.md, Tile groups). A block owns one outer
// index and the whole tile under it. Each reduction's results for the tile
// are few (a row mean per row, a column mean per column), so the threads
// divide the results among them, and each thread reduces its result serially
// in index order, the interpreter's order, instead of a tree across threads.
// The results go to shared memory, since the readers of later phases take
// them at other tile positions than the thread that computed them.
#include "lower/lower_tile_group.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "fusion/tile_group.h"
#include "kir/kernel_builder.h"
#include "lower/group_expr.h"
#include "lower/reduction_ops.h"
#include "stitch/error.h"

namespace stitch::lower {
namespace {

using kir::Expr;

// A value's dims that lie in the tile, as positions of the domain's shape
// (tile_value_index), and how many elements they span.
struct TilePart {
  std::vector<size_t> dims;
  int64_t count = 1;
};

class TileLowerer {
 public:
  TileLowerer(const Graph& g, const FusionGroup& group, const std::string& name, bool cpu)
      : g_(g), group_(group), cpu_(cpu), kb_(name) {}

  kir::Kernel run() {
    const std::string problem = tile_group_problem(g_, group_.nodes, group_.roots, &domain_);
    STITCH_ASSERT(problem.empty(), "lower_tile_group: " + problem);
    int k = 0;
    int64_t widest = 1;
    for (const auto& phase : domain_.phases) {
      for (int n : phase) {
        number_[n] = k++;
        widest = std::max(widest, tile_part(node(n).output).count);
      }
    }
    for (int r : group_.roots) widest = std::max(widest, tile_part(node(r).output).count);
    threads_ = std::min(kTileBlockThreads, (widest + 31) / 32 * 32);
    if (cpu_) {
      // A CPU block's threads are one vector loop: as many as the tile's
      // innermost extent (in 16s), so that a row of the tile is one pass of
      // the loop, not a sixth of one with the rest masked off
      // (docs/lowering.md, Tile groups).
      const int64_t inner = domain_.shape.back().extent();
      threads_ = std::min(kTileBlockThreads, (inner + 15) / 16 * 16);
    }
    ex_.declare_params(loop_group_signature(g_, group_));
    for (const auto& phase : domain_.phases) {
      for (int n : phase) {
        const int64_t results = tile_part(node(n).output).count;
        if (results > 0) kb_.shared(name("red", n), g_.type(node(n).output).dtype, results);
      }
    }
    const Shape outer = domain_.outer_shape();
    const Expr blocks = element_count_expr(outer);
    kb_.launch(blocks, threads_);
    kb_.grid("blk", blocks, [&](const Expr& b) {
      // Block-uniform: computed once per block, outside the thread region.
      outer_ = outer.empty() ? Index{} : ex_.delinearize(b, outer, "o");
      kb_.block("thr", threads_, [&](const Expr& t) {
        thread_ = t;
        for (size_t p = 0; p < domain_.phases.size(); ++p) {
          for (int n : domain_.phases[p]) reduce(n);
          kb_.barrier();
          for (int n : domain_.phases[p]) bind_results(n);
        }
        store_roots();
      });
    });
    return kb_.finish();
  }

 private:
  const Node& node(int n) const { return g_.nodes()[n]; }
  std::string name(const char* prefix, int n) const { return prefix + std::to_string(number_.at(n)); }

  TilePart tile_part(ValueId v) const {
    TilePart part;
    const std::vector<int> map = *tile_value_index(g_, domain_, v);
    for (int d : map) {
      if (d < 0 || !domain_.in_tile(static_cast<size_t>(d))) continue;
      part.dims.push_back(static_cast<size_t>(d));
      part.count *= domain_.shape[static_cast<size_t>(d)].extent();
    }
    return part;
  }

  Shape shape_of(const std::vector<size_t>& dims) const {
    Shape s;
    for (size_t d : dims) s.push_back(domain_.shape[d]);
    return s;
  }

  // Runs fn(q) for every position q < count of the block's share, T threads
  // striding. With `clamp`, threads past the end compute position count - 1
  // and only `fn`'s guarded part (the store) is skipped, so the loop body has
  // no thread-dependent condition around its inner loops and the CPU emitter
  // runs the threads innermost; otherwise the whole body is guarded.
  void stride(const std::string& var, int64_t count, bool clamp,
              const std::function<void(const Expr& q, const std::optional<Expr>& in_range)>& fn) {
    const int64_t steps = (count + threads_ - 1) / threads_;
    const bool guard = count % threads_ != 0;
    kb_.serial(var, kir::int_const(steps), [&](const Expr& s) {
      ex_.scoped([&] {
        step_ = s;
        Expr q = kb_.let(ex_.fresh("q"), add_i(mul_i(s, kir::int_const(threads_)), thread_));
        const Expr in_range = kir::op(OpKind::Lt, {q, kir::int_const(count)});
        if (!guard) {
          fn(q, std::nullopt);
        } else if (clamp) {
          fn(kb_.let(ex_.fresh("q"), kir::op(OpKind::Min, {q, kir::int_const(count - 1)})), in_range);
        } else {
          kb_.if_then(in_range, [&] { ex_.scoped([&] { fn(q, std::nullopt); }); });
        }
      });
    });
  }

  // The multi-index of position q = step * threads + thread over `shape`.
  // When the threads span its innermost extent exactly, that is (the step
  // over the other dims, the thread): no division, and the loads of a step
  // are one contiguous row of the tile.
  Index position(const Expr& q, const Shape& shape) {
    if (!shape.empty() && shape.back().extent() == threads_) {
      Index at = ex_.delinearize(step_, Shape(shape.begin(), shape.end() - 1));
      at.push_back(thread_);
      return at;
    }
    return ex_.delinearize(q, shape);
  }

  // The domain index of the block's outer index with the tile positions of
  // `dims` taken from `at` (in order), and every other tile position from `rest`.
  Index domain_index(const std::vector<size_t>& dims, const Index& at, const std::vector<size_t>& rest_dims,
                     const Index& rest) const {
    Index idx;
    for (size_t d = 0; d < domain_.shape.size(); ++d) {
      if (!domain_.in_tile(d)) {
        idx.push_back(outer_[d]);
        continue;
      }
      auto k = std::find(dims.begin(), dims.end(), d);
      if (k != dims.end()) {
        idx.push_back(at[static_cast<size_t>(k - dims.begin())]);
      } else {
        auto r = std::find(rest_dims.begin(), rest_dims.end(), d);
        idx.push_back(r != rest_dims.end() ? rest[static_cast<size_t>(r - rest_dims.begin())] : kir::int_const(0));
      }
    }
    return idx;
  }

  // Reduction n's results for the tile: each thread takes results in turn,
  // folds the reduced elements of one in index order, and stores it finished.
  void reduce(int n) {
    const Node& red = node(n);
    const TilePart kept = tile_part(red.output);
    if (kept.count == 0) return;
    std::vector<size_t> reduced_dims;
    for (size_t d : domain_.tile) {
      if (std::find(kept.dims.begin(), kept.dims.end(), d) == kept.dims.end()) reduced_dims.push_back(d);
    }
    const Shape reduced = shape_of(reduced_dims);
    const DType acc_dtype = accumulator_dtype(g_.type(red.output).dtype);
    // Clamped threads recompute the last result: worth it only where they are
    // a small part of the work. Double centering's 32 row means under 256
    // threads would load 8 times the row; guarded, its kernel went from 0.17
    // to 0.087 s (16384 x 32 x 48, the 2-core CPU, busy).
    stride(name("res", n), kept.count, kept.count >= 4 * threads_, [&](const Expr& q, const std::optional<Expr>& in_range) {
      const Index at = position(q, shape_of(kept.dims));
      Expr acc = kb_.let(name("acc", n), reduction_identity(red.op, acc_dtype));
      kb_.serial(name("elem", n), element_count_expr(reduced), [&](const Expr& e) {
        ex_.scoped([&] {
          Expr v = ex_.eval(red.inputs[0], domain_index(kept.dims, at, reduced_dims, ex_.delinearize(e, reduced)));
          if (v.dtype() != acc_dtype) v = kir::cast(v, acc_dtype);
          kb_.assign(acc, kir::op(combine_op(red.op), {acc, v}));
        });
      });
      Expr value = finish_reduction(g_, red, acc, element_count_expr(reduced));
      if (in_range) {
        kb_.if_then(*in_range, [&] { kb_.store(name("red", n), {q}, value); });
      } else {
        kb_.store(name("red", n), {q}, value);
      }
    });
  }

  // From here on reduction n is its shared result at the tile position it
  // is read at (the block's outer index is the only one it is read at).
  void bind_results(int n) {
    const ValueId v = node(n).output;
    const TilePart kept = tile_part(v);
    if (kept.count == 0) {
      ex_.bind(v, literal(0.0, g_.type(v).dtype));
      return;
    }
    const std::vector<int> map = *tile_value_index(g_, domain_, v);
    const Shape kept_shape = shape_of(kept.dims);
    const std::string buffer = name("red", n);
    ex_.bind(v, [this, map, kept_shape, buffer](const Index& idx) {
      Index at;
      for (size_t k = 0; k < map.size(); ++k) {
        if (map[k] >= 0 && domain_.in_tile(static_cast<size_t>(map[k]))) at.push_back(idx[k]);
      }
      return kb_.load(buffer, {ex_.linearize(at, kept_shape)});
    });
  }

  // The last phase: roots of one tile part share a strided loop.
  void store_roots() {
    std::map<std::vector<size_t>, std::vector<ValueId>> by_part;
    std::map<std::vector<size_t>, int64_t> counts;
    for (int r : group_.roots) {
      const TilePart part = tile_part(node(r).output);
      by_part[part.dims].push_back(node(r).output);
      counts[part.dims] = part.count;
    }
    int loop = 0;
    for (const auto& [dims, values] : by_part) {
      if (counts.at(dims) == 0) continue;
      stride("st" + std::to_string(loop++), counts.at(dims), false, [&](const Expr& q, const std::optional<Expr>&) {
        const Index at = position(q, shape_of(dims));
        const Index domain = domain_index(dims, at, {}, {});
        for (ValueId v : values) {
          Index idx;
          const std::vector<int> map = *tile_value_index(g_, domain_, v);
          for (int d : map) {
            idx.push_back(d < 0 ? kir::int_const(0) : domain[static_cast<size_t>(d)]);
          }
          kb_.store(ex_.buffer(v), idx, ex_.eval(v, idx));
        }
      });
    }
  }

  const Graph& g_;
  const FusionGroup& group_;
  const bool cpu_;
  kir::KernelBuilder kb_;
  GroupExpr ex_{g_, group_, kb_};
  TileDomain domain_;
  int64_t threads_ = kTileBlockThreads;
  Index outer_;        // the block's outer index, one entry per outer dim
  Expr thread_;        // the thread index
  Expr step_;          // the step of the innermost stride loop being built
  std::map<int, int> number_;  // reduction node -> its number in kernel names
};

}  // namespace

std::string tile_group_lowering_problem(const Graph& g, const FusionGroup& group) {
  for (int n : group.nodes) {
    const OpKind op = g.nodes()[n].op;
    if (!is_reduction(op) && !is_loop_lowerable(op)) return "op " + std::string(op_name(op)) + " in a tile group";
  }
  return tile_group_problem(g, group.nodes, group.roots);
}

kir::Kernel lower_tile_group(const Graph& g, const FusionGroup& group, const std::string& kernel_name, bool cpu) {
  return TileLowerer(g, group, kernel_name, cpu).run();
}

}  // namespace stitch::lower
