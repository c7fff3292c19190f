#include "kir/verifier.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <unordered_set>

#include "kir/printer.h"
#include "stitch/error.h"

namespace stitch::kir {

namespace {

// How a value may differ between the threads of one block. Barriers and
// block reductions need Uniform control flow; warp reductions need control
// flow that is the same for the 32 lanes of a warp.
enum class Variance : uint8_t { Uniform, VariesByWarp, VariesByThread };

Variance join(Variance a, Variance b) { return std::max(a, b); }

enum class SymbolKind : uint8_t { Scalar, LoopVar, Local, ReduceResult, Buffer, Shared, LocalArray };

struct Symbol {
  SymbolKind kind;
  DType dtype;
  int rank = 0;                 // buffers
  Access access = Access::ReadWrite;
  int64_t count = 0;            // shared buffers and local arrays
  int thread_region = 0;        // the thread region that declared it; 0: none
};

bool is_buffer(SymbolKind k) {
  return k == SymbolKind::Buffer || k == SymbolKind::Shared || k == SymbolKind::LocalArray;
}

bool is_combining_reduction(OpKind op) { return is_reduction(op) && op != OpKind::ReduceMean; }
bool is_arg_reduction(OpKind op) { return op == OpKind::ArgMax || op == OpKind::ArgMin; }

// One walk over the kernel. The variance of each local is a fixpoint over all
// its assignments (a loop may assign after a use), so the walk is repeated
// until no variance changes and only the last walk's problems are reported.
class Walker {
 public:
  Walker(const Kernel& k, std::unordered_map<std::string, Variance>& variance)
      : k_(k), variance_(variance) {}

  bool changed() const { return changed_; }
  std::vector<std::string> take_problems() { return std::move(problems_); }

  void run() {
    declare_params();
    check_launch();
    int grid_loops = 0;
    for (const Stmt& s : k_.body) {
      const auto* loop = std::get_if<ForStmt>(&s.node);
      if (loop && loop->level == LoopLevel::Grid) {
        ++grid_loops;
      } else if (!std::holds_alternative<LetStmt>(s.node) && !std::holds_alternative<AssignStmt>(s.node)) {
        problem("only the grid loop, lets and assignments may appear at the top level");
      }
      top_level_ = true;
      stmt(s, Context());
    }
    if (grid_loops == 0) problem("kernel has no grid loop");
    if (grid_loops > 1) problem(fmt::format("kernel has {} grid loops", grid_loops));
  }

 private:
  // Where the walk is: the enclosing loops and control flow of a statement.
  struct Context {
    bool in_grid = false;
    int thread_region = 0;        // nonzero inside a block loop
    const ForStmt* vector_loop = nullptr;
    Variance control = Variance::Uniform;
  };

  void problem(std::string msg) { problems_.push_back(std::move(msg)); }

  void declare(const std::string& name, Symbol sym) {
    if (!ever_defined_.insert(name).second) {
      problem(fmt::format("'{}' is already defined", name));
      return;
    }
    visible_[name] = sym;
    scopes_.back().push_back(name);
  }

  void push_scope() { scopes_.emplace_back(); }
  void pop_scope() {
    for (const std::string& name : scopes_.back()) visible_.erase(name);
    scopes_.pop_back();
  }

  void raise_variance(const std::string& name, Variance v) {
    Variance& known = variance_[name];
    if (v > known) {
      known = v;
      changed_ = true;
    }
  }

  void declare_params() {
    push_scope();
    for (const ScalarParam& s : k_.scalars) declare(s.name, {SymbolKind::Scalar, s.dtype});
    // Shapes and the launch grid see only scalar parameters, so check them
    // before buffers enter scope.
    for (const BufferParam& b : k_.buffers) {
      for (const Expr& e : b.shape) index_expr(e, fmt::format("shape of '{}'", b.name));
      for (const Expr& e : b.strides) index_expr(e, fmt::format("stride of '{}'", b.name));
      if (!b.strides.empty() && b.strides.size() != b.shape.size()) {
        problem(fmt::format("'{}' has {} dimensions but {} strides", b.name, b.shape.size(), b.strides.size()));
      }
      if (b.streaming && b.access != Access::Write) {
        problem(fmt::format("streaming buffer '{}' is not write-only", b.name));
      }
    }
    index_expr(k_.launch.grid, "launch grid");
    for (const BufferParam& b : k_.buffers) {
      declare(b.name, {SymbolKind::Buffer, b.dtype, static_cast<int>(b.shape.size()), b.access});
    }
    for (const SharedBuffer& s : k_.shared) {
      if (s.count <= 0) problem(fmt::format("shared buffer '{}' has {} elements", s.name, s.count));
      const int64_t size = shared_element_bytes(s.dtype);
      if (k_.shared_arena_bytes > 0 &&
          (s.offset < 0 || s.offset % size != 0 || s.offset + s.count * size > k_.shared_arena_bytes)) {
        problem(fmt::format("shared buffer '{}' at offset {} is misaligned or outside the {}-byte arena", s.name, s.offset,
                            k_.shared_arena_bytes));
      }
      if (k_.shared_arena_bytes == 0 && s.offset >= 0) {
        problem(fmt::format("shared buffer '{}' has an offset but the kernel has no arena", s.name));
      }
      declare(s.name, {SymbolKind::Shared, s.dtype, 1, Access::ReadWrite, s.count});
    }
  }

  void check_launch() {
    int64_t b = k_.launch.block_size;
    const int64_t most = k_.cpu_only ? kCpuMaxBlockSize : kCudaMaxBlockSize;
    if (b < 1 || b > most) problem(fmt::format("launch block size {} is not in 1..{}", b, most));
  }

  void index_expr(const Expr& e, const std::string& what) {
    if (!e.defined()) {
      problem(fmt::format("{} is missing", what));
      return;
    }
    expr(e, Context{});
    if (e.dtype() != DType::i64) problem(fmt::format("{} is {}, expected i64", what, dtype_name(e.dtype())));
  }

  // Checks `e` and returns how it varies across the threads of a block.
  Variance expr(const Expr& e, const Context& ctx) {
    if (!e.defined()) {
      problem("an operand is missing");
      return Variance::Uniform;
    }
    const ExprNode& n = e.node();
    switch (n.kind) {
      case ExprKind::Const: return Variance::Uniform;
      case ExprKind::Var: {
        const Symbol* sym = lookup(n.name);
        if (!sym) return Variance::Uniform;
        if (is_buffer(sym->kind)) {
          problem(fmt::format("'{}' is a buffer, used as a scalar", n.name));
        } else if (sym->dtype != n.dtype) {
          problem(fmt::format("'{}' is used as {} but declared {}", n.name, dtype_name(n.dtype), dtype_name(sym->dtype)));
        }
        auto it = variance_.find(n.name);
        return it == variance_.end() ? Variance::Uniform : it->second;
      }
      case ExprKind::Op: {
        Variance v = Variance::Uniform;
        std::vector<DType> dtypes;
        for (const Expr& operand : n.operands) {
          v = join(v, expr(operand, ctx));
          dtypes.push_back(operand.dtype());
        }
        DType result = n.dtype;
        std::string why;
        if (!infer_op_dtype(n.op, dtypes, n.dtype, &result, &why)) {
          problem(fmt::format("{}: {}", print_expr(e), why));
        } else if (result != n.dtype) {
          problem(fmt::format("{} is typed {} but computes {}", print_expr(e), dtype_name(n.dtype), dtype_name(result)));
        }
        return v;
      }
      case ExprKind::Load: {
        Variance v = access(n.name, n.operands, ctx, /*is_store=*/false);
        const Symbol* sym = lookup_quiet(n.name);
        if (sym && is_buffer(sym->kind) && sym->dtype != n.dtype) {
          problem(fmt::format("load of '{}' is typed {} but the buffer holds {}", n.name, dtype_name(n.dtype), dtype_name(sym->dtype)));
        }
        return v;
      }
    }
    STITCH_ASSERT(false, "unknown expression kind");
  }

  const Symbol* lookup_quiet(const std::string& name) const {
    auto it = visible_.find(name);
    return it == visible_.end() ? nullptr : &it->second;
  }

  const Symbol* lookup(const std::string& name) {
    const Symbol* sym = lookup_quiet(name);
    if (!sym) problem(fmt::format("'{}' is not defined", name));
    return sym;
  }

  // The rules shared by loads and stores; returns the variance of the address.
  Variance access(const std::string& buffer, const std::vector<Expr>& index, const Context& ctx, bool is_store) {
    Variance v = Variance::Uniform;
    for (const Expr& i : index) {
      v = join(v, expr(i, ctx));
      if (i.defined() && i.dtype() != DType::i64) {
        problem(fmt::format("index of '{}' is {}, expected i64", buffer, dtype_name(i.dtype())));
      }
    }
    const Symbol* sym = lookup(buffer);
    if (!sym) return v;
    if (!is_buffer(sym->kind)) {
      problem(fmt::format("'{}' is not a buffer", buffer));
      return v;
    }
    if (static_cast<int>(index.size()) != sym->rank) {
      problem(fmt::format("'{}' has rank {} but is indexed with {} indices", buffer, sym->rank, index.size()));
    }
    if (sym->kind == SymbolKind::Shared && !ctx.in_grid) {
      problem(fmt::format("shared buffer '{}' accessed outside the grid loop", buffer));
    }
    if (is_store && sym->access == Access::Read) problem(fmt::format("store to read-only buffer '{}'", buffer));
    if (!is_store && sym->access == Access::Write) problem(fmt::format("load from write-only buffer '{}'", buffer));
    if (sym->kind == SymbolKind::LocalArray) {
      if (is_store && sym->thread_region != ctx.thread_region && ctx.thread_region != 0) {
        problem(fmt::format("local array '{}' is declared outside the thread region that stores to it", buffer));
      }
      return Variance::VariesByThread;
    }
    return v;
  }

  void stmts(const StmtList& list, const Context& ctx) {
    for (const Stmt& s : list) {
      top_level_ = false;
      stmt(s, ctx);
    }
  }

  void stmt(const Stmt& s, const Context& ctx) {
    std::visit([&](const auto& node) { check(node, ctx); }, s.node);
  }

  void check(const ForStmt& s, const Context& ctx) {
    bool at_top = top_level_;
    Context inner = ctx;
    Variance extent = Variance::Uniform;
    if (s.extent.defined()) {
      extent = expr(s.extent, ctx);
      if (s.extent.dtype() != DType::i64) {
        problem(fmt::format("extent of loop '{}' is {}, expected i64", s.var, dtype_name(s.extent.dtype())));
      }
    } else {
      problem(fmt::format("loop '{}' has no extent", s.var));
    }
    int64_t constant = 0;
    bool is_constant = is_int_constant(s.extent, &constant);
    Variance var_variance = join(extent, ctx.control);
    switch (s.level) {
      case LoopLevel::Grid:
        if (!at_top) problem(fmt::format("grid loop '{}' is not at the top level", s.var));
        if (s.extent != k_.launch.grid) {
          problem(fmt::format("grid loop '{}' extent {} differs from the launch grid {}", s.var,
                              print_expr(s.extent), print_expr(k_.launch.grid)));
        }
        inner.in_grid = true;
        var_variance = Variance::Uniform;
        break;
      case LoopLevel::Block: {
        if (!ctx.in_grid) problem(fmt::format("block loop '{}' is outside the grid loop", s.var));
        if (ctx.thread_region != 0) problem(fmt::format("block loop '{}' is inside another block loop", s.var));
        if (ctx.vector_loop) problem(fmt::format("block loop '{}' is inside vector loop '{}'", s.var, ctx.vector_loop->var));
        if (ctx.control != Variance::Uniform) problem(fmt::format("block loop '{}' is under thread-dependent control flow", s.var));
        bool has_warp_loop = check_block_shape(s, is_constant ? constant : -1);
        inner.thread_region = ++thread_regions_;
        var_variance = has_warp_loop ? Variance::VariesByWarp : Variance::VariesByThread;
        break;
      }
      case LoopLevel::Warp:
        if (!parent_block_ || parent_block_->body.size() != 1 ||
            std::get_if<ForStmt>(&parent_block_->body[0].node) != &s) {
          problem(fmt::format("warp loop '{}' is not the whole body of a block loop", s.var));
        }
        if (!is_constant || constant != kWarpSize) {
          problem(fmt::format("warp loop '{}' has extent {}; a warp loop spans the {} lanes", s.var,
                              print_expr(s.extent), kWarpSize));
        }
        var_variance = Variance::VariesByThread;
        break;
      case LoopLevel::Unroll:
      case LoopLevel::Vector:
        if (!is_constant) problem(fmt::format("{} loop '{}' has a non-constant extent", loop_level_name(s.level), s.var));
        if (s.level == LoopLevel::Vector) inner.vector_loop = &s;
        break;
      case LoopLevel::Serial: break;
    }
    if (!is_parallel(s.level)) inner.control = join(ctx.control, extent);
    raise_variance(s.var, var_variance);
    push_scope();
    declare(s.var, {SymbolKind::LoopVar, DType::i64});
    const ForStmt* saved_parent = parent_block_;
    parent_block_ = s.level == LoopLevel::Block ? &s : nullptr;
    stmts(s.body, inner);
    parent_block_ = saved_parent;
    pop_scope();
  }

  // A block loop spans the block's threads, alone or with the warp loop that
  // is its whole body. Returns whether it has that warp loop.
  bool check_block_shape(const ForStmt& s, int64_t extent) {
    bool has_warp_loop = false;
    for (const Stmt& inner : s.body) {
      const auto* loop = std::get_if<ForStmt>(&inner.node);
      if (loop && loop->level == LoopLevel::Warp) has_warp_loop = true;
    }
    if (extent < 0) {
      problem(fmt::format("block loop '{}' has a non-constant extent", s.var));
      return has_warp_loop;
    }
    int64_t threads = has_warp_loop ? extent * kWarpSize : extent;
    if (threads != k_.launch.block_size) {
      problem(fmt::format("block loop '{}' spans {} threads but the launch block size is {}", s.var, threads,
                          k_.launch.block_size));
    }
    return has_warp_loop;
  }

  void check(const IfStmt& s, const Context& ctx) {
    Context inner = ctx;
    if (s.cond.defined()) {
      inner.control = join(ctx.control, expr(s.cond, ctx));
      if (!is_bool(s.cond.dtype())) problem(fmt::format("if condition is {}, expected bool", dtype_name(s.cond.dtype())));
    } else {
      problem("if has no condition");
    }
    push_scope();
    stmts(s.then_body, inner);
    pop_scope();
    push_scope();
    stmts(s.else_body, inner);
    pop_scope();
  }

  void check(const LetStmt& s, const Context& ctx) {
    Variance v = ctx.control;
    if (s.init.defined()) {
      v = join(v, expr(s.init, ctx));
      if (s.init.dtype() != s.dtype) {
        problem(fmt::format("'{}' is declared {} but initialised with {}", s.name, dtype_name(s.dtype),
                            dtype_name(s.init.dtype())));
      }
    }
    raise_variance(s.name, v);
    declare(s.name, {SymbolKind::Local, s.dtype, 0, Access::ReadWrite, 0, ctx.thread_region});
  }

  void check(const AssignStmt& s, const Context& ctx) {
    Variance v = join(ctx.control, expr(s.value, ctx));
    const Symbol* sym = lookup(s.name);
    if (!sym) return;
    if (sym->kind != SymbolKind::Local) {
      problem(fmt::format("'{}' is not a local and cannot be assigned", s.name));
      return;
    }
    if (s.value.defined() && sym->dtype != s.value.dtype()) {
      problem(fmt::format("'{}' is {} but is assigned {}", s.name, dtype_name(sym->dtype), dtype_name(s.value.dtype())));
    }
    // One copy per block on the CPU but one per thread on the GPU: a thread
    // region may only assign its own locals, so both back ends agree.
    if (ctx.thread_region != 0 && sym->thread_region != ctx.thread_region) {
      problem(fmt::format("'{}' is declared outside the thread region that assigns it", s.name));
    }
    raise_variance(s.name, v);
  }

  void check(const LocalArrayStmt& s, const Context& ctx) {
    if (s.count <= 0) problem(fmt::format("local array '{}' has {} elements", s.name, s.count));
    declare(s.name, {SymbolKind::LocalArray, s.dtype, 1, Access::ReadWrite, s.count, ctx.thread_region});
  }

  void check(const StoreStmt& s, const Context& ctx) {
    expr(s.value, ctx);
    access(s.buffer, s.index, ctx, /*is_store=*/true);
    const Symbol* sym = lookup_quiet(s.buffer);
    if (sym && is_buffer(sym->kind) && s.value.defined() && s.value.dtype() != sym->dtype) {
      problem(fmt::format("store of {} to '{}', which holds {}", dtype_name(s.value.dtype()), s.buffer,
                          dtype_name(sym->dtype)));
    }
  }

  void check(const VectorMoveStmt& s, const Context& ctx) {
    expr(s.array_first, ctx);
    access(s.buffer, s.index, ctx, /*is_store=*/s.store);
    const Symbol* global = lookup_quiet(s.buffer);
    const Symbol* local = lookup_quiet(s.array);
    if (!global || global->kind != SymbolKind::Buffer) {
      problem(fmt::format("vector move of '{}', which is not a buffer parameter", s.buffer));
    }
    if (!local || local->kind != SymbolKind::LocalArray) {
      problem(fmt::format("vector move into '{}', which is not a local array", s.array));
    } else if (global && global->dtype != local->dtype) {
      problem(fmt::format("vector move between '{}' ({}) and '{}' ({})", s.buffer, dtype_name(global->dtype), s.array,
                          dtype_name(local->dtype)));
    }
    if (s.count < 1) problem(fmt::format("vector move of {} elements of '{}'", s.count, s.buffer));
    if (s.array_first.defined() && s.array_first.dtype() != DType::i64) {
      problem(fmt::format("vector move into '{}' at a non-i64 slot", s.array));
    }
  }

  void check(const PrefetchStmt& s, const Context& ctx) {
    expr(s.first, ctx);
    expr(s.count, ctx);
    const Symbol* sym = lookup_quiet(s.buffer);
    if (!sym || sym->kind != SymbolKind::Buffer) {
      problem(fmt::format("prefetch of '{}', which is not a buffer parameter", s.buffer));
    }
    for (const Expr* e : {&s.first, &s.count}) {
      if (e->defined() && e->dtype() != DType::i64) problem(fmt::format("prefetch of '{}' with a non-i64 bound", s.buffer));
    }
  }

  void check(const BarrierStmt&, const Context& ctx) {
    if (!ctx.in_grid) problem("barrier outside the grid loop");
    if (ctx.control != Variance::Uniform) problem("barrier under thread-dependent control flow");
    if (ctx.vector_loop) problem(fmt::format("barrier inside vector loop '{}'", ctx.vector_loop->var));
  }

  void check(const TransposeTileStmt& s, const Context& ctx) {
    if (ctx.thread_region == 0) problem(fmt::format("transpose_tile of '{}' outside a block loop", s.buffer));
    if (ctx.control != Variance::Uniform) problem("transpose_tile under thread-dependent control flow");
    if (ctx.vector_loop) problem(fmt::format("transpose_tile inside vector loop '{}'", ctx.vector_loop->var));
    const SharedBuffer* sb = k_.find_shared(s.buffer);
    if (!sb) {
      problem(fmt::format("transpose_tile of '{}', which is not a shared buffer", s.buffer));
    } else if (s.size < 1 || s.size > sb->count / s.size) {
      problem(fmt::format("transpose_tile of a {0}x{0} square in '{1}', which holds {2} elements", s.size, s.buffer,
                          sb->count));
    }
  }

  void check(const ReduceStmt& s, const Context& ctx) {
    std::string what = fmt::format("{} {}", reduce_scope_name(s.scope), op_name(s.op));
    expr(s.value, ctx);
    if (s.index.defined()) expr(s.index, ctx);
    if (ctx.thread_region == 0) problem(fmt::format("{} outside a block or warp loop", what));
    if (ctx.vector_loop) problem(fmt::format("{} inside vector loop '{}'", what, ctx.vector_loop->var));
    Variance allowed = s.scope == ReduceScope::Warp ? Variance::VariesByWarp : Variance::Uniform;
    if (ctx.control > allowed) {
      problem(fmt::format("{} under {}-dependent control flow", what, s.scope == ReduceScope::Warp ? "lane" : "thread"));
    }
    if (k_.launch.block_size % kWarpSize != 0) {
      problem(fmt::format("{} needs a block size that is a multiple of {}", what, kWarpSize));
    }
    check_reduce_operands(s, what);
    DType dtype = s.value.defined() ? s.value.dtype() : DType::f32;
    if (s.scope == ReduceScope::Block) {
      check_scratch(s.scratch, dtype, what, "scratch");
      if (is_arg_reduction(s.op)) check_scratch(s.index_scratch, DType::i64, what, "index_scratch");
    } else if (!s.scratch.empty() || !s.index_scratch.empty()) {
      problem(fmt::format("{} takes no scratch buffer", what));
    }
    const bool segmented = s.width != kWarpSize;
    if (segmented && (s.scope != ReduceScope::Warp || s.width < 2 || s.width > kWarpSize || (s.width & (s.width - 1)) != 0)) {
      problem(fmt::format("{} has width {}; a warp reduction's width is a power of two 2..{}, a block's {}", what,
                          s.width, kWarpSize, kWarpSize));
    }
    // A warp result is the same in a warp's lanes (a segment's, when
    // segmented: it varies by thread); a block result in the whole block.
    Variance result = ctx.control;
    if (s.scope == ReduceScope::Warp) result = join(segmented ? Variance::VariesByThread : Variance::VariesByWarp, ctx.control);
    raise_variance(s.result, result);
    declare(s.result, {SymbolKind::ReduceResult, dtype, 0, Access::ReadWrite, 0, ctx.thread_region});
    if (!s.index_result.empty()) {
      raise_variance(s.index_result, result);
      declare(s.index_result, {SymbolKind::ReduceResult, DType::i64, 0, Access::ReadWrite, 0, ctx.thread_region});
    }
  }

  void check_reduce_operands(const ReduceStmt& s, const std::string& what) {
    if (!is_combining_reduction(s.op)) {
      problem(fmt::format("{} is not a combining reduction", op_name(s.op)));
      return;
    }
    if (!s.value.defined()) return;
    DType t = s.value.dtype();
    bool logical = s.op == OpKind::ReduceAny || s.op == OpKind::ReduceAll;
    if (logical && !is_bool(t)) problem(fmt::format("{} needs a bool value, got {}", what, dtype_name(t)));
    if (!logical && is_bool(t)) problem(fmt::format("{} needs a numeric value, got bool", what));
    if (is_arg_reduction(s.op)) {
      if (!s.index.defined() || s.index.dtype() != DType::i64) problem(fmt::format("{} needs an i64 index", what));
      if (s.index_result.empty()) problem(fmt::format("{} needs an index result", what));
    } else if (s.index.defined() || !s.index_result.empty() || !s.index_scratch.empty()) {
      problem(fmt::format("{} takes no index", what));
    }
  }

  void check_scratch(const std::string& name, DType dtype, const std::string& what, const char* role) {
    const SharedBuffer* buf = k_.find_shared(name);
    if (!buf) {
      problem(fmt::format("{} {} '{}' is not a shared buffer", what, role, name));
      return;
    }
    if (buf->dtype != dtype) {
      problem(fmt::format("{} {} '{}' holds {}, expected {}", what, role, name, dtype_name(buf->dtype), dtype_name(dtype)));
    }
    int64_t warps = (k_.launch.block_size + kWarpSize - 1) / kWarpSize;
    if (buf->count < warps) {
      problem(fmt::format("{} {} '{}' holds {} elements, needs {} (one per warp)", what, role, name, buf->count, warps));
    }
  }

  const Kernel& k_;
  std::unordered_map<std::string, Variance>& variance_;
  bool changed_ = false;
  bool top_level_ = false;
  const ForStmt* parent_block_ = nullptr;
  int thread_regions_ = 0;
  std::vector<std::string> problems_;
  std::unordered_map<std::string, Symbol> visible_;
  std::vector<std::vector<std::string>> scopes_;
  std::unordered_set<std::string> ever_defined_;
};

}  // namespace

std::vector<std::string> verify_kernel(const Kernel& k) {
  std::unordered_map<std::string, Variance> variance;
  // Variance only rises and has three levels, so this ends within a few walks.
  while (true) {
    Walker walker(k, variance);
    walker.run();
    if (!walker.changed()) return walker.take_problems();
  }
}

void verify_kernel_or_throw(const Kernel& k) {
  std::vector<std::string> problems = verify_kernel(k);
  if (problems.empty()) return;
  std::string message = fmt::format("kernel '{}' fails verification:", k.name);
  for (const std::string& p : problems) message += "\n  " + p;
  STITCH_ASSERT(false, message);
}

}  // namespace stitch::kir
