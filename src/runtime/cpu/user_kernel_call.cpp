// User-kernel calls on the CPU: see user_kernel_call.h.
#include "runtime/cpu/user_kernel_call.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <map>

#include "interp/index_bounds.h"
#include "interp/kernel_binding.h"
#include "interp/rounding.h"
#include "interp/scalar_semantics.h"

namespace stitch::runtime::cpu {

namespace {

bool overlaps(const ArrayView& a, const ArrayView& b) {
  if (a.nbytes() == 0 || b.nbytes() == 0) return false;
  return a.data < b.data + b.nbytes() && b.data < a.data + a.nbytes();
}

bool writes(ArrayAccess a) { return a == ArrayAccess::Write || a == ArrayAccess::ReadWrite; }

}  // namespace

std::vector<bool> restrict_flags(const UserKernel& k, const std::vector<KernelArg>& args) {
  std::vector<bool> flags(k.params.size(), false);
  for (size_t i = 0; i < k.params.size(); ++i) {
    if (!k.params[i].is_array) continue;
    bool distinct = true;
    for (size_t j = 0; j < k.params.size() && distinct; ++j) {
      if (j == i || !k.params[j].is_array) continue;
      bool written = writes(k.params[i].access) || writes(k.params[j].access);
      if (written && overlaps(args[i].array, args[j].array)) distinct = false;
    }
    flags[i] = distinct;
  }
  return flags;
}

CompiledUserKernel::CompiledUserKernel(kir::LoweredUserKernel lowered, kir::UserKernelShape shape, std::string source,
                                       std::shared_ptr<CpuModule> module)
    : lowered_(std::move(lowered)), shape_(std::move(shape)), source_(std::move(source)), module_(std::move(module)) {}

Tensor CompiledUserKernel::run(const UserKernel& k, const std::vector<KernelArg>& args) const {
  interp::KernelBinding b = interp::bind_kernel(k, args);
  std::vector<ArrayView> buffers;
  for (size_t i = 0; i < k.params.size(); ++i) {
    if (k.params[i].is_array) buffers.push_back(args[i].array);
  }
  std::vector<int64_t> scalars;
  for (size_t i = 0; i < k.params.size(); ++i) {
    if (k.params[i].is_array) continue;
    const interp::WideScalar& s = b.scalars[i];
    scalars.push_back(is_float(s.dtype) ? scalar_slot_f64(s.f) : scalar_slot(s.i));
  }
  for (const std::string& s : k.symbols()) scalars.push_back(scalar_slot(b.symbols.at(s)));
  Tensor partials;
  if (k.is_reduction()) {
    // The grid is the lowering's: rows over `rows_per_block`, times chunks of `lanes`.
    const kir::UserKernelShape& shape = shape_;
    int64_t outer = 1;
    for (size_t d = 0; d + 1 < b.extents.size(); ++d) outer *= b.extents[d];
    int64_t inner = b.extents.back();
    int64_t blocks = ((outer + shape.rows_per_block - 1) / shape.rows_per_block) * ((inner + shape.lanes - 1) / shape.lanes);
    partials = Tensor(lowered_.accumulator_dtype, {blocks});
    buffers.push_back(ArrayView::of(partials));
  }
  Tensor errors;
  if (shape_.check_indices) {
    errors = Tensor(DType::i64, {index_error_slots(lowered_)});
    buffers.push_back(ArrayView::of(errors));
  }
  if (b.index_count > 0) run_kernel_on_views(*module_, lowered_.kernel, buffers, scalars);
  if (shape_.check_indices) report_index_errors(k, lowered_, errors, args);
  return k.is_reduction() ? combine_partials(k, partials) : Tensor();
}

int64_t index_error_slots(const kir::LoweredUserKernel& lowered) {
  return 2 * static_cast<int64_t>(std::max<size_t>(lowered.index_sites.size(), 1)) * lowered.axes;
}

void report_index_errors(const UserKernel& k, const kir::LoweredUserKernel& lowered, const Tensor& errors,
                         const std::vector<KernelArg>& args) {
  for (size_t site = 0; site < lowered.index_sites.size(); ++site) {
    for (int d = 0; d < lowered.axes; ++d) {
      const int64_t slot = 2 * (static_cast<int64_t>(site) * lowered.axes + d);
      if (errors.get_i64(slot) == 0) continue;
      const kir::IndexSite& s = lowered.index_sites[site];
      const KernelParam* p = k.find_param(s.array);
      const int64_t extent = p != nullptr ? args[static_cast<size_t>(p - k.params.data())].array.shape[d] : 0;
      // As the interpreter says it, with the other axes' indices (not recorded) as _.
      const int rank = p != nullptr ? static_cast<int>(p->shape.size()) : 1;
      std::string index;
      for (int a = 0; a < rank; ++a) index += (a ? ", " : "") + (a == d ? std::to_string(errors.get_i64(slot + 1)) : "_");
      throw UserError(fmt::format("kernel '{}': an index {} {}[{}], outside axis {} of extent {}", k.name,
                                  s.write ? "writes" : "reads", s.array, index, d, extent),
                      s.loc);
    }
  }
}

Tensor combine_partials(const UserKernel& k, const Tensor& partials) {
  const int64_t blocks = partials.numel();
  Tensor result(k.result_dtype, {});
  if (is_float(k.result_dtype)) {
    double acc = k.reduction == KernelReduction::Sum ? 0.0
                 : k.reduction == KernelReduction::Max ? -std::numeric_limits<double>::infinity()
                                                       : std::numeric_limits<double>::infinity();
    for (int64_t i = 0; i < blocks; ++i) {
      double v = partials.get_f64(i);
      acc = k.reduction == KernelReduction::Sum ? acc + v
            : k.reduction == KernelReduction::Max ? interp::scalar::maximum(acc, v)
                                                  : interp::scalar::minimum(acc, v);
    }
    result.set_f64(0, interp::round_to_float_dtype(acc, k.result_dtype));
    return result;
  }
  int64_t acc = 0;
  if (k.reduction != KernelReduction::Sum) {
    acc = k.reduction == KernelReduction::Max ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
  }
  for (int64_t i = 0; i < blocks; ++i) {
    int64_t v = partials.get_i64(i);
    acc = k.reduction == KernelReduction::Sum ? interp::scalar::wrapping_add(acc, v)
          : k.reduction == KernelReduction::Max ? std::max(acc, v)
                                                : std::min(acc, v);
  }
  if (blocks == 0 && k.reduction != KernelReduction::Sum) {
    // The empty range's identity in the result dtype, as the interpreter gives.
    int64_t lo = k.result_dtype == DType::i8 ? INT8_MIN : k.result_dtype == DType::i32 ? INT32_MIN : INT64_MIN;
    int64_t hi = k.result_dtype == DType::i8 ? INT8_MAX : k.result_dtype == DType::i32 ? INT32_MAX : INT64_MAX;
    acc = k.reduction == KernelReduction::Max ? lo : hi;
  }
  result.set_i64(0, acc);
  return result;
}

}  // namespace stitch::runtime::cpu
