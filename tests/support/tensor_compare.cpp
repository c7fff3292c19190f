#include "tensor_compare.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace stitch::testing {

namespace {

std::string shape_text(const std::vector<int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

::testing::AssertionResult as_assertion(const TensorComparison& c) {
  if (c.ok) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << c.describe();
}

}  // namespace

::testing::AssertionResult tensors_match(const Tensor& got, const Tensor& want, const Tolerance& tol) {
  return as_assertion(compare_tensors(got, want, tol));
}

::testing::AssertionResult tensors_bitwise_equal(const Tensor& got, const Tensor& want) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape()) {
    return ::testing::AssertionFailure() << "got " << dtype_name(got.dtype()) << shape_text(got.shape())
                                         << ", want " << dtype_name(want.dtype()) << shape_text(want.shape());
  }
  const int size = dtype_size(want.dtype());
  std::string mismatches;
  int count = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const std::byte* g = got.raw() + i * size;
    const std::byte* w = want.raw() + i * size;
    if (std::memcmp(g, w, size) == 0) continue;
    if (++count > 8) continue;
    auto bits = [size](const std::byte* p) {
      uint64_t v = 0;
      std::memcpy(&v, p, size);  // little-endian hosts only, as the .npy reader assumes
      return fmt::format("{:#0{}x}", v, 2 + 2 * size);
    };
    mismatches += fmt::format("\n  element {}: got {} ({}), want {} ({})", i, got.get_f64(i), bits(g),
                              want.get_f64(i), bits(w));
  }
  if (count == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << count << " of " << want.numel() << " elements differ in their bits:"
                                       << mismatches;
}

Tensor float_tensor(DType dtype, std::vector<int64_t> shape, const std::vector<double>& values) {
  Tensor t(dtype, std::move(shape));
  EXPECT_EQ(static_cast<size_t>(t.numel()), values.size()) << "float_tensor: wrong number of values";
  for (int64_t i = 0; i < t.numel() && i < static_cast<int64_t>(values.size()); ++i) t.set_f64(i, values[i]);
  return t;
}

Tensor int_tensor(DType dtype, std::vector<int64_t> shape, const std::vector<int64_t>& values) {
  Tensor t(dtype, std::move(shape));
  EXPECT_EQ(static_cast<size_t>(t.numel()), values.size()) << "int_tensor: wrong number of values";
  for (int64_t i = 0; i < t.numel() && i < static_cast<int64_t>(values.size()); ++i) t.set_i64(i, values[i]);
  return t;
}

::testing::AssertionResult matches_interpreter(const Tensor& got, const Tensor& want, bool transcendental,
                                               int64_t reduction_length) {
  return as_assertion(compare_with_interpreter(got, want, ErrorAllowance{transcendental, reduction_length}));
}

::testing::AssertionResult outputs_match_interpreter(const std::vector<Tensor>& got, const std::vector<Tensor>& want,
                                                     bool transcendental, int64_t reduction_length) {
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure() << got.size() << " outputs, the interpreter has " << want.size();
  }
  for (size_t k = 0; k < got.size(); ++k) {
    ::testing::AssertionResult r = matches_interpreter(got[k], want[k], transcendental, reduction_length);
    if (!r) return ::testing::AssertionFailure() << "output " << k << ": " << r.message();
  }
  return ::testing::AssertionSuccess();
}

}  // namespace stitch::testing
