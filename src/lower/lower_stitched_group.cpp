// Stitched-group lowering (docs/lowering.md, Stitched groups). Each reduction
// is one phase of the kernel: its input is accumulated over the row (reading
// totals of earlier phases as block-uniform values, which GroupExpr::bind
// supplies), then combined; a last phase stores the roots. A later phase
// reads the row from global memory again (on the CPU it is still in cache),
// from a shared-memory row cache, or, on the GPU where it fits, from the
// registers the first phase loaded it into (GroupSchedule::held).
#include "lower/lower_stitched_group.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "fusion/stitched_group.h"
#include "kir/kernel_builder.h"
#include "lower/group_expr.h"
#include "lower/lower_reduction_group.h"
#include "lower/reduction_ops.h"
#include "kir/printer.h"
#include "lower/row_nest.h"
#include "schedule/group_shared_memory.h"
#include "schedule/held_rows.h"
#include "stitch/error.h"

namespace stitch::lower {
namespace {

using kir::Expr;

// A root and how its index follows from the domain's (stitched_root_index).
struct Root {
  ValueId value;
  std::vector<int> index_map;
};

class StitchedLowerer {
 public:
  StitchedLowerer(const Graph& g, const FusionGroup& group, const std::string& name,
                  const schedule::RowSchedule& schedule, bool prefetch, const schedule::GroupSharedMemory* shared,
                  const std::vector<int>& held, int64_t held_vector, int64_t column_width)
      : g_(g),
        group_(group),
        kb_(name),
        schedule_(schedule),
        prefetch_(prefetch),
        shared_(shared),
        held_(held),
        held_vector_(held_vector),
        column_width_(column_width) {}

  kir::Kernel run() {
    std::string problem = stitched_group_problem(g_, group_.nodes, group_.roots, &domain_);
    STITCH_ASSERT(problem.empty(), "lower_stitched_group: " + problem);
    outer_ = domain_.outer_shape();
    for (size_t d : domain_.axes) red_shape_.push_back(domain_.shape[d]);
    for (int r : group_.roots) {
      ValueId v = g_.nodes()[r].output;
      if (stitched_early_root(g_, group_.nodes, domain_, r)) {
        early_roots_.push_back(v);
        continue;
      }
      Root root{v, *stitched_root_index(domain_, g_.type(v).shape)};
      (g_.type(v).shape == domain_.shape ? full_roots_ : row_roots_).push_back(root);
    }
    int k = 0;
    for (size_t p = 0; p < domain_.phases.size(); ++p) {
      for (int n : domain_.phases[p]) number_[n] = k++, level_[n] = static_cast<int>(p) + 1;
    }
    for (int n : group_.nodes) {
      for (ValueId v : node(n).inputs) {
        auto it = level_.find(g_.value(v).producer);
        if (it != level_.end() && group_.contains(g_.value(v).producer)) level_[n] = std::max(level_[n], it->second);
      }
    }
    ex_.declare_params(loop_group_signature(g_, group_));
    if (domain_.innermost()) {
      lower_rows();
    } else {
      lower_columns();
    }
    return kb_.finish();
  }

 private:
  bool is_reduced(size_t d) const { return std::binary_search(domain_.axes.begin(), domain_.axes.end(), d); }

  // The domain index of reduced element `r` (over red_shape_) of row `out`
  // (over outer_). With no `r`, the reduced positions hold 0 (never read:
  // per-row roots index only outer positions).
  Index domain_index(const Index& out, const Index& r) const {
    Index idx;
    size_t ko = 0, kr = 0;
    for (size_t d = 0; d < domain_.shape.size(); ++d) {
      idx.push_back(is_reduced(d) ? (r.empty() ? kir::int_const(0) : r[kr++]) : out[ko++]);
    }
    return idx;
  }

  static Index root_index(const Root& root, const Index& domain) {
    Index idx;
    for (int d : root.index_map) idx.push_back(d < 0 ? kir::int_const(0) : domain[static_cast<size_t>(d)]);
    return idx;
  }

  const Node& node(int n) const { return g_.nodes()[n]; }
  std::string name(const char* prefix, int n) const { return prefix + std::to_string(number_.at(n)); }

  std::vector<Expr> init_accumulators(const std::vector<int>& phase) {
    std::vector<Expr> acc;
    for (int n : phase) {
      DType t = accumulator_dtype(g_.type(node(n).output).dtype);
      acc.push_back(kb_.let(name("acc", n), reduction_identity(node(n).op, t)));
    }
    return acc;
  }

  // Folds the element at `idx` into each reduction of the phase.
  void accumulate(const std::vector<int>& phase, const std::vector<Expr>& acc, const Index& idx) {
    for (size_t k = 0; k < phase.size(); ++k) {
      Expr v = ex_.eval(node(phase[k]).inputs[0], idx);
      if (v.dtype() != acc[k].dtype()) v = kir::cast(v, acc[k].dtype());
      kb_.assign(acc[k], kir::op(combine_op(node(phase[k]).op), {acc[k], v}));
    }
  }

  // From here on the reduction's value is `total`, finished, for every reader.
  void bind_total(int n, const Expr& total) {
    ex_.bind(node(n).output, kb_.let(name("red", n), finish_reduction(g_, node(n), total, element_count_expr(red_shape_))));
  }

  // Evaluates, once per row, each per-row value that reads no total of a
  // later phase than `phases_done`: with 0, before the first phase, those that
  // read no total at all (a cross-entropy backward's checked target index,
  // per-element it was 4x the kernel's time), then after each phase those that
  // read its totals (LayerNorm's rsqrt of the variance). The memo gives these
  // row-uniform locals to every later reader, instead of a recomputation
  // inside each strided loop.
  void hoist_row_values(const Index& out, int phases_done) {
    Index domain = domain_index(out, {});
    for (int n : group_.nodes) {
      ValueId v = node(n).output;
      const auto level = level_.find(n);
      if (is_reduction(node(n).op) || (level == level_.end() ? 0 : level->second) > phases_done) continue;
      std::optional<std::vector<int>> map = stitched_root_index(domain_, g_.type(v).shape);
      if (!map || g_.type(v).shape == domain_.shape) continue;
      ex_.eval(v, root_index(Root{v, *map}, domain));
    }
  }

  void store_full_roots(const Index& idx) {
    for (size_t k = 0; k < full_roots_.size(); ++k) {
      const Root& root = full_roots_[k];
      if (staging_) {
        kb_.store("row_out" + std::to_string(k), {vector_j_}, ex_.eval(root.value, idx));
      } else {
        kb_.store(ex_.buffer(root.value), idx, ex_.eval(root.value, idx));
      }
    }
  }

  // The early roots at domain index `idx`: one of another shape at the element
  // of the same linear index, which the reshapes the reductions read it
  // through reach (GroupExpr::reshaped), so its value is the one the phase
  // computed.
  void store_early_roots(const Index& idx) {
    for (ValueId v : early_roots_) {
      const Shape& shape = g_.type(v).shape;
      const Index at = shape == domain_.shape ? idx : ex_.reshaped(idx, domain_.shape, shape);
      kb_.store(ex_.buffer(v), at, ex_.eval(v, at));
    }
  }

  void store_row_roots(const Index& out) {
    Index domain = domain_index(out, {});
    for (const Root& root : row_roots_) {
      Index idx = root_index(root, domain);
      kb_.store(ex_.buffer(root.value), idx, ex_.eval(root.value, idx));
    }
  }

  // The block composition of FusionStitching (2019 §4) through shared memory:
  // an expensive value of the row's shape that one phase computes and a later
  // phase reads again (softmax's exp) is kept for the row in a shared buffer
  // instead of being recomputed. Each thread reads back only the elements it
  // wrote, so no barrier is needed. Which values fit is the shared-memory
  // plan's decision (schedule/group_shared_memory.h): one slice per row the
  // block owns, scratch included, within the block's budget.
  void declare_row_caches(const RowNest& nest) {
    // The schedule stage's plan (pipeline/schedule_groups.h, complete_schedule).
    STITCH_ASSERT(shared_, "a stitched row kernel with a static row has the schedule's shared-memory plan");
    const schedule::GroupSharedMemory& plan = *shared_;
    for (int n : plan.cached) {
      cache_[n] = "row_cache" + std::to_string(cache_.size());
      kb_.shared(cache_[n], g_.type(node(n).output).dtype, nest.rows_per_block() * nest.static_len());
    }
    place_in_arena(plan);
    // Past the static limit every buffer must be in the one (dynamic) arena.
    if (kb_.shared_bytes() > kir::kStaticSharedBytes && !arena_placed_) kb_.place_shared_sequentially();
  }

  // Lays the kernel's shared buffers out as the plan says when that saves
  // space and is race-free without more barriers: every reused buffer is a
  // block reduction's scratch, whose helper ends with a barrier after its last
  // read. A row cache is read back element by element during later phases,
  // so a buffer over it could be written by one thread while another still
  // reads: such plans keep separate buffers.
  void place_in_arena(const schedule::GroupSharedMemory& plan) {
    if (!plan.plan.ok() || plan.plan.arena_bytes >= plan.plan.requested_bytes) return;
    std::map<std::string, int64_t> offsets;
    for (size_t i = 0; i < plan.request_nodes.size(); ++i) {
      const int n = plan.request_nodes[i];
      for (int reused : plan.plan.allocations[i].reuses) {
        if (!is_reduction(node(plan.request_nodes[static_cast<size_t>(reused)]).op)) return;
      }
      offsets[is_reduction(node(n).op) ? name("scratch", n) : cache_.at(n)] = plan.plan.allocations[i].offset;
    }
    kb_.place_shared(plan.plan.arena_bytes, offsets);
    arena_placed_ = true;
  }

  bool outside(int v) const {
    const int producer = g_.value(ValueId{v}).producer;
    return producer < 0 || !group_.contains(producer);
  }

  // Rows in registers (GroupSchedule::held): one local array per held value,
  // a slot per step of the thread over its row.
  void declare_held(int64_t steps) {
    held_filled_.clear();
    for (size_t k = 0; k < held_.size(); ++k) {
      const std::string name = "row_reg" + std::to_string(k);
      held_arrays_[held_[k]] = name;
      kb_.local_array(name, g_.type(ValueId{held_[k]}).dtype, steps);
      if (outside(held_[k])) ex_.hold(ValueId{held_[k]});
    }
    // Vector steps stage each full root's elements, then store them as one
    // vector; the inputs read along the row and not held (LayerNorm's gamma,
    // a residual LayerNorm's x) are loaded a vector at a time too.
    if (held_vector_ > 1) {
      for (size_t k = 0; k < full_roots_.size(); ++k) {
        kb_.local_array("row_out" + std::to_string(k), g_.type(full_roots_[k].value).dtype, held_vector_);
      }
      row_inputs_.clear();
      for (int n : group_.nodes) {
        for (ValueId v : node(n).inputs) {
          const bool full = g_.type(v).shape == domain_.shape;
          if (!outside(v.index) || (!full && g_.type(v).shape != red_shape_) ||
              std::find(held_.begin(), held_.end(), v.index) != held_.end() ||
              std::find(row_inputs_.begin(), row_inputs_.end(), v.index) != row_inputs_.end()) {
            continue;
          }
          kb_.local_array("row_in" + std::to_string(row_inputs_.size()), g_.type(v).dtype, held_vector_);
          row_inputs_.push_back(v.index);
          ex_.hold(v);
        }
      }
    }
  }

  // The values from outside the group that computing `v` reads within one
  // phase: the walk stops at reductions (their totals are row-uniform) and
  // at values already held in registers.
  void outside_reads(ValueId v, std::set<int>& out) const {
    const int producer = g_.value(v).producer;
    if (held_filled_.count(v.index)) return;
    if (producer < 0 || !group_.contains(producer)) {
      out.insert(v.index);
    } else if (!is_reduction(node(producer).op)) {
      for (ValueId in : node(producer).inputs) outside_reads(in, out);
    }
  }

  // The positions along the row of domain index `idx`: how an input of the
  // row's shape, broadcast along the rows, is read at it.
  Index row_part(const Index& idx) const { return Index(idx.end() - static_cast<long>(red_shape_.size()), idx.end()); }
  // Where staged input `v` is read at domain index `idx`: there, or along the row only.
  Index staged_index(int v, const Index& idx) const {
    return g_.type(ValueId{v}).shape == domain_.shape ? idx : row_part(idx);
  }

  // Before a step's body: each held value already in registers is read back
  // from its slot; a held input not yet there is loaded and kept.
  void read_held(const Expr& step, const Index& idx, std::set<int>& newly) {
    for (size_t k = 0; k < row_inputs_.size() && vector_j_.defined(); ++k) {
      if (!phase_reads_.count(row_inputs_[k])) continue;
      const Expr e = kb_.let(ex_.fresh("h"), kb_.load("row_in" + std::to_string(k), {vector_j_}));
      ex_.remember(ValueId{row_inputs_[k]}, staged_index(row_inputs_[k], idx), e);
    }
    for (int v : held_) {
      const std::string& array = held_arrays_.at(v);
      if (held_filled_.count(v) || held_loading_.count(v)) {
        ex_.remember(ValueId{v}, idx, kb_.let(ex_.fresh("h"), kb_.load(array, {step})));
      } else if (outside(v)) {
        Expr e = kb_.let(ex_.fresh("x"), ex_.eval(ValueId{v}, idx));
        kb_.store(array, {step}, e);
        ex_.remember(ValueId{v}, idx, e);
        newly.insert(v);
      }
    }
  }

  // After a step's body: the held values it computed are kept.
  void keep_held(const Expr& step, const Index& idx, std::set<int>& newly) {
    for (int v : held_) {
      if (held_filled_.count(v) || outside(v)) continue;
      if (std::optional<Expr> e = ex_.memoised(ValueId{v}, idx)) {
        kb_.store(held_arrays_.at(v), {step}, *e);
        newly.insert(v);
      }
    }
  }

  // The row schedule of a reduction group (row_nest.h): the row's threads
  // stride over it once per phase, each phase ending in the row's reduction.
  void lower_rows() {
    Expr len = element_count_expr(red_shape_);
    RowNest nest(kb_, schedule_, element_count_expr(outer_), len);
    for (const auto& phase : domain_.phases) {
      for (int n : phase) nest.declare_scratch(name("scratch", n), accumulator_dtype(g_.type(node(n).output).dtype));
    }
    if (nest.static_len() > 0) declare_row_caches(nest);
    int64_t held_steps = 0;
    STITCH_ASSERT(held_.empty() || (kir::is_int_constant(nest.steps(), &held_steps) && held_steps > 0),
                  "rows held in registers need a static row");
    STITCH_ASSERT(held_vector_ == 1 || (held_steps % held_vector_ == 0 && !nest.guard()),
                  "vector steps need whole vectors of every thread's row");
    if (held_vector_ > 1) kb_.align_buffers(schedule::kHeldVectorBytes);
    nest.emit([&](const RowThread& r) {
      ex_.take_loads();
      if (!held_.empty()) declare_held(held_steps);
      Index out = ex_.delinearize(r.row, outer_, "o");
      // Visits every element of the row: fn(domain index), in a fresh memo
      // scope; values cached by earlier phases are read back, and cacheable
      // values this phase computes are cached.
      // Prefetch (docs/lowering.md): the next block's rows are asked for
      // once, by the first reduction phase after the first whose elements
      // compute a heavy op, or else by the store phase.
      rows_in_place_.clear();
      hoist_row_values(out, 0);
      bool prefetched = false;
      const bool may_prefetch = prefetch_ && nest.static_len() > 0 && !r.row_valid.defined();
      auto stride_row = [&](const std::string& var, const std::function<void(const Index&)>& fn,
                            PrefetchWhen when = PrefetchWhen::Never) {
        std::set<int> newly_cached, newly_held;
        // One step: `s` the thread's slot (its step over the row), `position` the element's place in the row.
        auto step = [&](const Expr& s, const Expr& position) {
          ex_.scoped([&] {
            const int heavy_before = ex_.heavy_evaluated();
            Expr lin = kb_.let(ex_.fresh("r"), position);
            Expr at = nest.rows_per_block() == 1 ? lin : add_i(mul_i(r.slot, kir::int_const(nest.static_len())), lin);
            auto visit = [&] {
              ex_.scoped([&] {
                Index idx = domain_index(out, ex_.delinearize(lin, red_shape_));
                for (int n : cached_) ex_.remember(node(n).output, idx, kb_.let(ex_.fresh("c"), kb_.load(cache_.at(n), {at})));
                read_held(s, idx, newly_held);
                fn(idx);
                keep_held(s, idx, newly_held);
                for (const auto& [n, buffer] : cache_) {
                  if (cached_.count(n)) continue;
                  if (std::optional<Expr> e = ex_.memoised(node(n).output, idx)) {
                    kb_.store(buffer, {at}, *e);
                    newly_cached.insert(n);
                  }
                }
              });
            };
            if (nest.guard()) {
              kb_.if_then(kir::op(OpKind::Lt, {lin, len}), visit);
            } else {
              visit();
            }
            note_rows_read_in_place(out);
            const bool heavy = ex_.heavy_evaluated() > heavy_before;
            int64_t steps = 0;
            if (may_prefetch && !prefetched && !rows_in_place_.empty() &&
                (when == PrefetchWhen::Always || (when == PrefetchWhen::IfHeavy && heavy)) &&
                kir::is_int_constant(nest.steps(), &steps) && steps > 0) {
              // Step s's share of the next block's rows.
              const int64_t block_elements = nest.rows_per_block() * nest.static_len();
              const int64_t share = (block_elements + steps - 1) / steps;
              const Expr first = add_i(mul_i(add_i(r.block, kir::int_const(1)), kir::int_const(block_elements)),
                                       mul_i(s, kir::int_const(share)));
              for (const std::string& buffer : rows_in_place_) kb_.prefetch(buffer, first, kir::int_const(share));
              prefetched = true;  // the step body is built once
            }
          });
        };
        if (held_.empty()) {
          kb_.serial(var, nest.steps(), [&](const Expr& s) { step(s, nest.position(r, s)); });
        } else if (held_vector_ == 1) {
          kb_.loop(var, nest.steps(), kir::LoopLevel::Unroll, [&](const Expr& s) { step(s, nest.position(r, s)); });
        } else {
          // Vector steps: a thread's held_vector_ consecutive slots are
          // consecutive elements of the row, its held inputs loaded and its
          // full roots stored as one vector each.
          const Expr v = kir::int_const(held_vector_);
          kb_.loop(var, kir::int_const(held_steps / held_vector_), kir::LoopLevel::Unroll, [&](const Expr& sv) {
            ex_.scoped([&] {
              const Expr first = kb_.let(ex_.fresh("r"), mul_i(add_i(mul_i(sv, kir::int_const(nest.lanes())), r.lane), v));
              const Expr slot = mul_i(sv, v);
              const Index at = domain_index(out, ex_.delinearize(first, red_shape_));
              for (int h : held_) {
                if (!outside(h) || held_filled_.count(h)) continue;
                kb_.vector_move(false, ex_.buffer(ValueId{h}), at, held_arrays_.at(h), slot, held_vector_);
                held_loading_.insert(h);
              }
              for (size_t k = 0; k < row_inputs_.size(); ++k) {
                if (!phase_reads_.count(row_inputs_[k])) continue;
                kb_.vector_move(false, ex_.buffer(ValueId{row_inputs_[k]}), staged_index(row_inputs_[k], at),
                                "row_in" + std::to_string(k),
                                kir::int_const(0), held_vector_);
              }
              kb_.loop(var + "_v", v, kir::LoopLevel::Unroll, [&](const Expr& j) {
                vector_j_ = j;
                step(add_i(slot, j), add_i(first, j));
              });
              vector_j_ = Expr();
              if (!staging_) return;
              for (size_t k = 0; k < full_roots_.size(); ++k) {
                kb_.vector_move(true, ex_.buffer(full_roots_[k].value), root_index(full_roots_[k], at),
                                "row_out" + std::to_string(k), kir::int_const(0), held_vector_);
              }
            });
          });
          newly_held.insert(held_loading_.begin(), held_loading_.end());
          held_loading_.clear();
        }
        cached_.insert(newly_cached.begin(), newly_cached.end());
        held_filled_.insert(newly_held.begin(), newly_held.end());
      };
      for (size_t p = 0; p < domain_.phases.size(); ++p) {
        const std::vector<int>& phase = domain_.phases[p];
        std::vector<Expr> acc = init_accumulators(phase);
        phase_reads_.clear();
        for (int n : phase) outside_reads(node(n).inputs[0], phase_reads_);
        stride_row("step" + std::to_string(p), [&](const Index& idx) { accumulate(phase, acc, idx); },
                   p == 0 ? PrefetchWhen::Never : PrefetchWhen::IfHeavy);
        for (size_t k = 0; k < phase.size(); ++k) {
          int n = phase[k];
          bind_total(n, nest.reduce(block_op(node(n).op), acc[k], name("total", n), name("scratch", n)));
        }
        hoist_row_values(out, static_cast<int>(p) + 1);
      }
      // The store phase has no reduction after it, so owners past the last
      // row may skip it as a whole.
      if (!full_roots_.empty()) {
        nest.if_valid(r, [&] {
          staging_ = held_vector_ > 1;
          phase_reads_.clear();
          for (const Root& root : full_roots_) outside_reads(root.value, phase_reads_);
          ex_.scoped([&] { stride_row("step_out", [&](const Index& idx) { store_full_roots(idx); }, PrefetchWhen::Always); });
          staging_ = false;
        });
      }
      if (!row_roots_.empty()) nest.if_leader(r, [&] { ex_.scoped([&] { store_row_roots(out); }); });
    });
  }

  // Adds to rows_in_place_ the inputs the loads built since the last call
  // read as rows of the domain, in place (row `out`, any position along it),
  // when the reduced axes are the innermost: then a block's rows are one
  // contiguous range of each (docs/lowering.md, Prefetch).
  void note_rows_read_in_place(const Index& out) {
    const std::vector<std::pair<ValueId, Index>> loads = ex_.take_loads();
    for (size_t d = 0; d < outer_.size(); ++d) {
      if (is_reduced(d)) return;
    }
    for (const auto& [v, idx] : loads) {
      const std::string& buffer = ex_.buffer(v);
      if (g_.type(v).shape != domain_.shape || idx.size() != domain_.shape.size()) continue;
      if (std::find(rows_in_place_.begin(), rows_in_place_.end(), buffer) != rows_in_place_.end()) continue;
      bool in_place = true;
      for (size_t d = 0; d < idx.size(); ++d) {
        in_place = in_place && (d < outer_.size() ? kir::print_expr(idx[d]) == kir::print_expr(out[d])
                                                  : idx[d]->kind == kir::ExprKind::Var);
      }
      if (in_place) rows_in_place_.push_back(buffer);
    }
  }

  // One thread per column (a non-innermost reduction): each phase a serial
  // loop over the reduced elements, no block reduction. Threads past the end
  // compute the last column and store nothing, as the column schedule of a
  // reduction group, so the loops stay free of thread-dependent guards.
  void lower_columns() {
    Expr count = element_count_expr(outer_);
    Expr len = element_count_expr(red_shape_);
    if (column_width_ > kir::kCudaMaxBlockSize) kb_.cpu_only();
    column_threads(kb_, count, column_width_, [&](const ColumnThread& thread) {
      Index out = ex_.delinearize(thread.read, outer_, "o");
      auto guarded = [&](const std::function<void()>& fn) {
        if (thread.guard) {
          kb_.if_then(kir::op(OpKind::Lt, {thread.lin, count}), [&] { ex_.scoped(fn); });
        } else {
          fn();
        }
      };
      hoist_row_values(out, 0);
      for (size_t p = 0; p < domain_.phases.size(); ++p) {
        const std::vector<int>& phase = domain_.phases[p];
        std::vector<Expr> acc = init_accumulators(phase);
        kb_.serial("elem" + std::to_string(p), len, [&](const Expr& r) {
          ex_.scoped([&] {
            const Index idx = domain_index(out, ex_.delinearize(r, red_shape_));
            accumulate(phase, acc, idx);
            if (p == 0 && !early_roots_.empty()) guarded([&] { store_early_roots(idx); });
          });
        });
        for (size_t k = 0; k < phase.size(); ++k) bind_total(phase[k], acc[k]);
        hoist_row_values(out, static_cast<int>(p) + 1);
      }
      if (!full_roots_.empty()) {
        kb_.serial("elem_out", len, [&](const Expr& r) {
          ex_.scoped([&] {
            Index idx = domain_index(out, ex_.delinearize(r, red_shape_));
            guarded([&] { store_full_roots(idx); });
          });
        });
      }
      if (!row_roots_.empty()) guarded([&] { ex_.scoped([&] { store_row_roots(out); }); });
    });
  }

  const Graph& g_;
  const FusionGroup& group_;
  kir::KernelBuilder kb_;
  schedule::RowSchedule schedule_;
  bool prefetch_;
  const schedule::GroupSharedMemory* shared_;  // the schedule's plan; null: none (no static row)
  std::vector<int> held_;                      // values held in registers (GroupSchedule::held)
  int64_t held_vector_ = 1;                    // their consecutive elements a thread holds (GroupSchedule::held_vector)
  int64_t column_width_;                       // a column domain's columns per block
  std::map<int, std::string> held_arrays_;     // held value -> its local array
  std::set<int> held_filled_;                  // held values the phases so far have put in registers
  std::set<int> held_loading_;                 // held inputs this phase's vector loads put there
  bool staging_ = false;                       // the store phase of vector steps: roots staged, then stored
  Expr vector_j_;                              // in a vector step: the element's place in its vector
  std::vector<int> row_inputs_;                // vector steps: inputs read along the row and not held, a vector a phase
  std::set<int> phase_reads_;                  // vector steps: the outside values the phase being built reads
  enum class PrefetchWhen : uint8_t { Never, IfHeavy, Always };
  std::vector<std::string> rows_in_place_;  // of the row body being built
  bool arena_placed_ = false;
  GroupExpr ex_{g_, group_, kb_};
  StitchedDomain domain_;
  Shape outer_, red_shape_;
  std::vector<Root> full_roots_, row_roots_;
  std::vector<ValueId> early_roots_;  // stored in the first phase's pass (stitched_early_root)
  std::map<int, int> number_;  // reduction node -> its number in kernel names
  std::map<int, int> level_;   // node reading a reduction total -> the last phase it needs
  std::map<int, std::string> cache_;  // node -> shared buffer keeping its row (declare_row_caches)
  std::set<int> cached_;              // nodes whose row the phases so far have cached
};

}  // namespace

std::string stitched_group_lowering_problem(const Graph& g, const FusionGroup& group) {
  if (group.kind != GroupKind::Stitched) return "not a stitched group";
  for (int n : group.nodes) {
    OpKind op = g.nodes()[n].op;
    if (!is_reduction(op) && !is_loop_lowerable(op)) return "op " + std::string(op_name(op)) + " in a stitched group";
  }
  return stitched_group_problem(g, group.nodes, group.roots);
}

kir::Kernel lower_stitched_group(const Graph& g, const FusionGroup& group, const std::string& kernel_name,
                                 const schedule::RowSchedule& schedule, bool prefetch,
                                 const schedule::GroupSharedMemory* shared, const std::vector<int>& held,
                                 int64_t held_vector, int64_t column_width) {
  return StitchedLowerer(g, group, kernel_name, schedule, prefetch, shared, held, held_vector, column_width)
      .run();
}

}  // namespace stitch::lower
