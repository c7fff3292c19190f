#include "codegen/cpu/cpp_emitter.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "codegen/common/index_simplify.h"
#include "codegen/common/source_writer.h"
#include "codegen/cpu/cpu_runtime_text.h"
#include "codegen/cpu/cpp_text.h"
#include "codegen/common/index_facts.h"
#include "codegen/cpu/kir_scan.h"
#include "codegen/cpu/region_analysis.h"
#include "codegen/cpu/streaming_store.h"
#include "codegen/cpu/tail_guard.h"
#include "kir/verifier.h"
#include "stitch/error.h"

namespace stitch::codegen::cpu {
namespace {

using kir::Expr;
using kir::ExprKind;
using kir::Kernel;
using kir::LoopLevel;
using kir::ReduceScope;
using kir::Stmt;
using kir::StmtList;

// A phase: the statements between two synchronisation points of a thread
// region, and the reduction or tile transpose (if any) that ends it.
struct Phase {
  std::vector<const Stmt*> stmts;
  const kir::ReduceStmt* reduction = nullptr;
  const kir::TransposeTileStmt* transpose = nullptr;
};

class KernelEmitter : private common::SourceWriter {
 public:
  explicit KernelEmitter(const Kernel& k) : k_(k) {}

  std::string emit() {
    check_identifier(k_.name);
    if (!k_.note.empty()) line("// " + k_.note);
    line(fmt::format("extern \"C\" void {}(void* const* stitch_buffers, const int64_t* stitch_scalars) {{",
                     k_.name));
    ++depth_;
    for (size_t i = 0; i < k_.buffers.size(); ++i) {
      const kir::BufferParam& b = k_.buffers[i];
      check_identifier(b.name);
      const std::string type = storage_type(b.dtype);
      const bool read_only = b.access == kir::Access::Read;
      // __restrict__ where no other buffer can overlap (every graph buffer; user
      // kernels' arrays the caller proved distinct): loads may move past stores.
      line(fmt::format("{0}{1}* {4}const {2} = static_cast<{0}{1}*>(stitch_buffers[{3}]);",
                       read_only ? "const " : "", type, b.name, i, b.may_alias ? "" : "__restrict__ "));
      if (is_narrow_float(b.dtype) && read_only) {
        line(fmt::format("const stitch_word* const {0}_words = stitch_words_of({0});", b.name));
        line(fmt::format("const int64_t {0}_shift = stitch_word_shift_of({0});", b.name));
      }
    }
    for (size_t i = 0; i < k_.scalars.size(); ++i) {
      const kir::ScalarParam& s = k_.scalars[i];
      check_identifier(s.name);
      const std::string slot = fmt::format("stitch_scalars[{}]", i);
      std::string value;
      if (is_float(s.dtype)) {
        value = is_narrow_float(s.dtype)
                    ? round_to_narrow(s.dtype, fmt::format("stitch_scalar_as_f64({})", slot))
                    : fmt::format("static_cast<{}>(stitch_scalar_as_f64({}))", compute_type(s.dtype), slot);
      } else if (s.dtype == DType::boolean) {
        value = slot + " != 0";
      } else {
        value = fmt::format("static_cast<{}>({})", compute_type(s.dtype), slot);
      }
      line(fmt::format("const {} {} = {};", compute_type(s.dtype), s.name, value));
    }
    for (const Stmt& s : k_.body) {
      if (const auto* f = std::get_if<kir::ForStmt>(&s.node); f && f->level == LoopLevel::Grid) {
        emit_grid_loop(*f);
      } else {
        emit_stmt(s);
      }
    }
    --depth_;
    line("}");
    return std::move(out_);
  }

 private:
  void emit_grid_loop(const kir::ForStmt& f) {
    check_identifier(f.var);
    facts_.note_loop_extent(f.var, f.extent);
    line(fmt::format("const int64_t stitch_grid = {};", expr(f.extent)));
    if (k_.panel_elements > 0) {
      // A dot epilogue (kir::Kernel::panel_elements): the caller runs the
      // grid a range of blocks at a time, passed after the scalars.
      const size_t first = k_.scalars.size();
      line(fmt::format("const int64_t stitch_block_first = stitch_scalars[{}] < 0 ? 0 : stitch_scalars[{}];", first, first));
      line(fmt::format("const int64_t stitch_block_end = stitch_scalars[{}] < stitch_grid ? stitch_scalars[{}] : stitch_grid;",
                       first + 1, first + 1));
    }
    // Streaming stores are weakly ordered: each thread fences its own before
    // the parallel region ends, so the caller (and the next kernel) sees them.
    // One block runs on the calling thread: waking the team costs more than
    // a small kernel (a partition call of 8 elements: 2.1 us, 1 us of it the
    // wake). A grid known to be one block enters no parallel region at all:
    // entering one under a false `if` still makes a team and wakes the pool
    // by a futex call (Executable.run_at of 8 elements: 2.4 -> 1.3 us).
    const bool fence = std::any_of(k_.buffers.begin(), k_.buffers.end(), streams);
    int64_t blocks = 0;
    const bool serial = kir::is_int_constant(f.extent, &blocks) && blocks <= 1;
    if (serial) {
      line("{");
      ++depth_;
    } else if (fence) {
      line("#pragma omp parallel if (stitch_grid > 1)");
      line("{");
      ++depth_;
      line("#pragma omp for schedule(static)");
    } else {
      line("#pragma omp parallel for schedule(static) if (stitch_grid > 1)");
    }
    line(fmt::format("for (int64_t {0} = {1}; {0} < {2}; ++{0}) {{", f.var,
                     k_.panel_elements > 0 ? "stitch_block_first" : "0",
                     k_.panel_elements > 0 ? "stitch_block_end" : "stitch_grid"));
    ++depth_;
    for (const kir::SharedBuffer& sb : k_.shared) {
      check_identifier(sb.name);
      line(fmt::format("{} {}[{}];", compute_type(sb.dtype), sb.name, sb.count));
    }
    emit_body(f.body);
    --depth_;
    line("}");
    if (fence) line("stitch_stream_fence();");
    if (serial || fence) {
      --depth_;
      line("}");
    }
  }

  void emit_body(const StmtList& body) {
    for (const Stmt& s : body) emit_stmt(s);
  }

  void emit_stmt(const Stmt& s) {
    std::visit([&](const auto& n) { emit(n); }, s.node);
  }

  void emit(const kir::ForStmt& f) {
    check_identifier(f.var);
    if (f.level == LoopLevel::Block) return emit_thread_region(f);
    if (f.level == LoopLevel::Grid || f.level == LoopLevel::Warp) {
      unsupported(fmt::format("a {} loop in this position", kir::loop_level_name(f.level)));
    }
    facts_.note_loop_extent(f.var, f.extent);
    if (f.level == LoopLevel::Vector) line("#pragma omp simd");
    if (f.level == LoopLevel::Unroll) {
      int64_t count = 0;
      if (kir::is_int_constant(f.extent, &count)) line(fmt::format("#pragma GCC unroll {}", count));
    }
    line(fmt::format("for (int64_t {0} = 0; {0} < {1}; ++{0}) {{", f.var, expr(f.extent)));
    ++depth_;
    emit_body(f.body);
    --depth_;
    line("}");
  }

  void emit(const kir::IfStmt& s) {
    line(fmt::format("if ({}) {{", expr(s.cond)));
    ++depth_;
    emit_body(s.then_body);
    --depth_;
    if (!s.else_body.empty()) {
      line("} else {");
      ++depth_;
      emit_body(s.else_body);
      --depth_;
    }
    line("}");
  }

  void emit(const kir::LetStmt& s) {
    check_identifier(s.name);
    if (s.init.defined()) let_defs_[s.name] = s.init;
    if (auto it = per_thread_.find(s.name); it != per_thread_.end()) {
      if (s.init.defined()) line(fmt::format("{} = {};", it->second, expr(s.init)));
      return;
    }
    if (s.init.defined()) {
      line(fmt::format("{} {} = {};", compute_type(s.dtype), s.name, expr(s.init)));
    } else {
      line(fmt::format("{} {}{{}};", compute_type(s.dtype), s.name));
    }
  }

  void emit(const kir::AssignStmt& s) { line(fmt::format("{} = {};", var_text(s.name), expr(s.value))); }

  void emit(const kir::LocalArrayStmt& s) {
    check_identifier(s.name);
    if (per_thread_.count(s.name)) return;  // declared per thread before the phases
    line(fmt::format("{} {}[{}];", compute_type(s.dtype), s.name, s.count));
  }

  void emit(const kir::StoreStmt& s) {
    const std::string value = expr(s.value);
    if (auto it = stream_slots_.find(&s); it != stream_slots_.end()) {
      line(fmt::format("{}[{} - stitch_c] = {};", it->second, stream_axis_.thread, value));
      return;
    }
    if (const kir::BufferParam* b = k_.find_buffer(s.buffer)) {
      std::string stored = value;
      if (b->dtype == DType::f16) stored = fmt::format("stitch_to_f16_bits({})", value);
      if (b->dtype == DType::bf16) stored = fmt::format("stitch_to_bf16_bits({})", value);
      line(fmt::format("{}[{}] = {};", s.buffer, global_offset(*b, s.index), stored));
      return;
    }
    line(fmt::format("{}[{}] = {};", var_text(s.buffer), expr(s.index.at(0)), value));
  }

  // One element at a time (no kernel for the CPU asks for vectors yet).
  void emit(const kir::VectorMoveStmt& s) {
    const kir::BufferParam* b = k_.find_buffer(s.buffer);
    STITCH_ASSERT(b != nullptr, "a vector move of '" + s.buffer + "', not a buffer");
    std::vector<Expr> index = s.index;
    index.back() = index.back() + kir::var("stitch_vk");
    const std::string element = fmt::format("{}[{}]", s.buffer, global_offset(*b, index));
    const std::string slot = fmt::format("{}[{} + stitch_vk]", var_text(s.array), expr(s.array_first));
    line(fmt::format("for (int64_t stitch_vk = 0; stitch_vk < {}; ++stitch_vk) {{", s.count));
    if (!s.store) {
      std::string value = element;
      if (b->dtype == DType::f16) value = fmt::format("stitch_f16_bits_to_f32({})", element);
      if (b->dtype == DType::bf16) value = fmt::format("stitch_bf16_bits_to_f32({})", element);
      line(fmt::format("  {} = {};", slot, value));
    } else {
      std::string value = slot;
      if (b->dtype == DType::f16) value = fmt::format("stitch_to_f16_bits({})", slot);
      if (b->dtype == DType::bf16) value = fmt::format("stitch_to_bf16_bits({})", slot);
      line(fmt::format("  {} = {};", element, value));
    }
    line("}");
  }

  // Row-major buffers only: a strided one's linear range is not its memory's.
  void emit(const kir::PrefetchStmt& s) {
    const kir::BufferParam* b = k_.find_buffer(s.buffer);
    if (!b || !b->strides.empty()) return;
    std::string total = "int64_t(1)";
    for (const Expr& d : b->shape) total = fmt::format("{} * ({})", total, expr(d));
    line(fmt::format("stitch_prefetch({}, {}, {}, {});", s.buffer, expr(s.first), expr(s.count), total));
  }

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

  void emit_thread_region(const kir::ForStmt& region) {
    if (in_region_) unsupported("a block loop inside a thread region");
    int64_t extent = 0;
    if (!kir::is_int_constant(region.extent, &extent)) unsupported("a block loop of non-constant extent");
    region_ = Region{};
    const StmtList* body = &region.body;
    if (region.body.size() == 1) {
      if (const auto* w = std::get_if<kir::ForStmt>(&region.body[0].node); w && w->level == LoopLevel::Warp) {
        check_identifier(w->var);
        region_.warp_var = region.var;
        region_.lane_var = w->var;
        region_.threads = extent * kir::kWarpSize;
        region_.thread_index = fmt::format("({} * {} + {})", region.var, kir::kWarpSize, w->var);
        body = &w->body;
      }
    }
    if (region_.lane_var.empty()) {
      region_.thread_var = region.var;
      region_.threads = extent;
      region_.thread_index = region.var;
      facts_.set_extent(region.var, extent);
    } else {
      facts_.set_extent(region_.warp_var, extent);
      facts_.set_extent(region_.lane_var, kir::kWarpSize);
    }

    std::vector<Phase> phases(1);
    for (const Stmt& s : *body) {
      if (std::holds_alternative<kir::BarrierStmt>(s.node)) {
        phases.emplace_back();
      } else if (const auto* r = std::get_if<kir::ReduceStmt>(&s.node)) {
        phases.back().reduction = r;
        phases.emplace_back();
      } else if (const auto* t = std::get_if<kir::TransposeTileStmt>(&s.node)) {
        phases.back().transpose = t;
        phases.emplace_back();
      } else {
        if (has_nested_sync({s})) unsupported("a barrier or reduction nested in control flow of a thread region");
        phases.back().stmts.push_back(&s);
      }
    }

    line(fmt::format("{{  // thread region: {} threads, {} phase(s)", region_.threads, phases.size()));
    ++depth_;
    in_region_ = true;
    region_.body = body;
    analysis_.analyse(k_, *body, {region_.thread_var, region_.warp_var, region_.lane_var});
    declare_cross_phase_values(phases);
    for (size_t p = 0; p < phases.size(); ++p) {
      if (phases[p].stmts.empty() && !phases[p].reduction && !phases[p].transpose) continue;
      emit_phase(phases[p], p, phases.size());
      if (phases[p].reduction) emit_reduction_combine(*phases[p].reduction, p);
      if (phases[p].transpose) emit(*phases[p].transpose);
    }
    in_region_ = false;
    for (const std::string& name : region_names_) per_thread_.erase(name);
    region_names_.clear();
    --depth_;
    line("}");
  }

  // Values that live across a phase boundary: uniform ones become one scalar
  // per block, remat lets are recomputed, the rest become per-thread arrays.
  // Reduction results (uniform, or one per warp) are declared here too.
  void declare_cross_phase_values(const std::vector<Phase>& phases) {
    std::vector<std::set<std::string>> used_after(phases.size());
    for (size_t p = phases.size(); p-- > 0;) {
      if (p + 1 < phases.size()) {
        used_after[p] = used_after[p + 1];
        for (const Stmt* s : phases[p + 1].stmts) collect_names(*s, used_after[p]);
        if (const auto* r = phases[p + 1].reduction) {
          collect_names(r->value, used_after[p]);
          collect_names(r->index, used_after[p]);
        }
        analysis_.expand_remat(used_after[p]);
      }
    }
    const std::string& tid = region_.thread_index;
    for (size_t p = 0; p < phases.size(); ++p) {
      for (const Stmt* s : phases[p].stmts) {
        if (const auto* let = std::get_if<kir::LetStmt>(&s->node); let && used_after[p].count(let->name)) {
          if (analysis_.is_remat(let->name)) continue;
          if (!analysis_.varies(let->name)) {
            line(fmt::format("{} {}{{}};", compute_type(let->dtype), let->name));
            remember_per_thread(let->name, let->name);
            continue;
          }
          line(fmt::format("{} {}[{}];", compute_type(let->dtype), let->name, region_.threads));
          remember_per_thread(let->name, fmt::format("{}[{}]", let->name, tid));
        }
        if (const auto* arr = std::get_if<kir::LocalArrayStmt>(&s->node); arr && used_after[p].count(arr->name)) {
          line(fmt::format("{} {}[{}][{}];", compute_type(arr->dtype), arr->name, region_.threads, arr->count));
          remember_per_thread(arr->name, fmt::format("{}[{}]", arr->name, tid));
        }
      }
      if (const kir::ReduceStmt* r = phases[p].reduction) declare_reduction(*r, p);
    }
  }

  void remember_per_thread(const std::string& name, std::string text) {
    per_thread_[name] = std::move(text);
    region_names_.push_back(name);
  }

  void declare_reduction(const kir::ReduceStmt& r, size_t phase) {
    const DType t = r.value.dtype();
    if (is_narrow_float(t)) unsupported("an f16/bf16 reduction (the lowering reduces in f32)");
    const bool is_arg = r.op == OpKind::ArgMax || r.op == OpKind::ArgMin;
    const std::string type = compute_type(t);
    line(fmt::format("{} stitch_values_{}[{}];", type, phase, region_.threads));
    if (is_arg) line(fmt::format("int64_t stitch_indices_{}[{}];", phase, region_.threads));
    check_identifier(r.result);
    if (is_arg) check_identifier(r.index_result);
    if (r.scope == ReduceScope::Block) {
      line(fmt::format("{} {};", type, r.result));
      if (is_arg) line(fmt::format("int64_t {};", r.index_result));
      return;
    }
    const int64_t segments = region_.threads / r.width;
    if (region_.threads % kir::kWarpSize != 0) unsupported("a warp reduction in a region of partial warps");
    const std::string warp_of_thread = fmt::format("{} / {}", region_.thread_index, r.width);
    line(fmt::format("{} {}[{}];", type, r.result, segments));
    remember_per_thread(r.result, fmt::format("{}[{}]", r.result, warp_of_thread));
    if (is_arg) {
      line(fmt::format("int64_t {}[{}];", r.index_result, segments));
      remember_per_thread(r.index_result, fmt::format("{}[{}]", r.index_result, warp_of_thread));
    }
  }

  // A phase runs its statements for every thread. The thread loop is pushed
  // inside uniform loops and ifs (threads of one phase are independent, so
  // the interchange is legal), which puts it innermost on contiguous data
  // where it vectorises; uniform lets are computed once per block.
  void emit_phase(const Phase& phase, size_t index, size_t count) {
    line(fmt::format("// phase {} of {}", index + 1, count));
    sink(phase.stmts);
    if (const kir::ReduceStmt* r = phase.reduction) {
      // Each thread publishes its operand; the combine step after the loop reads all.
      std::set<std::string> used;
      collect_names(r->value, used);
      collect_names(r->index, used);
      thread_loop(used, {}, false, [&] {
        line(fmt::format("stitch_values_{}[{}] = {};", index, region_.thread_index, expr(r->value)));
        if (r->index.defined()) {
          line(fmt::format("stitch_indices_{}[{}] = {};", index, region_.thread_index, expr(r->index)));
        }
      });
    }
  }

  bool sinkable(const Stmt& s) const {
    if (const auto* let = std::get_if<kir::LetStmt>(&s.node)) return !analysis_.varies(let->name);
    if (const auto* a = std::get_if<kir::AssignStmt>(&s.node)) return !analysis_.varies(a->name);
    if (const auto* f = std::get_if<kir::ForStmt>(&s.node)) {
      return (f->level == LoopLevel::Serial || f->level == LoopLevel::Unroll) && !analysis_.expr_varies(f->extent);
    }
    if (const auto* i = std::get_if<kir::IfStmt>(&s.node)) return !analysis_.expr_varies(i->cond);
    if (const auto* p = std::get_if<kir::PrefetchStmt>(&s.node)) {
      return !analysis_.expr_varies(p->first) && !analysis_.expr_varies(p->count);
    }
    return false;
  }

  // `if (thread == 0) { ... }` of a plain region: run once, not as a loop.
  bool is_first_thread_only(const Stmt& s) const {
    const auto* i = std::get_if<kir::IfStmt>(&s.node);
    if (!i || !i->else_body.empty() || region_.thread_var.empty()) return false;
    const Expr& c = i->cond;
    if (c->kind != ExprKind::Op || c->op != OpKind::Eq) return false;
    const Expr& a = c->operands[0];
    const Expr& b = c->operands[1];
    int64_t zero = -1;
    return a->kind == ExprKind::Var && a->name == region_.thread_var && kir::is_int_constant(b, &zero) && zero == 0;
  }

  void sink(const std::vector<const Stmt*>& stmts) {
    std::vector<const Stmt*> run;
    for (const Stmt* s : stmts) {
      if (is_first_thread_only(*s)) {
        flush_run(run);
        const auto& body = std::get<kir::IfStmt>(s->node).then_body;
        std::set<std::string> used, defined;
        collect_names(body, used);
        for (const Stmt& b : body) collect_definitions(b, defined);
        thread_loop(used, defined, true, [&] { emit_body(body); });
      } else if (sinkable(*s)) {
        flush_run(run);
        emit_sunk(*s);
      } else {
        run.push_back(s);
      }
    }
    flush_run(run);
  }

  static std::vector<const Stmt*> pointers(const StmtList& stmts) {
    std::vector<const Stmt*> out;
    for (const Stmt& s : stmts) out.push_back(&s);
    return out;
  }

  void emit_sunk(const Stmt& s) {
    if (const auto* f = std::get_if<kir::ForStmt>(&s.node)) {
      check_identifier(f->var);
      facts_.note_loop_extent(f->var, f->extent);
      int64_t count = 0;
      if (f->level == LoopLevel::Unroll && kir::is_int_constant(f->extent, &count)) {
        line(fmt::format("#pragma GCC unroll {}", count));
      }
      line(fmt::format("for (int64_t {0} = 0; {0} < {1}; ++{0}) {{", f->var, expr(f->extent)));
      ++depth_;
      sink(pointers(f->body));
      --depth_;
      line("}");
    } else if (const auto* i = std::get_if<kir::IfStmt>(&s.node)) {
      line(fmt::format("if ({}) {{", expr(i->cond)));
      ++depth_;
      sink(pointers(i->then_body));
      --depth_;
      if (!i->else_body.empty()) {
        line("} else {");
        ++depth_;
        sink(pointers(i->else_body));
        --depth_;
      }
      line("}");
    } else {
      emit_stmt(s);
    }
  }



  // Names mentioned anywhere in the region outside `run`.
  void collect_names_outside(const StmtList& stmts, const std::set<const Stmt*>& run,
                             std::set<std::string>& names) const {
    for (const Stmt& s : stmts) {
      if (run.count(&s)) continue;
      if (const auto* f = std::get_if<kir::ForStmt>(&s.node)) {
        collect_names(f->extent, names);
        collect_names_outside(f->body, run, names);
      } else if (const auto* i = std::get_if<kir::IfStmt>(&s.node)) {
        collect_names(i->cond, names);
        collect_names_outside(i->then_body, run, names);
        collect_names_outside(i->else_body, run, names);
      } else {
        collect_names(s, names);
      }
    }
  }

  // One thread loop over a run of statements that must run per thread.
  // Their lets read after the run become per-thread arrays.
  void flush_run(std::vector<const Stmt*>& run) {
    if (run.empty()) return;
    std::set<std::string> used;
    for (const Stmt* s : run) collect_names(*s, used);
    std::set<std::string> outside;
    collect_names_outside(*region_.body, std::set<const Stmt*>(run.begin(), run.end()), outside);
    analysis_.expand_remat(outside);
    // Remat lets are emitted by thread_loop wherever they are read.
    std::erase_if(run, [&](const Stmt* s) {
      const auto* let = std::get_if<kir::LetStmt>(&s->node);
      return let && analysis_.is_remat(let->name);
    });
    if (run.empty()) return;
    std::set<std::string> defined;
    bool vector_loop = false;
    for (const Stmt* s : run) {
      vector_loop = vector_loop || has_vector_loop({*s});
      if (const auto* let = std::get_if<kir::LetStmt>(&s->node)) {
        defined.insert(let->name);
        if (outside.count(let->name) && !analysis_.is_remat(let->name) && !per_thread_.count(let->name)) {
          line(fmt::format("{} {}[{}];", compute_type(let->dtype), let->name, region_.threads));
          remember_per_thread(let->name, fmt::format("{}[{}]", let->name, region_.thread_index));
        }
      } else if (const auto* arr = std::get_if<kir::LocalArrayStmt>(&s->node)) {
        defined.insert(arr->name);
        if (outside.count(arr->name) && !per_thread_.count(arr->name)) {
          line(fmt::format("{} {}[{}][{}];", compute_type(arr->dtype), arr->name, region_.threads, arr->count));
          remember_per_thread(arr->name, fmt::format("{}[{}]", arr->name, region_.thread_index));
        }
      }
    }
    for (const Stmt* s : run) collect_definitions(*s, defined);
    auto body = [&] {
      for (const Stmt* s : run) emit_stmt(*s);
    };
    std::vector<const kir::StoreStmt*> streamed = vector_loop ? std::vector<const kir::StoreStmt*>{} : streamed_stores(run);
    std::set<std::string> needed = used;
    analysis_.expand_remat(needed);
    const std::optional<TailGuard> tail =
        streamed.empty() ? tail_guard(run, analysis_, thread_axis_var(), needed, outside, threads_per_loop())
                         : std::nullopt;
    if (!streamed.empty()) {
      streamed_thread_loop(used, defined, streamed, body);
    } else if (tail) {
      // Full steps run the body as it is, without the test; the last, partial
      // one moves back to end at the limit (AMD's masked stores are slow).
      line(fmt::format("const int64_t stitch_shift = std::max<int64_t>(0, ({}) + {} - int64_t({}LL));",
                       expr(tail->offset), threads_per_loop(), tail->limit));
      line("if (stitch_shift == 0) {");
      ++depth_;
      thread_loop(used, defined, false, [&] { emit_body(tail->guard->then_body); }, vector_loop);
      --depth_;
      line("} else {");
      ++depth_;
      thread_loop(used, defined, false, [&] { emit_shifted_tail(*tail); }, vector_loop);
      --depth_;
      line("}");
    } else {
      thread_loop(used, defined, false, body, vector_loop);
    }
    run.clear();
  }

  // The loop variable of the threads, and how many one thread loop runs.
  const std::string& thread_axis_var() const { return region_.lane_var.empty() ? region_.thread_var : region_.lane_var; }
  int64_t threads_per_loop() const { return region_.lane_var.empty() ? region_.threads : kir::kWarpSize; }

  // The guarded body of a partial step (tail_guard.h) for every thread, moved
  // back to end at the limit (stitch_shift, set before the loop): a thread
  // below the shift did its element in the step before, so it keeps its
  // accumulators and stores nothing.
  void emit_shifted_tail(const TailGuard& tail) {
    line(fmt::format("const bool stitch_live = {} >= stitch_shift;", thread_axis_var()));
    per_thread_[tail.index] = fmt::format("({} - stitch_shift)", tail.index);
    // Every index prints through r here: an offset or division resolved
    // through the lets would hold the thread unshifted (a store past the end).
    shifted_tail_ = true;
    for (const Stmt& s : tail.guard->then_body) {
      if (const auto* assign = std::get_if<kir::AssignStmt>(&s.node)) {
        line(fmt::format("{0} = stitch_live ? {1} : {0};", var_text(assign->name), expr(assign->value)));
      } else if (std::holds_alternative<kir::StoreStmt>(s.node)) {
        line("if (stitch_live) {");
        ++depth_;
        emit_stmt(s);
        --depth_;
        line("}");
      } else {
        emit_stmt(s);
      }
    }
    per_thread_.erase(tail.index);
    shifted_tail_ = false;
  }

  // ---- streaming stores (streaming_store.h) ----

  // The thread axis of the current region: the thread, or the lane within a warp.
  ThreadAxis region_axis() const {
    ThreadAxis axis;
    axis.thread = thread_axis_var();
    axis.fixed = region_.warp_var;
    axis.varies = [this](const std::string& n) {
      if (analysis_.varies(n)) return true;
      return std::any_of(k_.shared.begin(), k_.shared.end(), [&](const kir::SharedBuffer& sb) { return sb.name == n; });
    };
    return axis;
  }

  // The run's unconditional stores the emitter may stream: to a streaming
  // buffer, at consecutive elements for consecutive threads.
  std::vector<const kir::StoreStmt*> streamed_stores(const std::vector<const Stmt*>& run) const {
    std::vector<const kir::StoreStmt*> out;
    const int64_t threads = region_.lane_var.empty() ? region_.threads : kir::kWarpSize;
    if (threads % kStreamChunk != 0) return out;
    const ThreadAxis axis = region_axis();
    for (const Stmt* s : run) {
      const auto* store = std::get_if<kir::StoreStmt>(&s->node);
      const kir::BufferParam* b = store ? k_.find_buffer(store->buffer) : nullptr;
      if (!b || !streams(*b)) continue;
      std::optional<int64_t> c = thread_coefficient(element_offset(*b, store->index, facts_), axis, facts_);
      if (c && *c == 1) out.push_back(store);
    }
    return out;
  }

  // thread_loop in chunks of kStreamChunk threads: each streamed store
  // writes into a chunk-sized array, which one streaming store of 64-byte
  // lines then writes out (stitch_stream_store16).
  void streamed_thread_loop(std::set<std::string> used, const std::set<std::string>& defined,
                            const std::vector<const kir::StoreStmt*>& streamed, const std::function<void()>& body) {
    analysis_.expand_remat(used);
    stream_axis_ = region_axis();
    const int64_t threads = region_.lane_var.empty() ? region_.threads : kir::kWarpSize;
    if (!region_.lane_var.empty()) {
      line(fmt::format("for (int64_t {0} = 0; {0} < {1}; ++{0}) {{", region_.warp_var,
                       region_.threads / kir::kWarpSize));
      ++depth_;
    }
    line(fmt::format("for (int64_t stitch_c = 0; stitch_c < {}; stitch_c += {}) {{", threads, kStreamChunk));
    ++depth_;
    for (size_t i = 0; i < streamed.size(); ++i) {
      const std::string slot = fmt::format("stitch_stream{}", i);
      stream_slots_[streamed[i]] = slot;
      line(fmt::format("{} {}[{}];", storage_type(k_.find_buffer(streamed[i]->buffer)->dtype), slot, kStreamChunk));
    }
    line("#pragma omp simd");
    line(fmt::format("for (int64_t {0} = stitch_c; {0} < stitch_c + {1}; ++{0}) {{", stream_axis_.thread,
                     kStreamChunk));
    ++depth_;
    emit_remat(used, defined);
    body();
    --depth_;
    line("}");
    // The chunk's first thread addresses the first element of each line.
    line("{");
    ++depth_;
    line(fmt::format("const int64_t {} = stitch_c;", stream_axis_.thread));
    std::set<std::string> offsets;
    for (const kir::StoreStmt* s : streamed) {
      for (const Expr& i : s->index) collect_names(i, offsets);
    }
    analysis_.expand_remat(offsets);
    emit_remat(offsets, {});
    for (const kir::StoreStmt* s : streamed) {
      line(fmt::format("stitch_stream_store16(&{}[{}], {});", s->buffer,
                       global_offset(*k_.find_buffer(s->buffer), s->index), stream_slots_.at(s)));
      stream_slots_.erase(s);
    }
    --depth_;
    line("}");
    --depth_;
    line("}");
    if (!region_.lane_var.empty()) {
      --depth_;
      line("}");
    }
  }

  // The remat lets among `used` that `defined` does not define, in program order.
  void emit_remat(const std::set<std::string>& used, const std::set<std::string>& defined) {
    for (const kir::LetStmt* let : analysis_.remat_order()) {
      if (used.count(let->name) && !defined.count(let->name)) {
        line(fmt::format("const {} {} = {};", compute_type(let->dtype), let->name, expr(let->init)));
      }
    }
  }

  // Emits a loop over the block's threads (or, `first_only`, thread 0 alone)
  // around `body`, first recomputing the remat lets it reads.
  void thread_loop(std::set<std::string> used, const std::set<std::string>& defined, bool first_only,
                   const std::function<void()>& body, bool no_simd = false) {
    analysis_.expand_remat(used);
    if (first_only) {
      line("{  // thread 0 only");
      ++depth_;
      line(fmt::format("const int64_t {} = 0;", region_.thread_var));
      line(fmt::format("(void){};", region_.thread_var));
    } else if (!region_.lane_var.empty()) {
      line(fmt::format("for (int64_t {0} = 0; {0} < {1}; ++{0}) {{", region_.warp_var,
                       region_.threads / kir::kWarpSize));
      ++depth_;
      if (!no_simd) line("#pragma omp simd");
      line(fmt::format("for (int64_t {0} = 0; {0} < {1}; ++{0}) {{", region_.lane_var, kir::kWarpSize));
      ++depth_;
    } else {
      if (!no_simd) line("#pragma omp simd");
      line(fmt::format("for (int64_t {0} = 0; {0} < {1}; ++{0}) {{", region_.thread_var, region_.threads));
      ++depth_;
    }
    emit_remat(used, defined);
    body();
    --depth_;
    line("}");
    if (!first_only && !region_.lane_var.empty()) {
      --depth_;
      line("}");
    }
  }

  // Combines the published operands into the reduction's result by a
  // pairwise tree (per warp of 32 lanes or segment of `width`, or over the
  // block): each level is one vectorisable loop. The order is the emitter's to
  // choose (docs/kernel-ir.md).
  void emit_reduction_combine(const kir::ReduceStmt& r, size_t phase) {
    const bool warp = r.scope == ReduceScope::Warp;
    const int64_t group = warp ? r.width : region_.threads;
    const std::string values = fmt::format("stitch_values_{}", phase);
    const std::string indices = fmt::format("stitch_indices_{}", phase);
    std::string result = r.result;
    std::string index_result = r.index_result;
    std::string first = "0";
    if (warp) {
      line(fmt::format("for (int64_t stitch_warp = 0; stitch_warp < {}; ++stitch_warp) {{", region_.threads / group));
      ++depth_;
      result += "[stitch_warp]";
      index_result += "[stitch_warp]";
      first = fmt::format("stitch_warp * {}", group);
    }
    const std::string type = compute_type(r.value.dtype());
    // The levels are unrolled here, each a loop of a constant trip count, so
    // the C++ compiler emits straight vector code for them: a loop over the
    // level sizes cost a softmax over rows of 256 floats 11-15% (2-core EPYC).
    for (int64_t n = group; n > 1; n = (n + 1) / 2) {
      const int64_t half = (n + 1) / 2;
      emit_reduction_level(r, values, indices, first, type, half, n - half);
    }
    line(fmt::format("{} = {}[{}];", result, values, first));
    const bool is_arg = r.op == OpKind::ArgMax || r.op == OpKind::ArgMin;
    if (is_arg) line(fmt::format("{} = {}[{}];", index_result, indices, first));
    if (warp) {
      --depth_;
      line("}");
    }
  }

  // One level of the tree: element i of the first `count` combines with
  // element `half + i`.
  void emit_reduction_level(const kir::ReduceStmt& r, const std::string& values, const std::string& indices,
                            const std::string& first, const std::string& type, int64_t half, int64_t count) {
    line("#pragma omp simd");
    line(fmt::format("for (int64_t stitch_i = 0; stitch_i < {}; ++stitch_i) {{", count));
    ++depth_;
    const std::string left = fmt::format("{}[{} + stitch_i]", values, first);
    const std::string right = fmt::format("{}[{} + {} + stitch_i]", values, first, half);
    switch (r.op) {
      case OpKind::ReduceSum: line(fmt::format("{0} = stitch_add<{1}>({0}, {2});", left, type, right)); break;
      case OpKind::ReduceProd: line(fmt::format("{0} = stitch_mul<{1}>({0}, {2});", left, type, right)); break;
      case OpKind::ReduceMax: line(fmt::format("{0} = stitch_max<{1}>({0}, {2});", left, type, right)); break;
      case OpKind::ReduceMin: line(fmt::format("{0} = stitch_min<{1}>({0}, {2});", left, type, right)); break;
      case OpKind::ReduceAny: line(fmt::format("{0} = {0} || {1};", left, right)); break;
      case OpKind::ReduceAll: line(fmt::format("{0} = {0} && {1};", left, right)); break;
      case OpKind::ArgMax:
      case OpKind::ArgMin:
        line(fmt::format("stitch_arg_extreme_step<{}, {}>({}, {}[{} + stitch_i], {}, {}[{} + {} + stitch_i]);",
                         r.op == OpKind::ArgMax ? "true" : "false", type, left, indices, first, right, indices,
                         first, half));
        break;
      default: unsupported(fmt::format("the reduction {}", op_name(r.op)));
    }
    --depth_;
    line("}");
  }

  // ---- expressions ----

  std::string var_text(const std::string& name) const {
    auto it = per_thread_.find(name);
    return it == per_thread_.end() ? name : it->second;
  }

  // Row-major (or explicitly strided) element offset of a global buffer access.
  std::string global_offset(const kir::BufferParam& b, const std::vector<Expr>& index) {
    // A rank-0 buffer holds one element and is accessed with no index.
    if (index.empty()) return "0";
    std::string offset;
    if (!b.strides.empty()) {
      for (size_t d = 0; d < index.size(); ++d) {
        if (d > 0) offset += " + ";
        offset += fmt::format("({}) * ({})", expr(index[d]), expr(b.strides[d]));
      }
      return offset;
    }
    if (!shifted_tail_) {
      if (std::optional<Expr> linear = facts_.cancelled_offset(b, index)) return expr(*linear);
    }
    offset = expr(index.at(0));
    for (size_t d = 1; d < index.size(); ++d) {
      offset = fmt::format("({}) * ({}) + ({})", offset, expr(b.shape[d]), expr(index[d]));
    }
    return offset;
  }

  // `(U + t) / C` and `(U + t) % C`, t the thread (or lane) variable of extent
  // T, U uniform, non-negative and a multiple of T, T dividing C: the quotient
  // is U / C and the remainder (U % C) + t. The loop lowering's linear index
  // has this form, and it turns a per-thread gather (mean[lin / 1024],
  // gamma[lin % 1024]) into a broadcast and a contiguous load.
  std::optional<std::string> split_thread_division(const Expr& e) {
    int64_t c = 0;
    if (!in_region_ || shifted_tail_ || e->dtype != DType::i64 || (e->op != OpKind::Div && e->op != OpKind::Rem) ||
        !kir::is_int_constant(e->operands[1], &c) || c <= 0) {
      return std::nullopt;
    }
    const Expr& x = facts_.resolve(e->operands[0]);
    if (x->kind != ExprKind::Op || x->op != OpKind::Add) return std::nullopt;
    const Expr& u = x->operands[0];
    const Expr& t = x->operands[1];
    if (t->kind != ExprKind::Var || !(t->name == region_.thread_var || t->name == region_.lane_var)) {
      return std::nullopt;
    }
    const int64_t threads = facts_.extent(t->name);
    std::optional<std::pair<__int128, __int128>> range = facts_.value_range(u);
    if (analysis_.expr_varies(u) || !range || range->first < 0 || c % threads != 0 || facts_.known_multiple(u) % threads != 0) {
      return std::nullopt;
    }
    if (e->op == OpKind::Div) return fmt::format("({} / int64_t({}LL))", expr(u), c);
    return fmt::format("(({} % int64_t({}LL)) + {})", expr(u), c, t->name);
  }

  // The coefficient of the vector loop's variable (the lane, or the thread
  // where a region has no warps) in index `e`, where `e` is affine in it: 0
  // for a value every lane shares, 1 for a contiguous one; nullopt otherwise.
  std::optional<int64_t> lane_stride(const Expr& e, int depth = 0) {
    if (depth > 64) return std::nullopt;
    switch (e->kind) {
      case ExprKind::Const: return 0;
      case ExprKind::Load: return analysis_.expr_varies(e) ? std::nullopt : std::optional<int64_t>(0);
      case ExprKind::Var: {
        const std::string& lane = thread_axis_var();
        if (e->name == lane) return 1;
        if (e->name == region_.warp_var || !analysis_.expr_varies(e)) return 0;
        const Expr& resolved = facts_.resolve(e);
        if (&resolved.node() != &e.node()) return lane_stride(resolved, depth + 1);
        if (auto it = let_defs_.find(e->name); it != let_defs_.end()) return lane_stride(it->second, depth + 1);
        return std::nullopt;
      }
      case ExprKind::Op: break;
    }
    if (!analysis_.expr_varies(e)) return 0;
    if ((e->op == OpKind::Div || e->op == OpKind::Rem) && split_thread_division(e)) {
      return e->op == OpKind::Div ? 0 : 1;
    }
    // An op of values every lane shares (a row's delinearised index) is shared too.
    std::vector<std::optional<int64_t>> strides;
    bool shared = true;
    for (const Expr& operand : e->operands) {
      strides.push_back(lane_stride(operand, depth + 1));
      shared = shared && strides.back() && *strides.back() == 0;
    }
    if (shared) return 0;
    if (e->op == OpKind::Cast) return is_float(e->dtype) ? std::nullopt : strides[0];
    if (e->op != OpKind::Add && e->op != OpKind::Sub && e->op != OpKind::Mul) return std::nullopt;
    const std::optional<int64_t> a = strides[0];
    const std::optional<int64_t> b = strides[1];
    if (!a || !b) return std::nullopt;
    if (e->op == OpKind::Add) return *a + *b;
    if (e->op == OpKind::Sub) return *a - *b;
    int64_t c = 0;
    if (*b == 0 && kir::is_int_constant(e->operands[1], &c)) return *a * c;
    if (*a == 0 && kir::is_int_constant(e->operands[0], &c)) return *b * c;
    return std::nullopt;
  }

  // Whether a read of `b` at `index` is the same element in every lane or
  // consecutive elements in consecutive lanes.
  bool lane_contiguous(const kir::BufferParam& b, const std::vector<Expr>& index) {
    if (index.empty()) return true;
    if (!b.strides.empty()) {
      for (size_t d = 0; d < index.size(); ++d) {
        const std::optional<int64_t> k = lane_stride(index[d]);
        int64_t stride = 0;
        if (!k || (*k != 0 && !(kir::is_int_constant(b.strides[d], &stride) && stride * *k == 1))) return false;
      }
      return true;
    }
    if (std::optional<Expr> linear = facts_.cancelled_offset(b, index)) {
      const std::optional<int64_t> k = lane_stride(*linear);
      return k && (*k == 0 || *k == 1);
    }
    for (size_t d = 0; d + 1 < index.size(); ++d) {
      const std::optional<int64_t> k = lane_stride(index[d]);
      if (!k || *k != 0) return false;
    }
    const std::optional<int64_t> k = lane_stride(index.back());
    return k && (*k == 0 || *k == 1);
  }

  std::string expr(const Expr& e) {
    switch (e->kind) {
      case ExprKind::Const:
        return is_float(e->dtype) ? float_literal(e->float_value, e->dtype) : int_literal(e->int_value, e->dtype);
      case ExprKind::Var: return var_text(e->name);
      case ExprKind::Load: return load(e);
      case ExprKind::Op: return op(e);
    }
    STITCH_ASSERT(false, "unknown expression kind");
  }

  std::string load(const Expr& e) {
    if (const kir::BufferParam* b = k_.find_buffer(e->name)) {
      const std::string offset = global_offset(*b, e->operands);
      if (is_narrow_float(b->dtype) && b->access == kir::Access::Read && in_region_ && !lane_contiguous(*b, e->operands)) {
        // No 16-bit gather in AVX-512: read through the 32-bit word holding the
        // element, which vectorises (docs/cpu-backend.md, f16 and bf16).
        return fmt::format("stitch_{0}_gathered({1}, {1}_words, {1}_shift, {2})", b->dtype == DType::f16 ? "f16" : "bf16",
                           e->name, offset);
      }
      const std::string element = fmt::format("{}[{}]", e->name, offset);
      if (b->dtype == DType::f16) return fmt::format("stitch_f16_bits_to_f32({})", element);
      if (b->dtype == DType::bf16) return fmt::format("stitch_bf16_bits_to_f32({})", element);
      return element;
    }
    return fmt::format("{}[{}]", var_text(e->name), expr(e->operands.at(0)));
  }

  std::string op(const Expr& e) {
    const DType result = e->dtype;
    if (e->op == OpKind::Cast) return cast_text(expr(e->operands[0]), e->operands[0].dtype(), result, e->in_range);
    std::vector<std::string> a;
    for (const Expr& operand : e->operands) a.push_back(expr(operand));
    const DType in = e->operands[0].dtype();
    const std::string t = compute_type(in);
    if (std::optional<std::string> split = split_thread_division(e)) return *split;
    const std::optional<common::IndexRange> dividend_range = facts_.value_range(e->operands[0]);
    if (std::optional<std::string> narrow = common::narrow_division_text(e, a[0], dividend_range)) return *narrow;
    if (in == DType::i64 && (e->op == OpKind::Add || e->op == OpKind::Sub || e->op == OpKind::Mul) &&
        facts_.value_range(e)) {
      // Provably no overflow: plain signed arithmetic, which GCC's induction
      // analysis sees through (the wrapping helper turned contiguous loads into gathers).
      const char* sign = e->op == OpKind::Add ? "+" : e->op == OpKind::Sub ? "-" : "*";
      return fmt::format("({} {} {})", a[0], sign, a[1]);
    }
    std::string text = op_text(e->op, in, t, a, e);
    // Each f16/bf16 op rounds once to its dtype; comparisons yield bool.
    if (is_narrow_float(result)) return round_to_narrow(result, text);
    return text;
  }

  struct Region {
    const StmtList* body = nullptr;  // the region's statements (inside the warp loop, if split)
    std::string thread_var;  // a plain region: the thread index
    std::string warp_var;    // a warp-split region: the warp index ...
    std::string lane_var;    // ... and the lane
    int64_t threads = 0;
    std::string thread_index;  // C++ text of the linear thread index
  };

  const Kernel& k_;
  bool in_region_ = false;
  // Every let's definition so far, for lane_stride.
  std::map<std::string, Expr> let_defs_;
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

}  // namespace

std::string emit_cpp_kernel(const Kernel& kernel) {
  kir::verify_kernel_or_throw(kernel);
  // Index arithmetic simplified once, for both emitters (codegen/common/index_simplify.h).
  const Kernel simplified = common::simplify_indices(kernel);
  return KernelEmitter(simplified).emit();
}

std::string emit_cpp_translation_unit(const std::vector<Kernel>& kernels) {
  std::string tu = "// Generated by Stitch's C++ emitter (docs/cpu-backend.md).\n";
  tu += cpu_runtime_header_text();
  for (const Kernel& k : kernels) {
    tu += "\n";
    tu += emit_cpp_kernel(k);
  }
  return tu;
}

std::string_view cpu_runtime_header_text() { return kStitchCpuRuntimeText; }

}  // namespace stitch::codegen::cpu
