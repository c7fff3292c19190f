// Per-element bounds on how far a compiled back end may be from the reference
// interpreter, computed beside it (docs/semantics.md, "The propagated bound").
//
// Each float value v gets B(v), a bound on |compiled(v) - reference(v)|, from
// its operands' bounds and values:
//   - where it comes from: a transcendental op's own error (32 ulps of
//     1 + |f|), and a float sum, mean, product or dot's order of accumulation
//     (accumulation_factor(n) * eps * the sum of the terms' magnitudes);
//   - how it travels: interval arithmetic where that is exact (add, mul, div,
//     the sums, monotone functions evaluated at x - B and x + B), first order
//     plus the curvature term elsewhere (sin, cos, atan2), and one more ulp of
//     the result for re-rounding a perturbed value.
// Values no error reaches carry no buffer: they are exact in every back end.
// Discrete decisions (comparisons, select's condition, floor, argmax, casts
// to integers) are assumed to come out as in the reference, so a value they
// produce is exact. A bound that is NaN where the reference is finite becomes
// +inf (unknown); at a non-finite reference element it is 0, since the
// comparison checks those elements exactly.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <numbers>
#include <optional>

#include "interp/op_evaluators.h"
#include "interp/strided_loop.h"
#include "stitch/interpreter.h"
#include "stitch/ops.h"
#include "tensor/compare.h"

namespace stitch {

namespace {

using interp::Offsets;
using interp::OpCall;
using interp::WideBuffer;

constexpr double kInf = std::numeric_limits<double>::infinity();

// The larger distance from F(x) to F(x - b) and F(x + b): exact for a
// function monotone on [x - b, x + b]; a NaN (the interval leaves F's domain)
// is +inf.
template <class F>
double monotone_spread(F f, double x, double b) {
  const double at = f(x);
  const double spread = std::max(std::fabs(f(x - b) - at), std::fabs(f(x + b) - at));
  return std::isnan(spread) ? kInf : spread;
}

bool crosses_zero(double x, double b) { return std::fabs(x) <= b; }

// How far a unary op's exact result may move when its operand x moves by up to b.
double unary_spread(OpKind op, double x, double b) {
  if (b == 0) return 0;
  switch (op) {
    case OpKind::Neg:
    case OpKind::Abs:
    case OpKind::Relu: return b;
    case OpKind::Floor:
    case OpKind::Ceil:
    case OpKind::Round:
    case OpKind::Sign: return 0;  // a decision: assumed as in the reference
    case OpKind::Sin: return std::fabs(std::cos(x)) * b + b * b / 2;
    case OpKind::Cos: return std::fabs(std::sin(x)) * b + b * b / 2;
    case OpKind::Exp: return monotone_spread([](double t) { return std::exp(t); }, x, b);
    case OpKind::Exp2: return monotone_spread([](double t) { return std::exp2(t); }, x, b);
    case OpKind::Expm1: return monotone_spread([](double t) { return std::expm1(t); }, x, b);
    case OpKind::Tanh: return monotone_spread([](double t) { return std::tanh(t); }, x, b);
    case OpKind::Erf: return monotone_spread([](double t) { return std::erf(t); }, x, b);
    case OpKind::Sigmoid: return monotone_spread([](double t) { return 1 / (1 + std::exp(-t)); }, x, b);
    case OpKind::Log: return crosses_zero(x, b) ? kInf : monotone_spread([](double t) { return std::log(t); }, x, b);
    case OpKind::Log2: return crosses_zero(x, b) ? kInf : monotone_spread([](double t) { return std::log2(t); }, x, b);
    case OpKind::Log1p:
      return crosses_zero(x + 1, b) ? kInf : monotone_spread([](double t) { return std::log1p(t); }, x, b);
    case OpKind::Sqrt: return monotone_spread([](double t) { return std::sqrt(std::max(t, 0.0)); }, x, b);
    case OpKind::Rsqrt:
      return crosses_zero(x, b) ? kInf : monotone_spread([](double t) { return 1 / std::sqrt(t); }, x, b);
    case OpKind::Reciprocal:
      return crosses_zero(x, b) ? kInf : monotone_spread([](double t) { return 1 / t; }, x, b);
    case OpKind::Tan: {
      // Poles at (k + 1/2) pi: the interval must not hold one.
      const double lo = std::floor((x - b) / std::numbers::pi - 0.5), hi = std::floor((x + b) / std::numbers::pi - 0.5);
      return lo != hi ? kInf : monotone_spread([](double t) { return std::tan(t); }, x, b);
    }
    default: STITCH_ASSERT(false, fmt::format("error bound: unary {} on floats is not handled", op_name(op)));
  }
}

// The same for a binary op whose operands move by up to ba and bb.
double binary_spread(OpKind op, double a, double b, double ba, double bb) {
  if (ba == 0 && bb == 0) return 0;
  switch (op) {
    case OpKind::Add:
    case OpKind::Sub: return ba + bb;
    case OpKind::Mul: return std::fabs(b) * ba + std::fabs(a) * bb + ba * bb;
    case OpKind::Max:
    case OpKind::Min: return std::max(ba, bb);
    case OpKind::Rem: return ba + std::fabs(std::trunc(a / b)) * bb;  // the quotient's decision assumed
    case OpKind::Atan2: {
      if (!std::isfinite(a) || !std::isfinite(b)) return 0;  // a constant, or the sign's decision
      const double r2 = a * a + b * b, reach = ba + bb;
      if (r2 <= reach * reach) return kInf;
      return (std::fabs(b) * ba + std::fabs(a) * bb) / r2 + reach * reach / r2;
    }
    case OpKind::Div:
    case OpKind::Pow: {
      // Monotone in each operand on a box that holds no pole (div: b = 0;
      // pow: a = 0), so the corners bound it; pow also tries a = 0 when the
      // box reaches it.
      if (op == OpKind::Div && crosses_zero(b, bb)) return kInf;
      auto f = [op](double x, double y) { return op == OpKind::Div ? x / y : std::pow(x, y); };
      const double at = f(a, b);
      double spread = 0;
      for (double x : {a - ba, a + ba}) {
        for (double y : {b - bb, b + bb}) spread = std::max(spread, std::fabs(f(x, y) - at));
      }
      if (op == OpKind::Pow && crosses_zero(a, ba)) {
        for (double y : {b - bb, b + bb}) spread = std::max(spread, std::fabs(f(0.0, y) - at));
      }
      return std::isnan(spread) ? kInf : spread;
    }
    default: STITCH_ASSERT(false, fmt::format("error bound: binary {} on floats is not handled", op_name(op)));
  }
}

// The precision a back end computes a dtype's transcendental ops and sums in:
// f32 for f16 and bf16 (DESIGN.md), the dtype's own otherwise.
double compute_epsilon(DType dtype) { return std::min(machine_epsilon(dtype), machine_epsilon(DType::f32)); }

// Rounding a result computed in f32 to f16 or bf16 can land one ulp from the
// reference's rounding.
double narrowing_error(DType dtype, double f) {
  return compute_epsilon(dtype) < machine_epsilon(dtype) ? machine_epsilon(dtype) * std::fabs(f) : 0.0;
}

// Error that enters at `op` itself, at result f of `dtype`, beyond its
// operands' spread: a transcendental op's own ulps (of the precision it is
// computed in); one ulp for re-rounding a result the operands moved (not for
// ops that pass an operand's value through).
double own_error(OpKind op, double f, DType dtype, double spread) {
  const bool passes_through = op == OpKind::Select || op == OpKind::Clamp || op == OpKind::Max ||
                              op == OpKind::Min || op == OpKind::Neg || op == OpKind::Abs || op == OpKind::Relu;
  double e = spread > 0 && !passes_through ? machine_epsilon(dtype) * std::fabs(f) : 0;
  if (is_transcendental(op)) {
    e += kTranscendentalUlps * compute_epsilon(dtype) * (1 + std::fabs(f)) + narrowing_error(dtype, f);
  }
  return e;
}

WideBuffer f64_buffer(const std::vector<int64_t>& shape) { return WideBuffer(DType::f64, shape, "error bound"); }

// |x| as an f64 buffer.
WideBuffer magnitude(const WideBuffer& x) {
  WideBuffer m = f64_buffer(x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) m.floats()[i] = std::fabs(x.floats()[i]);
  return m;
}

class BoundPropagator {
 public:
  explicit BoundPropagator(const Graph& g) : g_(g), bound_(g.num_values()), last_use_(g.num_values(), -1) {
    for (size_t i = 0; i < g.nodes().size(); ++i) {
      for (ValueId in : g.nodes()[i].inputs) last_use_[in.index] = static_cast<int>(i);
    }
    for (const GraphOutput& o : g.outputs()) last_use_[o.value.index] = std::numeric_limits<int>::max();
  }

  void observe(const OpCall& call, const WideBuffer& result) {
    std::optional<WideBuffer> b;
    if (result.holds_floats()) b = propagate(call, result);
    if (b) {
      settle(*b, result);
      bound_[call.node.output.index] = std::move(b);
    }
    const int index = static_cast<int>(&call.node - g_.nodes().data());
    for (ValueId in : call.node.inputs) {
      if (last_use_[in.index] == index) bound_[in.index].reset();
    }
  }

  // The output's bound as an f64 tensor (zeros where no error reaches it).
  Tensor output_bound(ValueId v, const std::vector<int64_t>& shape) const {
    if (!bound_[v.index]) return Tensor(DType::f64, shape);
    return interp::narrow(*bound_[v.index]);
  }

 private:
  const WideBuffer* bound_of(ValueId v) const { return bound_[v.index] ? &*bound_[v.index] : nullptr; }

  // The operand's bound, or a zero buffer of the operand's shape.
  const WideBuffer& bound_or_zero(const OpCall& call, size_t i) {
    if (const WideBuffer* b = bound_of(call.node.inputs[i])) return *b;
    zeros_.push_back(f64_buffer(call.in(i).shape()));
    std::fill_n(zeros_.back().floats(), zeros_.back().numel(), 0.0);
    return zeros_.back();
  }

  bool any_operand_off(const OpCall& call) const {
    return std::any_of(call.node.inputs.begin(), call.node.inputs.end(),
                       [&](ValueId v) { return bound_of(v) != nullptr; });
  }

  // The same op evaluated on f64 stand-ins for its operands (`node` may be a
  // copy with changed attributes).
  WideBuffer evaluate_on(const OpCall& call, const Node& node, std::vector<const WideBuffer*> operands,
                         WideBuffer (*evaluator)(const OpCall&)) const {
    const OpCall on{node, std::move(operands), DType::f64, call.out_shape, call.out_name, nullptr};
    return evaluator(on);
  }

  std::optional<WideBuffer> propagate(const OpCall& call, const WideBuffer& result) {
    zeros_.clear();
    const OpKind op = call.op();
    const bool off = any_operand_off(call);
    if (is_elementwise(op)) {
      if (!off && !is_transcendental(op)) return std::nullopt;
      return elementwise_bound(call, result);
    }
    const OpCategory category = op_info(op).category;
    if (category == OpCategory::Layout || category == OpCategory::Broadcast) {
      if (!off) return std::nullopt;
      std::vector<const WideBuffer*> operands;
      for (size_t i = 0; i < call.inputs.size(); ++i) operands.push_back(&bound_or_zero(call, i));
      Node exact_fill = call.node;  // pad's fill value is exact
      if (op == OpKind::Pad) exact_fill.attrs.set("value", AttrValue(0.0));
      return evaluate_on(call, exact_fill, operands, interp::evaluate_layout);
    }
    switch (op) {
      case OpKind::Gather:
        if (!bound_of(call.node.inputs[0])) return std::nullopt;
        return evaluate_on(call, call.node, {bound_of(call.node.inputs[0]), &call.in(1)}, interp::evaluate_gather);
      case OpKind::Iota:
      case OpKind::Constant: return std::nullopt;
      case OpKind::ReduceSum:
      case OpKind::ReduceMean:
      case OpKind::ReduceProd:
      case OpKind::ReduceMax:
      case OpKind::ReduceMin: return reduction_bound(call, result);
      case OpKind::Dot: return dot_bound(call, result);
      case OpKind::Attention: return attention_bound(call, result);
      case OpKind::Conv: return conv_bound(call, result);
      default: return std::nullopt;  // integer or bool results
    }
  }

  WideBuffer elementwise_bound(const OpCall& call, const WideBuffer& result) {
    const OpKind op = call.op();
    const DType dtype = result.dtype();
    const std::vector<int64_t>& shape = result.shape();
    WideBuffer out = f64_buffer(shape);
    double* y = out.floats();
    const double* f = result.floats();
    const size_t arity = call.inputs.size();
    std::vector<const WideBuffer*> b(arity);
    for (size_t i = 0; i < arity; ++i) b[i] = &bound_or_zero(call, i);
    auto strides = [&](size_t i) { return interp::broadcast_strides(call.in(i).shape(), shape); };
    auto value = [&](size_t i, int64_t at) {
      return call.in(i).holds_floats() ? call.in(i).floats()[at] : static_cast<double>(call.in(i).ints()[at]);
    };
    auto err = [&](size_t i, int64_t at) { return b[i]->floats()[at]; };
    if (arity == 1) {
      interp::for_each_strided<2>(shape, {interp::contiguous_strides(shape), strides(0)}, {0, 0},
                                  [&](const Offsets<2>& o) {
                                    const double spread = op == OpKind::Cast
                                                              ? err(0, o[1])
                                                              : unary_spread(op, value(0, o[1]), err(0, o[1]));
                                    y[o[0]] = spread + own_error(op, f[o[0]], dtype, spread);
                                  });
    } else if (arity == 2) {
      interp::for_each_strided<3>(
          shape, {interp::contiguous_strides(shape), strides(0), strides(1)}, {0, 0, 0}, [&](const Offsets<3>& o) {
            const double spread = binary_spread(op, value(0, o[1]), value(1, o[2]), err(0, o[1]), err(1, o[2]));
            y[o[0]] = spread + own_error(op, f[o[0]], dtype, spread);
          });
    } else {
      // select(c, a, b): the chosen branch's bound (c assumed as in the
      // reference); clamp(x, lo, hi) moves by at most its operands' largest.
      interp::for_each_strided<4>(
          shape, {interp::contiguous_strides(shape), strides(0), strides(1), strides(2)}, {0, 0, 0, 0},
          [&](const Offsets<4>& o) {
            const double spread = op == OpKind::Select
                                      ? (value(0, o[1]) != 0 ? err(1, o[2]) : err(2, o[3]))
                                      : std::max({err(0, o[1]), err(1, o[2]), err(2, o[3])});
            y[o[0]] = spread + own_error(op, f[o[0]], dtype, spread);
          });
    }
    return out;
  }

  std::optional<WideBuffer> reduction_bound(const OpCall& call, const WideBuffer& result) {
    const OpKind op = call.op();
    const WideBuffer* in_bound = bound_of(call.node.inputs[0]);
    if (op == OpKind::ReduceMax || op == OpKind::ReduceMin) {
      // Moves by at most the largest bound among the terms.
      if (!in_bound) return std::nullopt;
      Node max_node = call.node;
      max_node.op = OpKind::ReduceMax;
      return evaluate_on(call, max_node, {in_bound}, interp::evaluate_reduction);
    }
    const int64_t n = result.numel() > 0 ? call.in(0).numel() / result.numel() : 0;
    const double accumulation = accumulation_factor(n) * compute_epsilon(result.dtype());
    WideBuffer m = magnitude(call.in(0));
    if (op == OpKind::ReduceProd) {
      // |prod(x + d) - prod(x)| <= prod(|x| + b) - prod(|x|), exactly.
      WideBuffer widened = f64_buffer(m.shape());
      for (int64_t i = 0; i < m.numel(); ++i) widened.floats()[i] = m.floats()[i] + (in_bound ? in_bound->floats()[i] : 0);
      WideBuffer outer = evaluate_on(call, call.node, {&widened}, interp::evaluate_reduction);
      WideBuffer inner = evaluate_on(call, call.node, {&m}, interp::evaluate_reduction);
      for (int64_t i = 0; i < outer.numel(); ++i) {
        outer.floats()[i] = outer.floats()[i] - inner.floats()[i] + accumulation * outer.floats()[i] +
                            narrowing_error(result.dtype(), result.floats()[i]);
      }
      return outer;
    }
    // A sum or mean: the terms' bounds add up, and the order of accumulation
    // costs a multiple of the terms' magnitudes.
    WideBuffer out = evaluate_on(call, call.node, {&m}, interp::evaluate_reduction);
    for (int64_t i = 0; i < out.numel(); ++i) {
      out.floats()[i] = accumulation * out.floats()[i] + narrowing_error(result.dtype(), result.floats()[i]);
    }
    if (in_bound) {
      WideBuffer carried = evaluate_on(call, call.node, {in_bound}, interp::evaluate_reduction);
      for (int64_t i = 0; i < out.numel(); ++i) out.floats()[i] += carried.floats()[i];
    }
    return out;
  }

  // Each output row is a convex combination of v's rows, whatever the
  // probabilities came out as: a back end is within the spread of v's column
  // (plus v's own bound). Loose, but it needs no bound through the softmax.
  std::optional<WideBuffer> attention_bound(const OpCall& call, const WideBuffer& result) {
    const std::vector<int64_t>& vs = call.in(2).shape();
    const size_t r = vs.size();
    const int64_t tk = vs[r - 2], dv = vs[r - 1];
    const int64_t tq = result.shape()[r - 2];
    const int64_t batches = tk > 0 && dv > 0 ? call.in(2).numel() / (tk * dv) : 0;
    const WideBuffer* vb = bound_of(call.node.inputs[2]);
    WideBuffer out = f64_buffer(result.shape());
    const double* v = call.in(2).floats();
    for (int64_t b = 0; b < batches; ++b) {
      for (int64_t c = 0; c < dv; ++c) {
        double lo = kInf, hi = -kInf, carried = 0;
        for (int64_t j = 0; j < tk; ++j) {
          const int64_t at = (b * tk + j) * dv + c;
          lo = std::min(lo, v[at]);
          hi = std::max(hi, v[at]);
          if (vb) carried = std::max(carried, vb->floats()[at]);
        }
        const double spread = std::isnan(hi - lo) ? kInf : hi - lo;
        for (int64_t i = 0; i < tq; ++i) {
          const int64_t at = (b * tq + i) * dv + c;
          out.floats()[at] = spread + carried + narrowing_error(result.dtype(), result.floats()[at]);
        }
      }
    }
    return out;
  }

  std::optional<WideBuffer> dot_bound(const OpCall& call, const WideBuffer& result) {
    const std::vector<int64_t>& lhs = call.in(0).shape();
    return product_bound(call, call.node, result, lhs.empty() ? 1 : lhs.back(), interp::evaluate_dot);
  }

  // conv: each result sums C / groups * taps products, then the bias and the
  // side input; the clamp after them moves no value further from another
  // (the bound is the linear part's, evaluated with the clamp off).
  std::optional<WideBuffer> conv_bound(const OpCall& call, const WideBuffer& result) {
    const std::vector<int64_t>& w = call.in(1).shape();
    int64_t products = 1;
    for (size_t i = 1; i < w.size(); ++i) products *= w[i];
    Node linear = call.node;
    linear.attrs.set("activation_min", AttrValue(-kInf));
    linear.attrs.set("activation_max", AttrValue(kInf));
    return product_bound(call, linear, result, products + static_cast<int64_t>(call.inputs.size()) - 2,
                         interp::evaluate_conv);
  }

  // A sum of n products of operands 0 and 1 (plus operands 2 and 3, the
  // conv's bias and side input, added once each): the accumulation's rounding
  // over the magnitudes, then what the operands' own bounds carry. `node` is
  // the call's node or a copy with changed attributes.
  std::optional<WideBuffer> product_bound(const OpCall& call, const Node& node, const WideBuffer& result, int64_t n,
                                          WideBuffer (*evaluator)(const OpCall&)) {
    const double accumulation = accumulation_factor(n) * compute_epsilon(result.dtype());
    std::vector<WideBuffer> m;
    for (size_t i = 0; i < call.inputs.size(); ++i) m.push_back(magnitude(call.in(i)));
    std::vector<const WideBuffer*> magnitudes;
    for (const WideBuffer& x : m) magnitudes.push_back(&x);
    WideBuffer out = evaluate_on(call, node, magnitudes, evaluator);
    for (int64_t i = 0; i < out.numel(); ++i) {
      out.floats()[i] = accumulation * out.floats()[i] + narrowing_error(result.dtype(), result.floats()[i]);
    }
    const WideBuffer* ba = bound_of(call.node.inputs[0]);
    const WideBuffer* bb = bound_of(call.node.inputs[1]);
    auto add = [&](std::vector<const WideBuffer*> operands) {
      WideBuffer term = evaluate_on(call, node, std::move(operands), evaluator);
      for (int64_t i = 0; i < out.numel(); ++i) out.floats()[i] += term.floats()[i];
    };
    // |(a + da)(b + db) - ab| <= |a| |db| + |da| |b| + |da| |db|, per term.
    if (bb) add({&m[0], bb});
    if (ba) add({ba, &m[1]});
    if (ba && bb) add({ba, bb});
    // The bias's and the side input's own bounds, added as they are: the same
    // op on zero x and w and the one operand (the other passed as absent).
    for (size_t i = 2; i < call.inputs.size(); ++i) {
      const WideBuffer* own = bound_of(call.node.inputs[i]);
      if (!own) continue;
      WideBuffer zx = f64_buffer(call.in(0).shape()), zw = f64_buffer(call.in(1).shape());
      std::fill_n(zx.floats(), zx.numel(), 0.0);
      std::fill_n(zw.floats(), zw.numel(), 0.0);
      std::vector<const WideBuffer*> operands{&zx, &zw, nullptr, nullptr};
      operands.resize(call.inputs.size());
      operands[i] = own;
      add(operands);
    }
    return out;
  }

  // NaN (unknown) becomes +inf; non-finite reference elements are compared
  // exactly, so their bound is 0 and carries no inf or NaN downstream.
  static void settle(WideBuffer& b, const WideBuffer& result) {
    for (int64_t i = 0; i < b.numel(); ++i) {
      double& e = b.floats()[i];
      if (!std::isfinite(result.floats()[i])) {
        e = 0;
      } else if (std::isnan(e)) {
        e = kInf;
      }
    }
  }

  const Graph& g_;
  std::vector<std::optional<WideBuffer>> bound_;
  std::vector<int> last_use_;
  std::deque<WideBuffer> zeros_;  // zero stand-ins for exact operands, per node (stable addresses)
};

}  // namespace

BoundedReference interpret_with_error_bounds(const Graph& g, const std::vector<Tensor>& inputs) {
  BoundPropagator propagator(g);
  BoundedReference r;
  r.outputs = interp::interpret_observed(
      g, inputs, [&](const OpCall& call, const WideBuffer& result) { propagator.observe(call, result); });
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    r.bounds.push_back(propagator.output_bound(g.outputs()[i].value, r.outputs[i].shape()));
  }
  return r;
}

}  // namespace stitch
