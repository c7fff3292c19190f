// User kernels to the Kernel IR (docs/kernel-language.md, Lowering). The body
// is already typed, so each statement maps to one KIR statement; what the
// lowering adds is the loop nest that hands out the range's indices.
#include "lower/lower_user_kernel.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <functional>
#include <map>
#include <set>

#include <fmt/format.h>

#include "kir/kernel_builder.h"

namespace stitch::lower {

namespace {

// Threads per block of the CUDA form.
constexpr int64_t kCudaBlock = 256;

std::string value_name(const std::string& name) { return "u_" + name; }
std::string symbol_name(const std::string& name) { return "n_" + name; }

kir::Expr literal(const KernelExprNode& n) {
  if (is_bool(n.dtype)) return kir::bool_const(n.int_value != 0);
  if (is_float(n.dtype)) return kir::float_const(n.float_value, n.dtype);
  return kir::int_const(n.int_value, n.dtype);
}

// Marks a scope entry that names a local array with one element per lane.
const std::string kLaneArray = "@lane:";

bool is_loop(const KStmt& s) { return s.kind == KernelStmtKind::For; }

// Whether `s` is or holds a serial loop.
bool has_loop(const KStmt& s) { return is_loop(s) || any_stmt(s.body, is_loop) || any_stmt(s.else_body, is_loop); }

// Whether `s` (or anything nested in it) names local `name`.
bool mentions(const KStmt& s, const std::string& name) {
  auto in_expr = [&](const KExpr& e) {
    return e.defined() && any_node(e, [&](const KernelExprNode& n) { return n.kind == KernelExprKind::Name && n.name == name; });
  };
  if ((s.kind == KernelStmtKind::Let || s.kind == KernelStmtKind::Assign || s.kind == KernelStmtKind::For) && s.name == name) {
    return true;
  }
  if (in_expr(s.value) || std::any_of(s.index.begin(), s.index.end(), in_expr)) return true;
  auto in_body = [&](const std::vector<KStmt>& body) {
    return std::any_of(body.begin(), body.end(), [&](const KStmt& t) { return mentions(t, name); });
  };
  return in_body(s.body) || in_body(s.else_body);
}

// The CPU form's phases (docs/kernel-language.md, Lowering): the body's
// top-level statements cut so that each phase holds at most one serial loop.
// A fused kernel's body often has several (a matrix-vector product, then one
// with the transpose): in one lane loop each index runs them back to back,
// interleaving a row's traffic with a column's. The indices of a race-free
// kernel are independent, so a block may instead run each phase for all its
// lanes before the next (NPBench mvt fused: 0.91x -> 0.95x of eager).
std::vector<std::vector<const KStmt*>> split_phases(const std::vector<KStmt>& body) {
  std::vector<std::vector<const KStmt*>> phases(1);
  bool loop_in_phase = false;
  for (const KStmt& s : body) {
    const bool loop = has_loop(s);
    if (loop && loop_in_phase) {
      phases.emplace_back();
      loop_in_phase = false;
    }
    phases.back().push_back(&s);
    loop_in_phase = loop_in_phase || loop;
  }
  return phases;
}

// Whether `name` is one of the kernel's own: a parameter, a shape symbol or
// a range index (else a local or a loop variable).
bool kernel_level_name(const UserKernel& k, const std::vector<std::string>& symbols, const std::string& name) {
  return k.find_param(name) != nullptr || std::find(symbols.begin(), symbols.end(), name) != symbols.end() ||
         std::any_of(k.range.begin(), k.range.end(), [&](const KernelIndex& ix) { return ix.name == name; });
}

// Whether `e` names only parameters, shape symbols and range indices other
// than the innermost (`lane_index`), and loads nothing: the same in every
// lane of a vector loop.
bool lane_invariant(const KExpr& e, const UserKernel& k, const std::string& lane_index) {
  const std::vector<std::string> symbols = k.symbols();
  return !any_node(e, [&](const KernelExprNode& n) {
    if (n.kind == KernelExprKind::Load) return true;
    return n.kind == KernelExprKind::Name && (n.name == lane_index || !kernel_level_name(k, symbols, n.name));
  });
}

// How the array accesses of `body` (the body of loop `loop_var`) lie across
// a vector loop's lanes (index `lane_index`, consecutive): `contiguous`
// counts those whose last index is the lane index plus a constant and whose
// other indices do not follow the lane, `strided` the others that follow
// the lane, and those that index through a load or a local (which may).
void lane_layout(const std::vector<KStmt>& body, const UserKernel& k, const std::string& lane_index,
                 const std::string& loop_var, int* contiguous, int* strided) {
  const std::vector<std::string> symbols = k.symbols();
  auto names_lane = [&](const KExpr& e) {
    return any_node(e, [&](const KernelExprNode& n) { return n.kind == KernelExprKind::Name && n.name == lane_index; });
  };
  auto through_local = [&](const KExpr& e) {
    return any_node(e, [&](const KernelExprNode& n) {
      if (n.kind == KernelExprKind::Load) return true;
      return n.kind == KernelExprKind::Name && n.name != loop_var && !kernel_level_name(k, symbols, n.name);
    });
  };
  auto access = [&](const std::vector<KExpr>& index) {
    if (index.empty()) return;
    const bool local = std::any_of(index.begin(), index.end(), through_local);
    const KernelExprNode& last = index.back().node();
    const bool last_is_lane = (last.kind == KernelExprKind::Name && last.name == lane_index) ||
                              (last.kind == KernelExprKind::Op && (last.op == OpKind::Add || last.op == OpKind::Sub) &&
                               last.operands.size() == 2 && last.operands[0]->kind == KernelExprKind::Name &&
                               last.operands[0]->name == lane_index && last.operands[1]->kind == KernelExprKind::Literal);
    bool other_lane = false;
    for (size_t d = 0; d + 1 < index.size(); ++d) other_lane = other_lane || names_lane(index[d]);
    if (last_is_lane && !other_lane && !local) {
      ++*contiguous;
    } else if (names_lane(index.back()) || other_lane || local) {
      ++*strided;
    }
  };
  std::function<void(const KExpr&)> loads = [&](const KExpr& e) {
    const KernelExprNode& n = e.node();
    if (n.kind == KernelExprKind::Load) access(n.operands);
    for (const KExpr& o : n.operands) loads(o);
  };
  for (const KStmt& s : body) {
    if (s.kind == KernelStmtKind::Store) access(s.index);
    for (const KExpr& i : s.index) loads(i);
    if (s.value.defined()) loads(s.value);
    lane_layout(s.body, k, lane_index, loop_var, contiguous, strided);
    lane_layout(s.else_body, k, lane_index, loop_var, contiguous, strided);
  }
}

// A serial loop to run outside the lanes (`for j { for lane { body } }`):
// its extent is the same for every lane, its body holds no loop, and its
// accesses run along the lanes (a column of a row-major matrix per lane,
// which the lanes read as consecutive elements), none across them.
bool interchangeable(const KStmt& s, const UserKernel& k) {
  const std::string& lane_index = k.range.back().name;
  if (s.kind != KernelStmtKind::For || !lane_invariant(s.value, k, lane_index)) return false;
  if (any_stmt(s.body, is_loop)) return false;
  int contiguous = 0;
  int strided = 0;
  lane_layout(s.body, k, lane_index, s.name, &contiguous, &strided);
  return contiguous > 0 && strided == 0;
}

// A phase of the CPU form: statements run in one vector loop over the lanes,
// or one serial loop run outside it (`interchanged`).
struct Phase {
  std::vector<const KStmt*> stmts;
  bool interchanged = false;
};

// The phases of split_phases, with each interchangeable loop a phase of its
// own between the statements before and after it.
std::vector<Phase> plan_phases(const UserKernel& k) {
  std::vector<Phase> out;
  for (const std::vector<const KStmt*>& phase : split_phases(k.body)) {
    Phase current;
    for (const KStmt* s : phase) {
      if (!interchangeable(*s, k)) {
        current.stmts.push_back(s);
        continue;
      }
      if (!current.stmts.empty()) out.push_back(std::move(current));
      current = Phase{};
      out.push_back(Phase{{s}, true});
    }
    if (!current.stmts.empty()) out.push_back(std::move(current));
  }
  if (out.empty()) out.emplace_back();
  return out;
}

// The top-level lets that a later phase names: they live in a local array
// with one element per lane instead of a scalar.
std::vector<const KStmt*> locals_across_phases(const std::vector<Phase>& phases) {
  std::vector<const KStmt*> out;
  if (phases.size() < 2) return out;
  for (size_t p = 0; p < phases.size(); ++p) {
    for (const KStmt* s : phases[p].stmts) {
      if (s->kind != KernelStmtKind::Let) continue;
      bool crosses = false;
      for (size_t q = p + 1; q < phases.size() && !crosses; ++q) {
        crosses = std::any_of(phases[q].stmts.begin(), phases[q].stmts.end(), [&](const KStmt* t) { return mentions(*t, s->name); });
      }
      if (crosses) out.push_back(s);
    }
  }
  return out;
}

class UserKernelLowering {
 public:
  UserKernelLowering(const UserKernel& k, const UserKernelShape& shape, const std::string& name)
      : k_(k), shape_(shape), b_(name) {}

  LoweredUserKernel run() {
    STITCH_ASSERT(shape_.restrict_array.empty() || shape_.restrict_array.size() == k_.params.size(),
                  "user kernel lowering: one restrict flag per parameter");
    declare_params();
    const size_t rank = k_.range.size();
    std::vector<kir::Expr> extents;
    for (const KernelIndex& ix : k_.range) extents.push_back(expr(ix.extent));
    // Rows: the outer dimensions flattened; each row's innermost extent is cut into chunks of `lanes`.
    kir::Expr outer = kir::int_const(1);
    for (size_t d = 0; d + 1 < rank; ++d) outer = outer * extents[d];
    kir::Expr inner = extents[rank - 1];
    const int64_t lanes = shape_.lanes;
    const int64_t rows = shape_.rows_per_block;
    kir::Expr chunks = (inner + (lanes - 1)) / lanes;
    kir::Expr row_blocks = (outer + (rows - 1)) / rows;
    kir::Expr grid = row_blocks * chunks;
    const bool reduce = k_.is_reduction();
    if (reduce) {
      acc_dtype_ = k_.result_dtype == DType::f16 || k_.result_dtype == DType::bf16 ? DType::f32 : k_.result_dtype;
      b_.buffer_param("partials", acc_dtype_, {grid}, kir::Access::Write);
    }
    declare_index_errors();
    const std::vector<Phase> phases = plan_phases(k_);
    std::vector<const KStmt*> lane_let_stmts = locals_across_phases(phases);
    std::set<std::string> lane_locals;
    for (const KStmt* st : lane_let_stmts) lane_locals.insert(st->name);
    b_.launch(grid, 1);
    b_.grid("blk", grid, [&](const kir::Expr& blk) {
      kir::Expr row_block = b_.let("row_block", blk / chunks);
      kir::Expr chunk = b_.let("chunk", blk % chunks);
      if (reduce) {
        b_.local_array("acc", acc_dtype_, lanes);
        b_.loop("init_lane", kir::int_const(lanes), kir::LoopLevel::Vector,
                [&](const kir::Expr& lane) { b_.store("acc", {lane}, identity()); });
      }
      // Locals that live across phases: one element per lane.
      scopes_.emplace_back();
      for (const KStmt* st : lane_let_stmts) {
        const std::string array = fmt::format("lane_{}", value_name(st->name));
        b_.local_array(array, st->declared_type, lanes);
        scopes_.back()[st->name] = kLaneArray + array;
      }
      b_.serial("r", kir::int_const(rows), [&](const kir::Expr& r) {
        kir::Expr row = b_.let("row", row_block * rows + r);
        b_.if_then(kir::op(OpKind::Lt, {row, outer}), [&] {
          // The outer indices of this row, innermost of them first.
          kir::Expr rest = row;
          for (size_t d = rank - 1; d-- > 0;) {
            if (d == 0) {
              b_.let(value_name(k_.range[d].name), rest);
            } else {
              b_.let(value_name(k_.range[d].name), rest % extents[d]);
              rest = b_.let(fmt::format("rest{}", d), rest / extents[d]);
            }
          }
          // One vector loop per phase, each over the chunk's lanes; an
          // interchanged loop runs outside its vector loop.
          for (size_t p = 0; p < phases.size(); ++p) {
            auto lane_loop = [&](const std::function<void()>& body) {
              b_.loop(p == 0 ? "lane" : fmt::format("lane{}", p + 1), kir::int_const(lanes), kir::LoopLevel::Vector,
                      [&](const kir::Expr& lane) {
                        lane_ = lane;
                        scopes_.emplace_back();
                        kir::Expr last = b_.let(define(k_.range[rank - 1].name), chunk * lanes + lane);
                        b_.if_then(kir::op(OpKind::Lt, {last, inner}), body);
                        scopes_.pop_back();
                      });
            };
            if (phases[p].interchanged) {
              const KStmt& loop = *phases[p].stmts[0];
              check_loads(loop);
              kir::Expr extent = expr(loop.value);
              scopes_.emplace_back();
              b_.serial(define(loop.name), extent, [&](const kir::Expr&) { lane_loop([&] { block(loop.body); }); });
              scopes_.pop_back();
              continue;
            }
            lane_loop([&] {
              for (const KStmt* st : phases[p].stmts) {
                if (st->kind == KernelStmtKind::Let && lane_locals.count(st->name)) {
                  lane_let(*st);
                } else {
                  stmt(*st);
                }
              }
            });
          }
        });
      });
      scopes_.pop_back();
      if (reduce) {
        kir::Expr total = b_.let("total", identity());
        b_.serial("sum_lane", kir::int_const(lanes),
                  [&](const kir::Expr& lane) { b_.assign(total, combine(total, b_.load("acc", {lane}))); });
        b_.store("partials", {blk}, total);
      }
    });
    return finish();
  }

  // The CUDA form: one thread per index of the flattened range, blocks of
  // kCudaBlock threads; a reduction combines its block's threads (a block
  // reduction through shared memory) into partials[block].
  LoweredUserKernel run_cuda() {
    declare_params();
    const size_t rank = k_.range.size();
    std::vector<kir::Expr> extents;
    for (const KernelIndex& ix : k_.range) extents.push_back(expr(ix.extent));
    kir::Expr total = extents[0];
    for (size_t d = 1; d < rank; ++d) total = total * extents[d];
    kir::Expr grid = (total + (kCudaBlock - 1)) / kCudaBlock;
    const bool reduce = k_.is_reduction();
    if (reduce) {
      acc_dtype_ = k_.result_dtype == DType::f16 || k_.result_dtype == DType::bf16 ? DType::f32 : k_.result_dtype;
      b_.buffer_param("partials", acc_dtype_, {grid}, kir::Access::Write);
      b_.shared("scratch", acc_dtype_, kCudaBlock / kir::kWarpSize);
    }
    declare_index_errors();
    b_.launch(grid, kCudaBlock);
    b_.grid("blk", grid, [&](const kir::Expr& blk) {
      b_.block("thr", kCudaBlock, [&](const kir::Expr& thr) {
        if (reduce) acc_ = b_.let("acc", identity());
        kir::Expr lin = b_.let("lin", blk * kCudaBlock + thr);
        b_.if_then(kir::op(OpKind::Lt, {lin, total}), [&] {
          kir::Expr rest = lin;
          for (size_t d = rank; d-- > 0;) {
            if (d == 0) {
              b_.let(value_name(k_.range[d].name), rest);
            } else {
              b_.let(value_name(k_.range[d].name), rest % extents[d]);
              rest = b_.let(fmt::format("rest{}", d), rest / extents[d]);
            }
          }
          block(k_.body);
        });
        if (reduce) {
          OpKind op = k_.reduction == KernelReduction::Sum ? OpKind::ReduceSum
                      : k_.reduction == KernelReduction::Max ? OpKind::ReduceMax
                                                             : OpKind::ReduceMin;
          kir::Expr sum = b_.block_reduce(op, acc_, "total", "scratch");
          b_.if_then(kir::op(OpKind::Eq, {thr, kir::int_const(0)}), [&] { b_.store("partials", {blk}, sum); });
        }
      });
    });
    return finish();
  }

 private:
  LoweredUserKernel finish() {
    LoweredUserKernel out;
    out.kernel = b_.finish();
    out.accumulator_dtype = acc_dtype_;
    out.index_sites = sites_;
    out.axes = axes_;
    mark_aliasing(out.kernel);
    return out;
  }

  // Index checks (docs/kernel-language.md, Index checks): every load and
  // store of the text is a site, numbered in a walk of the body; site s, axis
  // d owns index_errors[2 * (s * axes + d)] (a flag) and the next slot (the
  // index that was out of range).
  void declare_index_errors() {
    if (!shape_.check_indices) return;
    for (const KernelParam& p : k_.params) {
      if (p.is_array) axes_ = std::max(axes_, static_cast<int>(p.shape.size()));
    }
    axes_ = std::max(axes_, 1);
    number_sites(k_.body);
    const int64_t slots = 2 * static_cast<int64_t>(std::max<size_t>(sites_.size(), 1)) * axes_;
    b_.buffer_param("index_errors", DType::i64, {kir::int_const(slots)}, kir::Access::ReadWrite);
  }

  void number_sites(const KExpr& e) {
    const KernelExprNode& n = e.node();
    for (const KExpr& o : n.operands) number_sites(o);
    if (n.kind != KernelExprKind::Load) return;
    site_of_[&n] = static_cast<int>(sites_.size());
    sites_.push_back(IndexSite{n.name, false, n.loc});
  }

  void number_sites(const std::vector<KStmt>& body) {
    for (const KStmt& s : body) {
      if (s.value.defined()) number_sites(s.value);
      for (const KExpr& i : s.index) number_sites(i);
      if (s.kind == KernelStmtKind::Store) {
        site_of_[&s] = static_cast<int>(sites_.size());
        sites_.push_back(IndexSite{s.name, true, s.loc});
      }
      number_sites(s.body);
      number_sites(s.else_body);
    }
  }

  // Each axis's index as i64, and whether it lies in [0, extent).
  std::vector<kir::Expr> index_i64(const std::vector<KExpr>& index) const {
    std::vector<kir::Expr> out;
    for (const KExpr& i : index) {
      kir::Expr v = expr(i);
      out.push_back(v.dtype() == DType::i64 ? v : kir::cast(v, DType::i64));
    }
    return out;
  }

  kir::Expr in_range(const std::string& array, const std::vector<kir::Expr>& index) const {
    const std::vector<kir::Expr>& dims = dims_.at(array);
    kir::Expr ok;
    for (size_t d = 0; d < index.size(); ++d) {
      kir::Expr axis = kir::op(OpKind::And, {kir::op(OpKind::Ge, {index[d], kir::int_const(0)}),
                                             kir::op(OpKind::Lt, {index[d], dims[d]})});
      ok = ok.defined() ? kir::op(OpKind::And, {ok, axis}) : axis;
    }
    return ok;
  }

  // Notes each axis of site `site` whose index is out of range.
  void note_out_of_range(int site, const std::string& array, const std::vector<kir::Expr>& index) {
    const std::vector<kir::Expr>& dims = dims_.at(array);
    for (size_t d = 0; d < index.size(); ++d) {
      kir::Expr bad = kir::op(OpKind::Or, {kir::op(OpKind::Lt, {index[d], kir::int_const(0)}),
                                           kir::op(OpKind::Ge, {index[d], dims[d]})});
      const int64_t slot = 2 * (static_cast<int64_t>(site) * axes_ + static_cast<int64_t>(d));
      b_.if_then(bad, [&] {
        b_.store("index_errors", {kir::int_const(slot)}, kir::int_const(1));
        b_.store("index_errors", {kir::int_const(slot + 1)}, index[d]);
      });
    }
  }

  // Before a statement: the checks of the loads its expression evaluates.
  void check_loads(const KExpr& e) {
    if (!shape_.check_indices) return;
    const KernelExprNode& n = e.node();
    for (const KExpr& o : n.operands) check_loads(o);
    if (n.kind == KernelExprKind::Load) note_out_of_range(site_of_.at(&n), n.name, index_i64(n.operands));
  }

  void check_loads(const KStmt& s) {
    if (s.value.defined()) check_loads(s.value);
    for (const KExpr& i : s.index) check_loads(i);
  }
  void mark_aliasing(kir::Kernel& kernel) const {
    for (size_t i = 0, buffer = 0; i < k_.params.size(); ++i) {
      if (!k_.params[i].is_array) continue;
      bool restricted = !shape_.restrict_array.empty() && shape_.restrict_array[i];
      kernel.buffers[buffer++].may_alias = !restricted;
    }
  }

  void declare_params() {
    for (const KernelParam& p : k_.params) {
      if (!p.is_array) continue;
      std::vector<kir::Expr> shape;
      for (const Dim& d : p.shape) {
        shape.push_back(d.is_static() ? kir::int_const(d.extent()) : kir::var(symbol_name(d.name())));
      }
      kir::Access access = p.access == ArrayAccess::Write       ? kir::Access::Write
                           : p.access == ArrayAccess::ReadWrite ? kir::Access::ReadWrite
                                                                : kir::Access::Read;
      dims_[p.name] = shape;
      b_.buffer_param(user_buffer_name(p.name), p.dtype, std::move(shape), access);
    }
    for (const KernelParam& p : k_.params) {
      if (!p.is_array) b_.scalar_param(value_name(p.name), p.dtype);
    }
    for (const std::string& s : k_.symbols()) b_.scalar_param(symbol_name(s), DType::i64);
  }

  kir::Expr identity() const {
    if (k_.reduction == KernelReduction::Sum) {
      return is_float(acc_dtype_) ? kir::float_const(0.0, acc_dtype_) : kir::int_const(0, acc_dtype_);
    }
    bool max = k_.reduction == KernelReduction::Max;
    if (is_float(acc_dtype_)) {
      double inf = std::numeric_limits<double>::infinity();
      return kir::float_const(max ? -inf : inf, acc_dtype_);
    }
    int64_t lo = acc_dtype_ == DType::i8 ? INT8_MIN : acc_dtype_ == DType::i32 ? INT32_MIN : INT64_MIN;
    int64_t hi = acc_dtype_ == DType::i8 ? INT8_MAX : acc_dtype_ == DType::i32 ? INT32_MAX : INT64_MAX;
    return kir::int_const(max ? lo : hi, acc_dtype_);
  }

  kir::Expr combine(const kir::Expr& a, const kir::Expr& v) const {
    OpKind op = k_.reduction == KernelReduction::Sum ? OpKind::Add
                : k_.reduction == KernelReduction::Max ? OpKind::Max
                                                       : OpKind::Min;
    return kir::op(op, {a, v});
  }

  void block(const std::vector<KStmt>& body) {
    scopes_.emplace_back();
    for (const KStmt& s : body) stmt(s);
    scopes_.pop_back();
  }

  // KIR names are unique in a kernel; the language lets sibling blocks reuse
  // a name, so each definition gets its own (u_j, u_j_2, ...).
  std::string define(const std::string& name) {
    int& count = defined_[name];
    ++count;
    std::string kir_name = count == 1 ? value_name(name) : fmt::format("{}_{}", value_name(name), count);
    scopes_.back()[name] = kir_name;
    return kir_name;
  }

  std::string resolve(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto found = it->find(name);
      if (found != it->end()) return found->second;
    }
    return value_name(name);  // parameters and range indices
  }

  // A top-level let of a local that lives across phases: its lane's element.
  void lane_let(const KStmt& s) {
    check_loads(s);
    kir::Expr v = expr(s.value);
    const std::string array = resolve(s.name).substr(kLaneArray.size());
    if (v.dtype() != s.declared_type) v = kir::cast(v, s.declared_type);
    b_.store(array, {lane_}, v);
  }

  void stmt(const KStmt& s) {
    check_loads(s);
    switch (s.kind) {
      case KernelStmtKind::Let: {
        kir::Expr v = expr(s.value);
        b_.let(define(s.name), v);
        return;
      }
      case KernelStmtKind::Assign: {
        kir::Expr v = expr(s.value);
        const std::string target = resolve(s.name);
        if (target.starts_with(kLaneArray)) {
          b_.store(target.substr(kLaneArray.size()), {lane_}, v);
        } else {
          b_.assign(kir::var(target, v.dtype()), v);
        }
        return;
      }
      case KernelStmtKind::Store: {
        if (shape_.check_indices) {
          std::vector<kir::Expr> index = index_i64(s.index);
          note_out_of_range(site_of_.at(&s), s.name, index);
          kir::Expr value = expr(s.value);
          b_.if_then(in_range(s.name, index), [&] { b_.store(user_buffer_name(s.name), index, value); });
          return;
        }
        std::vector<kir::Expr> index;
        for (const KExpr& i : s.index) index.push_back(expr(i));
        b_.store(user_buffer_name(s.name), std::move(index), expr(s.value));
        return;
      }
      case KernelStmtKind::If:
        b_.if_then(expr(s.value), [&] { block(s.body); },
                   s.else_body.empty() ? kir::KernelBuilder::BodyFn{} : [&] { block(s.else_body); });
        return;
      case KernelStmtKind::For: {
        kir::Expr extent = expr(s.value);
        scopes_.emplace_back();
        b_.serial(define(s.name), extent, [&](const kir::Expr&) { block(s.body); });
        scopes_.pop_back();
        return;
      }
      case KernelStmtKind::Yield: {
        kir::Expr v = expr(s.value);
        if (v.dtype() != acc_dtype_) v = kir::cast(v, acc_dtype_);
        if (acc_.defined()) {
          b_.assign(acc_, combine(acc_, v));  // CUDA: one accumulator per thread
        } else {
          b_.store("acc", {lane_}, combine(b_.load("acc", {lane_}), v));
        }
        return;
      }
    }
  }

  kir::Expr expr(const KExpr& e) const {
    const KernelExprNode& n = e.node();
    STITCH_ASSERT(n.typed, "user kernel lowering: untyped expression (kernel not checked)");
    switch (n.kind) {
      case KernelExprKind::Literal: return literal(n);
      case KernelExprKind::Name: {
        const KernelParam* p = k_.find_param(n.name);
        bool symbol = p == nullptr && is_symbol(n.name);
        if (symbol) return kir::var(symbol_name(n.name), n.dtype);
        const std::string name = resolve(n.name);
        if (name.starts_with(kLaneArray)) return b_.load(name.substr(kLaneArray.size()), {lane_});
        return kir::var(name, n.dtype);
      }
      case KernelExprKind::Load: {
        if (shape_.check_indices) {
          // Out of range: 0, and the load reads a clamped index that exists.
          std::vector<kir::Expr> index = index_i64(n.operands);
          kir::Expr ok = in_range(n.name, index);
          const std::vector<kir::Expr>& dims = dims_.at(n.name);
          std::vector<kir::Expr> clamped;
          for (size_t d = 0; d < index.size(); ++d) {
            kir::Expr top = kir::op(OpKind::Sub, {dims[d], kir::int_const(1)});
            clamped.push_back(kir::op(OpKind::Max, {kir::op(OpKind::Min, {index[d], top}), kir::int_const(0)}));
          }
          kir::Expr zero = is_bool(n.dtype)    ? kir::bool_const(false)
                           : is_float(n.dtype) ? kir::float_const(0.0, n.dtype)
                                               : kir::int_const(0, n.dtype);
          return kir::make_op_unchecked(OpKind::Select, n.dtype,
                                        {ok, kir::load(user_buffer_name(n.name), n.dtype, std::move(clamped)), zero});
        }
        std::vector<kir::Expr> index;
        for (const KExpr& i : n.operands) index.push_back(expr(i));
        return kir::load(user_buffer_name(n.name), n.dtype, std::move(index));
      }
      case KernelExprKind::Op: {
        std::vector<kir::Expr> operands;
        for (const KExpr& o : n.operands) operands.push_back(expr(o));
        if (n.op == OpKind::Cast) return kir::cast(operands[0], n.cast_to);
        return kir::make_op_unchecked(n.op, n.dtype, std::move(operands));
      }
    }
    STITCH_ASSERT(false, "unhandled kernel expression");
  }

  bool is_symbol(const std::string& name) const {
    for (const std::string& s : k_.symbols()) {
      if (s == name) return true;
    }
    return false;
  }

  const UserKernel& k_;
  const UserKernelShape& shape_;
  kir::KernelBuilder b_;
  DType acc_dtype_ = DType::f32;
  kir::Expr lane_;
  kir::Expr acc_;
  std::vector<std::map<std::string, std::string>> scopes_;
  std::map<std::string, int> defined_;
  std::map<std::string, std::vector<kir::Expr>> dims_;  // array parameter -> extents
  std::vector<IndexSite> sites_;
  std::map<const void*, int> site_of_;  // load node or store statement -> site
  int axes_ = 0;
};

}  // namespace

std::string user_buffer_name(const std::string& name) { return "a_" + name; }

UserKernelShape user_kernel_shape(const std::vector<int64_t>& extents) {
  UserKernelShape s;
  int64_t inner = extents.empty() ? 1 : extents.back();
  // A power of two from 16 to 1024 lanes that covers the innermost extent, so
  // a short row does not leave most of a 1024-lane chunk idle.
  s.lanes = std::clamp<int64_t>(static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>(std::max<int64_t>(inner, 1)))), 16, 1024);
  s.rows_per_block = extents.size() > 1 ? std::max<int64_t>(1, 1024 / s.lanes) : 1;
  // A short range whose indices each run long serial loops (a row of a
  // matrix product, a sweep) must still reach every core: a block holds at
  // most 1/16 of the indices (down to one vector loop of 16 lanes), so there
  // are 16 blocks or more when the range allows.
  int64_t count = 1;
  for (int64_t e : extents) count = e > 0 && count <= std::numeric_limits<int64_t>::max() / e ? count * e : count;
  const int64_t cap = std::max<int64_t>(16, static_cast<int64_t>(std::bit_floor(static_cast<uint64_t>(std::max<int64_t>(count / 16, 1)))));
  s.lanes = std::min(s.lanes, cap);
  s.rows_per_block = std::max<int64_t>(1, std::min(s.rows_per_block, cap / s.lanes));
  return s;
}

LoweredUserKernel lower_user_kernel_cpu(const UserKernel& kernel, const UserKernelShape& shape,
                                        const std::string& kir_name) {
  return UserKernelLowering(kernel, shape, kir_name).run();
}

LoweredUserKernel lower_user_kernel_cuda(const UserKernel& kernel, const UserKernelShape& shape,
                                         const std::string& kir_name) {
  return UserKernelLowering(kernel, shape, kir_name).run_cuda();
}

}  // namespace stitch::lower
