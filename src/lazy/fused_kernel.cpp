// Fused kernels from segments of calls: see fused_kernel.h.
#include "lazy/fused_kernel.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <functional>
#include <map>
#include <optional>

#include "interp/index_bounds.h"

namespace stitch::lazy {

namespace {

// Renames one call's body into the fused kernel's names.
class CallRenamer {
 public:
  // `index_names`: the fused kernel's name for each dimension of the call's
  // range (a range index i<d>, or a loop variable for a trailing dimension).
  CallRenamer(const SegmentCall& call, int index, const std::vector<std::string>& index_names)
      : call_(call), prefix_(fmt::format("c{}_", index)) {
    const UserKernel& k = *call.kernel;
    for (size_t d = 0; d < k.range.size(); ++d) names_[k.range[d].name] = index_names.at(d);
    for (size_t p = 0; p < k.params.size(); ++p) {
      const KernelParam& param = k.params[p];
      if (!param.is_array) {
        names_[param.name] = prefix_ + param.name;
        continue;
      }
      int s = call.storage[p];
      arrays_[param.name] = fmt::format("x{}", s);
      for (size_t a = 0; a < param.shape.size(); ++a) {
        if (param.shape[a].is_symbolic()) names_.try_emplace(param.shape[a].name(), fmt::format("x{}_{}", s, a));
      }
    }
  }

  KExpr expr(const KExpr& e) const {
    const KernelExprNode& n = e.node();
    auto out = std::make_shared<KernelExprNode>(n);
    if (n.kind == KernelExprKind::Name) out->name = name(n.name);
    if (n.kind == KernelExprKind::Load) out->name = arrays_.at(n.name);
    for (KExpr& o : out->operands) o = expr(o);
    return KExpr(std::move(out));
  }

  std::vector<KStmt> block(const std::vector<KStmt>& body) const {
    std::vector<KStmt> out;
    for (const KStmt& s : body) out.push_back(stmt(s));
    return out;
  }

 private:
  KStmt stmt(const KStmt& s) const {
    KStmt out = s;
    if (s.kind == KernelStmtKind::Store) {
      out.name = arrays_.at(s.name);
    } else if (s.kind != KernelStmtKind::If && s.kind != KernelStmtKind::Yield) {
      out.name = name(s.name);
    }
    for (KExpr& i : out.index) i = expr(i);
    if (out.value.defined()) out.value = expr(out.value);
    out.body = block(s.body);
    out.else_body = block(s.else_body);
    return out;
  }

  // Locals and loop variables are not in the table: they get the call's prefix.
  std::string name(const std::string& n) const {
    auto it = names_.find(n);
    return it != names_.end() ? it->second : prefix_ + n;
  }

  const SegmentCall& call_;
  std::string prefix_;
  std::map<std::string, std::string> names_;
  std::map<std::string, std::string> arrays_;
};

bool same_expr(const KExpr& a, const KExpr& b) {
  const KernelExprNode& x = a.node();
  const KernelExprNode& y = b.node();
  if (x.kind != y.kind || x.name != y.name || x.operands.size() != y.operands.size()) return false;
  if (x.kind == KernelExprKind::Literal &&
      (x.int_value != y.int_value || x.float_value != y.float_value || x.is_float_literal != y.is_float_literal ||
       x.is_bool_literal != y.is_bool_literal)) {
    return false;
  }
  if (x.kind == KernelExprKind::Op && (x.op != y.op || (x.op == OpKind::Cast && x.cast_to != y.cast_to))) return false;
  for (size_t i = 0; i < x.operands.size(); ++i) {
    if (!same_expr(x.operands[i], y.operands[i])) return false;
  }
  return true;
}

// The position d in `names` (a call's index names: range indices, then its
// loop variables) when `e` is names[d], names[d] + c, c + names[d] or
// names[d] - c for an integer literal c; -1 otherwise.
int range_dim(const KExpr& e, const std::vector<std::string>& names) {
  const KernelExprNode& n = e.node();
  auto dim_of = [&names](const KernelExprNode& v) {
    for (size_t d = 0; d < names.size(); ++d) {
      if (v.kind == KernelExprKind::Name && v.name == names[d]) return static_cast<int>(d);
    }
    return -1;
  };
  if (n.kind == KernelExprKind::Name) return dim_of(n);
  if (n.kind != KernelExprKind::Op || n.operands.size() != 2 || (n.op != OpKind::Add && n.op != OpKind::Sub)) return -1;
  auto is_int = [](const KernelExprNode& v) { return v.kind == KernelExprKind::Literal && !v.is_float_literal && !v.is_bool_literal; };
  const KernelExprNode& l = n.operands[0].node();
  const KernelExprNode& r = n.operands[1].node();
  if (is_int(r)) return dim_of(l);
  if (n.op == OpKind::Add && is_int(l)) return dim_of(r);
  return -1;
}

bool loads_array(const KExpr& e, const std::string& array) {
  return any_node(e, [&array](const KernelExprNode& n) { return n.kind == KernelExprKind::Load && n.name == array; });
}

// Every index list `array` is loaded or stored with, in `body`.
void collect_indices(const std::vector<KStmt>& body, const std::string& array, std::vector<std::vector<KExpr>>& out);

void collect_indices(const KExpr& e, const std::string& array, std::vector<std::vector<KExpr>>& out) {
  const KernelExprNode& n = e.node();
  if (n.kind == KernelExprKind::Load && n.name == array) out.push_back(n.operands);
  for (const KExpr& o : n.operands) collect_indices(o, array, out);
}

void collect_indices(const std::vector<KStmt>& body, const std::string& array, std::vector<std::vector<KExpr>>& out) {
  for (const KStmt& s : body) {
    if (s.kind == KernelStmtKind::Store && s.name == array) out.push_back(s.index);
    for (const KExpr& i : s.index) collect_indices(i, array, out);
    if (s.value.defined()) collect_indices(s.value, array, out);
    collect_indices(s.body, array, out);
    collect_indices(s.else_body, array, out);
  }
}

KExpr to_local(const KExpr& e, const std::string& array, const std::string& local) {
  const KernelExprNode& n = e.node();
  if (n.kind == KernelExprKind::Load && n.name == array) return kernel_name(local, n.loc);
  if (!loads_array(e, array)) return e;
  auto out = std::make_shared<KernelExprNode>(n);
  for (KExpr& o : out->operands) o = to_local(o, array, local);
  return KExpr(std::move(out));
}

void to_local(std::vector<KStmt>& body, const std::string& array, const std::string& local) {
  for (KStmt& s : body) {
    if (s.value.defined()) s.value = to_local(s.value, array, local);
    if (s.kind == KernelStmtKind::Store && s.name == array) {
      s.kind = KernelStmtKind::Assign;
      s.name = local;
      s.index.clear();
    }
    to_local(s.body, array, local);
    to_local(s.else_body, array, local);
  }
}

bool touches_array(const std::vector<KStmt>& body, const std::string& array) {
  std::vector<std::vector<KExpr>> indices;
  collect_indices(body, array, indices);
  return !indices.empty();
}

// Keeps storage `array` in local `array`_r, declared (zero) at the top of the
// fused body, when that is exact (build_fused_kernel's conditions): returns
// whether it did. `bodies` are the calls' renamed bodies, `extents` their ranges.
bool keep_in_register(const std::vector<std::vector<KStmt>*>& bodies, const std::vector<std::vector<int64_t>>& extents,
                      const std::vector<std::vector<std::string>>& index_names, const std::string& array) {
  size_t first_call = 0;
  while (first_call < bodies.size() && !touches_array(*bodies[first_call], array)) ++first_call;
  if (first_call == bodies.size()) return false;
  std::vector<KStmt>& body = *bodies[first_call];
  size_t first = 0;
  while (!touches_array(std::vector<KStmt>{body[first]}, array)) ++first;
  const KStmt store = body[first];
  if (store.kind != KernelStmtKind::Store || store.name != array || loads_array(store.value, array)) return false;
  for (const KExpr& i : store.index) {
    if (loads_array(i, array)) return false;
  }
  // One index, a distinct dimension of the call's range plus a constant per
  // component, all dimensions covered (a trailing dimension by its loop variable).
  const std::vector<std::string>& names = index_names[first_call];
  std::vector<char> covered(names.size(), 0);
  for (const KExpr& i : store.index) {
    int d = range_dim(i, names);
    if (d < 0 || covered[static_cast<size_t>(d)]) return false;
    covered[static_cast<size_t>(d)] = 1;
  }
  if (std::find(covered.begin(), covered.end(), 0) != covered.end()) return false;
  for (size_t c = first_call; c < bodies.size(); ++c) {
    std::vector<std::vector<KExpr>> indices;
    collect_indices(*bodies[c], array, indices);
    if (indices.empty()) continue;
    // A later call runs only at indices where the first one ran (and stored):
    // it uses the same index names (the same loop nest), over no more of them.
    if (index_names[c] != names) return false;
    for (size_t d = 0; d < names.size(); ++d) {
      if (extents[c][d] > extents[first_call][d]) return false;
    }
    for (const std::vector<KExpr>& index : indices) {
      if (index.size() != store.index.size()) return false;
      for (size_t i = 0; i < index.size(); ++i) {
        if (!same_expr(index[i], store.index[i])) return false;
      }
    }
  }
  for (size_t c = first_call; c < bodies.size(); ++c) to_local(*bodies[c], array, array + "_r");
  return true;
}

// Replaces local or loop variable `from` by `to` in `body`.
KExpr rename_name(const KExpr& e, const std::string& from, const std::string& to) {
  const KernelExprNode& n = e.node();
  if (n.kind == KernelExprKind::Name && n.name == from) return kernel_name(to, n.loc);
  if (!any_node(e, [&](const KernelExprNode& m) { return m.kind == KernelExprKind::Name && m.name == from; })) return e;
  auto out = std::make_shared<KernelExprNode>(n);
  for (KExpr& o : out->operands) o = rename_name(o, from, to);
  return KExpr(std::move(out));
}

void rename_name(std::vector<KStmt>& body, const std::string& from, const std::string& to) {
  for (KStmt& s : body) {
    if ((s.kind == KernelStmtKind::Assign || s.kind == KernelStmtKind::Let) && s.name == from) s.name = to;
    for (KExpr& i : s.index) i = rename_name(i, from, to);
    if (s.value.defined()) s.value = rename_name(s.value, from, to);
    rename_name(s.body, from, to);
    rename_name(s.else_body, from, to);
  }
}

bool has_kind(const std::vector<KStmt>& body, KernelStmtKind kind) {
  return any_stmt(body, [kind](const KStmt& s) { return s.kind == kind; });
}

bool has_loop(const KStmt& s) { return s.kind == KernelStmtKind::For || has_kind(s.body, KernelStmtKind::For) || has_kind(s.else_body, KernelStmtKind::For); }

bool has_load(const std::vector<KStmt>& body) {
  auto loads = [](const KExpr& e) {
    return e.defined() && any_node(e, [](const KernelExprNode& n) { return n.kind == KernelExprKind::Load; });
  };
  return any_stmt(body, [&](const KStmt& s) { return loads(s.value) || std::any_of(s.index.begin(), s.index.end(), loads); });
}

// Every array `body` stores to (renamed names).
void stored_arrays(const std::vector<KStmt>& body, std::vector<std::string>& out) {
  for (const KStmt& s : body) {
    if (s.kind == KernelStmtKind::Store) out.push_back(s.name);
    stored_arrays(s.body, out);
    stored_arrays(s.else_body, out);
  }
}

// Every array `body` loads, with the index lists.
void loaded_arrays(const std::vector<KStmt>& body, std::vector<std::pair<std::string, std::vector<KExpr>>>& out) {
  std::function<void(const KExpr&)> walk = [&](const KExpr& e) {
    const KernelExprNode& n = e.node();
    if (n.kind == KernelExprKind::Load) out.emplace_back(n.name, n.operands);
    for (const KExpr& o : n.operands) walk(o);
  };
  for (const KStmt& s : body) {
    for (const KExpr& i : s.index) walk(i);
    if (s.value.defined()) walk(s.value);
    loaded_arrays(s.body, out);
    loaded_arrays(s.else_body, out);
  }
}

// The value of an extent written as a literal or a shape symbol of the call.
std::optional<int64_t> extent_value(const KExpr& e, const interp::KernelBinding& binding) {
  const KernelExprNode& n = e.node();
  if (n.kind == KernelExprKind::Literal && !n.is_float_literal && !n.is_bool_literal) return n.int_value;
  if (n.kind == KernelExprKind::Name) {
    auto it = binding.symbols.find(n.name);
    if (it != binding.symbols.end()) return it->second;
  }
  return std::nullopt;
}

}  // namespace

namespace {

// build_fused_kernel's steps over one segment, in order (fused_kernel.h).
class FusedKernelBuilder {
 public:
  FusedKernelBuilder(const std::vector<SegmentCall>& calls, const std::vector<StorageType>& storages,
                     const std::vector<bool>& dead)
      : calls_(calls), storages_(storages), dead_(dead), k_(f_.kernel) {}

  FusedKernel build() {
    declare_params();
    group_runs();
    rename_bodies();
    for (size_t r = 0; r < runs_.size(); ++r) {
      if (runs_[r].rank == rank_ + 1) merge_row_finishers(r);
    }
    keep_dead_storages_in_registers();
    assemble();
    check_kernel(k_);
    f_.index_reads_scalars = interp::indices_read_scalars(k_);
    for (size_t s = 0; s < storages_.size(); ++s) {
      const ArrayAccess a = k_.params[s].access;
      f_.written.push_back(a == ArrayAccess::Write || a == ArrayAccess::ReadWrite);
    }
    return std::move(f_);
  }

 private:
  // Runs: a call of the fused rank alone, or consecutive calls of one larger
  // rank sharing a loop nest over their trailing dimensions.
  struct Run {
    size_t rank = 0;
    std::vector<size_t> calls;
    std::vector<std::string> index_names;  // i0, ..., then the loop variables
  };

  // The storages as arrays x<s>, each call's scalars as c<c>_<name>, then
  // the fused range's extents r<d>; a reduction call makes the kernel one.
  void declare_params() {
    rank_ = calls_[0].kernel->range.size();
    for (const SegmentCall& call : calls_) rank_ = std::min(rank_, call.kernel->range.size());
    k_.name = "fused";
    f_.storage_count = static_cast<int>(storages_.size());
    for (size_t s = 0; s < storages_.size(); ++s) {
      Shape shape;
      for (int a = 0; a < storages_[s].rank; ++a) shape.push_back(Dim::symbol(fmt::format("x{}_{}", s, a)));
      k_.params.push_back(KernelParam{fmt::format("x{}", s), storages_[s].dtype, true, std::move(shape), ArrayAccess::None, {}});
    }
    for (size_t c = 0; c < calls_.size(); ++c) {
      const UserKernel& ck = *calls_[c].kernel;
      for (size_t p = 0; p < ck.params.size(); ++p) {
        if (ck.params[p].is_array) continue;
        k_.params.push_back(KernelParam{fmt::format("c{}_{}", c, ck.params[p].name), ck.params[p].dtype, false, {},
                                        ArrayAccess::None, {}});
        f_.scalar_sources.emplace_back(static_cast<int>(c), static_cast<int>(p));
      }
      if (ck.is_reduction()) {
        STITCH_ASSERT(!k_.is_reduction(), "build_fused_kernel: two reductions in one segment");
        k_.reduction = ck.reduction;
        k_.result_dtype = ck.result_dtype;
      }
    }
    f_.extents.assign(rank_, 0);
    for (const SegmentCall& call : calls_) {
      for (size_t d = 0; d < rank_; ++d) f_.extents[d] = std::max(f_.extents[d], call.binding->extents[d]);
    }
    for (size_t d = 0; d < rank_; ++d) {
      k_.params.push_back(KernelParam{fmt::format("r{}", d), DType::i64, false, {}, ArrayAccess::None, {}});
      k_.range.push_back(KernelIndex{fmt::format("i{}", d), kernel_name(fmt::format("r{}", d)), {}});
    }
  }

  CallView view(size_t c) {
    const std::vector<ArrayAccessSite>* accesses = calls_[c].accesses;
    if (accesses == nullptr) {
      made_accesses_[c] = collect_accesses(*calls_[c].kernel);
      accesses = &made_accesses_[c];
    }
    return CallView{calls_[c].kernel, accesses, calls_[c].storage};
  }

  // A call of a larger rank joins the run before it when their trailing
  // extents agree and the fusion is safe with every call of the run.
  void group_runs() {
    made_accesses_.assign(calls_.size(), {});
    for (size_t c = 0; c < calls_.size(); ++c) {
      const std::vector<int64_t>& e = calls_[c].binding->extents;
      const size_t call_rank = e.size();
      bool joins = call_rank > rank_ && !runs_.empty() && runs_.back().rank == call_rank;
      if (joins) {
        const std::vector<int64_t>& first = calls_[runs_.back().calls[0]].binding->extents;
        joins = std::equal(e.begin() + static_cast<std::ptrdiff_t>(rank_), e.end(),
                           first.begin() + static_cast<std::ptrdiff_t>(rank_));
        for (size_t m : runs_.back().calls) {
          if (!joins) break;
          joins = fusion_safety(view(m), view(c), static_cast<int>(call_rank)).safe;
        }
      }
      if (joins) {
        runs_.back().calls.push_back(c);
        continue;
      }
      Run run;
      run.rank = call_rank;
      run.calls.push_back(c);
      for (size_t d = 0; d < call_rank; ++d) {
        run.index_names.push_back(d < rank_ ? fmt::format("i{}", d) : fmt::format("l{}_{}", runs_.size(), d));
      }
      runs_.push_back(std::move(run));
    }
  }

  // Each call's body renamed into the fused kernel, with its guard and its
  // run's trailing loop extents.
  void rename_bodies() {
    loop_extents_.assign(runs_.size(), {});
    for (size_t r = 0; r < runs_.size(); ++r) {
      for (size_t c : runs_[r].calls) {
        CallRenamer rename(calls_[c], static_cast<int>(c), runs_[r].index_names);
        const UserKernel& ck = *calls_[c].kernel;
        bodies_.push_back(rename.block(ck.body));
        call_extents_.push_back(calls_[c].binding->extents);
        index_names_.push_back(runs_[r].index_names);
        // A call whose range is smaller than the fused one runs under a guard
        // on its own extents, written as the call wrote them (renamed).
        KExpr guard;
        for (size_t d = 0; d < rank_; ++d) {
          if (calls_[c].binding->extents[d] == f_.extents[d]) continue;
          KExpr cond = kernel_name(fmt::format("i{}", d)) < rename.expr(ck.range[d].extent);
          guard = guard.defined() ? (guard && cond) : cond;
        }
        guards_.push_back(guard);
        if (loop_extents_[r].empty()) {
          for (size_t d = rank_; d < runs_[r].rank; ++d) loop_extents_[r].push_back(rename.expr(ck.range[d].extent));
        }
      }
    }
    hoisted_.assign(calls_.size(), {});
    inner_.assign(calls_.size(), {});
    merged_into_.assign(calls_.size(), -1);
  }

  // Whether `index` is the element of run iteration (i0, ..., `var`).
  bool at_row_element(const std::vector<KExpr>& index, const std::string& var) const {
    if (index.size() != rank_ + 1) return false;
    for (size_t d = 0; d <= rank_; ++d) {
      const KernelExprNode& n = index[d].node();
      if (n.kind != KernelExprKind::Name || n.name != (d < rank_ ? fmt::format("i{}", d) : var)) return false;
    }
    return true;
  }

  // A call of the fused rank that finishes run `r`'s rows (a row sum after a
  // row's elementwise work) joins the run's loop: its body is P, a loop, Q;
  // P (locals, no array access) moves before the run's loop, the loop's body
  // runs in the run's iteration, and Q stays in place. Exact when the loop
  // has the run's extent, stores nothing, reads what the run writes only at
  // the element the run's iteration wrote (which it writes only there), and
  // reads nothing the calls between them write.
  void merge_row_finishers(size_t r) {
    const std::string& lv = runs_[r].index_names[rank_];
    // Arrays the run writes: those it touches only at its iteration's element, and the others.
    std::vector<std::string> written;
    for (size_t c : runs_[r].calls) stored_arrays(bodies_[c], written);
    std::vector<std::string> row_arrays;
    std::vector<std::string> blocked;  // written elsewhere, or by calls in between
    for (const std::string& a : written) {
      bool rows = true;
      for (size_t c : runs_[r].calls) {
        std::vector<std::vector<KExpr>> indices;
        collect_indices(bodies_[c], a, indices);
        for (const std::vector<KExpr>& index : indices) rows = rows && at_row_element(index, lv);
      }
      (rows ? row_arrays : blocked).push_back(a);
    }
    for (size_t q = r + 1; q < runs_.size() && runs_[q].rank == rank_; ++q) {
      const size_t c = runs_[q].calls[0];
      merge_if_exact(r, c, row_arrays, blocked);
      std::vector<std::string> stores;
      stored_arrays(bodies_[c], stores);
      blocked.insert(blocked.end(), stores.begin(), stores.end());
    }
  }

  // merge_row_finishers for call `c` after run `r`.
  void merge_if_exact(size_t r, size_t c, const std::vector<std::string>& row_arrays,
                      const std::vector<std::string>& blocked) {
    const std::string& lv = runs_[r].index_names[rank_];
    const int64_t row_extent = calls_[runs_[r].calls[0]].binding->extents[rank_];
    auto contains = [](const std::vector<std::string>& v, const std::string& x) {
      return std::find(v.begin(), v.end(), x) != v.end();
    };
    std::vector<KStmt>& body = bodies_[c];
    size_t loops = 0;
    size_t at = 0;
    for (size_t i = 0; i < body.size(); ++i) {
      if (has_loop(body[i])) {
        ++loops;
        at = i;
      }
    }
    if (guards_[c].defined() || loops != 1 || body[at].kind != KernelStmtKind::For) return;
    const std::vector<KStmt> pre(body.begin(), body.begin() + static_cast<std::ptrdiff_t>(at));
    const std::vector<KStmt> post(body.begin() + static_cast<std::ptrdiff_t>(at) + 1, body.end());
    const KStmt& loop = body[at];
    bool ok = !has_load(pre) && !has_kind(pre, KernelStmtKind::Store) && !has_kind(pre, KernelStmtKind::Yield) &&
              !std::any_of(post.begin(), post.end(), has_loop) &&
              !std::any_of(loop.body.begin(), loop.body.end(), has_loop) && !has_kind(loop.body, KernelStmtKind::Store) &&
              !has_kind(loop.body, KernelStmtKind::Yield) &&
              extent_value(calls_[c].kernel->body[at].value, *calls_[c].binding) == row_extent;
    std::vector<std::pair<std::string, std::vector<KExpr>>> loads;
    if (ok) loaded_arrays(loop.body, loads);
    for (const auto& [array, index] : loads) {
      if (contains(blocked, array) || (contains(row_arrays, array) && !at_row_element(index, loop.name))) ok = false;
    }
    if (!ok) return;
    hoisted_[c] = pre;
    inner_[c] = loop.body;
    rename_name(inner_[c], loop.name, lv);
    body = post;
    merged_into_[c] = static_cast<int>(r);
  }

  // A dead storage (read only inside the segment) that keep_in_register
  // accepts becomes a local x<s>_r, declared first.
  void keep_dead_storages_in_registers() {
    // What runs where, in order, for the register analysis: each call's body
    // at its place, and a merged call's loop body in its run's loop.
    std::vector<std::vector<KStmt>*> units;
    std::vector<std::vector<int64_t>> unit_extents;
    std::vector<std::vector<std::string>> unit_names;
    for (size_t r = 0; r < runs_.size(); ++r) {
      for (size_t c : runs_[r].calls) {
        units.push_back(&bodies_[c]);
        unit_extents.push_back(call_extents_[c]);
        unit_names.push_back(index_names_[c]);
      }
      for (size_t c = 0; c < calls_.size(); ++c) {
        if (merged_into_[c] != static_cast<int>(r)) continue;
        units.push_back(&inner_[c]);
        unit_extents.push_back(call_extents_[runs_[r].calls[0]]);
        unit_names.push_back(runs_[r].index_names);
      }
    }
    f_.in_register.assign(storages_.size(), false);
    for (size_t s = 0; s < dead_.size() && s < storages_.size(); ++s) {
      const std::string array = fmt::format("x{}", s);
      if (!dead_[s] || !keep_in_register(units, unit_extents, unit_names, array)) continue;
      f_.in_register[s] = true;
      KStmt let;
      let.kind = KernelStmtKind::Let;
      let.name = array + "_r";
      let.has_declared_type = true;
      let.declared_type = storages_[s].dtype;
      let.value = storages_[s].dtype == DType::boolean ? kernel_bool(false) : kernel_literal(int64_t{0});
      k_.body.push_back(std::move(let));
    }
  }

  // The kernel's body: each run's calls (guarded where their range is
  // smaller), merged finishers inside, in its trailing loops.
  void assemble() {
    for (size_t r = 0; r < runs_.size(); ++r) {
      std::vector<KStmt> run_body;
      for (size_t call : runs_[r].calls) {
        if (!guards_[call].defined()) {
          for (KStmt& s : bodies_[call]) run_body.push_back(std::move(s));
          continue;
        }
        KStmt s;
        s.kind = KernelStmtKind::If;
        s.value = guards_[call];
        s.body = std::move(bodies_[call]);
        run_body.push_back(std::move(s));
      }
      if (runs_[r].rank > rank_) {
        for (size_t c = 0; c < calls_.size(); ++c) {
          if (merged_into_[c] != static_cast<int>(r)) continue;
          for (KStmt& s : hoisted_[c]) k_.body.push_back(std::move(s));
          for (KStmt& s : inner_[c]) run_body.push_back(std::move(s));
        }
      }
      // The trailing dimensions as serial loops, innermost last.
      for (size_t d = runs_[r].rank; d-- > rank_;) {
        KStmt loop;
        loop.kind = KernelStmtKind::For;
        loop.name = runs_[r].index_names[d];
        loop.value = loop_extents_[r][d - rank_];
        loop.body = std::move(run_body);
        run_body.clear();
        run_body.push_back(std::move(loop));
      }
      for (KStmt& s : run_body) k_.body.push_back(std::move(s));
    }
  }

  const std::vector<SegmentCall>& calls_;
  const std::vector<StorageType>& storages_;
  const std::vector<bool>& dead_;
  FusedKernel f_;
  UserKernel& k_;
  size_t rank_ = 0;  // the fused range's rank: the smallest call's
  std::vector<std::vector<ArrayAccessSite>> made_accesses_;  // per call, where the call brought none
  std::vector<Run> runs_;
  // Per call, in call order (runs keep it): renamed body, guard, extents, index names.
  std::vector<std::vector<KStmt>> bodies_;
  std::vector<KExpr> guards_;
  std::vector<std::vector<int64_t>> call_extents_;
  std::vector<std::vector<std::string>> index_names_;
  std::vector<std::vector<KExpr>> loop_extents_;  // per run: its trailing dimensions' extents
  // Per call merged into a run's loop (merge_row_finishers): what moves before
  // the loop, the loop's body, and the run.
  std::vector<std::vector<KStmt>> hoisted_, inner_;
  std::vector<int> merged_into_;
};

}  // namespace

FusedKernel build_fused_kernel(const std::vector<SegmentCall>& calls, const std::vector<StorageType>& storages,
                               const std::vector<bool>& dead) {
  STITCH_ASSERT(!calls.empty(), "build_fused_kernel: no calls");
  return FusedKernelBuilder(calls, storages, dead).build();
}

}  // namespace stitch::lazy
