// The thread regions of the C++ emitter's kernels (docs/cpu-backend.md,
// Thread loops): a region split into phases at barriers and reductions, each
// phase's statements in thread loops pushed inside uniform code, values that
// cross a phase boundary in per-thread arrays, streaming stores, and the
// reductions' combining trees.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "codegen/cpu/kernel_emitter.h"
#include "stitch/error.h"

namespace stitch::codegen::cpu::detail {

void KernelEmitter::emit_thread_region(const kir::ForStmt& region) {
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

  region_.body = body;
  next_phase_id_ = 0;
  analysis_.analyse(k_, *body, {region_.thread_var, region_.warp_var, region_.lane_var});
  const std::vector<Phase> phases = split_phases(*body);
  line(fmt::format("{{  // thread region: {} threads, {} phase(s)", region_.threads, phases.size()));
  ++depth_;
  in_region_ = true;
  emit_phases(phases);
  in_region_ = false;
  for (const std::string& name : region_names_) per_thread_.erase(name);
  region_names_.clear();
  --depth_;
  line("}");
}

std::vector<Phase> KernelEmitter::split_phases(const StmtList& body) {
  std::vector<Phase> phases(1);
  auto next = [&] {
    phases.emplace_back();
    phases.back().id = next_phase_id_++;
  };
  phases.back().id = next_phase_id_++;
  for (const Stmt& s : body) {
    if (std::holds_alternative<kir::BarrierStmt>(s.node)) {
      next();
    } else if (const auto* r = std::get_if<kir::ReduceStmt>(&s.node)) {
      phases.back().reduction = r;
      next();
    } else if (const auto* t = std::get_if<kir::TransposeTileStmt>(&s.node)) {
      phases.back().transpose = t;
      next();
    } else if (const auto* f = std::get_if<kir::ForStmt>(&s.node);
               f && has_nested_sync(f->body) && f->level == LoopLevel::Serial && !analysis_.expr_varies(f->extent)) {
      // Every thread runs the loop's iterations in step (a uniform trip
      // count), so its body splits into phases like the region's.
      if (!phases.back().stmts.empty()) next();
      phases.back().stmts.push_back(&s);
      phases.back().loop = f;
      next();
    } else {
      if (has_nested_sync({s})) unsupported("a barrier or reduction nested in control flow of a thread region");
      phases.back().stmts.push_back(&s);
    }
  }
  return phases;
}

void KernelEmitter::emit_phases(const std::vector<Phase>& phases) {
  declare_cross_phase_values(phases);
  for (size_t p = 0; p < phases.size(); ++p) {
    if (phases[p].loop) {
      emit_loop_phase(*phases[p].loop);
      continue;
    }
    if (phases[p].stmts.empty() && !phases[p].reduction && !phases[p].transpose) continue;
    emit_phase(phases[p], p, phases.size());
    if (phases[p].reduction) emit_reduction_combine(*phases[p].reduction, phases[p].id);
    if (phases[p].transpose) emit(*phases[p].transpose);
  }
}

// The loop runs once for the block, its body's phases (each a loop over the
// threads) inside: per-thread values the body defines and reads across its
// phases are arrays declared in the body, those it reads from before the loop
// were declared by the enclosing phases.
void KernelEmitter::emit_loop_phase(const kir::ForStmt& loop) {
  check_identifier(loop.var);
  facts_.note_loop_extent(loop.var, loop.extent);
  line(fmt::format("for (int64_t {0} = 0; {0} < {1}; ++{0}) {{  // a serial loop of phases", loop.var,
                   expr(loop.extent)));
  ++depth_;
  const std::vector<Phase> phases = split_phases(loop.body);
  line(fmt::format("// {} phase(s)", phases.size()));
  emit_phases(phases);
  --depth_;
  line("}");
}

void KernelEmitter::declare_cross_phase_values(const std::vector<Phase>& phases) {
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
    if (const kir::ReduceStmt* r = phases[p].reduction) declare_reduction(*r, phases[p].id);
  }
}

void KernelEmitter::declare_reduction(const kir::ReduceStmt& r, size_t phase) {
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

void KernelEmitter::emit_phase(const Phase& phase, size_t index, size_t count) {
  line(fmt::format("// phase {} of {}", index + 1, count));
  sink(phase.stmts);
  if (const kir::ReduceStmt* r = phase.reduction) {
    // Each thread publishes its operand; the combine step after the loop reads all.
    std::set<std::string> used;
    collect_names(r->value, used);
    collect_names(r->index, used);
    thread_loop(used, {}, false, [&] {
      line(fmt::format("stitch_values_{}[{}] = {};", phase.id, region_.thread_index, expr(r->value)));
      if (r->index.defined()) {
        line(fmt::format("stitch_indices_{}[{}] = {};", phase.id, region_.thread_index, expr(r->index)));
      }
    });
  }
}

bool KernelEmitter::sinkable(const Stmt& s) const {
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

bool KernelEmitter::is_first_thread_only(const Stmt& s) const {
  const auto* i = std::get_if<kir::IfStmt>(&s.node);
  if (!i || !i->else_body.empty() || region_.thread_var.empty()) return false;
  const Expr& c = i->cond;
  if (c->kind != ExprKind::Op || c->op != OpKind::Eq) return false;
  const Expr& a = c->operands[0];
  const Expr& b = c->operands[1];
  int64_t zero = -1;
  return a->kind == ExprKind::Var && a->name == region_.thread_var && kir::is_int_constant(b, &zero) && zero == 0;
}

void KernelEmitter::sink(const std::vector<const Stmt*>& stmts) {
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

std::vector<const Stmt*> KernelEmitter::pointers(const StmtList& stmts) {
  std::vector<const Stmt*> out;
  for (const Stmt& s : stmts) out.push_back(&s);
  return out;
}

void KernelEmitter::emit_sunk(const Stmt& s) {
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

void KernelEmitter::collect_names_outside(const StmtList& stmts, const std::set<const Stmt*>& run,
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

void KernelEmitter::flush_run(std::vector<const Stmt*>& run) {
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

void KernelEmitter::emit_shifted_tail(const TailGuard& tail) {
  line(fmt::format("const bool stitch_live = {} >= stitch_shift;", thread_axis_var()));
  per_thread_[tail.index] = fmt::format("({} - stitch_shift)", tail.index);
  // Every index prints through r here, so r stays opaque to the index facts:
  // resolved to its definition it would print the thread unshifted (a store
  // past the end). An access whose index delinearises one linear value still
  // prints as that value, through r (shifted), with no divisions.
  facts_.hold(tail.index);
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
  facts_.release(tail.index);
  shifted_tail_ = false;
}

ThreadAxis KernelEmitter::region_axis() const {
  ThreadAxis axis;
  axis.thread = thread_axis_var();
  axis.fixed = region_.warp_var;
  axis.varies = [this](const std::string& n) {
    if (analysis_.varies(n)) return true;
    return std::any_of(k_.shared.begin(), k_.shared.end(), [&](const kir::SharedBuffer& sb) { return sb.name == n; });
  };
  return axis;
}

std::vector<const kir::StoreStmt*> KernelEmitter::streamed_stores(const std::vector<const Stmt*>& run) const {
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

void KernelEmitter::streamed_thread_loop(std::set<std::string> used, const std::set<std::string>& defined,
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

void KernelEmitter::emit_remat(const std::set<std::string>& used, const std::set<std::string>& defined) {
  for (const kir::LetStmt* let : analysis_.remat_order()) {
    if (used.count(let->name) && !defined.count(let->name)) {
      line(fmt::format("const {} {} = {};", compute_type(let->dtype), let->name, expr(let->init)));
    }
  }
}

void KernelEmitter::thread_loop(std::set<std::string> used, const std::set<std::string>& defined, bool first_only,
                                const std::function<void()>& body, bool no_simd) {
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

void KernelEmitter::emit_reduction_combine(const kir::ReduceStmt& r, size_t phase) {
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

void KernelEmitter::emit_reduction_level(const kir::ReduceStmt& r, const std::string& values, const std::string& indices,
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

}  // namespace stitch::codegen::cpu::detail
