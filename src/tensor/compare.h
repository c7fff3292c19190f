// Numeric comparison of a back end's result with the reference interpreter's
// (docs/testing.md, "Tolerances"). One definition shared by `stitch check` and
// the tests, so the tolerance the CLI reports is the one the tests enforce.
// Written from the dtype definitions alone, sharing no code with the
// interpreter.
#pragma once

#include <cstdint>
#include <string>

#include "stitch/graph.h"
#include "stitch/tensor.h"

namespace stitch {

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

struct TensorComparison {
  bool ok = true;
  std::string type_mismatch;  // set when dtypes or shapes differ (then ok is false)
  int64_t elements = 0;
  int64_t mismatches = 0;
  // Over element pairs that are both finite; rel is |got - want| / |want|,
  // taken as |got - want| where want is 0.
  double max_abs_error = 0;
  double max_rel_error = 0;
  std::string first_mismatches;  // up to 8 lines "element i: got g, want w"

  // "" when ok; else what differs, as test failures print it.
  std::string describe() const;
};

TensorComparison compare_tensors(const Tensor& got, const Tensor& want, const Tolerance& tol);

// What decides the allowed error of a compiled result (docs/semantics.md,
// "What back ends may differ in").
struct ErrorAllowance {
  bool transcendental = false;     // a transcendental op feeds the value
  int64_t reduction_length = 0;    // summed length of the float reductions feeding it
};

// The documented tolerance of a compiled back end against the interpreter
// (docs/testing.md): exact, except floats fed by transcendental ops (32 eps)
// or reductions of total length n (a further 4 n eps, for accumulating in f32
// in another order), both relative to 1 + |want|; eps is the dtype's machine
// epsilon.
TensorComparison compare_with_interpreter(const Tensor& got, const Tensor& want, const ErrorAllowance& allowance);

// The allowance of graph output `output`, from the ops in its cone: any
// transcendental op (div, sqrt and rem are correctly rounded and do not count),
// and the lengths of the float sums, products, means and dots feeding it,
// added up along the cone (a variance after its mean inherits the mean's
// rounding). Symbols take `symbols`' extents.
ErrorAllowance output_allowance(const Graph& g, ValueId output, const SymbolBindings& symbols);

// True when every back end must compute `v` exactly under the allowance above:
// no transcendental op and no float sum, product, mean or dot in its cone.
bool exact_in_every_back_end(const Graph& g, ValueId v);

}  // namespace stitch
