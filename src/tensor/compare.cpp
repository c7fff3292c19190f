#include "tensor/compare.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>

namespace stitch {

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

std::string TensorComparison::describe() const {
  if (!type_mismatch.empty()) return type_mismatch;
  if (ok) return "";
  return fmt::format("{} of {} elements differ:{}", mismatches, elements, first_mismatches);
}

TensorComparison compare_tensors(const Tensor& got, const Tensor& want, const Tolerance& tol) {
  TensorComparison c;
  if (got.dtype() != want.dtype() || got.shape() != want.shape()) {
    c.ok = false;
    c.type_mismatch = fmt::format("got {}{}, want {}{}", dtype_name(got.dtype()), shape_text(got.shape()),
                                  dtype_name(want.dtype()), shape_text(want.shape()));
    return c;
  }
  if (tol.bound && tol.bound->numel() != want.numel()) {
    c.ok = false;
    c.type_mismatch = fmt::format("the bound has {} elements, want {}", tol.bound->numel(), want.numel());
    return c;
  }
  c.elements = want.numel();
  const bool floats = is_float(want.dtype());
  for (int64_t i = 0; i < want.numel(); ++i) {
    bool ok;
    std::string got_text, want_text;
    if (floats) {
      const double g = got.get_f64(i), w = want.get_f64(i);
      ok = float_elements_match(g, w, tol, want.dtype(), i);
      if (std::isfinite(g) && std::isfinite(w)) {
        const double abs_error = std::fabs(g - w);
        c.max_abs_error = std::max(c.max_abs_error, abs_error);
        c.max_rel_error = std::max(c.max_rel_error, w == 0 ? abs_error : abs_error / std::fabs(w));
      }
      if (ok) continue;
      got_text = fmt::format("{}", g);
      want_text = fmt::format("{}", w);
    } else {
      const int64_t g = got.get_i64(i), w = want.get_i64(i);
      ok = g == w;
      if (!ok) {
        // Integers compare exactly; the error columns still say how far off.
        const double abs_error = std::fabs(static_cast<double>(g) - static_cast<double>(w));
        c.max_abs_error = std::max(c.max_abs_error, abs_error);
        c.max_rel_error = std::max(c.max_rel_error, w == 0 ? abs_error : abs_error / std::fabs(double(w)));
      }
      if (ok) continue;
      got_text = std::to_string(g);
      want_text = std::to_string(w);
    }
    if (++c.mismatches <= 8) c.first_mismatches += fmt::format("\n  element {}: got {}, want {}", i, got_text, want_text);
  }
  c.ok = c.mismatches == 0;
  return c;
}

double machine_epsilon(DType dtype) { return std::ldexp(1.0, 1 - format_of(dtype).precision); }

double accumulation_factor(int64_t n) {
  const double terms = static_cast<double>(n);
  return std::min(4.0 * terms, 8.0 * std::sqrt(terms));
}

int64_t allowance_ulps(const ErrorAllowance& allowance) {
  return (allowance.transcendental ? static_cast<int64_t>(kTranscendentalUlps) : 0) + 4 * allowance.reduction_length;
}

namespace {

// The allowance's per-element bound, K * eps * (1 + |want|); null when exact.
std::optional<Tensor> allowance_bound(const Tensor& want, const ErrorAllowance& allowance) {
  if (!is_float(want.dtype()) || (!allowance.transcendental && allowance.reduction_length == 0)) return std::nullopt;
  const double eps = machine_epsilon(want.dtype());
  const double scale = static_cast<double>(allowance_ulps(allowance));
  Tensor bound(DType::f64, want.shape());
  for (int64_t i = 0; i < want.numel(); ++i) bound.set_f64(i, scale * eps * (1 + std::fabs(want.get_f64(i))));
  return bound;
}

}  // namespace

TensorComparison compare_with_interpreter(const Tensor& got, const Tensor& want, const ErrorAllowance& allowance) {
  std::optional<Tensor> bound = allowance_bound(want, allowance);
  if (!bound) return compare_tensors(got, want, Tolerance::exact());
  return compare_tensors(got, want, Tolerance::per_element(*bound));
}

TensorComparison compare_with_interpreter(const Tensor& got, const Tensor& want, const ErrorAllowance& allowance,
                                          const Tensor& propagated) {
  if (!is_float(want.dtype())) return compare_tensors(got, want, Tolerance::exact());
  if (propagated.numel() != want.numel()) {
    TensorComparison c;
    c.ok = false;
    c.type_mismatch = fmt::format("the propagated bound has {} elements, want {}", propagated.numel(), want.numel());
    return c;
  }
  std::optional<Tensor> bound = allowance_bound(want, allowance);
  bool exact = !bound;
  if (!bound) bound = Tensor(DType::f64, want.shape());
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double p = propagated.get_f64(i);
    if (p > 0) exact = false;
    if (p > bound->get_f64(i)) bound->set_f64(i, p);
  }
  if (exact) return compare_tensors(got, want, Tolerance::exact());
  return compare_tensors(got, want, Tolerance::per_element(*bound));
}

bool is_transcendental(OpKind op) {
  return op_info(op).category == OpCategory::HeavyElementwise && op != OpKind::Div && op != OpKind::Sqrt &&
         op != OpKind::Rem;
}

namespace {

// Sums, products and means round differently in another order; max, min,
// their arg forms and any/all give the same answer in every order.
bool is_accumulating(OpKind op) {
  return op == OpKind::ReduceSum || op == OpKind::ReduceProd || op == OpKind::ReduceMean;
}

int64_t numel_of(const Graph& g, ValueId v, const SymbolBindings& symbols) {
  int64_t n = 1;
  for (int64_t d : concrete_shape(g.type(v).shape, symbols)) n *= d;
  return n;
}

}  // namespace

namespace {

// Calls `visit` once for each node of `v`'s cone (its producer and theirs).
void for_each_node_in_cone(const Graph& g, ValueId v, const std::function<void(const Node&)>& visit) {
  std::set<int> seen;
  std::vector<int> work;
  if (g.value(v).producer >= 0) work.push_back(g.value(v).producer);
  while (!work.empty()) {
    const int n = work.back();
    work.pop_back();
    if (!seen.insert(n).second) continue;
    const Node& node = g.nodes()[n];
    visit(node);
    for (ValueId in : node.inputs) {
      if (g.value(in).producer >= 0) work.push_back(g.value(in).producer);
    }
  }
}

bool float_operands(const Graph& g, const Node& node) {
  return !node.inputs.empty() && is_float(g.type(node.inputs[0]).dtype);
}

}  // namespace

ErrorAllowance output_allowance(const Graph& g, ValueId output, const SymbolBindings& symbols) {
  ErrorAllowance a;
  for_each_node_in_cone(g, output, [&](const Node& node) {
    if (is_transcendental(node.op)) a.transcendental = true;
    if (!float_operands(g, node)) return;
    if (is_accumulating(node.op)) {
      int64_t out = numel_of(g, node.output, symbols);
      a.reduction_length += out > 0 ? numel_of(g, node.inputs[0], symbols) / out : 0;
    } else if (node.op == OpKind::Dot) {
      std::vector<int64_t> lhs = concrete_shape(g.type(node.inputs[0]).shape, symbols);
      a.reduction_length += lhs.empty() ? 1 : lhs.back();
    } else if (node.op == OpKind::Conv) {
      // C / groups * taps products, the bias and the side input.
      const std::vector<int64_t> w = concrete_shape(g.type(node.inputs[1]).shape, symbols);
      int64_t terms = static_cast<int64_t>(node.inputs.size()) - 2;
      int64_t taps = 1;
      for (size_t i = 1; i < w.size(); ++i) taps *= w[i];
      a.reduction_length += terms + taps;
    } else if (node.op == OpKind::Attention) {
      // Two products (over D, then over Tk), the softmax's sum over Tk and its exp.
      const std::vector<int64_t> k = concrete_shape(g.type(node.inputs[1]).shape, symbols);
      a.reduction_length += k[k.size() - 1] + 2 * k[k.size() - 2];
      a.transcendental = true;
    }
  });
  return a;
}

bool exact_in_every_back_end(const Graph& g, ValueId v) {
  bool exact = true;
  for_each_node_in_cone(g, v, [&](const Node& node) {
    if (is_transcendental(node.op) ||
        (float_operands(g, node) &&
         (is_accumulating(node.op) || op_info(node.op).category == OpCategory::Dot))) {
      exact = false;
    }
  });
  return exact;
}

}  // namespace stitch
