// Test helpers shared by the test modules: build small tensors and compare
// results under the tolerances docs/semantics.md documents, or bit for bit.
// Deliberately written from the dtype definitions alone, sharing no code with
// the interpreter.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "stitch/tensor.h"

namespace stitch::testing {

struct Tolerance {
  enum class Kind {
    Exact,        // equal values; NaN matches NaN; -0 matches +0
    SignedExact,  // Exact, and zeros must carry the same sign
    Ulps,         // within `ulps` units in the last place of the dtype, at the expected value
    Bound,        // |got - want| <= bound[i], a per-element absolute bound
  };
  Kind kind = Kind::Exact;
  int ulps = 0;
  const Tensor* bound = nullptr;

  static Tolerance exact() { return {}; }
  static Tolerance signed_exact() { return {Kind::SignedExact, 0, nullptr}; }
  static Tolerance within_ulps(int n) { return {Kind::Ulps, n, nullptr}; }
  static Tolerance per_element(const Tensor& bound) { return {Kind::Bound, 0, &bound}; }
};

// The spacing of the float dtype's values at |x| (its smallest subnormal at 0).
double ulp_of(DType dtype, double x);

::testing::AssertionResult tensors_match(const Tensor& got, const Tensor& want, const Tolerance& tol);

// Same dtype, shape and bytes: NaN payloads and signs of zero included. For
// two runs that must agree exactly (a graph and its canonical form).
::testing::AssertionResult tensors_bitwise_equal(const Tensor& got, const Tensor& want);

// The documented tolerance of a compiled back end against the interpreter
// (docs/lowering.md): exact, except floats of a graph with transcendental ops
// (32 eps) or reductions of length n (a further 4 n eps, for accumulating in
// f32 in another order), both relative to 1 + |want|.
::testing::AssertionResult matches_interpreter(const Tensor& got, const Tensor& want, bool transcendental,
                                               int64_t reduction_length);

// Small tensors from literal values (row-major); floats round to the dtype.
Tensor float_tensor(DType dtype, std::vector<int64_t> shape, const std::vector<double>& values);
Tensor int_tensor(DType dtype, std::vector<int64_t> shape, const std::vector<int64_t>& values);

}  // namespace stitch::testing
