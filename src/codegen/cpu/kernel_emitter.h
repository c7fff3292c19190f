// The C++ emitter's kernel writer (docs/cpu-backend.md), private to
// src/codegen/cpu: one class over the emitter skeleton
// (codegen/common/emitter_skeleton.h). cpp_emitter.cpp defines the kernel's
// prologue, grid loop, statements and expressions; cpp_thread_regions.cpp
// its thread regions (phases, thread loops, streaming stores, reductions).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "codegen/common/emitter_skeleton.h"
#include "codegen/cpu/cpp_text.h"
#include "codegen/common/index_facts.h"
#include "codegen/cpu/kir_scan.h"
#include "codegen/cpu/region_analysis.h"
#include "codegen/cpu/streaming_store.h"
#include "codegen/cpu/tail_guard.h"
#include "stitch/error.h"

namespace stitch::codegen::cpu::detail {

using kir::Expr;
using kir::ExprKind;
using kir::Kernel;
using kir::LoopLevel;
using kir::ReduceScope;
using kir::Stmt;
using kir::StmtList;
using common::compute_type;
using common::is_narrow_float;
using common::round_to_narrow;

// A phase: the statements between two synchronisation points of a thread
// region, and the reduction or tile transpose (if any) that ends it.
struct Phase {
  std::vector<const Stmt*> stmts;
  const kir::ReduceStmt* reduction = nullptr;
  const kir::TransposeTileStmt* transpose = nullptr;
  // A uniform serial loop whose body holds barriers or reductions: the phase
  // is that loop, its body split into phases of its own (emit_phases).
  const kir::ForStmt* loop = nullptr;
  size_t id = 0;  // unique in the region: names the reduction's arrays
};

class KernelEmitter : private common::EmitterSkeleton<KernelEmitter> {
 public:
  explicit KernelEmitter(const Kernel& k) : EmitterSkeleton(k, cpp_text()) {}

  std::string emit();

 private:
  void emit_grid_loop(const kir::ForStmt& f);
  void emit(const kir::ForStmt& f);

  void emit(const kir::IfStmt& s) { emit_if(s, expr(s.cond)); }

  void emit(const kir::LetStmt& s);

  void emit(const kir::AssignStmt& s) { line(fmt::format("{} = {};", var_text(s.name), expr(s.value))); }

  void emit(const kir::LocalArrayStmt& s);
  void emit(const kir::StoreStmt& s);

  // One element at a time (no kernel for the CPU asks for vectors yet).
  void emit(const kir::VectorMoveStmt& s);

  // Row-major buffers only: a strided one's linear range is not its memory's.
  void emit(const kir::PrefetchStmt& s);

  void emit(const kir::BarrierStmt&) {
    // Outside a thread region the block's code already runs in program order.
    line("// barrier: block-level code runs sequentially on the CPU");
  }

  // Between two phases, or in block-level code: the whole block's step, once.
  void emit(const kir::TransposeTileStmt& s) {
    line(fmt::format("stitch_transpose_tile({}, {});", var_text(s.buffer), s.size));
  }

  void emit(const kir::ReduceStmt&) { unsupported("a reduction outside a thread region's top level"); }

  // ---- thread regions ----

  void emit_thread_region(const kir::ForStmt& region);

  // Values that live across a phase boundary: uniform ones become one scalar
  // per block, remat lets are recomputed, the rest become per-thread arrays.
  // Reduction results (uniform, or one per warp) are declared here too.
  void declare_cross_phase_values(const std::vector<Phase>& phases);
  // `body` split into phases at barriers, reductions, transpose tiles and
  // uniform serial loops that hold them; each declared and emitted in turn.
  std::vector<Phase> split_phases(const StmtList& body);
  void emit_phases(const std::vector<Phase>& phases);
  void emit_loop_phase(const kir::ForStmt& loop);

  void remember_per_thread(const std::string& name, std::string text) {
    per_thread_[name] = std::move(text);
    region_names_.push_back(name);
  }

  void declare_reduction(const kir::ReduceStmt& r, size_t phase);

  // A phase runs its statements for every thread. The thread loop is pushed
  // inside uniform loops and ifs (threads of one phase are independent, so
  // the interchange is legal), which puts it innermost on contiguous data
  // where it vectorises; uniform lets are computed once per block.
  void emit_phase(const Phase& phase, size_t index, size_t count);
  bool sinkable(const Stmt& s) const;

  // `if (thread == 0) { ... }` of a plain region: run once, not as a loop.
  bool is_first_thread_only(const Stmt& s) const;
  void sink(const std::vector<const Stmt*>& stmts);
  static std::vector<const Stmt*> pointers(const StmtList& stmts);
  void emit_sunk(const Stmt& s);

  // Names mentioned anywhere in the region outside `run`.
  void collect_names_outside(const StmtList& stmts, const std::set<const Stmt*>& run,
                             std::set<std::string>& names) const;

  // One thread loop over a run of statements that must run per thread.
  // Their lets read after the run become per-thread arrays.
  void flush_run(std::vector<const Stmt*>& run);

  // The loop variable of the threads, and how many one thread loop runs.
  const std::string& thread_axis_var() const { return region_.lane_var.empty() ? region_.thread_var : region_.lane_var; }
  int64_t threads_per_loop() const { return region_.lane_var.empty() ? region_.threads : kir::kWarpSize; }

  // The guarded body of a partial step (tail_guard.h) for every thread, moved
  // back to end at the limit (stitch_shift, set before the loop): a thread
  // below the shift did its element in the step before, so it keeps its
  // accumulators and stores nothing.
  void emit_shifted_tail(const TailGuard& tail);

  // ---- streaming stores (streaming_store.h) ----

  // The thread axis of the current region: the thread, or the lane within a warp.
  ThreadAxis region_axis() const;

  // The run's unconditional stores the emitter may stream: to a streaming
  // buffer, at consecutive elements for consecutive threads.
  std::vector<const kir::StoreStmt*> streamed_stores(const std::vector<const Stmt*>& run) const;

  // thread_loop in chunks of kStreamChunk threads: each streamed store
  // writes into a chunk-sized array, which one streaming store of 64-byte
  // lines then writes out (stitch_stream_store16).
  void streamed_thread_loop(std::set<std::string> used, const std::set<std::string>& defined,
                            const std::vector<const kir::StoreStmt*>& streamed, const std::function<void()>& body);

  // The remat lets among `used` that `defined` does not define, in program order.
  void emit_remat(const std::set<std::string>& used, const std::set<std::string>& defined);

  // Emits a loop over the block's threads (or, `first_only`, thread 0 alone)
  // around `body`, first recomputing the remat lets it reads.
  void thread_loop(std::set<std::string> used, const std::set<std::string>& defined, bool first_only,
                   const std::function<void()>& body, bool no_simd = false);

  // Combines the published operands into the reduction's result by a
  // pairwise tree (per warp of 32 lanes or segment of `width`, or over the
  // block): each level is one vectorisable loop. The order is the emitter's to
  // choose (docs/kernel-ir.md).
  void emit_reduction_combine(const kir::ReduceStmt& r, size_t phase);

  // One level of the tree: element i of the first `count` combines with
  // element `half + i`.
  void emit_reduction_level(const kir::ReduceStmt& r, const std::string& values, const std::string& indices,
                            const std::string& first, const std::string& type, int64_t half, int64_t count);

  // ---- expressions ----

  std::string var_text(const std::string& name) const {
    auto it = per_thread_.find(name);
    return it == per_thread_.end() ? name : it->second;
  }

  // `(U + t) / C` and `(U + t) % C`, t the thread (or lane) variable of extent
  // T, U uniform, non-negative and a multiple of T, T dividing C: the quotient
  // is U / C and the remainder (U % C) + t. The loop lowering's linear index
  // has this form, and it turns a per-thread gather (mean[lin / 1024],
  // gamma[lin % 1024]) into a broadcast and a contiguous load.
  std::optional<std::string> split_thread_division(const Expr& e);

  // The coefficient of the vector loop's variable (the lane, or the thread
  // where a region has no warps) in index `e`, where `e` is affine in it: 0
  // for a value every lane shares, 1 for a contiguous one; nullopt otherwise.
  std::optional<int64_t> lane_stride(const Expr& e, int depth = 0);

  // Whether a read of `b` at `index` is the same element in every lane or
  // consecutive elements in consecutive lanes.
  bool lane_contiguous(const kir::BufferParam& b, const std::vector<Expr>& index);

  // ---- the skeleton's hooks ----

  friend class common::EmitterSkeleton<KernelEmitter>;

  std::string offset_term(const Expr& e) { return expr(e); }
  std::optional<std::string> own_index_op(const Expr& e) { return split_thread_division(e); }
  std::optional<common::IndexRange> index_range(const Expr& e) const { return facts_.value_range(e); }
  const common::IndexFacts& facts() const { return facts_; }

  std::string load(const Expr& e);

  // Whether `e`, of dtype bf16, holds a value already rounded to bf16: a load
  // of a bf16 buffer, a literal, an op's or a cast's result (each rounds once,
  // emitter_skeleton.h), or a let defined once, so and never set again. A
  // store of it takes its bits as they are: rounding an exact value again
  // costs a bf16 kernel a third of its instructions and changes no bit.
  bool exactly_narrow(const Expr& e, int depth = 0) const;
  // The text a store writes into a buffer of b's dtype.
  std::string stored_text(const kir::BufferParam& b, const Expr& value, const std::string& text) const;

  struct Region {
    const StmtList* body = nullptr;  // the region's statements (inside the warp loop, if split)
    std::string thread_var;  // a plain region: the thread index
    std::string warp_var;    // a warp-split region: the warp index ...
    std::string lane_var;    // ... and the lane
    int64_t threads = 0;
    std::string thread_index;  // C++ text of the linear thread index
  };

  bool in_region_ = false;
  size_t next_phase_id_ = 0;  // the next Phase::id of the region
  // Every let's definition so far, for lane_stride and exactly_narrow.
  std::map<std::string, Expr> let_defs_;
  // Names set after their definition or defined twice (redefined_names).
  std::set<std::string> redefined_;
  Region region_;
  // Names whose C++ text is not the name itself: per-thread arrays and per-warp results.
  std::unordered_map<std::string, std::string> per_thread_;
  std::vector<std::string> region_names_;
  // Per region: names that differ between threads, and the varying index
  // lets recomputed in each thread loop.
  RegionAnalysis analysis_;
  IndexFacts facts_{analysis_.remat()};
  // Streamed stores of the chunked thread loop being emitted -> their chunk array.
  std::map<const kir::StoreStmt*, std::string> stream_slots_;
  // Inside a partial step moved back (emit_shifted_tail).
  bool shifted_tail_ = false;
  ThreadAxis stream_axis_;
};

}  // namespace stitch::codegen::cpu::detail
