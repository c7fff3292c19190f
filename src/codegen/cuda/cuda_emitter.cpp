#include "codegen/cuda/cuda_emitter.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <type_traits>
#include <utility>
#include <variant>

#include <fmt/format.h>

#include "codegen/common/index_simplify.h"
#include "codegen/common/index_facts.h"
#include "codegen/common/index_range.h"
#include "codegen/common/emitter_skeleton.h"
#include "codegen/cuda/cuda_runtime_text.h"
#include "codegen/cuda/cuda_text.h"
#include "kir/verifier.h"
#include "stitch/error.h"

namespace stitch::codegen::cuda {
namespace {

using kir::Expr;
using kir::Kernel;
using kir::LoopLevel;
using kir::Stmt;
using kir::StmtList;
using common::compute_type;
using common::is_narrow_float;

// The helper functor of stitch_cuda_runtime.cuh that combines two partials.
std::string_view combine_functor(OpKind op) {
  switch (op) {
    case OpKind::ReduceSum: return "stitch_op_sum";
    case OpKind::ReduceProd: return "stitch_op_prod";
    case OpKind::ReduceMax: return "stitch_op_max";
    case OpKind::ReduceMin: return "stitch_op_min";
    case OpKind::ReduceAny: return "stitch_op_any";
    case OpKind::ReduceAll: return "stitch_op_all";
    default: cuda_text().unsupported(fmt::format("the reduction {}", op_name(op)));
  }
}

void collect_assigned(const StmtList& stmts, std::set<std::string>& names) {
  for (const Stmt& s : stmts) {
    if (const auto* a = std::get_if<kir::AssignStmt>(&s.node)) names.insert(a->name);
    if (const auto* f = std::get_if<kir::ForStmt>(&s.node)) collect_assigned(f->body, names);
    if (const auto* i = std::get_if<kir::IfStmt>(&s.node)) {
      collect_assigned(i->then_body, names);
      collect_assigned(i->else_body, names);
    }
  }
}

// The i64 lets of a kernel that are never assigned and defined once, by
// name: what IndexFacts may look through (a local defined before every use
// of the index lets built on it, so in scope wherever they are).
void collect_index_lets(const StmtList& stmts, const std::set<std::string>& assigned,
                        std::map<std::string, const kir::LetStmt*>& lets, std::set<std::string>& twice) {
  for (const Stmt& s : stmts) {
    if (const auto* l = std::get_if<kir::LetStmt>(&s.node)) {
      if (l->init.defined() && l->dtype == DType::i64 && !assigned.count(l->name) && !twice.count(l->name)) {
        if (!lets.emplace(l->name, l).second) {
          lets.erase(l->name);
          twice.insert(l->name);
        }
      }
    }
    if (const auto* f = std::get_if<kir::ForStmt>(&s.node)) collect_index_lets(f->body, assigned, lets, twice);
    if (const auto* i = std::get_if<kir::IfStmt>(&s.node)) {
      collect_index_lets(i->then_body, assigned, lets, twice);
      collect_index_lets(i->else_body, assigned, lets, twice);
    }
  }
}

using Range = common::IndexRange;

class KernelEmitter : private common::EmitterSkeleton<KernelEmitter> {
 public:
  explicit KernelEmitter(const Kernel& k) : EmitterSkeleton(k, cuda_text()) {}

  std::string emit() {
    check_identifier(k_.name);
    collect_assigned(k_.body, assigned_);
    std::set<std::string> twice;
    collect_index_lets(k_.body, assigned_, index_lets_, twice);
    std::vector<std::string> params;
    for (const kir::BufferParam& b : k_.buffers) {
      check_identifier(b.name);
      const bool read_only = b.access == kir::Access::Read;
      // Distinct buffers (the executable never passes overlapping ones), so
      // __restrict__: loads may move past stores and read-only ones take the
      // non-coherent path. Not where the caller could not prove it.
      params.push_back(fmt::format("{}{}* {}{}{}", read_only ? "const " : "", storage_type(b.dtype),
                                   b.may_alias ? "" : "__restrict__ ", b.name, k_.aligned_bytes > 0 ? "_arg" : ""));
    }
    for (const kir::ScalarParam& s : k_.scalars) {
      check_identifier(s.name);
      params.push_back(fmt::format("const {} {}", compute_type(s.dtype), s.name));
    }
    if (!k_.note.empty()) line("// " + k_.note);
    line(fmt::format("extern \"C\" __global__ void __launch_bounds__({}) {}(", k_.launch.block_size, k_.name));
    for (size_t i = 0; i < params.size(); ++i) {
      line(fmt::format("    {}{}", params[i], i + 1 < params.size() ? "," : ") {"));
    }
    if (params.empty()) line("    ) {");
    ++depth_;
    return finish_kernel();
  }

 private:
  // The grid loop spans the launch grid exactly (docs/kernel-ir.md): its
  // variable is the block index and its body runs once in every thread.
  void emit_grid_loop(const kir::ForStmt& f) {
    check_identifier(f.var);
    STITCH_ASSERT(k_.panel_elements == 0, "the CUDA emitter has no dot epilogues (block ranges), kernel " + k_.name);
    line(fmt::format("// grid: {} blocks of {} threads", expr(f.extent), k_.launch.block_size));
    // An arena (docs/shared-memory.md): buffers whose lifetimes do not
    // overlap share bytes, each a typed pointer at its offset.
    // Past the 48 KiB a block gets statically the arena is dynamic shared
    // memory: the launcher passes its size and raises the kernel's limit.
    if (k_.shared_arena_bytes > kir::kStaticSharedBytes) {
      line(fmt::format("extern __shared__ __align__(16) unsigned char stitch_shared_arena[];  // {} bytes, dynamic",
                       k_.shared_arena_bytes));
    } else if (k_.shared_arena_bytes > 0) {
      line(fmt::format("__shared__ __align__(16) unsigned char stitch_shared_arena[{}];", k_.shared_arena_bytes));
    }
    for (const kir::SharedBuffer& sb : k_.shared) {
      check_identifier(sb.name);
      if (sb.offset >= 0) {
        line(fmt::format("{0}* const {1} = reinterpret_cast<{0}*>(stitch_shared_arena + {2});  // {3} elements",
                         compute_type(sb.dtype), sb.name, sb.offset, sb.count));
      } else {
        line(fmt::format("__shared__ {} {}[{}];", compute_type(sb.dtype), sb.name, sb.count));
      }
    }
    note_extent(f.var, f.extent);
    line(fmt::format("const int64_t {} = blockIdx.x;", f.var));
    if (k_.aligned_bytes > 0) return emit_aligned_or_not(f.body);
    emit_body(f.body);
  }

  // Kernel::aligned_bytes: the body twice, under a test of every buffer's
  // address. The first copy's buffers are declared aligned, so the compiler
  // may merge a thread's consecutive elements into vector loads and stores;
  // the second runs the same code on buffers that are not (a view's offset).
  void emit_aligned_or_not(const StmtList& body) {
    std::string addresses;
    for (const kir::BufferParam& b : k_.buffers) {
      addresses += fmt::format("{}reinterpret_cast<unsigned long long>({}_arg)", addresses.empty() ? "" : " | ", b.name);
    }
    line(fmt::format("if ((({}) & {}ull) == 0) {{", addresses.empty() ? "0ull" : addresses, k_.aligned_bytes - 1));
    ++depth_;
    for (const kir::BufferParam& b : k_.buffers) {
      const std::string type = fmt::format("{}{}*", b.access == kir::Access::Read ? "const " : "", storage_type(b.dtype));
      line(fmt::format("{0} {1}{2} = static_cast<{0}>(__builtin_assume_aligned({2}_arg, {3}));", type,
                       b.may_alias ? "" : "__restrict__ ", b.name, k_.aligned_bytes));
    }
    aligned_body_ = true;
    emit_body(body);
    aligned_body_ = false;
    --depth_;
    line("} else {");
    ++depth_;
    for (const kir::BufferParam& b : k_.buffers) {
      const std::string type = fmt::format("{}{}*", b.access == kir::Access::Read ? "const " : "", storage_type(b.dtype));
      line(fmt::format("{} {}{} = {}_arg;", type, b.may_alias ? "" : "__restrict__ ", b.name, b.name));
    }
    emit_body(body);
    --depth_;
    line("}");
  }

  void emit(const kir::ForStmt& f) {
    check_identifier(f.var);
    switch (f.level) {
      case LoopLevel::Block: return emit_thread_region(f);
      case LoopLevel::Grid:
      case LoopLevel::Warp: unsupported(fmt::format("a {} loop in this position", kir::loop_level_name(f.level)));
      case LoopLevel::Unroll: line("#pragma unroll"); break;
      case LoopLevel::Serial:
      case LoopLevel::Vector: break;
    }
    note_extent(f.var, f.extent);
    braced(for_header(f.var, expr(f.extent)), [&] { emit_body(f.body); });
  }

  // Every thread runs exactly one iteration of a block loop: its variable is
  // the thread index, or the warp index and lane when its body is a warp loop.
  void emit_thread_region(const kir::ForStmt& region) {
    int64_t extent = 0;
    if (!kir::is_int_constant(region.extent, &extent)) unsupported("a block loop of non-constant extent");
    const StmtList* body = &region.body;
    if (region.body.size() == 1) {
      if (const auto* w = std::get_if<kir::ForStmt>(&region.body[0].node); w && w->level == LoopLevel::Warp) {
        check_identifier(w->var);
        line(fmt::format("{{  // block loop: warp {} of {}, lane {}", region.var, extent, w->var));
        ++depth_;
        ranges_[region.var] = Range{0, extent - 1};
        ranges_[w->var] = Range{0, kir::kWarpSize - 1};
        line(fmt::format("const int64_t {} = threadIdx.x / {};", region.var, kir::kWarpSize));
        line(fmt::format("const int64_t {} = threadIdx.x % {};", w->var, kir::kWarpSize));
        body = &w->body;
      }
    }
    if (body == &region.body) {
      line(fmt::format("{{  // block loop: thread {} of {}", region.var, extent));
      ++depth_;
      ranges_[region.var] = Range{0, extent - 1};
      line(fmt::format("const int64_t {} = threadIdx.x;", region.var));
    }
    emit_body(*body);
    --depth_;
    line("}");
  }

  void emit(const kir::IfStmt& s) {
    std::string cond = expr(s.cond);
    if (cond.size() > 1 && cond.front() == '(' && cond.back() == ')' && balanced(cond.substr(1, cond.size() - 2))) {
      cond = cond.substr(1, cond.size() - 2);
    }
    emit_if(s, cond);
  }

  void emit(const kir::LetStmt& s) {
    check_identifier(s.name);
    if (s.init.defined() && s.dtype == DType::i64 && !assigned_.count(s.name)) {
      if (std::optional<Range> r = range(s.init)) ranges_[s.name] = *r;
    }
    declare(s.dtype, s.name, s.init);
  }

  void emit(const kir::AssignStmt& s) { line(fmt::format("{} = {};", s.name, expr(s.value))); }

  void emit(const kir::LocalArrayStmt& s) {
    check_identifier(s.name);
    line(fmt::format("{} {}[{}];", compute_type(s.dtype), s.name, s.count));
  }

  void emit(const kir::StoreStmt& s) {
    std::string value = expr(s.value);
    if (const kir::BufferParam* b = k_.find_buffer(s.buffer)) {
      line(fmt::format("{}[{}] = {};", s.buffer, global_offset(*b, s.index), narrow(*b, value)));
      return;
    }
    line(fmt::format("{}[{}] = {};", s.buffer, expr(s.index.at(0)), value));
  }

  // In the aligned copy of the body (Kernel::aligned_bytes) a dense buffer's
  // elements move as one vector of `count` x their size bytes (16, 8 or 4),
  // else one by one.
  void emit(const kir::VectorMoveStmt& s) {
    const kir::BufferParam* b = k_.find_buffer(s.buffer);
    STITCH_ASSERT(b != nullptr, "a vector move of '" + s.buffer + "', not a buffer");
    const int64_t bytes = s.count * static_cast<int64_t>(dtype_size(b->dtype));
    const std::string first = expr(s.array_first);
    if (aligned_body_ && b->strides.empty() && (bytes == 16 || bytes == 8 || bytes == 4) && k_.aligned_bytes % bytes == 0) {
      const std::string word = bytes == 16 ? "uint4" : bytes == 8 ? "uint2" : "unsigned int";
      const std::string at = fmt::format("{}[{}]", s.buffer, global_offset(*b, s.index));
      line("{");
      ++depth_;
      if (!s.store) {
        // A buffer the kernel only reads takes the read-only path (ld.global.nc), as its scalar loads do.
        const std::string pointer = fmt::format("reinterpret_cast<const {}*>(&{})", word, at);
        line(fmt::format("const {} stitch_v = {};", word,
                         b->access == kir::Access::Read && !b->may_alias ? fmt::format("__ldg({})", pointer) : "*" + pointer));
        line(fmt::format("const {}* stitch_e = reinterpret_cast<const {}*>(&stitch_v);", storage_type(b->dtype),
                         storage_type(b->dtype)));
        for (int64_t k = 0; k < s.count; ++k) {
          line(fmt::format("{}[{} + {}] = {};", s.array, first, k, widen(*b, fmt::format("stitch_e[{}]", k))));
        }
      } else {
        line(fmt::format("{} stitch_v;", word));
        line(fmt::format("{}* stitch_e = reinterpret_cast<{}*>(&stitch_v);", storage_type(b->dtype),
                         storage_type(b->dtype)));
        for (int64_t k = 0; k < s.count; ++k) {
          line(fmt::format("stitch_e[{}] = {};", k, narrow(*b, fmt::format("{}[{} + {}]", s.array, first, k))));
        }
        line(fmt::format("*reinterpret_cast<{}*>(&{}) = stitch_v;", word, at));
      }
      --depth_;
      line("}");
      return;
    }
    for (int64_t k = 0; k < s.count; ++k) {
      std::vector<Expr> index = s.index;
      index.back() = index.back() + k;
      const std::string element = fmt::format("{}[{}]", s.buffer, global_offset(*b, index));
      const std::string slot = fmt::format("{}[{} + {}]", s.array, first, k);
      line(s.store ? fmt::format("{} = {};", element, narrow(*b, slot))
                   : fmt::format("{} = {};", slot, widen(*b, element)));
    }
  }

  // A stored element of buffer `b` from its compute-type value, and back.
  std::string narrow(const kir::BufferParam& b, const std::string& value) const { return text_.narrow_text(b.dtype, value); }
  std::string widen(const kir::BufferParam& b, const std::string& element) const { return text_.widen_text(b.dtype, element); }

  // A CPU hint (kir::PrefetchStmt): the GPU hides latency with its warps.
  void emit(const kir::PrefetchStmt&) {}
  void emit(const kir::BarrierStmt&) { line("__syncthreads();"); }
  // Each pair above the diagonal is swapped by one thread of the block.
  void emit(const kir::TransposeTileStmt& s) {
    line("__syncthreads();");
    line(fmt::format("for (int stitch_p = threadIdx.x; stitch_p < {0} * {0}; stitch_p += blockDim.x) {{", s.size));
    ++depth_;
    line(fmt::format("const int stitch_r = stitch_p / {0}, stitch_c = stitch_p % {0};", s.size));
    line("if (stitch_r < stitch_c) {");
    ++depth_;
    line(fmt::format("const auto stitch_t = {0}[stitch_r * {1} + stitch_c];", s.buffer, s.size));
    line(fmt::format("{0}[stitch_r * {1} + stitch_c] = {0}[stitch_c * {1} + stitch_r];", s.buffer, s.size));
    line(fmt::format("{0}[stitch_c * {1} + stitch_r] = stitch_t;", s.buffer, s.size));
    --depth_;
    line("}");
    --depth_;
    line("}");
    line("__syncthreads();");
  }

  // The segment width template argument of a segmented warp reduction; none for a whole warp.
  static std::string width_argument(const kir::ReduceStmt& r) {
    return r.width == kir::kWarpSize ? std::string() : fmt::format(", {}", r.width);
  }

  void emit(const kir::ReduceStmt& r) {
    check_identifier(r.result);
    const std::string type = compute_type(r.value.dtype());
    if (is_narrow_float(r.value.dtype())) unsupported("a reduction on f16/bf16 values");
    const bool block = r.scope == kir::ReduceScope::Block;
    const int64_t warps = k_.launch.block_size / kir::kWarpSize;
    if (r.op == OpKind::ArgMax || r.op == OpKind::ArgMin) {
      check_identifier(r.index_result);
      const char* is_max = r.op == OpKind::ArgMax ? "true" : "false";
      line(fmt::format("{} {} = {};", type, r.result, expr(r.value)));
      line(fmt::format("int64_t {} = {};", r.index_result, expr(r.index)));
      if (block) {
        line(fmt::format("stitch_block_arg_reduce<{}, {}>({}, {}, {}, {});", is_max, warps, r.result,
                         r.index_result, r.scratch, r.index_scratch));
      } else {
        line(fmt::format("stitch_warp_arg_reduce<{}{}>({}, {});", is_max, width_argument(r), r.result, r.index_result));
      }
      return;
    }
    const std::string_view op = combine_functor(r.op);
    if (block) {
      line(fmt::format("const {} {} = stitch_block_reduce<{}, {}>({}, {});", type, r.result, op, warps,
                       typed(r.value), r.scratch));
    } else {
      line(fmt::format("const {} {} = stitch_warp_reduce<{}{}>({});", type, r.result, op, width_argument(r), typed(r.value)));
    }
  }

  // ---- index ranges: plain C arithmetic where i64 provably cannot overflow ----

  static bool balanced(const std::string& text) {
    int depth = 0;
    for (char c : text) {
      depth += c == '(' ? 1 : c == ')' ? -1 : 0;
      if (depth < 0) return false;
    }
    return depth == 0;
  }

  void note_extent(const std::string& var, const Expr& extent) {
    int64_t n = 0;
    if (kir::is_int_constant(extent, &n) && n > 0) ranges_[var] = Range{0, n - 1};
  }

  // The values an i64 expression over loop variables of constant extent,
  // unassigned lets and literals can take; nullopt when unknown or beyond 2^62.
  std::optional<Range> range(const Expr& e) const {
    constexpr __int128 kLimit = __int128{1} << 62;
    std::optional<Range> r;
    if (e->dtype != DType::i64) return std::nullopt;
    if (e->kind == kir::ExprKind::Const) r = Range{e->int_value, e->int_value};
    if (e->kind == kir::ExprKind::Var) {
      if (auto it = ranges_.find(e->name); it != ranges_.end()) r = it->second;
    }
    if (e->kind == kir::ExprKind::Op && e->operands.size() == 2) {
      const std::optional<Range> a = range(e->operands[0]);
      const std::optional<Range> b = range(e->operands[1]);
      if (!a || !b) return std::nullopt;
      r = common::arithmetic_range(e->op, *a, *b);
    }
    if (!r || r->first < -kLimit || r->second > kLimit) return std::nullopt;
    return r;
  }

  // ---- expressions (the skeleton's hooks) ----

  friend class common::EmitterSkeleton<KernelEmitter>;

  std::string var_text(const std::string& name) const { return name; }
  std::string offset_term(const Expr& e) { return typed(e); }
  std::optional<std::string> own_index_op(const Expr&) const { return std::nullopt; }
  std::optional<Range> index_range(const Expr& e) const { return range(e); }
  const common::IndexFacts& facts() const { return facts_; }

  std::string load(const Expr& e) {
    if (const kir::BufferParam* b = k_.find_buffer(e->name)) {
      return widen(*b, fmt::format("{}[{}]", e->name, global_offset(*b, e->operands)));
    }
    return fmt::format("{}[{}]", e->name, expr(e->operands.at(0)));
  }

  bool aligned_body_ = false;  // emitting the aligned copy of the body (emit_aligned_or_not)
  std::set<std::string> assigned_;     // locals ever assigned: their let value is not a range
  std::map<std::string, Range> ranges_;  // i64 names with known bounds (names are unique per kernel)
  std::map<std::string, const kir::LetStmt*> index_lets_;  // collect_index_lets
  common::IndexFacts facts_{index_lets_};
};

bool narrow(DType t) { return is_narrow_float(t); }

bool expr_uses_narrow(const Expr& e) {
  if (!e.defined()) return false;
  if (narrow(e->dtype)) return true;
  for (const Expr& o : e->operands) {
    if (expr_uses_narrow(o)) return true;
  }
  return false;
}

bool stmts_use_narrow(const StmtList& stmts) {
  for (const Stmt& s : stmts) {
    const bool uses = std::visit(
        [](const auto& n) -> bool {
          using T = std::decay_t<decltype(n)>;
          if constexpr (std::is_same_v<T, kir::ForStmt>) {
            return expr_uses_narrow(n.extent) || stmts_use_narrow(n.body);
          } else if constexpr (std::is_same_v<T, kir::IfStmt>) {
            return expr_uses_narrow(n.cond) || stmts_use_narrow(n.then_body) || stmts_use_narrow(n.else_body);
          } else if constexpr (std::is_same_v<T, kir::LetStmt>) {
            return narrow(n.dtype) || expr_uses_narrow(n.init);
          } else if constexpr (std::is_same_v<T, kir::AssignStmt>) {
            return expr_uses_narrow(n.value);
          } else if constexpr (std::is_same_v<T, kir::LocalArrayStmt>) {
            return narrow(n.dtype);
          } else if constexpr (std::is_same_v<T, kir::StoreStmt>) {
            bool any = expr_uses_narrow(n.value);
            for (const Expr& i : n.index) any = any || expr_uses_narrow(i);
            return any;
          } else if constexpr (std::is_same_v<T, kir::ReduceStmt>) {
            return expr_uses_narrow(n.value) || expr_uses_narrow(n.index);
          } else if constexpr (std::is_same_v<T, kir::PrefetchStmt>) {
            return false;
          } else {
            return false;
          }
        },
        s.node);
    if (uses) return true;
  }
  return false;
}

}  // namespace

bool uses_narrow_floats(const Kernel& kernel) {
  for (const kir::BufferParam& b : kernel.buffers) {
    if (narrow(b.dtype)) return true;
  }
  for (const kir::ScalarParam& s : kernel.scalars) {
    if (narrow(s.dtype)) return true;
  }
  for (const kir::SharedBuffer& s : kernel.shared) {
    if (narrow(s.dtype)) return true;
  }
  return stmts_use_narrow(kernel.body);
}

std::string emit_cuda(const Kernel& kernel) {
  STITCH_ASSERT(!kernel.cpu_only, fmt::format("kernel '{}' was lowered for the CPU alone", kernel.name));
  kir::verify_kernel_or_throw(kernel);
  // Index arithmetic simplified once, for both emitters (codegen/common/index_simplify.h).
  const Kernel simplified = common::simplify_indices(kernel);
  return KernelEmitter(simplified).emit();
}

std::string emit_cuda_translation_unit(const std::vector<Kernel>& kernels) {
  std::string tu = "// Generated by Stitch's CUDA emitter (docs/cuda-backend.md).\n";
  bool narrow_floats = false;
  for (const Kernel& k : kernels) narrow_floats = narrow_floats || uses_narrow_floats(k);
  if (narrow_floats) tu += "#define STITCH_NARROW_FLOATS 1\n";
  tu += cuda_runtime_header_text();
  for (const Kernel& k : kernels) {
    tu += "\n";
    tu += emit_cuda(k);
  }
  return tu;
}

std::string_view cuda_runtime_header_text() { return kStitchCudaRuntimeText; }

}  // namespace stitch::codegen::cuda
