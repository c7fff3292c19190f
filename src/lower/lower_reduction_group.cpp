// Reduction-group lowering: the roots share one input shape and one set of
// reduced axes, so one kernel iterates (output element, reduced element) and
// keeps one accumulator per root. Producers are evaluated inline at each
// reduced element through GroupExpr. Floats accumulate in f32 (f64 for f64):
// the emitters cannot reduce f16/bf16 and the Graph IR's rule asks for f32.
#include "lower/lower_reduction_group.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>

#include "kir/kernel_builder.h"
#include "lower/group_expr.h"
#include "lower/reduction_ops.h"
#include "lower/row_nest.h"
#include "stitch/error.h"

namespace stitch::lower {
namespace {

using kir::Expr;

// Every reduction op (reduce_* and argmax/argmin) lowers as a root.
bool is_supported_reduction(OpKind op) { return is_reduction(op); }

bool is_arg(OpKind op) { return op == OpKind::ArgMax || op == OpKind::ArgMin; }

// An arg reduction's index before its thread has seen an element: larger than
// every real index, so a thread's first element always replaces it and the
// combine's tie rule (smaller index wins) never picks it over a real one.
constexpr int64_t kNoIndex = std::numeric_limits<int64_t>::max();

// argmax starts from max's identity, argmin from min's.
OpKind identity_op(OpKind op) {
  if (op == OpKind::ArgMax) return OpKind::ReduceMax;
  if (op == OpKind::ArgMin) return OpKind::ReduceMin;
  return op;
}

Expr identity(OpKind op, DType t) { return reduction_identity(op, t); }

const Node& root_node(const Graph& g, const FusionGroup& group, size_t k) { return g.nodes()[group.roots[k]]; }

// The dtype a root accumulates in: its result's, widened, or for argmax/argmin
// its input's (the index is an i64 beside it).
DType accumulator_dtype(const Graph& g, const Node& n) {
  return lower::accumulator_dtype(g.type(is_arg(n.op) ? n.inputs[0] : n.output).dtype);
}

// One root's running state: the combined value, and for argmax/argmin the
// index of the extremum so far.
struct Accumulator {
  Expr value;
  Expr index;
};

class ReductionLowerer {
 public:
  ReductionLowerer(const Graph& g, const FusionGroup& group, const std::string& name,
                   const schedule::RowSchedule& schedule, const schedule::ColumnSchedule& column)
      : g_(g), group_(group), kb_(name), schedule_(schedule), column_(column) {}

  kir::Kernel run() {
    std::string problem = reduction_group_problem(g_, group_);
    STITCH_ASSERT(problem.empty(), "lower_reduction_group: " + problem);
    const Node& first = root_node(g_, group_, 0);
    in_shape_ = g_.type(first.inputs[0]).shape;
    out_shape_ = g_.type(first.output).shape;
    for (int64_t a : first.attrs.get("axes").as_ints()) reduced_.insert(static_cast<size_t>(a));
    for (size_t d = 0; d < in_shape_.size(); ++d) {
      if (reduced_.count(d)) red_shape_.push_back(in_shape_[d]);
    }
    ex_.declare_params(loop_group_signature(g_, group_));

    // Row schedule when the reduced axes are the innermost ones: a block's
    // threads then read consecutive elements of one row.
    bool row = true;
    for (size_t d = in_shape_.size() - red_shape_.size(); d < in_shape_.size(); ++d) row = row && reduced_.count(d);
    if (row) {
      lower_rows();
    } else if (column_.tiled()) {
      lower_column_tiles();
    } else {
      lower_columns();
    }
    return kb_.finish();
  }

 private:
  // The input index of reduced element `r` (an index into red_shape_) of
  // output element `out` (an index into out_shape_; keepdims 1s skipped).
  Index input_index(const Index& out, const Index& r) {
    Index idx;
    size_t ko = 0, kr = 0;
    bool keepdims = out_shape_.size() == in_shape_.size();
    for (size_t d = 0; d < in_shape_.size(); ++d) {
      if (reduced_.count(d)) {
        idx.push_back(r[kr++]);
        if (keepdims) ++ko;
      } else {
        idx.push_back(out[ko++]);
      }
    }
    return idx;
  }

  // Declares one accumulator per root, initialised to its identity.
  std::vector<Accumulator> init_accumulators() {
    std::vector<Accumulator> acc;
    for (size_t k = 0; k < group_.roots.size(); ++k) {
      const Node& n = root_node(g_, group_, k);
      Accumulator a;
      a.value = kb_.let("acc" + std::to_string(k), identity(identity_op(n.op), accumulator_dtype(g_, n)));
      if (is_arg(n.op)) a.index = kb_.let("accidx" + std::to_string(k), kir::int_const(kNoIndex));
      acc.push_back(a);
    }
    return acc;
  }

  // argmax/argmin step over elements in increasing index order: take `v` when
  // it is strictly beyond the best (so ties keep the first index), when it is
  // the first NaN (NaN counts as the extreme), or when nothing was seen yet.
  void accumulate_arg(OpKind op, const Accumulator& a, const Expr& v, const Expr& index) {
    Expr take = kir::op(op == OpKind::ArgMax ? OpKind::Gt : OpKind::Lt, {v, a.value});
    if (is_float(v.dtype())) {
      Expr first_nan = kir::op(OpKind::And, {kir::op(OpKind::IsNan, {v}),
                                             kir::op(OpKind::Not, {kir::op(OpKind::IsNan, {a.value})})});
      take = kir::op(OpKind::Or, {take, first_nan});
    }
    take = kir::op(OpKind::Or, {take, kir::op(OpKind::Eq, {a.index, kir::int_const(kNoIndex)})});
    Expr t = kb_.let(ex_.fresh("take"), take);
    kb_.assign(a.value, kir::op(OpKind::Select, {t, v, a.value}));
    kb_.assign(a.index, kir::op(OpKind::Select, {t, index, a.index}));
  }

  // Folds reduced element `lin` (a linear index over red_shape_) into each
  // accumulator; the producers shared by sibling roots are evaluated once.
  // An arg reduction has one reduced axis, so `lin` is the index along it.
  void accumulate(const std::vector<Accumulator>& acc, const Index& out, const Expr& lin) {
    Index idx = input_index(out, ex_.delinearize(lin, red_shape_));
    for (size_t k = 0; k < group_.roots.size(); ++k) {
      const Node& n = root_node(g_, group_, k);
      Expr v = ex_.eval(n.inputs[0], idx);
      if (v.dtype() != acc[k].value.dtype()) v = kir::cast(v, acc[k].value.dtype());
      if (is_arg(n.op)) {
        accumulate_arg(n.op, acc[k], v, lin);
      } else {
        kb_.assign(acc[k].value, kir::op(combine_op(n.op), {acc[k].value, v}));
      }
    }
  }

  // The root's value from its full accumulation: mean divides by the count,
  // f16/bf16 round once from the f32 accumulator.
  Expr finish_value(size_t k, const Accumulator& total) {
    const Node& n = root_node(g_, group_, k);
    if (is_arg(n.op)) return total.index;
    return finish_reduction(g_, n, total.value, element_count_expr(red_shape_));
  }

  // One schedule of docs/lowering.md, Row schedules: the row's threads stride
  // over it (row_nest.h), then one reduction per root combines them.
  void lower_rows() {
    Expr len = element_count_expr(red_shape_);
    RowNest nest(kb_, schedule_, element_count_expr(out_shape_), len);
    std::vector<std::string> scratch;
    for (size_t k = 0; k < group_.roots.size(); ++k) {
      const Node& n = root_node(g_, group_, k);
      scratch.push_back("scratch" + std::to_string(k));
      nest.declare_scratch(scratch.back(), accumulator_dtype(g_, n));
      if (is_arg(n.op)) nest.declare_scratch(scratch.back() + "_index", DType::i64);
    }
    nest.emit([&](const RowThread& r) {
      Index out = ex_.delinearize(r.row, out_shape_, "o");
      std::vector<Accumulator> acc = init_accumulators();
      kb_.serial("step", nest.steps(), [&](const Expr& s) {
        ex_.scoped([&] {
          Expr lin = kb_.let(ex_.fresh("r"), nest.position(r, s));
          if (nest.guard()) {
            kb_.if_then(kir::op(OpKind::Lt, {lin, len}), [&] { ex_.scoped([&] { accumulate(acc, out, lin); }); });
          } else {
            accumulate(acc, out, lin);
          }
        });
      });
      std::vector<Accumulator> totals;
      for (size_t k = 0; k < group_.roots.size(); ++k) {
        OpKind op = block_op(root_node(g_, group_, k).op);
        const std::string name = "total" + std::to_string(k);
        if (is_arg(op)) {
          auto [value, index] =
              nest.arg_reduce(op, acc[k].value, acc[k].index, name, name + "_index", scratch[k], scratch[k] + "_index");
          totals.push_back({value, index});
        } else {
          totals.push_back({nest.reduce(op, acc[k].value, name, scratch[k]), Expr()});
        }
      }
      nest.if_leader(r, [&] {
        for (size_t k = 0; k < group_.roots.size(); ++k) {
          kb_.store(ex_.buffer(root_node(g_, group_, k).output), out, finish_value(k, totals[k]));
        }
      });
    });
  }

  // One thread per output element, looping serially over the reduced
  // elements: correct for any axes; neighbouring threads read neighbouring
  // outputs' elements (coalesced on a GPU). The threads past the end read the
  // last output's elements and do not store, so the loop needs no
  // thread-dependent guard and the CPU emitter can vectorise across threads.
  void lower_columns() {
    Expr count = element_count_expr(out_shape_);
    Expr len = element_count_expr(red_shape_);
    column_threads(kb_, count, column_.width, [&](const ColumnThread& thread) {
      Index out = ex_.delinearize(thread.read, out_shape_, "o");
      std::vector<Accumulator> acc = init_accumulators();
      kb_.serial("red", len, [&](const Expr& r) { ex_.scoped([&] { accumulate(acc, out, r); }); });
      auto store = [&] {
        for (size_t k = 0; k < group_.roots.size(); ++k) {
          kb_.store(ex_.buffer(root_node(g_, group_, k).output), out, finish_value(k, acc[k]));
        }
      };
      if (thread.guard) {
        kb_.if_then(kir::op(OpKind::Lt, {thread.lin, count}), store);
      } else {
        store();
      }
    });
  }

  // The block-tile column schedule (docs/lowering.md, Column schedules): a
  // block owns `width` columns and its `groups` row groups split each
  // column's reduced elements (group q takes q, q + groups, ...); the partials
  // meet in shared memory after a barrier, and one thread per column combines
  // them in group order and stores. Not for argmax/argmin (the selector
  // keeps those on a thread per column).
  void lower_column_tiles() {
    const int64_t groups = column_.groups, width = column_.width, threads = column_.threads();
    Expr count = element_count_expr(out_shape_);
    Expr len = element_count_expr(red_shape_);
    const ColumnGeometry geometry = column_geometry(count, width);
    const Expr steps = ceil_div_i(len, groups);
    for (size_t k = 0; k < group_.roots.size(); ++k) {
      const Node& n = root_node(g_, group_, k);
      STITCH_ASSERT(!is_arg(n.op), "lower_column_tiles: argmax/argmin take a thread per column");
      kb_.shared("partial" + std::to_string(k), accumulator_dtype(g_, n), threads);
    }
    kb_.launch(geometry.blocks, threads);
    kb_.grid("blk", geometry.blocks, [&](const Expr& b) {
      // Column `col` of the block's tile, read clamped as the thread-per-column
      // schedule does, so the strided loop has no column guard.
      auto column_of = [&](const Expr& t, Expr* lin) {
        Expr col = kb_.let(ex_.fresh("col"), kir::op(OpKind::Rem, {t, kir::int_const(width)}));
        *lin = kb_.let(ex_.fresh("lin"), add_i(mul_i(b, kir::int_const(width)), col));
        return geometry.guard ? kb_.let(ex_.fresh("lin_read"), kir::op(OpKind::Min, {*lin, sub_i(count, kir::int_const(1))}))
                              : *lin;
      };
      kb_.block("thr", threads, [&](const Expr& t) {
        Expr lin;
        Index out = ex_.delinearize(column_of(t, &lin), out_shape_, "o");
        Expr group = kb_.let("grp", kir::op(OpKind::Div, {t, kir::int_const(width)}));
        std::vector<Accumulator> acc = init_accumulators();
        kb_.serial("step", steps, [&](const Expr& s) {
          ex_.scoped([&] {
            Expr r = kb_.let(ex_.fresh("r"), add_i(mul_i(s, kir::int_const(groups)), group));
            kb_.if_then(kir::op(OpKind::Lt, {r, len}), [&] { ex_.scoped([&] { accumulate(acc, out, r); }); });
          });
        });
        for (size_t k = 0; k < group_.roots.size(); ++k) kb_.store("partial" + std::to_string(k), {t}, acc[k].value);
        kb_.barrier();
        ex_.scoped([&] {
          kb_.if_then(kir::op(OpKind::Lt, {t, kir::int_const(width)}), [&] {
            ex_.scoped([&] {
              Expr lin_after;
              Index at = ex_.delinearize(column_of(t, &lin_after), out_shape_, "c");
              for (size_t k = 0; k < group_.roots.size(); ++k) {
                const Node& n = root_node(g_, group_, k);
                const std::string partial = "partial" + std::to_string(k);
                Expr total = kb_.let(ex_.fresh("total"), kb_.load(partial, {t}));
                kb_.serial(ex_.fresh("q"), kir::int_const(groups - 1), [&](const Expr& q) {
                  Expr at_group = add_i(t, mul_i(add_i(q, kir::int_const(1)), kir::int_const(width)));
                  kb_.assign(total, kir::op(combine_op(n.op), {total, kb_.load(partial, {at_group})}));
                });
                auto store = [&] { kb_.store(ex_.buffer(n.output), at, finish_value(k, {total, Expr()})); };
                if (geometry.guard) {
                  kb_.if_then(kir::op(OpKind::Lt, {lin_after, count}), store);
                } else {
                  store();
                }
              }
            });
          });
        });
      });
    });
  }

  const Graph& g_;
  const FusionGroup& group_;
  kir::KernelBuilder kb_;
  schedule::RowSchedule schedule_;
  schedule::ColumnSchedule column_;
  GroupExpr ex_{g_, group_, kb_};
  Shape in_shape_, out_shape_, red_shape_;
  std::set<size_t> reduced_;
};

}  // namespace

std::string reduction_group_problem(const Graph& g, const FusionGroup& group) {
  if (group.kind != GroupKind::Reduction) return "not a reduction group";
  if (group.roots.empty()) return "group has no roots";
  for (int n : group.nodes) {
    const Node& node = g.nodes()[n];
    bool root = std::find(group.roots.begin(), group.roots.end(), n) != group.roots.end();
    if (root ? !is_supported_reduction(node.op) : !is_loop_lowerable(node.op)) {
      return "op " + std::string(op_name(node.op)) + " in a reduction group";
    }
  }
  const Node& first = g.nodes()[group.roots.front()];
  for (int r : group.roots) {
    const Node& n = g.nodes()[r];
    if (is_arg(n.op)) {
      // numpy raises here and so does the interpreter; a kernel would return an index.
      const Dim& axis = g.type(n.inputs[0]).shape[static_cast<size_t>(n.attrs.get("axes").as_ints().at(0))];
      if (axis.is_static() && axis.extent() == 0) return std::string(op_name(n.op)) + " over an empty axis";
    }
    if (g.type(n.inputs[0]).shape != g.type(first.inputs[0]).shape ||
        g.type(n.output).shape != g.type(first.output).shape ||
        n.attrs.get("axes").as_ints() != first.attrs.get("axes").as_ints()) {
      return "reduction roots of different shapes or axes";
    }
  }
  return "";
}

kir::Kernel lower_reduction_group(const Graph& g, const FusionGroup& group, const std::string& kernel_name,
                                  const schedule::RowSchedule& schedule, const schedule::ColumnSchedule& column) {
  return ReductionLowerer(g, group, kernel_name, schedule, column).run();
}

}  // namespace stitch::lower
