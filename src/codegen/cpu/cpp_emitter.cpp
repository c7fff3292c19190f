#include "codegen/cpu/cpp_emitter.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "codegen/common/index_simplify.h"
#include "codegen/cpu/cpu_runtime_text.h"
#include "codegen/cpu/kernel_emitter.h"
#include "codegen/cpu/repeated_kernels.h"
#include "kir/verifier.h"
#include "stitch/error.h"

namespace stitch::codegen::cpu {
namespace detail {

std::string KernelEmitter::emit() {
  check_identifier(k_.name);
  redefined_ = redefined_names(k_.body);
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
  return finish_kernel();
}

void KernelEmitter::emit_grid_loop(const kir::ForStmt& f) {
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

void KernelEmitter::emit(const kir::ForStmt& f) {
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
  braced(for_header(f.var, expr(f.extent)), [&] { emit_body(f.body); });
}

void KernelEmitter::emit(const kir::LetStmt& s) {
  check_identifier(s.name);
  if (s.init.defined()) let_defs_[s.name] = s.init;
  if (auto it = per_thread_.find(s.name); it != per_thread_.end()) {
    if (s.init.defined()) line(fmt::format("{} = {};", it->second, expr(s.init)));
    return;
  }
  declare(s.dtype, s.name, s.init);
}

void KernelEmitter::emit(const kir::LocalArrayStmt& s) {
  check_identifier(s.name);
  if (per_thread_.count(s.name)) return;  // declared per thread before the phases
  line(fmt::format("{} {}[{}];", compute_type(s.dtype), s.name, s.count));
}

void KernelEmitter::emit(const kir::StoreStmt& s) {
  const std::string value = expr(s.value);
  if (auto it = stream_slots_.find(&s); it != stream_slots_.end()) {
    line(fmt::format("{}[{} - stitch_c] = {};", it->second, stream_axis_.thread, value));
    return;
  }
  if (const kir::BufferParam* b = k_.find_buffer(s.buffer)) {
    line(fmt::format("{}[{}] = {};", s.buffer, global_offset(*b, s.index), stored_text(*b, s.value, value)));
    return;
  }
  line(fmt::format("{}[{}] = {};", var_text(s.buffer), expr(s.index.at(0)), value));
}

void KernelEmitter::emit(const kir::VectorMoveStmt& s) {
  const kir::BufferParam* b = k_.find_buffer(s.buffer);
  STITCH_ASSERT(b != nullptr, "a vector move of '" + s.buffer + "', not a buffer");
  std::vector<Expr> index = s.index;
  index.back() = index.back() + kir::var("stitch_vk");
  const std::string element = fmt::format("{}[{}]", s.buffer, global_offset(*b, index));
  const std::string slot = fmt::format("{}[{} + stitch_vk]", var_text(s.array), expr(s.array_first));
  line(fmt::format("for (int64_t stitch_vk = 0; stitch_vk < {}; ++stitch_vk) {{", s.count));
  if (!s.store) {
    line(fmt::format("  {} = {};", slot, text_.widen_text(b->dtype, element)));
  } else {
    line(fmt::format("  {} = {};", element, text_.narrow_text(b->dtype, slot)));
  }
  line("}");
}

void KernelEmitter::emit(const kir::PrefetchStmt& s) {
  const kir::BufferParam* b = k_.find_buffer(s.buffer);
  if (!b || !b->strides.empty()) return;
  std::string total = "int64_t(1)";
  for (const Expr& d : b->shape) total = fmt::format("{} * ({})", total, expr(d));
  line(fmt::format("stitch_prefetch({}, {}, {}, {});", s.buffer, expr(s.first), expr(s.count), total));
}

std::optional<std::string> KernelEmitter::split_thread_division(const Expr& e) {
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

std::optional<int64_t> KernelEmitter::lane_stride(const Expr& e, int depth) {
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

bool KernelEmitter::exactly_narrow(const Expr& e, int depth) const {
  if (e.dtype() != DType::bf16 || depth > 32) return false;
  switch (e->kind) {
    case ExprKind::Const: return true;  // float_literal rounds it
    case ExprKind::Load: return k_.find_buffer(e->name) != nullptr;  // a bf16 buffer's element, widened
    case ExprKind::Op:
      // A cast to bf16 from another dtype rounds (or is 0 or 1); one from bf16 is its operand.
      if (e->op == OpKind::Cast) return e->operands[0].dtype() != DType::bf16 || exactly_narrow(e->operands[0], depth + 1);
      return true;  // the skeleton's op() rounds every f16/bf16 result
    case ExprKind::Var: {
      if (redefined_.count(e->name)) return false;
      auto it = let_defs_.find(e->name);
      return it != let_defs_.end() && exactly_narrow(it->second, depth + 1);
    }
  }
  return false;
}

std::string KernelEmitter::stored_text(const kir::BufferParam& b, const Expr& value, const std::string& text) const {
  if (b.dtype == DType::bf16 && exactly_narrow(value)) return fmt::format("stitch_bf16_bits_of_exact({})", text);
  return text_.narrow_text(b.dtype, text);
}

bool KernelEmitter::lane_contiguous(const kir::BufferParam& b, const std::vector<Expr>& index) {
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

std::string KernelEmitter::load(const Expr& e) {
  if (const kir::BufferParam* b = k_.find_buffer(e->name)) {
    const std::string offset = global_offset(*b, e->operands);
    if (is_narrow_float(b->dtype) && b->access == kir::Access::Read && in_region_ && !lane_contiguous(*b, e->operands)) {
      // No 16-bit gather in AVX-512: read through the 32-bit word holding the
      // element, which vectorises (docs/cpu-backend.md, f16 and bf16).
      return fmt::format("stitch_{0}_gathered({1}, {1}_words, {1}_shift, {2})", b->dtype == DType::f16 ? "f16" : "bf16",
                         e->name, offset);
    }
    return text_.widen_text(b->dtype, fmt::format("{}[{}]", e->name, offset));
  }
  return fmt::format("{}[{}]", var_text(e->name), expr(e->operands.at(0)));
}

}  // namespace detail

std::string emit_cpp_kernel(const kir::Kernel& kernel) {
  kir::verify_kernel_or_throw(kernel);
  // Index arithmetic simplified once, for both emitters (codegen/common/index_simplify.h).
  const kir::Kernel simplified = common::simplify_indices(kernel);
  return detail::KernelEmitter(simplified).emit();
}

std::string emit_cpp_translation_unit(const std::vector<kir::Kernel>& kernels) {
  std::string tu = "// Generated by Stitch's C++ emitter (docs/cpu-backend.md).\n";
  tu += cpu_runtime_header_text();
  std::unordered_map<std::string, std::string> defined;  // code identity -> the kernel defining it
  for (const kir::Kernel& k : kernels) {
    tu += "\n";
    std::string text = emit_cpp_kernel(k);
    auto [first, fresh] = defined.try_emplace(code_identity(k, text), k.name);
    tu += fresh ? text : alias_definition(k.name, first->second);
  }
  return tu;
}

std::string_view cpu_runtime_header_text() { return kStitchCpuRuntimeText; }

}  // namespace stitch::codegen::cpu
