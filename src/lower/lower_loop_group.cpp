// Loop-group lowering: one flat loop over the roots' elements, each element's
// value an expression tree built by walking the group backwards from the roots
// (docs/lowering.md); group_expr.h evaluates the values. Roots of different
// element counts are packed into one kernel as block ranges.
#include "lower/lower_loop_group.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstdint>
#include <functional>
#include <iterator>
#include <map>
#include <set>

#include "kir/kernel_builder.h"
#include "lower/group_expr.h"
#include "stitch/error.h"

namespace stitch::lower {
namespace {

using kir::Expr;

// Whether an element's value reads anything by an index other than its own
// linear one: a layout op, a broadcast, a gather, an iota, or an operand of
// another shape (an implicit broadcast).
bool reads_by_coordinates(const Graph& g, const FusionGroup& group, const Shape& root) {
  for (int n : group.nodes) {
    const Node& node = g.nodes()[n];
    const OpCategory c = op_info(node.op).category;
    if (c == OpCategory::Layout || c == OpCategory::Broadcast || c == OpCategory::Gather || node.op == OpKind::Iota) {
      return true;
    }
    for (ValueId in : node.inputs) {
      if (g.type(in).shape != root) return true;
    }
  }
  return false;
}

class LoopLowerer {
 public:
  LoopLowerer(const Graph& g, const FusionGroup& group, const std::string& name, bool prefetch)
      : g_(g), group_(group), prefetch_(prefetch), kb_(name) {}

  kir::Kernel run() {
    STITCH_ASSERT(group_.kind == GroupKind::Loop, "lower_loop_group: group is not a loop group");
    STITCH_ASSERT(!group_.roots.empty(), "lower_loop_group: group has no roots");
    for (int n : group_.nodes) {
      const Node& node = g_.nodes()[n];
      STITCH_ASSERT(is_loop_lowerable(node.op),
                    "lower_loop_group: op " + std::string(op_name(node.op)) + " of " +
                        g_.value_name(node.output) + " is not supported yet");
    }
    signature_ = loop_group_signature(g_, group_);
    ex_.declare_params(signature_);
    threads_ = loop_block_threads(g_, group_);
    per_block_ = threads_ * kLoopElementsPerThread;

    std::vector<BlockRange> ranges = block_ranges();
    // A dot epilogue runs by block ranges over the dot's rows: with the
    // dot's element count alone its blocks cover consecutive elements,
    // per_block_ each (no column strips); with roots of other widths each
    // block covers a number of the dot's rows of every root.
    const bool epilogue = group_.epilogue_of >= 0;
    if (epilogue && (ranges.size() != 1 || ranges.front().count != element_count_expr(dot_shape()))) {
      return run_row_blocks(ranges);
    }
    Expr grid = kir::int_const(0);
    for (BlockRange& r : ranges) {
      r.first_block = grid;
      grid = add_i(grid, r.blocks);
    }
    kb_.launch(grid, threads_);
    kb_.grid("blk", grid, [&](const Expr& b) {
      if (ranges.size() == 1) {
        if (epilogue) {
          emit_threads(ranges.front(), b, "", nullptr);
          return;
        }
        emit_range(ranges.front(), b, "");
        return;
      }
      // Kernel packing with block ranges: an if chain on the block index, a
      // block-uniform condition, selects which roots this block computes.
      std::function<void(size_t)> chain = [&](size_t k) {
        auto body = [&] {
          ex_.scoped([&] {
            std::string suffix = std::to_string(k);
            emit_range(ranges[k], kb_.let("b" + suffix, sub_i(b, ranges[k].first_block)), suffix);
          });
        };
        if (k + 1 == ranges.size()) {
          body();
          return;
        }
        kb_.if_then(kir::op(OpKind::Lt, {b, add_i(ranges[k].first_block, ranges[k].blocks)}), body,
                    [&] { chain(k + 1); });
      };
      chain(0);
    });
    kir::Kernel k = kb_.finish();
    if (epilogue) k.panel_elements = per_block_;
    return k;
  }

 private:
  // Roots with one element count share one loop (each root shape delinearises
  // the same linear index); each distinct count gets its own block range.
  struct BlockRange {
    Expr count;
    std::vector<std::vector<int>> roots_by_shape;
    Expr blocks;
    Expr first_block;
  };

  const Shape& dot_shape() const { return g_.type(g_.nodes()[group_.epilogue_of].output).shape; }

  // A dot epilogue with roots of several widths (dot_epilogue_refusal: each
  // root is rows of the dot's result, its row r elements [r * w, (r + 1) * w)
  // for its width w): block b covers rows [b * R, (b + 1) * R) of every
  // root, R rows making about per_block_ elements of the widest, each root
  // shape's part of them in chunks of per_block_ elements. Its block ranges
  // are in R rows of the dot (Kernel::panel_elements).
  kir::Kernel run_row_blocks(const std::vector<BlockRange>& ranges) {
    const Shape& dot = dot_shape();
    int64_t rows = 1;
    for (size_t d = 0; d + 1 < dot.size(); ++d) rows *= dot[d].extent();
    std::vector<int64_t> widths;
    for (const BlockRange& r : ranges) {
      int64_t count = 0;
      STITCH_ASSERT(kir::is_int_constant(r.count, &count) && count % rows == 0,
                    "a dot epilogue's root is not rows of the dot's result");
      widths.push_back(count / rows);
    }
    const int64_t widest = *std::max_element(widths.begin(), widths.end());
    const int64_t per_block = std::max<int64_t>(1, per_block_ / std::max<int64_t>(1, widest));
    const Expr grid = kir::int_const((rows + per_block - 1) / per_block);
    kb_.launch(grid, threads_);
    kb_.grid("blk", grid, [&](const Expr& b) {
      for (size_t k = 0; k < ranges.size(); ++k) {
        if (widths[k] == 0) continue;
        ex_.scoped([&] {
          const std::string suffix = ranges.size() == 1 ? "" : std::to_string(k);
          const int64_t span = per_block * widths[k];
          const Expr lo = kb_.let("lo" + suffix, mul_i(b, kir::int_const(span)));
          const Expr hi = kb_.let("hi" + suffix, kir::op(OpKind::Min, {add_i(lo, kir::int_const(span)), ranges[k].count}));
          const int64_t chunks = (span + per_block_ - 1) / per_block_;
          auto chunk = [&](const Expr& first) {
            emit_elements(ranges[k], [&](const Expr& u) { return add_i(first, mul_i(u, kir::int_const(threads_))); },
                          hi, true, suffix, nullptr);
          };
          if (chunks == 1) {
            chunk(lo);
          } else {
            kb_.serial("chunk" + suffix, kir::int_const(chunks),
                       [&](const Expr& s) { chunk(add_i(lo, mul_i(s, kir::int_const(per_block_)))); });
          }
        });
      }
    });
    kir::Kernel k = kb_.finish();
    k.panel_elements = per_block * dot.back().extent();
    return k;
  }

  std::vector<BlockRange> block_ranges() const {
    std::vector<BlockRange> ranges;
    for (int r : group_.roots) {
      const Shape& shape = g_.type(g_.nodes()[r].output).shape;
      Expr count = element_count_expr(shape);
      auto range = std::find_if(ranges.begin(), ranges.end(), [&](const BlockRange& x) { return x.count == count; });
      if (range == ranges.end()) {
        ranges.push_back({count, {}, {}, {}});
        range = std::prev(ranges.end());
      }
      auto same_shape = std::find_if(range->roots_by_shape.begin(), range->roots_by_shape.end(), [&](const auto& rs) {
        return g_.type(g_.nodes()[rs.front()].output).shape == shape;
      });
      if (same_shape == range->roots_by_shape.end()) {
        range->roots_by_shape.push_back({r});
      } else {
        same_shape->push_back(r);
      }
    }
    for (BlockRange& r : ranges) {
      int64_t n = 0;
      r.blocks = kir::is_int_constant(r.count, &n) ? kir::int_const((n + per_block_ - 1) / per_block_)
                                                   : (r.count + (per_block_ - 1)) / per_block_;
    }
    return ranges;
  }

  // The thread loop of one block range; `b` is the block index within it.
  // Names carry `suffix` since KIR names are unique in the whole kernel.
  void emit_range(const BlockRange& range, const Expr& b, const std::string& suffix) {
    if (suffix.empty() && range.roots_by_shape.size() == 1 && strip_schedule_applies(range)) {
      if (has_pieces()) {
        emit_strip_versions(range, b);
      } else {
        emit_column_strips(range, b);
      }
      return;
    }
    if (suffix.empty() && has_pieces()) {
      emit_piece_versions(range, b);
      return;
    }
    emit_threads(range, b, suffix, nullptr);
  }

  bool has_pieces() const {
    return std::any_of(group_.nodes.begin(), group_.nodes.end(), [&](int n) {
      return g_.nodes()[n].op == OpKind::Concat || g_.nodes()[n].op == OpKind::Pad;
    });
  }

  // Piece versions (piece_versions.h): the first takes every concat's largest
  // piece and every pad's interior; then one per other piece of the first
  // concat it specialised that can hold a block, at most kMaxPieceVersions in
  // all. Each runs on the blocks its guards admit; the general body on the
  // rest.
  void emit_piece_versions(const BlockRange& range, const Expr& b) {
    Expr lin_lo = kb_.let("lin_lo", mul_i(b, kir::int_const(per_block_)));
    Expr lin_hi = kb_.let("lin_hi", kir::op(OpKind::Min, {add_i(lin_lo, kir::int_const(per_block_ - 1)),
                                                          sub_i(range.count, kir::int_const(1))}));
    emit_version_chain(
        per_block_, [&](const PieceAssumption& a) { return block_satisfies(a, lin_lo, lin_hi); },
        [&](const std::string& suffix, PieceAssumption* a) { emit_threads(range, b, suffix, a); });
  }

  // The if chain of piece versions over the blocks: version v's body (built by
  // `body` with suffix "_v<v>") where `holds` says its guards hold for the
  // whole block, else the next; the general body (suffix "", no assumption)
  // last. `run`: the consecutive elements a block covers.
  void emit_version_chain(int64_t run, const std::function<Expr(const PieceAssumption&)>& holds,
                          const std::function<void(const std::string&, PieceAssumption*)>& body) {
    std::vector<PieceAssumption> versions(1);
    versions.reserve(kMaxPieceVersions);
    versions[0].min_piece_elements = run;
    std::function<void(size_t)> chain = [&](size_t v) {
      kb_.if_then_after(
          [&] { return holds(versions[v]); },
          [&] {
            ex_.scoped([&] { body("_v" + std::to_string(v), &versions[v]); });
            if (v == 0 && !versions[0].concats.empty()) add_versions(versions, run);
          },
          [&] {
            if (v + 1 < versions.size()) {
              chain(v + 1);
            } else {
              ex_.scoped([&] { body("", nullptr); });
            }
          });
    };
    chain(0);
  }

  // `run`: the consecutive elements a block covers (per_block_, or a strip's columns).
  void add_versions(std::vector<PieceAssumption>& versions, int64_t run) const {
    const auto [node, taken] = versions[0].concats.front();
    for (size_t piece = 0; piece < g_.nodes()[node].inputs.size(); ++piece) {
      if (piece == taken || versions.size() == kMaxPieceVersions) continue;
      if (concat_piece_run(g_, g_.nodes()[node], piece) < run) continue;
      PieceAssumption a;
      a.min_piece_elements = run;
      a.forced_node = node;
      a.forced_piece = piece;
      versions.push_back(std::move(a));
    }
  }

  // The inputs the body read in place: of the roots' shape, at the roots'
  // index (each coordinate the same one, up to a constant shift: a stencil's
  // neighbours), so block `b + 1` of the input is what block `b + 1` reads.
  std::vector<std::string> prefetched(const BlockRange& range,
                                      const std::vector<std::pair<ValueId, Index>>& loads) const {
    std::vector<std::string> out;
    if (!prefetch_ || range.roots_by_shape.size() != 1) return out;
    const Shape& shape = g_.type(g_.nodes()[range.roots_by_shape.front().front()].output).shape;
    for (const auto& [v, idx] : loads) {
      const std::string& buffer = ex_.buffer(v);
      if (g_.type(v).shape != shape || std::find(out.begin(), out.end(), buffer) != out.end()) continue;
      if (in_place(idx)) out.push_back(buffer);
    }
    return out;
  }

  bool in_place(const Index& idx) const {
    std::map<std::string, int> vars;
    for (size_t k = 0; k < root_index_.size(); ++k) {
      if (root_index_[k]->kind == kir::ExprKind::Var) vars[root_index_[k]->name] = static_cast<int>(k);
    }
    if (idx.size() != root_index_.size()) return false;
    for (size_t k = 0; k < idx.size(); ++k) {
      const std::optional<AffineCoord> c = affine_in(idx[k], vars);
      if (!c || c->scale != 1 || c->var != root_index_[k]->name) return false;
    }
    return true;
  }

  // The thread loop of one block range; under `assume`, one piece version.
  void emit_threads(const BlockRange& range, const Expr& b, const std::string& suffix, PieceAssumption* assume) {
    int64_t static_count = 0;
    // A static count that fills every block needs no tail guard.
    const bool guard = !kir::is_int_constant(range.count, &static_count) || static_count % per_block_ != 0;
    emit_elements(
        range, [&](const Expr& u) { return (b * kLoopElementsPerThread + u) * threads_; }, range.count, guard,
        suffix, assume);
  }

  // per_block_ elements of `range` on one block's threads: part `u` of thread
  // `t` computes linear index part_first(u) + t, where below `limit` when
  // `guard`.
  void emit_elements(const BlockRange& range, const std::function<Expr(const Expr&)>& part_first, const Expr& limit,
                     bool guard, const std::string& suffix, PieceAssumption* assume) {
    ex_.assume(assume);
    kb_.block("thr" + suffix, threads_, [&](const Expr& t) {
      kb_.loop("part" + suffix, kir::int_const(kLoopElementsPerThread), kir::LoopLevel::Unroll, [&](const Expr& u) {
        ex_.take_loads();
        const Expr first = part_first(u);
        Expr lin = kb_.let("lin" + suffix, first + t);
        auto body = [&] {
          for (size_t s = 0; s < range.roots_by_shape.size(); ++s) {
            const std::vector<int>& roots = range.roots_by_shape[s];
            bool only_shape = range.roots_by_shape.size() == 1 && suffix.empty();
            std::string prefix = only_shape ? "i" : "i" + suffix + "_" + std::to_string(s) + "_";
            const Shape& shape = g_.type(g_.nodes()[roots.front()].output).shape;
            Index idx = ex_.delinearize(lin, shape, prefix);
            root_index_ = idx;
            if (assume) assume->add_index(idx, shape);
            for (int r : roots) {
              ValueId out = g_.nodes()[r].output;
              kb_.store(ex_.buffer(out), idx, ex_.eval(out, idx));
            }
          }
        };
        if (guard) {
          kb_.if_then(kir::op(OpKind::Lt, {lin, limit}), body);
        } else {
          body();
        }
        // The same part of the next block, while the rest of this one
        // computes (docs/lowering.md, Prefetch).
        const Expr ahead = add_i(first, kir::int_const(per_block_));
        for (const std::string& buffer : prefetched(range, ex_.take_loads())) {
          kb_.prefetch(buffer, ahead, kir::int_const(threads_));
        }
      });
    });
    ex_.assume(nullptr);
  }

  // Column strips (docs/lowering.md, Transposes): when a transpose moves its
  // operand's innermost axis, the row-major order reads that operand with a
  // stride of a whole row per element, touching a new page and cache line
  // every time. A block then covers kLoopElementsPerThread consecutive rows
  // of one strip of threads_ columns instead of one run of elements,
  // and consecutive blocks walk down the strip: the operand's lines and pages
  // are reused by the next rows while still cached. Writes stay contiguous
  // across threads. Static shapes whose strips fill every block only.
  bool strip_schedule_applies(const BlockRange& range) const {
    const Shape& shape = g_.type(g_.nodes()[range.roots_by_shape.front().front()].output).shape;
    if (shape.size() < 2) return false;
    int64_t rows = 1;
    for (size_t d = 0; d + 1 < shape.size(); ++d) {
      if (!shape[d].is_static()) return false;
      rows *= shape[d].extent();
    }
    if (!shape.back().is_static()) return false;
    const int64_t columns = shape.back().extent();
    if (columns % threads_ != 0 || rows % kLoopElementsPerThread != 0 ||
        rows < 2 * kLoopElementsPerThread) {
      return false;
    }
    for (int n : group_.nodes) {
      const Node& node = g_.nodes()[n];
      if (node.op != OpKind::Transpose) continue;
      const std::vector<int64_t> perm = transpose_permutation(node, g_.type(node.output).shape.size());
      if (!perm.empty() && perm.back() != static_cast<int64_t>(perm.size()) - 1) return true;
    }
    return false;
  }

  // The block's first row and column of strips (let once, before any version).
  std::pair<Expr, Expr> strip_origin(const BlockRange& range, const Expr& b) {
    const Shape& shape = g_.type(g_.nodes()[range.roots_by_shape.front().front()].output).shape;
    int64_t rows = 1;
    for (size_t d = 0; d + 1 < shape.size(); ++d) rows *= shape[d].extent();
    const Expr row_groups = kir::int_const(rows / kLoopElementsPerThread);
    return {kb_.let("row0", mul_i(kir::op(OpKind::Rem, {b, row_groups}), kir::int_const(kLoopElementsPerThread))),
            kb_.let("col0", mul_i(kir::op(OpKind::Div, {b, row_groups}), kir::int_const(threads_)))};
  }

  void emit_column_strips(const BlockRange& range, const Expr& b) {
    const auto [first_row, first_column] = strip_origin(range, b);
    emit_strip_body(range, first_row, first_column, "", nullptr);
  }

  void emit_strip_body(const BlockRange& range, const Expr& first_row, const Expr& first_column,
                       const std::string& suffix, PieceAssumption* assume) {
    const std::vector<int>& roots = range.roots_by_shape.front();
    const Shape& shape = g_.type(g_.nodes()[roots.front()].output).shape;
    const Shape leading(shape.begin(), shape.end() - 1);
    ex_.assume(assume);
    kb_.block("thr" + suffix, threads_, [&](const Expr& t) {
      kb_.loop("part" + suffix, kir::int_const(kLoopElementsPerThread), kir::LoopLevel::Unroll, [&](const Expr& u) {
        const std::string prefix = "i" + suffix + (suffix.empty() ? "" : "_");
        Index idx = ex_.delinearize(add_i(first_row, u), leading, prefix);
        idx.push_back(kb_.let(prefix + std::to_string(shape.size() - 1), add_i(first_column, t)));
        if (assume) assume->add_index(idx, shape);
        for (int r : roots) {
          ValueId out = g_.nodes()[r].output;
          kb_.store(ex_.buffer(out), idx, ex_.eval(out, idx));
        }
      });
    });
    ex_.assume(nullptr);
  }

  // Piece versions of column strips, each guarded by the block's rows and
  // columns (strip_satisfies): a strip inside one piece of a concat along the
  // last axis runs that piece alone (a concat of transposed heads: GPT-2's
  // gradient of its qkv product).
  void emit_strip_versions(const BlockRange& range, const Expr& b) {
    const std::pair<Expr, Expr> origin = strip_origin(range, b);
    const Expr first_row = origin.first, first_column = origin.second;
    const Expr last_row = add_i(first_row, kir::int_const(kLoopElementsPerThread - 1));
    const Expr last_column = add_i(first_column, kir::int_const(threads_ - 1));
    emit_version_chain(
        threads_,
        [&](const PieceAssumption& a) { return strip_satisfies(a, first_row, last_row, first_column, last_column); },
        [&](const std::string& suffix, PieceAssumption* a) {
          emit_strip_body(range, first_row, first_column, suffix, a);
        });
  }

    static constexpr size_t kMaxPieceVersions = 4;

  const Graph& g_;
  const FusionGroup& group_;
  // The block's threads (loop_block_threads) and the elements it covers.
  int64_t threads_ = kLoopBlockThreads;
  int64_t per_block_ = kLoopBlockThreads * kLoopElementsPerThread;
  const bool prefetch_;
  GroupSignature signature_;
  Index root_index_;  // of the part being built
  kir::KernelBuilder kb_;
  GroupExpr ex_{g_, group_, kb_};
};

}  // namespace

bool is_loop_lowerable(OpKind op) {
  if (is_elementwise(op)) return true;
  switch (op) {
    case OpKind::Broadcast:
    case OpKind::Reshape:
    case OpKind::Transpose:
    case OpKind::Slice:
    case OpKind::Concat:
    case OpKind::Pad:
    case OpKind::Iota:
    case OpKind::Constant:
    case OpKind::Gather:
    case OpKind::Dot: return true;  // the stitch planner's small dots (docs/lowering.md, Small dots)
    default: return false;
  }
}

GroupSignature loop_group_signature(const Graph& g, const FusionGroup& group) {
  GroupSignature sig;
  std::set<int> seen;
  std::set<std::string> symbols;
  auto note_symbols = [&](ValueId v) {
    for (const Dim& d : g.type(v).shape) {
      if (d.is_symbolic()) symbols.insert(d.name());
    }
  };
  for (int n : group.nodes) {
    for (ValueId in : g.nodes()[n].inputs) {
      int producer = g.value(in).producer;
      if ((producer >= 0 && group.contains(producer)) || !seen.insert(in.index).second) continue;
      sig.inputs.push_back(in);
      note_symbols(in);
    }
  }
  for (int r : group.roots) sig.outputs.push_back(g.nodes()[r].output);
  for (int n : group.nodes) sig.status |= g.nodes()[n].op == OpKind::Gather;
  // A symbol may appear only inside the group (a broadcast to [B, 3] reduced
  // over B), and the kernel still iterates over it.
  for (int n : group.nodes) note_symbols(g.nodes()[n].output);
  sig.symbols.assign(symbols.begin(), symbols.end());
  return sig;
}

int64_t loop_block_threads(int64_t innermost) {
  if (innermost <= 0 || innermost % kLoopBlockThreads == 0) return kLoopBlockThreads;
  int64_t best = 0;
  auto score = [](int64_t d) {
    // Whole vectors first (up to 16 lanes), then the nearest to 256 threads.
    const int lanes = std::min(std::countr_zero(static_cast<uint64_t>(d)), 4);
    const int distance = std::abs(static_cast<int>(std::bit_width(static_cast<uint64_t>(d))) -
                                  static_cast<int>(std::bit_width(static_cast<uint64_t>(kLoopBlockThreads))));
    return std::pair{-lanes, distance};
  };
  for (int64_t d = kMinLoopBlockThreads; d <= kMaxLoopBlockThreads && d <= innermost; ++d) {
    if (innermost % d == 0 && (best == 0 || score(d) < score(best))) best = d;
  }
  return best == 0 ? kLoopBlockThreads : best;
}

int64_t loop_block_threads(const Graph& g, const FusionGroup& group) {
  const Shape& root = g.type(g.nodes()[group.roots.front()].output).shape;
  if (root.size() < 2 || !root.back().is_static()) return kLoopBlockThreads;
  bool by_coordinates = false;
  for (int r : group.roots) {
    // Roots of other shapes delinearise the same linear index: one innermost extent for all.
    const Shape& shape = g.type(g.nodes()[r].output).shape;
    if (shape.size() < 2 || shape.back() != root.back() || element_count_expr(shape) != element_count_expr(root)) {
      return kLoopBlockThreads;
    }
    by_coordinates = by_coordinates || shape != root || reads_by_coordinates(g, group, shape);
  }
  return by_coordinates ? loop_block_threads(root.back().extent()) : kLoopBlockThreads;
}

kir::Kernel lower_loop_group(const Graph& g, const FusionGroup& group, const std::string& kernel_name,
                             bool prefetch) {
  return LoopLowerer(g, group, kernel_name, prefetch).run();
}

}  // namespace stitch::lower
