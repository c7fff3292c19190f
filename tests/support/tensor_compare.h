// Test helpers shared by the test modules: build small tensors and compare
// results under the tolerances docs/testing.md documents, or bit for bit.
// Tolerance and the comparisons themselves live in the library
// (src/tensor/compare.h), shared with `stitch check`; this header adapts them
// to GoogleTest assertions.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "stitch/tensor.h"
#include "tensor/compare.h"

namespace stitch::testing {

using stitch::Tolerance;
using stitch::ulp_of;

::testing::AssertionResult tensors_match(const Tensor& got, const Tensor& want, const Tolerance& tol);

// Same dtype, shape and bytes: NaN payloads and signs of zero included. For
// two runs that must agree exactly (a graph and its canonical form).
::testing::AssertionResult tensors_bitwise_equal(const Tensor& got, const Tensor& want);

// stitch::compare_with_interpreter as an assertion: exact, except floats of a
// graph with transcendental ops (32 eps) or reductions of length n (a further
// 4 n eps), both relative to 1 + |want|.
::testing::AssertionResult matches_interpreter(const Tensor& got, const Tensor& want, bool transcendental,
                                               int64_t reduction_length);

// matches_interpreter for every output of a run, in order; the first
// mismatch (or a different count) names its output.
::testing::AssertionResult outputs_match_interpreter(const std::vector<Tensor>& got, const std::vector<Tensor>& want,
                                                     bool transcendental, int64_t reduction_length);

// Small tensors from literal values (row-major); floats round to the dtype.
Tensor float_tensor(DType dtype, std::vector<int64_t> shape, const std::vector<double>& values);
Tensor int_tensor(DType dtype, std::vector<int64_t> shape, const std::vector<int64_t>& values);

}  // namespace stitch::testing
