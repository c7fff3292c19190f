#include "reference_compare.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>

namespace stitch::onnx_node {

TensorComparison compare_with_reference(const Tensor& got, const Tensor& want) {
  if (!is_float(want.dtype())) return compare_tensors(got, want, Tolerance::exact());
  Tensor bound(DType::f64, want.shape());
  for (int64_t i = 0; i < want.numel(); ++i) {
    bound.set_f64(i, kAbsoluteTolerance + kRelativeTolerance * std::fabs(want.get_f64(i)));
  }
  return compare_tensors(got, want, Tolerance::per_element(bound));
}

std::string compare_outputs(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  if (got.size() != want.size()) return fmt::format("{} outputs, the reference has {}", got.size(), want.size());
  std::string diff;
  for (size_t i = 0; i < want.size(); ++i) {
    TensorComparison c = compare_with_reference(got[i], want[i]);
    if (c.ok) continue;
    if (!diff.empty()) diff += "\n";
    diff += fmt::format("output {}: {}", i, c.describe());
    if (c.type_mismatch.empty()) diff += fmt::format(" (max abs error {:g}, max rel error {:g})", c.max_abs_error, c.max_rel_error);
  }
  return diff;
}

}  // namespace stitch::onnx_node
