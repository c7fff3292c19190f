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

// The float dtype's machine epsilon (2^-23 for f32).
double machine_epsilon(DType dtype);

// Ops whose result may be a few ulps off the correctly rounded one in a
// compiled back end: every heavy elementwise op but div, sqrt and rem, which
// are correctly rounded (docs/semantics.md, "What back ends may differ in").
bool is_transcendental(OpKind op);

// The ulps a transcendental op may be off (the allowance's K, below).
inline constexpr double kTranscendentalUlps = 32;

// A float sum of n terms in another order differs by at most
// accumulation_factor(n) * eps * sum |x_i|: 4 n (twice the classic gamma_n
// bound, rounded up), capped at 8 sqrt(n) (Higham and Mary's probabilistic
// bound with lambda = 8, for two independent orders).
double accumulation_factor(int64_t n);

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
// The allowance's K (below): 32 if a transcendental op feeds the value, plus
// 4 per term of the float reductions feeding it; 0 when it must be exact.
int64_t allowance_ulps(const ErrorAllowance& allowance);

TensorComparison compare_with_interpreter(const Tensor& got, const Tensor& want, const ErrorAllowance& allowance);

// The same, with each element allowed the larger of that allowance and
// `propagated`'s element (an f64 tensor of want's shape, from
// stitch::interpret_with_error_bounds): the bound that follows cancellation
// and conditioning through the output's cone.
TensorComparison compare_with_interpreter(const Tensor& got, const Tensor& want, const ErrorAllowance& allowance,
                                          const Tensor& propagated);

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
