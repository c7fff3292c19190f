// Fused kernels from segments of calls: see fused_kernel.h.
#include "lazy/fused_kernel.h"

#include <fmt/format.h>

#include <map>

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

}  // namespace

FusedKernel build_fused_kernel(const std::vector<SegmentCall>& calls, const std::vector<StorageType>& storages) {
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
  for (size_t c = 0; c < calls.size(); ++c) {
    CallRenamer rename(calls[c], static_cast<int>(c));
    const UserKernel& ck = *calls[c].kernel;
    std::vector<KStmt> body = rename.block(ck.body);
    // A call whose range is smaller than the fused one runs under a guard on
    // its own extents, written as the call wrote them (renamed).
    KExpr guard;
    for (size_t d = 0; d < rank; ++d) {
      if (calls[c].binding->extents[d] == f.extents[d]) continue;
      KExpr cond = kernel_name(fmt::format("i{}", d)) < rename.expr(ck.range[d].extent);
      guard = guard.defined() ? (guard && cond) : cond;
    }
    if (!guard.defined()) {
      for (KStmt& s : body) k.body.push_back(std::move(s));
      continue;
    }
    KStmt s;
    s.kind = KernelStmtKind::If;
    s.value = guard;
    s.body = std::move(body);
    k.body.push_back(std::move(s));
  }
  check_kernel(k);
  return f;
}

}  // namespace stitch::lazy
