#include "lower/value_range.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace stitch::lower {

namespace {

// Integers in [-2^53, 2^53] are exact doubles, so integer bounds past it are
// not tracked.
constexpr double kExactInteger = 9007199254740992.0;
constexpr int kMaxDepth = 200;

std::optional<Interval> unite(const std::optional<Interval>& a, const std::optional<Interval>& b) {
  if (!a || !b) return std::nullopt;
  return Interval{std::min(a->lo, b->lo), std::max(a->hi, b->hi)};
}

// The representable range of an integer dtype, in double.
Interval integer_range(DType t) {
  switch (t) {
    case DType::i8: return {-128.0, 127.0};
    case DType::i32: return {-2147483648.0, 2147483647.0};
    default: return {-kExactInteger, kExactInteger};
  }
}

template <class F>
Interval corners(const Interval& a, const Interval& b, F f) {
  const double v[4] = {f(a.lo, b.lo), f(a.lo, b.hi), f(a.hi, b.lo), f(a.hi, b.hi)};
  return {*std::min_element(v, v + 4), *std::max_element(v, v + 4)};
}

// The bounds of `r` as values of `t`: an integer interval must fit the dtype
// (else the op wrapped), and a float one other than f64 is widened by more
// than a rounding, since its ops round in their own precision where the
// bounds were found in double. f64 needs no widening: its ops round as the
// bounds' did, and every IEEE operation is monotone in each operand.
std::optional<Interval> as_dtype(const Interval& r, DType t) {
  if (!std::isfinite(r.lo) || !std::isfinite(r.hi) || r.lo > r.hi) return std::nullopt;
  if (t == DType::boolean) return Interval{0.0, 1.0};
  if (is_integer(t)) {
    const Interval limits = integer_range(t);
    if (r.lo < limits.lo || r.hi > limits.hi) return std::nullopt;
    return r;
  }
  if (t == DType::f64) return r;
  constexpr double relative = 1.0 / 128;   // bf16 keeps 8 significant bits
  constexpr double absolute = 1.0 / (1 << 24);  // f16's smallest subnormal
  return Interval{r.lo - std::abs(r.lo) * relative - absolute, r.hi + std::abs(r.hi) * relative + absolute};
}

}  // namespace

std::optional<Interval> ValueRanges::of(ValueId v) { return of(v, 0); }

std::optional<Interval> ValueRanges::of(ValueId v, int depth) {
  if (auto it = memo_.find(v.index); it != memo_.end()) return it->second;
  const int producer = g_.value(v).producer;
  std::optional<Interval> r;
  if (producer >= 0 && depth < kMaxDepth) {
    const Node& node = g_.nodes()[static_cast<size_t>(producer)];
    r = compute(node, depth + 1);
    if (r) r = as_dtype(*r, g_.type(v).dtype);
  }
  memo_[v.index] = r;
  return r;
}

std::optional<Interval> ValueRanges::compute(const Node& node, int depth) {
  const DType dtype = g_.type(node.output).dtype;
  if (dtype == DType::boolean) return Interval{0.0, 1.0};
  auto in = [&](size_t k) { return of(node.inputs[k], depth); };
  switch (node.op) {
    case OpKind::Iota: {
      const Shape& shape = g_.type(node.output).shape;
      const Dim& d = shape[static_cast<size_t>(node.attrs.get("axis").as_int())];
      if (!d.is_static() || d.extent() < 1) return std::nullopt;
      return Interval{0.0, static_cast<double>(d.extent() - 1)};
    }
    case OpKind::Constant: {
      const AttrValue& value = node.attrs.get("value");
      if (value.is_bool()) return Interval{0.0, 1.0};
      if (!value.is_number()) return std::nullopt;
      const double x = value.as_number();
      if (value.is_int() && std::abs(x) > kExactInteger) return std::nullopt;
      if (is_integer(dtype) && x != std::trunc(x)) return std::nullopt;
      // The constant as the dtype holds it: rounded like the kernel's literal.
      return Interval{x, x};
    }
    case OpKind::Broadcast:
    case OpKind::Reshape:
    case OpKind::Transpose:
    case OpKind::Slice:
    case OpKind::Gather: return in(0);  // some of the operand's elements
    case OpKind::Concat: {
      std::optional<Interval> r = in(0);
      for (size_t k = 1; k < node.inputs.size() && r; ++k) r = unite(r, in(k));
      return r;
    }
    case OpKind::Pad: {
      const double fill = node.attrs.has("value") ? node.attrs.get("value").as_number() : 0.0;
      return unite(in(0), Interval{fill, fill});
    }
    case OpKind::Select: return unite(in(1), in(2));
    default: break;
  }
  const std::optional<Interval> a = in(0);
  if (!a) {
    // clamp(x, lo, hi) of an integer x is in [min(lo, hi), hi] whatever x is.
    if (node.op != OpKind::Clamp || !is_integer(dtype)) return std::nullopt;
    const std::optional<Interval> lo = in(1), hi = in(2);
    if (!lo || !hi) return std::nullopt;
    return Interval{std::min(lo->lo, hi->lo), hi->hi};
  }
  switch (node.op) {
    case OpKind::Neg: return Interval{-a->hi, -a->lo};
    case OpKind::Abs:
      if (a->lo >= 0) return a;
      if (a->hi <= 0) return Interval{-a->hi, -a->lo};
      return Interval{0.0, std::max(-a->lo, a->hi)};
    case OpKind::Relu: return Interval{std::max(a->lo, 0.0), std::max(a->hi, 0.0)};
    case OpKind::Floor: return Interval{std::floor(a->lo), std::floor(a->hi)};
    case OpKind::Ceil: return Interval{std::ceil(a->lo), std::ceil(a->hi)};
    case OpKind::Round: return Interval{std::nearbyint(a->lo), std::nearbyint(a->hi)};
    case OpKind::Cast: {
      const DType from = g_.type(node.inputs[0]).dtype;
      if (is_float(from) && is_integer(dtype)) {
        const Interval limits = integer_range(dtype);
        if (a->lo < limits.lo || a->hi >= limits.hi + 1) return std::nullopt;  // saturates
        return Interval{std::trunc(a->lo), std::trunc(a->hi)};
      }
      return a;  // as_dtype drops integers that wrap and widens narrow floats
    }
    default: break;
  }
  if (node.inputs.size() < 2) return std::nullopt;
  const std::optional<Interval> b = in(1);
  if (!b) return std::nullopt;
  switch (node.op) {
    case OpKind::Add: return Interval{a->lo + b->lo, a->hi + b->hi};
    case OpKind::Sub: return Interval{a->lo - b->hi, a->hi - b->lo};
    case OpKind::Mul: return corners(*a, *b, [](double x, double y) { return x * y; });
    case OpKind::Div:
      // Floats only (integer division truncates), by a divisor that keeps its sign.
      if (!is_float(dtype) || (b->lo <= 0 && b->hi >= 0)) return std::nullopt;
      return corners(*a, *b, [](double x, double y) { return x / y; });
    case OpKind::Max: return Interval{std::max(a->lo, b->lo), std::max(a->hi, b->hi)};
    case OpKind::Min: return Interval{std::min(a->lo, b->lo), std::min(a->hi, b->hi)};
    case OpKind::Clamp: {
      const std::optional<Interval> c = in(2);
      if (!c) return std::nullopt;
      return Interval{std::min(std::max(a->lo, b->lo), c->lo), std::min(std::max(a->hi, b->hi), c->hi)};
    }
    default: return std::nullopt;
  }
}

bool ValueRanges::cast_never_saturates(ValueId v, DType to) {
  if (!is_float(g_.type(v).dtype) || !is_integer(to)) return false;
  const std::optional<Interval> r = of(v);
  const Interval limits = integer_range(to);
  // i64's limits are 2^63 in magnitude, beyond what integer_range tracks; any
  // value within +-2^53 fits.
  return r && r->lo >= limits.lo && r->hi < limits.hi + 1;
}

}  // namespace stitch::lower
