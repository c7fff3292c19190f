// Fused kernels from segments of calls: see fused_kernel.h.
#include "lazy/fused_kernel.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <map>

#include "interp/index_bounds.h"

namespace stitch::lazy {

namespace {

// Renames one call's body into the fused kernel's names.
class CallRenamer {
 public:
  CallRenamer(const SegmentCall& call, int index) : call_(call), prefix_(fmt::format("c{}_", index)) {
    const UserKernel& k = *call.kernel;
    for (size_t d = 0; d < k.range.size(); ++d) names_[k.range[d].name] = fmt::format("i{}", d);
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

// The range dimension d when `e` is i<d>, i<d> + c, c + i<d> or i<d> - c for
// an integer literal c; -1 otherwise.
int range_dim(const KExpr& e, size_t rank) {
  const KernelExprNode& n = e.node();
  auto dim_of = [rank](const KernelExprNode& v) {
    for (size_t d = 0; d < rank; ++d) {
      if (v.kind == KernelExprKind::Name && v.name == fmt::format("i{}", d)) return static_cast<int>(d);
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
bool keep_in_register(std::vector<std::vector<KStmt>>& bodies, const std::vector<std::vector<int64_t>>& extents,
                      const std::string& array, size_t rank) {
  size_t first_call = 0;
  while (first_call < bodies.size() && !touches_array(bodies[first_call], array)) ++first_call;
  if (first_call == bodies.size()) return false;
  std::vector<KStmt>& body = bodies[first_call];
  size_t first = 0;
  while (!touches_array(std::vector<KStmt>{body[first]}, array)) ++first;
  const KStmt store = body[first];
  if (store.kind != KernelStmtKind::Store || store.name != array || loads_array(store.value, array)) return false;
  for (const KExpr& i : store.index) {
    if (loads_array(i, array)) return false;
  }
  // One index, a distinct range dimension plus a constant per component, all dimensions covered.
  std::vector<char> covered(rank, 0);
  for (const KExpr& i : store.index) {
    int d = range_dim(i, rank);
    if (d < 0 || covered[static_cast<size_t>(d)]) return false;
    covered[static_cast<size_t>(d)] = 1;
  }
  if (std::find(covered.begin(), covered.end(), 0) != covered.end()) return false;
  for (size_t c = first_call; c < bodies.size(); ++c) {
    std::vector<std::vector<KExpr>> indices;
    collect_indices(bodies[c], array, indices);
    if (indices.empty()) continue;
    // A later call runs only at indices where the first one ran (and stored).
    for (size_t d = 0; d < rank; ++d) {
      if (extents[c][d] > extents[first_call][d]) return false;
    }
    for (const std::vector<KExpr>& index : indices) {
      if (index.size() != store.index.size()) return false;
      for (size_t i = 0; i < index.size(); ++i) {
        if (!same_expr(index[i], store.index[i])) return false;
      }
    }
  }
  for (size_t c = first_call; c < bodies.size(); ++c) to_local(bodies[c], array, array + "_r");
  return true;
}

}  // namespace

FusedKernel build_fused_kernel(const std::vector<SegmentCall>& calls, const std::vector<StorageType>& storages,
                               const std::vector<bool>& dead) {
  STITCH_ASSERT(!calls.empty(), "build_fused_kernel: no calls");
  FusedKernel f;
  UserKernel& k = f.kernel;
  const size_t rank = calls[0].kernel->range.size();
  k.name = "fused";
  f.storage_count = static_cast<int>(storages.size());
  for (size_t s = 0; s < storages.size(); ++s) {
    Shape shape;
    for (int a = 0; a < storages[s].rank; ++a) shape.push_back(Dim::symbol(fmt::format("x{}_{}", s, a)));
    k.params.push_back(KernelParam{fmt::format("x{}", s), storages[s].dtype, true, std::move(shape), ArrayAccess::None, {}});
  }
  for (size_t c = 0; c < calls.size(); ++c) {
    const UserKernel& ck = *calls[c].kernel;
    STITCH_ASSERT(ck.range.size() == rank, "build_fused_kernel: ranges of different rank");
    for (size_t p = 0; p < ck.params.size(); ++p) {
      if (ck.params[p].is_array) continue;
      k.params.push_back(KernelParam{fmt::format("c{}_{}", c, ck.params[p].name), ck.params[p].dtype, false, {},
                                     ArrayAccess::None, {}});
      f.scalar_sources.emplace_back(static_cast<int>(c), static_cast<int>(p));
    }
    if (ck.is_reduction()) {
      STITCH_ASSERT(!k.is_reduction(), "build_fused_kernel: two reductions in one segment");
      k.reduction = ck.reduction;
      k.result_dtype = ck.result_dtype;
    }
  }
  f.extents.assign(rank, 0);
  for (const SegmentCall& call : calls) {
    for (size_t d = 0; d < rank; ++d) f.extents[d] = std::max(f.extents[d], call.binding->extents[d]);
  }
  for (size_t d = 0; d < rank; ++d) {
    k.params.push_back(KernelParam{fmt::format("r{}", d), DType::i64, false, {}, ArrayAccess::None, {}});
    k.range.push_back(KernelIndex{fmt::format("i{}", d), kernel_name(fmt::format("r{}", d)), {}});
  }
  std::vector<std::vector<KStmt>> bodies;
  std::vector<KExpr> guards;
  std::vector<std::vector<int64_t>> call_extents;
  for (size_t c = 0; c < calls.size(); ++c) {
    CallRenamer rename(calls[c], static_cast<int>(c));
    const UserKernel& ck = *calls[c].kernel;
    bodies.push_back(rename.block(ck.body));
    call_extents.push_back(calls[c].binding->extents);
    // A call whose range is smaller than the fused one runs under a guard on
    // its own extents, written as the call wrote them (renamed).
    KExpr guard;
    for (size_t d = 0; d < rank; ++d) {
      if (calls[c].binding->extents[d] == f.extents[d]) continue;
      KExpr cond = kernel_name(fmt::format("i{}", d)) < rename.expr(ck.range[d].extent);
      guard = guard.defined() ? (guard && cond) : cond;
    }
    guards.push_back(guard);
  }
  f.in_register.assign(storages.size(), false);
  for (size_t s = 0; s < dead.size() && s < storages.size(); ++s) {
    const std::string array = fmt::format("x{}", s);
    if (!dead[s] || !keep_in_register(bodies, call_extents, array, rank)) continue;
    f.in_register[s] = true;
    KStmt let;
    let.kind = KernelStmtKind::Let;
    let.name = array + "_r";
    let.has_declared_type = true;
    let.declared_type = storages[s].dtype;
    let.value = storages[s].dtype == DType::boolean ? kernel_bool(false) : kernel_literal(int64_t{0});
    k.body.push_back(std::move(let));
  }
  for (size_t c = 0; c < calls.size(); ++c) {
    if (!guards[c].defined()) {
      for (KStmt& s : bodies[c]) k.body.push_back(std::move(s));
      continue;
    }
    KStmt s;
    s.kind = KernelStmtKind::If;
    s.value = guards[c];
    s.body = std::move(bodies[c]);
    k.body.push_back(std::move(s));
  }
  check_kernel(k);
  f.index_reads_scalars = interp::indices_read_scalars(k);
  return f;
}

}  // namespace stitch::lazy
