#include "codegen/cpu/cpp_emitter.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "codegen/cpu/cpu_runtime_text.h"
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

[[noreturn]] void unsupported(const std::string& what) {
  fail_internal(fmt::format("C++ emitter: {} not supported yet", what), __FILE__, __LINE__);
}

// The C++ type a value of `t` is computed in: f16 and bf16 compute in float.
std::string compute_type(DType t) {
  switch (t) {
    case DType::f16:
    case DType::bf16:
    case DType::f32: return "float";
    case DType::f64: return "double";
    case DType::i8: return "int8_t";
    case DType::i32: return "int32_t";
    case DType::i64: return "int64_t";
    case DType::boolean: return "bool";
  }
  STITCH_ASSERT(false, "unknown dtype");
}

// The C++ type a global buffer element is stored as.
std::string storage_type(DType t) {
  return t == DType::f16 || t == DType::bf16 ? "uint16_t" : compute_type(t);
}

bool is_narrow_float(DType t) { return t == DType::f16 || t == DType::bf16; }

// Rounds a float or double expression to an f16/bf16 compute value.
std::string round_to_narrow(DType t, const std::string& value) {
  return fmt::format("{}({})", t == DType::f16 ? "stitch_round_f16" : "stitch_round_bf16", value);
}

const std::unordered_set<std::string_view>& cpp_reserved_words() {
  static const std::unordered_set<std::string_view> words = {
      "alignas", "alignof", "and", "asm", "auto", "bool", "break", "case", "catch", "char",
      "class", "const", "constexpr", "continue", "default", "delete", "do", "double", "else",
      "enum", "explicit", "export", "extern", "false", "float", "for", "friend", "goto", "if",
      "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "nullptr",
      "operator", "or", "private", "protected", "public", "register", "return", "short",
      "signed", "sizeof", "static", "struct", "switch", "template", "this", "throw", "true",
      "try", "typedef", "typename", "union", "unsigned", "using", "virtual", "void", "volatile",
      "while", "xor", "std", "int8_t", "int32_t", "int64_t", "uint16_t"};
  return words;
}

// KIR names go into C++ unchanged, so the generated code reads like the printed
// kernel; a name C++ would misread is refused rather than silently renamed.
void check_identifier(const std::string& name) {
  bool valid = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0]));
  for (char c : name) valid = valid && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  if (!valid || cpp_reserved_words().count(name) || name.rfind("stitch_", 0) == 0 ||
      name.rfind("__", 0) == 0) {
    unsupported(fmt::format("the name '{}' (a C++ keyword, reserved or not an identifier)", name));
  }
}

std::string float_literal(double v, DType t) {
  const std::string type = t == DType::f64 ? "double" : "float";
  if (std::isnan(v)) return fmt::format("std::numeric_limits<{}>::quiet_NaN()", type);
  if (std::isinf(v)) {
    return fmt::format("{}std::numeric_limits<{}>::infinity()", v < 0 ? "-" : "", type);
  }
  char buf[64];
  // Shortest round-trip text of the double, then rounded once to the dtype by
  // the compiler (f32) or by the narrow rounding helper (f16, bf16).
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string digits(buf, r.ptr);
  if (t == DType::f32) return fmt::format("float({})", digits);
  if (is_narrow_float(t)) return round_to_narrow(t, digits);
  return fmt::format("double({})", digits);
}

std::string int_literal(int64_t v, DType t) {
  if (t == DType::boolean) return v != 0 ? "true" : "false";
  // The most negative value has no literal of its own in C++.
  if (v == std::numeric_limits<int64_t>::min()) return "(-9223372036854775807LL - 1)";
  if (t == DType::i64) return fmt::format("int64_t({}LL)", v);
  return fmt::format("{}({})", compute_type(t), v);
}

// Every Var name, assigned local, loaded and stored buffer that `stmts` mentions.
void collect_names(const Expr& e, std::set<std::string>& names) {
  if (!e.defined()) return;
  if (e->kind == ExprKind::Var || e->kind == ExprKind::Load) names.insert(e->name);
  for (const Expr& operand : e->operands) collect_names(operand, names);
}

void collect_names(const StmtList& stmts, std::set<std::string>& names);

void collect_names(const Stmt& s, std::set<std::string>& names) {
  std::visit(
      [&](const auto& n) {
        using T = std::decay_t<decltype(n)>;
        if constexpr (std::is_same_v<T, kir::ForStmt>) {
          collect_names(n.extent, names);
          collect_names(n.body, names);
        } else if constexpr (std::is_same_v<T, kir::IfStmt>) {
          collect_names(n.cond, names);
          collect_names(n.then_body, names);
          collect_names(n.else_body, names);
        } else if constexpr (std::is_same_v<T, kir::LetStmt>) {
          collect_names(n.init, names);
        } else if constexpr (std::is_same_v<T, kir::AssignStmt>) {
          names.insert(n.name);
          collect_names(n.value, names);
        } else if constexpr (std::is_same_v<T, kir::StoreStmt>) {
          names.insert(n.buffer);
          for (const Expr& i : n.index) collect_names(i, names);
          collect_names(n.value, names);
        } else if constexpr (std::is_same_v<T, kir::ReduceStmt>) {
          collect_names(n.value, names);
          collect_names(n.index, names);
        }
      },
      s.node);
}

void collect_names(const StmtList& stmts, std::set<std::string>& names) {
  for (const Stmt& s : stmts) collect_names(s, names);
}

// True when a barrier or reduction sits anywhere inside `s` (not at its top).
bool has_nested_sync(const StmtList& stmts) {
  for (const Stmt& s : stmts) {
    if (std::holds_alternative<kir::BarrierStmt>(s.node) ||
        std::holds_alternative<kir::ReduceStmt>(s.node)) {
      return true;
    }
    if (const auto* f = std::get_if<kir::ForStmt>(&s.node); f && has_nested_sync(f->body)) return true;
    if (const auto* i = std::get_if<kir::IfStmt>(&s.node)) {
      if (has_nested_sync(i->then_body) || has_nested_sync(i->else_body)) return true;
    }
  }
  return false;
}

// A phase: the statements between two synchronisation points of a thread
// region, and the reduction (if any) that ends it.
struct Phase {
  std::vector<const Stmt*> stmts;
  const kir::ReduceStmt* reduction = nullptr;
};

class KernelEmitter {
 public:
  explicit KernelEmitter(const Kernel& k) : k_(k) {}

  std::string emit() {
    check_identifier(k_.name);
    line(fmt::format("extern \"C\" void {}(void* const* stitch_buffers, const int64_t* stitch_scalars) {{",
                     k_.name));
    ++depth_;
    for (size_t i = 0; i < k_.buffers.size(); ++i) {
      const kir::BufferParam& b = k_.buffers[i];
      check_identifier(b.name);
      const std::string type = storage_type(b.dtype);
      const bool read_only = b.access == kir::Access::Read;
      line(fmt::format("{0}{1}* const {2} = static_cast<{0}{1}*>(stitch_buffers[{3}]);",
                       read_only ? "const " : "", type, b.name, i));
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
  void line(const std::string& text) {
    out_.append(static_cast<size_t>(depth_) * 2, ' ');
    out_ += text;
    out_ += '\n';
  }

  void emit_grid_loop(const kir::ForStmt& f) {
    check_identifier(f.var);
    line(fmt::format("const int64_t stitch_grid = {};", expr(f.extent)));
    line("#pragma omp parallel for schedule(static)");
    line(fmt::format("for (int64_t {0} = 0; {0} < stitch_grid; ++{0}) {{", f.var));
    ++depth_;
    for (const kir::SharedBuffer& sb : k_.shared) {
      check_identifier(sb.name);
      line(fmt::format("{} {}[{}];", compute_type(sb.dtype), sb.name, sb.count));
    }
    emit_body(f.body);
    --depth_;
    line("}");
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
    if (const kir::BufferParam* b = k_.find_buffer(s.buffer)) {
      std::string stored = value;
      if (b->dtype == DType::f16) stored = fmt::format("stitch_f64_to_f16_bits({})", value);
      if (b->dtype == DType::bf16) stored = fmt::format("stitch_f64_to_bf16_bits({})", value);
      line(fmt::format("{}[{}] = {};", s.buffer, global_offset(*b, s.index), stored));
      return;
    }
    line(fmt::format("{}[{}] = {};", var_text(s.buffer), expr(s.index.at(0)), value));
  }

  void emit(const kir::BarrierStmt&) {
    // Outside a thread region the block's code already runs in program order.
    line("// barrier: block-level code runs sequentially on the CPU");
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
    }

    std::vector<Phase> phases(1);
    for (const Stmt& s : *body) {
      if (std::holds_alternative<kir::BarrierStmt>(s.node)) {
        phases.emplace_back();
      } else if (const auto* r = std::get_if<kir::ReduceStmt>(&s.node)) {
        phases.back().reduction = r;
        phases.emplace_back();
      } else {
        if (has_nested_sync({s})) unsupported("a barrier or reduction nested in control flow of a thread region");
        phases.back().stmts.push_back(&s);
      }
    }

    line(fmt::format("{{  // thread region: {} threads, {} phase(s)", region_.threads, phases.size()));
    ++depth_;
    in_region_ = true;
    declare_cross_phase_values(phases);
    for (size_t p = 0; p < phases.size(); ++p) {
      if (phases[p].stmts.empty() && !phases[p].reduction) continue;
      emit_phase(phases[p], p, phases.size());
      if (phases[p].reduction) emit_reduction_combine(*phases[p].reduction, p);
    }
    in_region_ = false;
    for (const std::string& name : region_names_) per_thread_.erase(name);
    region_names_.clear();
    --depth_;
    line("}");
  }

  // Thread-private values that live across a phase boundary become per-thread
  // arrays; reduction results (uniform, or one per warp) are declared here too.
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
      }
    }
    const std::string& tid = region_.thread_index;
    for (size_t p = 0; p < phases.size(); ++p) {
      for (const Stmt* s : phases[p].stmts) {
        if (const auto* let = std::get_if<kir::LetStmt>(&s->node); let && used_after[p].count(let->name)) {
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
    const int64_t warps = region_.threads / kir::kWarpSize;
    if (region_.threads % kir::kWarpSize != 0) unsupported("a warp reduction in a region of partial warps");
    const std::string warp_of_thread = fmt::format("{} / {}", region_.thread_index, kir::kWarpSize);
    line(fmt::format("{} {}[{}];", type, r.result, warps));
    remember_per_thread(r.result, fmt::format("{}[{}]", r.result, warp_of_thread));
    if (is_arg) {
      line(fmt::format("int64_t {}[{}];", r.index_result, warps));
      remember_per_thread(r.index_result, fmt::format("{}[{}]", r.index_result, warp_of_thread));
    }
  }

  void emit_phase(const Phase& phase, size_t index, size_t count) {
    line(fmt::format("// phase {} of {}", index + 1, count));
    if (!region_.lane_var.empty()) {
      line(fmt::format("for (int64_t {0} = 0; {0} < {1}; ++{0}) {{", region_.warp_var,
                       region_.threads / kir::kWarpSize));
      ++depth_;
      line(fmt::format("for (int64_t {0} = 0; {0} < {1}; ++{0}) {{", region_.lane_var, kir::kWarpSize));
    } else {
      line(fmt::format("for (int64_t {0} = 0; {0} < {1}; ++{0}) {{", region_.thread_var, region_.threads));
    }
    ++depth_;
    for (const Stmt* s : phase.stmts) emit_stmt(*s);
    if (const kir::ReduceStmt* r = phase.reduction) {
      // Each thread publishes its operand; the combine step after the loop reads all.
      line(fmt::format("stitch_values_{}[{}] = {};", index, region_.thread_index, expr(r->value)));
      if (r->index.defined()) {
        line(fmt::format("stitch_indices_{}[{}] = {};", index, region_.thread_index, expr(r->index)));
      }
    }
    --depth_;
    line("}");
    if (!region_.lane_var.empty()) {
      --depth_;
      line("}");
    }
  }

  // Combines the published operands sequentially in thread order, per warp or
  // over the whole block, into the reduction's result.
  void emit_reduction_combine(const kir::ReduceStmt& r, size_t phase) {
    const bool warp = r.scope == ReduceScope::Warp;
    const int64_t group = warp ? kir::kWarpSize : region_.threads;
    const std::string values = fmt::format("stitch_values_{}", phase);
    const std::string indices = fmt::format("stitch_indices_{}", phase);
    std::string result = r.result;
    std::string index_result = r.index_result;
    std::string first = "0";
    if (warp) {
      line(fmt::format("for (int64_t stitch_warp = 0; stitch_warp < {}; ++stitch_warp) {{",
                       region_.threads / kir::kWarpSize));
      ++depth_;
      result += "[stitch_warp]";
      index_result += "[stitch_warp]";
      first = fmt::format("stitch_warp * {}", kir::kWarpSize);
    }
    const std::string type = compute_type(r.value.dtype());
    line(fmt::format("{} = {}[{}];", result, values, first));
    const bool is_arg = r.op == OpKind::ArgMax || r.op == OpKind::ArgMin;
    if (is_arg) line(fmt::format("{} = {}[{}];", index_result, indices, first));
    line(fmt::format("for (int64_t stitch_i = 1; stitch_i < {}; ++stitch_i) {{", group));
    ++depth_;
    const std::string operand = fmt::format("{}[{} + stitch_i]", values, first);
    switch (r.op) {
      case OpKind::ReduceSum: line(fmt::format("{0} = stitch_add<{1}>({0}, {2});", result, type, operand)); break;
      case OpKind::ReduceProd: line(fmt::format("{0} = stitch_mul<{1}>({0}, {2});", result, type, operand)); break;
      case OpKind::ReduceMax: line(fmt::format("{0} = stitch_max<{1}>({0}, {2});", result, type, operand)); break;
      case OpKind::ReduceMin: line(fmt::format("{0} = stitch_min<{1}>({0}, {2});", result, type, operand)); break;
      case OpKind::ReduceAny: line(fmt::format("{0} = {0} || {1};", result, operand)); break;
      case OpKind::ReduceAll: line(fmt::format("{0} = {0} && {1};", result, operand)); break;
      case OpKind::ArgMax:
      case OpKind::ArgMin:
        line(fmt::format("stitch_arg_extreme_step<{}, {}>({}, {}, {}, {}[{} + stitch_i]);",
                         r.op == OpKind::ArgMax ? "true" : "false", type, result, index_result, operand, indices,
                         first));
        break;
      default: unsupported(fmt::format("the reduction {}", op_name(r.op)));
    }
    --depth_;
    line("}");
    if (warp) {
      --depth_;
      line("}");
    }
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
    offset = expr(index.at(0));
    for (size_t d = 1; d < index.size(); ++d) {
      offset = fmt::format("({}) * ({}) + ({})", offset, expr(b.shape[d]), expr(index[d]));
    }
    return offset;
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
      const std::string element = fmt::format("{}[{}]", e->name, global_offset(*b, e->operands));
      if (b->dtype == DType::f16) return fmt::format("stitch_f16_bits_to_f32({})", element);
      if (b->dtype == DType::bf16) return fmt::format("stitch_bf16_bits_to_f32({})", element);
      return element;
    }
    return fmt::format("{}[{}]", var_text(e->name), expr(e->operands.at(0)));
  }

  std::string op(const Expr& e) {
    const DType result = e->dtype;
    if (e->op == OpKind::Cast) return cast(expr(e->operands[0]), e->operands[0].dtype(), result);
    std::vector<std::string> a;
    for (const Expr& operand : e->operands) a.push_back(expr(operand));
    const DType in = e->operands[0].dtype();
    const std::string t = compute_type(in);
    std::string text = math(e->op, in, t, a, e);
    // Each f16/bf16 op rounds once to its dtype; comparisons yield bool.
    if (is_narrow_float(result)) return round_to_narrow(result, text);
    return text;
  }

  std::string math(OpKind k, DType in, const std::string& t, const std::vector<std::string>& a, const Expr& e) {
    auto call = [&](std::string_view helper) {
      std::string args;
      for (size_t i = 0; i < a.size(); ++i) args += (i ? ", " : "") + a[i];
      return fmt::format("{}<{}>({})", helper, t, args);
    };
    auto std_call = [&](std::string_view fn) {
      if (!is_float(in)) unsupported(fmt::format("{} on {}", op_name(k), dtype_name(in)));
      return a.size() == 1 ? fmt::format("std::{}({})", fn, a[0]) : fmt::format("std::{}({}, {})", fn, a[0], a[1]);
    };
    const bool boolean = in == DType::boolean;
    switch (k) {
      case OpKind::Neg: return call("stitch_neg");
      case OpKind::Abs: return call("stitch_abs");
      case OpKind::Exp: return std_call("exp");
      case OpKind::Exp2: return std_call("exp2");
      case OpKind::Log: return std_call("log");
      case OpKind::Log2: return std_call("log2");
      case OpKind::Log1p: return std_call("log1p");
      case OpKind::Expm1: return std_call("expm1");
      case OpKind::Sqrt: return std_call("sqrt");
      case OpKind::Sin: return std_call("sin");
      case OpKind::Cos: return std_call("cos");
      case OpKind::Tan: return std_call("tan");
      case OpKind::Tanh: return std_call("tanh");
      case OpKind::Erf: return std_call("erf");
      case OpKind::Floor: return std_call("floor");
      case OpKind::Ceil: return std_call("ceil");
      case OpKind::Atan2: return std_call("atan2");
      case OpKind::Rsqrt: return call("stitch_rsqrt");
      case OpKind::Reciprocal: return call("stitch_reciprocal");
      case OpKind::Sigmoid: return call("stitch_sigmoid");
      case OpKind::Relu: return call("stitch_relu");
      case OpKind::Round: return call("stitch_round");
      case OpKind::Sign: return call("stitch_sign");
      case OpKind::IsNan: return call("stitch_isnan");
      case OpKind::IsInf: return call("stitch_isinf");
      case OpKind::Not: return boolean ? fmt::format("(!{})", a[0]) : fmt::format("static_cast<{}>(~{})", t, a[0]);
      case OpKind::Add: return call("stitch_add");
      case OpKind::Sub: return call("stitch_sub");
      case OpKind::Mul: return call("stitch_mul");
      case OpKind::Div:
      case OpKind::Rem: {
        // A positive literal divisor needs no zero or -1 check (docs/kernel-ir.md).
        int64_t divisor = 0;
        if (in == DType::i64 && kir::is_int_constant(e->operands[1], &divisor) && divisor > 0) {
          return fmt::format("({} {} {})", a[0], k == OpKind::Div ? '/' : '%', a[1]);
        }
        return call(k == OpKind::Div ? "stitch_div" : "stitch_rem");
      }
      case OpKind::Pow: return is_float(in) ? std_call("pow") : call("stitch_ipow");
      case OpKind::Max: return call("stitch_max");
      case OpKind::Min: return call("stitch_min");
      case OpKind::And:
        return boolean ? fmt::format("({} && {})", a[0], a[1]) : fmt::format("static_cast<{}>({} & {})", t, a[0], a[1]);
      case OpKind::Or:
        return boolean ? fmt::format("({} || {})", a[0], a[1]) : fmt::format("static_cast<{}>({} | {})", t, a[0], a[1]);
      case OpKind::Xor:
        return boolean ? fmt::format("({} != {})", a[0], a[1]) : fmt::format("static_cast<{}>({} ^ {})", t, a[0], a[1]);
      case OpKind::Eq: return fmt::format("({} == {})", a[0], a[1]);
      case OpKind::Ne: return fmt::format("({} != {})", a[0], a[1]);
      case OpKind::Lt: return fmt::format("({} < {})", a[0], a[1]);
      case OpKind::Le: return fmt::format("({} <= {})", a[0], a[1]);
      case OpKind::Gt: return fmt::format("({} > {})", a[0], a[1]);
      case OpKind::Ge: return fmt::format("({} >= {})", a[0], a[1]);
      case OpKind::Select: {
        const std::string type = compute_type(e->operands[1].dtype());
        return fmt::format("({} ? static_cast<{}>({}) : static_cast<{}>({}))", a[0], type, a[1], type, a[2]);
      }
      case OpKind::Clamp: return call("stitch_clamp");
      default: unsupported(fmt::format("the op {}", op_name(k)));
    }
  }

  // docs/semantics.md, Casts. `value` is in `from`'s compute type.
  std::string cast(const std::string& value, DType from, DType to) {
    if (from == to) return value;
    const std::string target = compute_type(to);
    if (to == DType::boolean) return fmt::format("({} != 0)", value);
    if (from == DType::boolean) {
      return is_narrow_float(to) ? fmt::format("({} ? 1.0f : 0.0f)", value) : fmt::format("static_cast<{}>({})", target, value);
    }
    if (is_float(from) && is_float(to)) {
      if (is_narrow_float(to)) return round_to_narrow(to, fmt::format("static_cast<double>({})", value));
      return fmt::format("static_cast<{}>({})", target, value);
    }
    if (is_float(from)) return fmt::format("stitch_float_to_int<{}>({})", target, value);
    if (is_float(to)) {
      // i64 -> f32/f64 is one rounding in C++; to a narrow float, round to odd first.
      if (is_narrow_float(to)) {
        return round_to_narrow(to, fmt::format("stitch_i64_to_f64_round_to_odd({})", value));
      }
      return fmt::format("static_cast<{}>({})", target, value);
    }
    // Integer -> integer wraps (modulo 2^n, as GCC and C++20 define it).
    return fmt::format("static_cast<{}>({})", target, value);
  }

  struct Region {
    std::string thread_var;  // a plain region: the thread index
    std::string warp_var;    // a warp-split region: the warp index ...
    std::string lane_var;    // ... and the lane
    int64_t threads = 0;
    std::string thread_index;  // C++ text of the linear thread index
  };

  const Kernel& k_;
  std::string out_;
  int depth_ = 0;
  bool in_region_ = false;
  Region region_;
  // Names whose C++ text is not the name itself: per-thread arrays and per-warp results.
  std::unordered_map<std::string, std::string> per_thread_;
  std::vector<std::string> region_names_;
};

}  // namespace

std::string emit_cpp_kernel(const Kernel& kernel) {
  kir::verify_kernel_or_throw(kernel);
  return KernelEmitter(kernel).emit();
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
