#include "tensor_compare.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace stitch::testing {

namespace {

struct FloatFormat {
  int precision;     // significand bits, including the implicit one
  int min_exponent;  // of the smallest normal number
};

FloatFormat format_of(DType dtype) {
  switch (dtype) {
    case DType::f16: return {11, -14};
    case DType::bf16: return {8, -126};
    case DType::f32: return {24, -126};
    default: return {53, -1022};
  }
}

std::string shape_text(const std::vector<int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

bool float_elements_match(double got, double want, const Tolerance& tol, DType dtype, int64_t i) {
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got);
  if (std::isinf(want) || std::isinf(got)) return got == want;
  switch (tol.kind) {
    case Tolerance::Kind::Exact: return got == want;
    case Tolerance::Kind::SignedExact: return got == want && std::signbit(got) == std::signbit(want);
    case Tolerance::Kind::Ulps: return std::fabs(got - want) <= tol.ulps * ulp_of(dtype, want);
    case Tolerance::Kind::Bound: return std::fabs(got - want) <= tol.bound->get_f64(i);
  }
  return false;
}

}  // namespace

double ulp_of(DType dtype, double x) {
  const FloatFormat f = format_of(dtype);
  const int exponent = (x == 0 || !std::isfinite(x)) ? f.min_exponent : std::max(std::ilogb(x), f.min_exponent);
  return std::ldexp(1.0, exponent - f.precision + 1);
}

::testing::AssertionResult tensors_match(const Tensor& got, const Tensor& want, const Tolerance& tol) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape()) {
    return ::testing::AssertionFailure() << "got " << dtype_name(got.dtype()) << shape_text(got.shape())
                                         << ", want " << dtype_name(want.dtype()) << shape_text(want.shape());
  }
  if (tol.bound && tol.bound->numel() != want.numel()) {
    return ::testing::AssertionFailure() << "the bound has " << tol.bound->numel() << " elements, want "
                                         << want.numel();
  }
  std::string mismatches;
  int count = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    bool ok;
    std::string got_text, want_text;
    if (is_float(want.dtype())) {
      ok = float_elements_match(got.get_f64(i), want.get_f64(i), tol, want.dtype(), i);
      got_text = fmt::format("{}", got.get_f64(i));
      want_text = fmt::format("{}", want.get_f64(i));
    } else {
      ok = got.get_i64(i) == want.get_i64(i);
      got_text = std::to_string(got.get_i64(i));
      want_text = std::to_string(want.get_i64(i));
    }
    if (ok) continue;
    if (++count <= 8) mismatches += fmt::format("\n  element {}: got {}, want {}", i, got_text, want_text);
  }
  if (count == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << count << " of " << want.numel() << " elements differ:" << mismatches;
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
  if (!is_float(want.dtype()) || (!transcendental && reduction_length == 0)) {
    return tensors_match(got, want, Tolerance::exact());
  }
  const double eps = want.dtype() == DType::f16    ? std::ldexp(1.0, -10)
                     : want.dtype() == DType::bf16 ? std::ldexp(1.0, -7)
                     : want.dtype() == DType::f64  ? std::ldexp(1.0, -52)
                                                   : std::ldexp(1.0, -23);
  const double scale = (transcendental ? 32.0 : 0.0) + 4.0 * static_cast<double>(reduction_length);
  Tensor bound(DType::f64, want.shape());
  for (int64_t i = 0; i < want.numel(); ++i) bound.set_f64(i, scale * eps * (1 + std::fabs(want.get_f64(i))));
  return tensors_match(got, want, Tolerance::per_element(bound));
}

}  // namespace stitch::testing
