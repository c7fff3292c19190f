// The generator's steps, one op family each: operands and attributes chosen
// so that every op is valid by construction (random_graph.h).
#include <fmt/format.h>

#include <cstdint>
#include <limits>

#include "random_graph_generator.h"
#include "tensor/compare.h"

namespace stitch::testing::random_graph_detail {

namespace {

DTypeClass operand_class(OpKind k) {
  switch (k) {
    case OpKind::Neg: case OpKind::Abs: case OpKind::Relu: case OpKind::Sign: case OpKind::IsNan:
    case OpKind::IsInf: case OpKind::Add: case OpKind::Sub: case OpKind::Mul: case OpKind::Div:
    case OpKind::Rem: case OpKind::Pow: case OpKind::Max: case OpKind::Min: case OpKind::Clamp:
    case OpKind::ReduceSum: case OpKind::ReduceProd: case OpKind::ReduceMax: case OpKind::ReduceMin:
    case OpKind::ArgMax: case OpKind::ArgMin: case OpKind::Dot:
      return DTypeClass::Numeric;
    case OpKind::Not: case OpKind::And: case OpKind::Or: case OpKind::Xor: return DTypeClass::IntOrBool;
    case OpKind::ReduceAny: case OpKind::ReduceAll: return DTypeClass::Bool;
    case OpKind::Eq: case OpKind::Ne: case OpKind::Lt: case OpKind::Le: case OpKind::Gt: case OpKind::Ge:
    case OpKind::Select: case OpKind::Cast:
      return DTypeClass::Any;
    default: return DTypeClass::Float;  // transcendental unary ops, floor/ceil/round, atan2, reduce_mean
  }
}

// Each composite, the primitives its expansion may add (src/ir/composites.cpp)
// and how many nodes at most, so excluded ops and the node budget hold for it too.
struct CompositeSpec {
  const char* name;
  int max_nodes;
  bool needs_bool;
  std::vector<OpKind> primitives;
};

const std::vector<CompositeSpec>& composite_specs() {
  using K = OpKind;
  static const std::vector<CompositeSpec> kSpecs = {
      {"softmax", 5, false, {K::ReduceMax, K::Sub, K::Exp, K::ReduceSum, K::Div}},
      {"log_softmax", 6, false, {K::ReduceMax, K::Sub, K::Exp, K::ReduceSum, K::Log}},
      {"logsumexp", 13, true,
       {K::ReduceMax, K::IsInf, K::IsNan, K::Or, K::Not, K::Constant, K::Select, K::Sub, K::Exp, K::ReduceSum,
        K::Reshape, K::Log, K::Add}},
      {"layer_norm", 10, false, {K::ReduceMean, K::Sub, K::Mul, K::Constant, K::Add, K::Rsqrt}},
      {"rms_norm", 7, false, {K::Mul, K::ReduceMean, K::Constant, K::Add, K::Rsqrt}},
      {"gelu", 13, false, {K::Mul, K::Constant, K::Erf, K::Sigmoid, K::Add}},
      {"silu", 2, false, {K::Sigmoid, K::Mul}},
  };
  return kSpecs;
}

// numpy matmul's result shape (1-D operands promoted, batch dims broadcast).
std::optional<Shape> dot_result(const Shape& a, const Shape& b) {
  if (a.empty() || b.empty()) return std::nullopt;
  Shape sa = a, sb = b;
  if (a.size() == 1) sa.insert(sa.begin(), Dim(1));
  if (b.size() == 1) sb.push_back(Dim(1));
  if (sa.back() != sb[sb.size() - 2]) return std::nullopt;
  auto batch = broadcast_result(Shape(sa.begin(), sa.end() - 2), Shape(sb.begin(), sb.end() - 2));
  if (!batch) return std::nullopt;
  if (a.size() > 1) batch->push_back(sa[sa.size() - 2]);
  if (b.size() > 1) batch->push_back(sb.back());
  return batch;
}

bool has_symbol(const Shape& s) {
  return std::any_of(s.begin(), s.end(), [](const Dim& d) { return d.is_symbolic(); });
}

AttrValue shape_attr(Rng& rng, const Shape& s) {
  // A static shape may be spelled as a list of integers; the builder converts it.
  if (!has_symbol(s) && rng.chance(0.5)) {
    AttrValue::Ints ints;
    for (const Dim& d : s) ints.push_back(d.extent());
    return AttrValue(ints);
  }
  return AttrValue(s);
}

int64_t spell_axis(Rng& rng, int64_t axis, int rank) { return rng.chance(0.3) ? axis - rank : axis; }

}  // namespace

bool Generator::add_op(OpKind k) {
  if (is_unary_elementwise(k)) return add_unary(k);
  if (is_binary_elementwise(k)) return add_binary(k);
  if (is_reduction(k)) return add_reduction(k);
  switch (k) {
    case OpKind::Select: return add_select();
    case OpKind::Clamp: return add_clamp();
    case OpKind::Cast: return add_cast();
    case OpKind::Broadcast: return add_broadcast();
    case OpKind::Reshape: return add_reshape();
    case OpKind::Transpose: return add_transpose();
    case OpKind::Slice: return add_slice();
    case OpKind::Concat: return add_concat();
    case OpKind::Pad: return add_pad();
    case OpKind::Gather: return add_gather();
    case OpKind::Iota: return add_iota();
    case OpKind::Constant: return add_constant();
    case OpKind::Dot: return add_dot();
    case OpKind::Attention: return add_attention();
    default: break;
  }
  STITCH_ASSERT(false, fmt::format("the random graph generator does not handle {}", op_name(k)));
}

bool Generator::add_unary(OpKind k) {
  bool gives_bool = k == OpKind::IsNan || k == OpKind::IsInf;
  if (gives_bool && !dtype_allowed(DType::boolean)) return false;
  auto x = value_of_class(operand_class(k));
  if (!x) return false;
  // tan is ill-conditioned near its poles (tan' = 5,580 at 1.557), so an
  // operand's rounding that every back end is allowed (one ulp of a
  // transcendental or a sum) would come out of tan far past its allowance (soak
  // seed 103106: tan(tan(1)) on cuda-sim, 74 ulps). So tan takes only values
  // every back end computes exactly; on any other it becomes sin (|sin'| <= 1),
  // with no further random draws, so no other graph changes.
  if (k == OpKind::Tan && !exact_in_every_back_end(g(), *x)) k = OpKind::Sin;
  emit(k, {*x});
  return true;
}

bool Generator::add_binary(OpKind k) {
  if (is_comparison(k) && !dtype_allowed(DType::boolean)) return false;
  auto a = value_of_class(operand_class(k));
  if (!a) return false;
  auto b = partner(*a, true);
  if (!b) return false;
  std::vector<Operand> args{*a, *b};
  if (rng_.chance(0.3)) std::swap(args[0], args[1]);
  emit(k, args);
  return true;
}

bool Generator::add_select() {
  if (!dtype_allowed(DType::boolean)) return false;
  auto a = pick_value([](const TensorType&) { return true; });
  if (!a) return false;
  const Shape sa = type(*a).shape;
  auto cond = pick_value([&](const TensorType& t) { return is_bool(t.dtype) && broadcast_fits(sa, t.shape); });
  if (!cond || rng_.chance(0.3)) {
    static const OpKind kComparisons[] = {OpKind::Eq, OpKind::Ne, OpKind::Lt, OpKind::Le, OpKind::Gt, OpKind::Ge};
    OpKind cmp = kComparisons[rng_.below(6)];
    auto rhs = partner(*a, true);
    if (!allowed(cmp) || !rhs) return false;
    cond = emit(cmp, {*a, *rhs});
  }
  auto b = partner(*a, true);
  if (!b) return false;
  Shape out = *broadcast_result(sa, type(*cond).shape);
  if (!b->is_literal && !broadcast_fits(out, type(b->value).shape)) b = Operand(*a);
  std::vector<Operand> args{*cond, *a, *b};
  if (rng_.chance(0.5)) std::swap(args[1], args[2]);
  emit(OpKind::Select, args);
  return true;
}

bool Generator::add_clamp() {
  auto x = value_of_class(DTypeClass::Numeric);
  if (!x) return false;
  std::vector<Operand> args{*x};
  Shape out = type(*x).shape;
  for (int i = 0; i < 2; ++i) {
    auto bound = partner(*x, true);
    if (!bound) return false;
    if (!bound->is_literal) {
      if (!broadcast_fits(out, type(bound->value).shape)) bound = Operand(*x);
      out = *broadcast_result(out, type(bound->value).shape);
    }
    args.push_back(*bound);
  }
  emit(OpKind::Clamp, args);
  return true;
}

bool Generator::add_cast() {
  auto x = pick_value([](const TensorType&) { return true; });
  if (!x) return false;
  // Now and then a cast to the same dtype, an identity for canonicalisation to fold.
  DType to = rng_.chance(0.1) ? type(*x).dtype : rng_.pick(o_.dtypes);
  emit(OpKind::Cast, {*x}, {{"to", AttrValue(to)}});
  return true;
}

bool Generator::add_broadcast() {
  auto x = pick_value([](const TensorType&) { return true; });
  if (!x) return false;
  auto grow = [&]() { return !symbols_.empty() && rng_.chance(0.25) ? rng_.pick(symbols_) : Dim(rng_.between(2, 4)); };
  Shape target = type(*x).shape;
  for (Dim& d : target) {
    if (d == Dim(1) && rng_.chance(0.7)) d = grow();
  }
  int64_t lead = rng_.between(0, std::max<int64_t>(0, o_.max_rank - static_cast<int64_t>(target.size())));
  for (int64_t i = 0; i < lead; ++i) target.insert(target.begin(), rng_.chance(0.2) ? Dim(1) : grow());
  if (!fits(target)) return false;
  emit(OpKind::Broadcast, {*x}, {{"shape", shape_attr(rng_, target)}});
  return true;
}

bool Generator::add_reshape() {
  auto x = pick_value([](const TensorType&) { return true; });
  if (!x) return false;
  // The symbols stay (the IR keeps them as a multiset); the static product is refactored.
  std::vector<Dim> symbols;
  int64_t product = 1;
  for (const Dim& d : type(*x).shape) {
    if (d.is_symbolic()) {
      symbols.push_back(d);
    } else {
      product *= d.extent();
    }
  }
  int64_t room = o_.max_rank - static_cast<int64_t>(symbols.size());
  int64_t min_slots = product == 1 ? 0 : 1;
  if (room < min_slots) return false;
  std::vector<int64_t> slots(rng_.between(min_slots, room), 1);
  if (product == 0) {
    for (int64_t& s : slots) s = rng_.between(0, 3);
    slots[rng_.below(static_cast<int64_t>(slots.size()))] = 0;
  } else {
    int64_t rest = product;
    for (int64_t f = 2; rest > 1; ++f) {
      while (rest % f == 0) {
        slots[rng_.below(static_cast<int64_t>(slots.size()))] *= f;
        rest /= f;
      }
    }
  }
  Shape target;
  for (int64_t s : slots) target.push_back(Dim(s));
  for (const Dim& sym : symbols) target.insert(target.begin() + rng_.below(static_cast<int64_t>(target.size()) + 1), sym);
  // One static extent spelled -1 for the builder to infer (impossible when the product is 0).
  if (product > 0 && !slots.empty() && rng_.chance(0.2)) {
    std::vector<size_t> statics;
    for (size_t i = 0; i < target.size(); ++i) {
      if (target[i].is_static()) statics.push_back(i);
    }
    target[rng_.pick(statics)] = Dim(-1);
  }
  emit(OpKind::Reshape, {*x}, {{"shape", shape_attr(rng_, target)}});
  return true;
}

bool Generator::add_transpose() {
  auto x = pick_value([](const TensorType&) { return true; });
  if (!x) return false;
  AttrValue::Ints perm(type(*x).rank());
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
  if (!rng_.chance(0.15)) rng_.shuffle(perm);  // else the identity, for canonicalisation to fold
  if (rng_.chance(0.15)) {
    emit(OpKind::Transpose, {*x});  // the default perm reverses the axes
  } else {
    emit(OpKind::Transpose, {*x}, {{"perm", perm}});
  }
  return true;
}

bool Generator::add_slice() {
  auto x = pick_value([](const TensorType& t) { return t.rank() > 0; });
  if (!x) return false;
  const Shape s = type(*x).shape;
  bool empty_ok = o_.allow_empty && rng_.chance(0.1);
  AttrValue::Ints start, step;
  Shape stop;
  for (const Dim& d : s) {
    int64_t n = d.is_static() ? d.extent() : 0;
    if (d.is_symbolic() || n == 0 || rng_.chance(0.3)) {
      // Whole axis; on a symbolic one stop is the symbol itself or "to the end".
      start.push_back(0);
      stop.push_back(d.is_symbolic() && rng_.chance(0.5) ? Dim(std::numeric_limits<int64_t>::max()) : d);
      step.push_back(1);
      continue;
    }
    int64_t first = rng_.below(n), end = rng_.between(first + 1, n);
    if (empty_ok && rng_.chance(0.5)) end = rng_.between(0, first);
    // Python bounds: negative ones count from the end, ones past the end clamp.
    start.push_back(rng_.chance(0.3) ? first - n : first);
    stop.push_back(Dim(end == n ? (rng_.chance(0.5) ? n + rng_.between(0, 3) : n) : rng_.chance(0.3) ? end - n : end));
    step.push_back(rng_.chance(0.6) ? 1 : rng_.between(2, 3));
  }
  Attrs attrs{{"stop", shape_attr(rng_, stop)}};
  if (rng_.chance(0.8) || std::any_of(start.begin(), start.end(), [](int64_t v) { return v != 0; })) {
    attrs.set("start", start);
  }
  if (rng_.chance(0.8) || std::any_of(step.begin(), step.end(), [](int64_t v) { return v != 1; })) {
    attrs.set("step", step);
  }
  emit(OpKind::Slice, {*x}, std::move(attrs));
  return true;
}

// A non-empty run of `x` along one static axis, to join with `x` itself.
ValueId Generator::slice_along(ValueId x, int64_t axis) {
  int64_t n = type(x).shape[axis].extent();
  if (n == 0 || !allowed(OpKind::Slice)) return x;
  int64_t first = rng_.below(n);
  AttrValue::Ints start(type(x).rank(), 0);
  start[axis] = first;
  Shape stop = type(x).shape;
  stop[axis] = Dim(rng_.between(first + 1, n));
  return emit(OpKind::Slice, {x}, {{"start", start}, {"stop", AttrValue(stop)}});
}

bool Generator::add_concat() {
  auto has_static_axis = [](const TensorType& t) {
    return std::any_of(t.shape.begin(), t.shape.end(), [](const Dim& d) { return d.is_static(); });
  };
  auto x = pick_value(has_static_axis);
  if (!x) return false;
  const TensorType xt = type(*x);
  std::vector<int64_t> axes;
  for (int d = 0; d < xt.rank(); ++d) {
    if (xt.shape[d].is_static()) axes.push_back(d);
  }
  int64_t axis = rng_.pick(axes);
  std::vector<Operand> args{*x};
  Shape out = xt.shape;
  int64_t extras = rng_.between(0, 2);
  for (int64_t i = 0; i < extras; ++i) {
    auto joinable = [&](const TensorType& t) {
      if (t.dtype != xt.dtype || t.rank() != xt.rank() || t.shape[axis].is_symbolic()) return false;
      for (int d = 0; d < xt.rank(); ++d) {
        if (d != axis && t.shape[d] != xt.shape[d]) return false;
      }
      return true;
    };
    auto other = rng_.chance(0.7) ? pick_value(joinable) : std::nullopt;
    ValueId v = other ? *other : rng_.chance(0.5) ? slice_along(*x, axis) : *x;
    Shape grown = out;
    grown[axis] = Dim(out[axis].extent() + type(v).shape[axis].extent());
    if (!fits(grown)) break;
    out = grown;
    args.push_back(v);
  }
  emit(OpKind::Concat, args, {{"axis", spell_axis(rng_, axis, xt.rank())}});
  return true;
}

bool Generator::add_pad() {
  auto x = pick_value([](const TensorType&) { return true; });
  if (!x) return false;
  const TensorType xt = type(*x);
  AttrValue::Ints low, high;
  Shape out;
  for (const Dim& d : xt.shape) {
    bool padded = d.is_static() && rng_.chance(0.6);
    low.push_back(padded ? rng_.between(0, 2) : 0);
    high.push_back(padded ? rng_.between(0, 2) : 0);
    out.push_back(d.is_static() ? Dim(d.extent() + low.back() + high.back()) : d);
  }
  if (!fits(out)) {
    std::fill(low.begin(), low.end(), 0);
    std::fill(high.begin(), high.end(), 0);
  }
  Attrs attrs{{"low", low}, {"high", high}};
  if (rng_.chance(0.7)) attrs.set("value", scalar_attr(xt.dtype));
  emit(OpKind::Pad, {*x}, std::move(attrs));
  return true;
}

// Indices valid for an axis of `extent`, so evaluation never fails: constants
// in [-n, n), `rem(x, n)` of any data (C remainder lies in (-n, n), and numpy
// `take` wraps negatives once), or an iota; on a symbolic axis only 0 and -1,
// the indices valid for every extent >= 1.
std::optional<ValueId> Generator::gather_indices(const Dim& extent, int max_rank, int64_t max_elements) {
  std::vector<DType> index_types = dtypes_in(DTypeClass::Index);
  if (index_types.empty()) return std::nullopt;
  DType idt = rng_.pick(index_types);
  auto small_shape = [&]() {
    Shape s;
    int64_t rank = rng_.between(0, std::min(2, max_rank)), room = max_elements;
    for (int64_t i = 0; i < rank && room >= 2; ++i) {
      s.push_back(Dim(rng_.between(1, std::min<int64_t>(4, room))));
      room /= s.back().extent();
    }
    return s;
  };
  int64_t n = extent.is_static() ? extent.extent() : 0;
  int64_t mode = extent.is_symbolic() ? 0 : rng_.below(3);
  if (mode == 1 && allowed(OpKind::Rem) && allowed(OpKind::Constant)) {
    auto data = pick_value([&](const TensorType& t) {
      return t.rank() <= max_rank && capacity(t.shape, o_.max_symbol_extent) <= max_elements &&
             (t.dtype == idt || allowed(OpKind::Cast));
    });
    if (data) {
      ValueId v = type(*data).dtype == idt ? *data : emit(OpKind::Cast, {*data}, {{"to", AttrValue(idt)}});
      return emit(OpKind::Rem, {v, Operand(n)});
    }
  }
  if (mode == 2 && allowed(OpKind::Iota)) {
    Shape s = small_shape();
    if (s.empty()) s.push_back(Dim(1));
    ValueId v = emit(OpKind::Iota, {}, {{"shape", AttrValue(s)}, {"axis", rng_.below(static_cast<int64_t>(s.size()))},
                                        {"dtype", AttrValue(idt)}});
    bool in_range = std::all_of(s.begin(), s.end(), [&](const Dim& d) { return d.extent() <= n; });
    if (in_range) return v;
    if (allowed(OpKind::Rem) && allowed(OpKind::Constant)) return emit(OpKind::Rem, {v, Operand(n)});
    return std::nullopt;  // the iota stays behind, dead
  }
  if (!allowed(OpKind::Constant)) return std::nullopt;
  int64_t index = extent.is_symbolic() ? -rng_.below(2) : rng_.between(-n, n - 1);
  return emit(OpKind::Constant, {}, {{"value", index}, {"shape", AttrValue(small_shape())}, {"dtype", AttrValue(idt)}});
}

bool Generator::add_gather() {
  auto indexable = [](const Dim& d) { return d.is_symbolic() || d.extent() > 0; };
  auto x = pick_value([&](const TensorType& t) { return std::any_of(t.shape.begin(), t.shape.end(), indexable); });
  if (!x) return false;
  const TensorType xt = type(*x);
  std::vector<int64_t> axes;
  for (int d = 0; d < xt.rank(); ++d) {
    if (indexable(xt.shape[d])) axes.push_back(d);
  }
  int64_t axis = rng_.pick(axes);
  Shape rest = xt.shape;
  rest.erase(rest.begin() + axis);
  int64_t rest_capacity = std::max<int64_t>(1, capacity(rest, o_.max_symbol_extent));
  int rank_room = o_.max_rank - static_cast<int>(rest.size());
  auto idx = gather_indices(xt.shape[axis], rank_room, o_.max_elements / rest_capacity);
  if (!idx) return false;
  Attrs attrs;
  if (axis != 0 || rng_.chance(0.5)) attrs.set("axis", spell_axis(rng_, axis, xt.rank()));
  emit(OpKind::Gather, {*x, *idx}, std::move(attrs));
  return true;
}

bool Generator::add_iota() {
  std::vector<DType> numeric = dtypes_in(DTypeClass::Numeric);
  if (numeric.empty()) return false;
  auto like = rng_.chance(0.6) ? pick_value([](const TensorType& t) { return t.rank() > 0; }) : std::nullopt;
  Shape s = like ? type(*like).shape : random_shape(static_cast<int>(rng_.between(1, std::max(1, o_.max_rank))));
  if (s.empty() || !fits(s)) return false;
  DType dtype = rng_.pick(numeric);
  Attrs attrs{{"shape", shape_attr(rng_, s)}, {"axis", spell_axis(rng_, rng_.below(static_cast<int64_t>(s.size())),
                                                                   static_cast<int>(s.size()))}};
  if (dtype != DType::i64 || rng_.chance(0.5)) attrs.set("dtype", AttrValue(dtype));
  emit(OpKind::Iota, {}, std::move(attrs));
  return true;
}

bool Generator::add_constant() {
  auto like = rng_.chance(0.5) ? pick_value([](const TensorType&) { return true; }) : std::nullopt;
  Shape s = like ? type(*like).shape : Shape{};
  DType dtype = rng_.pick(o_.dtypes);
  Attrs attrs{{"value", scalar_attr(dtype)}};
  if (!s.empty() || rng_.chance(0.5)) attrs.set("shape", shape_attr(rng_, s));
  if (dtype != DType::f32 || rng_.chance(0.5)) attrs.set("dtype", AttrValue(dtype));
  emit(OpKind::Constant, {}, std::move(attrs));
  return true;
}

bool Generator::add_reduction(OpKind k) {
  bool is_arg = k == OpKind::ArgMax || k == OpKind::ArgMin;
  if (is_arg && !dtype_allowed(DType::i64)) return false;
  auto x = value_of_class(operand_class(k));
  if (!x) return false;
  const Shape s = type(*x).shape;
  int rank = static_cast<int>(s.size());
  Attrs attrs;
  if (is_arg) {
    // numpy raises on an empty axis, and so does the interpreter; symbols bind to >= 1.
    std::vector<int64_t> axes;
    for (int d = 0; d < rank; ++d) {
      if (s[d].is_symbolic() || s[d].extent() > 0) axes.push_back(d);
    }
    if (axes.empty()) return false;
    attrs.set("axes", AttrValue::Ints{spell_axis(rng_, rng_.pick(axes), rank)});
  } else if (int64_t roll = rng_.below(10); roll > 0) {
    AttrValue::Ints axes;  // roll 1: the empty list, which reduces nothing
    for (int d = 0; d < rank; ++d) {
      if (roll > 1 && rng_.chance(0.5)) axes.push_back(spell_axis(rng_, d, rank));
    }
    if (axes.empty() && rank > 0 && roll > 1) axes.push_back(spell_axis(rng_, rng_.below(rank), rank));
    rng_.shuffle(axes);
    attrs.set("axes", axes);
  }
  if (rng_.chance(0.8)) attrs.set("keepdims", AttrValue(rng_.chance(0.5)));
  emit(k, {*x}, std::move(attrs));
  return true;
}

bool Generator::add_dot() {
  auto x = value_of_class(DTypeClass::Numeric, [](const TensorType& t) { return t.rank() >= 1 && t.rank() <= 3; });
  if (!x || type(*x).rank() == 0) return false;
  const TensorType xt = type(*x);
  bool x_first = rng_.chance(0.5);
  auto product = [&](const Shape& other) { return x_first ? dot_result(xt.shape, other) : dot_result(other, xt.shape); };
  auto y = pick_value([&](const TensorType& t) {
    auto r = product(t.shape);
    return t.dtype == xt.dtype && r && fits(*r);
  });
  if (!y && xt.rank() == 1) y = *x;  // a dot product of a vector with itself
  if (!y && allowed(OpKind::Transpose)) {
    // x @ x^T (or x^T @ x), a Gram matrix over the last two axes.
    AttrValue::Ints perm(xt.rank());
    for (int i = 0; i < xt.rank(); ++i) perm[i] = i;
    std::swap(perm[xt.rank() - 1], perm[xt.rank() - 2]);
    Shape swapped = xt.shape;
    std::swap(swapped[xt.rank() - 1], swapped[xt.rank() - 2]);
    auto r = product(swapped);
    if (!r || !fits(*r)) return false;
    y = emit(OpKind::Transpose, {*x}, {{"perm", perm}});
  }
  if (!y) return false;
  emit(OpKind::Dot, x_first ? std::vector<Operand>{*x, *y} : std::vector<Operand>{*y, *x});
  return true;
}

// attention(q, k, v[, bias]): k and v other values of q's leading dims where
// one fits, else q itself (self-attention); a bias that broadcasts to the
// scores half the time; causal where Tq and Tk are equal or static (the
// composite CUDA runs needs the offset Tk - Tq).
bool Generator::add_attention() {
  auto q = value_of_class(DTypeClass::Float, [](const TensorType& t) { return t.rank() >= 2 && t.rank() <= 4; });
  if (!q) return false;
  const TensorType qt = type(*q);
  const size_t r = qt.shape.size();
  const Shape lead(qt.shape.begin(), qt.shape.end() - 2);
  auto same_lead = [&](const TensorType& t) {
    return t.dtype == qt.dtype && t.shape.size() == r && Shape(t.shape.begin(), t.shape.end() - 2) == lead;
  };
  std::optional<ValueId> k = pick_value([&](const TensorType& t) { return same_lead(t) && t.shape[r - 1] == qt.shape[r - 1]; });
  if (!k) k = *q;
  const Dim tq = qt.shape[r - 2], tk = type(*k).shape[r - 2];
  std::optional<ValueId> v = pick_value([&](const TensorType& t) { return same_lead(t) && t.shape[r - 2] == tk; });
  if (!v) v = *k;
  Shape scores = lead, out = lead;
  scores.push_back(tq);
  scores.push_back(tk);
  out.push_back(tq);
  out.push_back(type(*v).shape[r - 1]);
  if (!fits(scores) || !fits(out)) return false;
  std::vector<Operand> args{*q, *k, *v};
  if (rng_.chance(0.5)) {
    auto bias = pick_value([&](const TensorType& t) { return t.dtype == qt.dtype && broadcast_result(t.shape, scores) == scores; });
    if (bias) args.push_back(*bias);
  }
  Attrs attrs;
  if (qt.shape[r - 1].is_symbolic() || rng_.chance(0.5)) attrs.set("scale", AttrValue(rng_.chance(0.5) ? 0.5 : 0.125));
  if ((tq == tk || (tq.is_static() && tk.is_static())) && rng_.chance(0.5)) attrs.set("causal", AttrValue(true));
  emit(OpKind::Attention, std::move(args), std::move(attrs));
  return true;
}

bool Generator::add_composite() {
  std::vector<const CompositeSpec*> usable;
  for (const CompositeSpec& c : composite_specs()) {
    bool ok = node_count() + c.max_nodes <= o_.max_nodes + kMaxNodesPastTarget &&
              (!c.needs_bool || dtype_allowed(DType::boolean)) &&
              std::all_of(c.primitives.begin(), c.primitives.end(), [&](OpKind k) { return allowed(k); });
    if (ok) usable.push_back(&c);
  }
  if (usable.empty()) return false;
  const CompositeSpec& spec = *rng_.pick(usable);
  std::string name = spec.name;
  bool needs_axis = name != "gelu" && name != "silu" && name != "logsumexp";
  auto x = pick_value([&](const TensorType& t) { return is_float(t.dtype) && (!needs_axis || t.rank() > 0); });
  if (!x) return false;
  const TensorType xt = type(*x);
  int rank = xt.rank();
  std::vector<Operand> args{*x};
  Attrs attrs;
  if (name == "softmax" || name == "log_softmax") {
    if (rng_.chance(0.7)) attrs.set("axis", spell_axis(rng_, rng_.below(rank), rank));
  } else if (name == "logsumexp") {
    AttrValue::Ints axes;
    for (int d = 0; d < rank; ++d) {
      if (rng_.chance(0.5)) axes.push_back(spell_axis(rng_, d, rank));
    }
    if (rng_.chance(0.8)) attrs.set("axes", axes);
    if (rng_.chance(0.5)) attrs.set("keepdims", AttrValue(rng_.chance(0.5)));
  } else if (name == "layer_norm" || name == "rms_norm") {
    // Normalise over the trailing axes; gamma and beta, when present, have their shape.
    int64_t trailing = rng_.between(1, rank);
    AttrValue::Ints axes;
    for (int64_t d = rank - trailing; d < rank; ++d) axes.push_back(spell_axis(rng_, d, rank));
    if (trailing > 1 || rng_.chance(0.5)) attrs.set("axes", axes);
    if (rng_.chance(0.3)) attrs.set("eps", rng_.chance(0.5) ? AttrValue(1e-3) : AttrValue(int64_t{1}));
    // As in add_reduction_pattern: on a row that may be constant (any computed
    // value: a broadcast, or a sum over a broadcast axis) x - mean is rounding
    // noise that rsqrt(var + eps) amplifies past any tolerance unless eps is
    // large (soak seed 103376); only parameters' rows are surely random. No
    // further random draws, so no other graph changes.
    if (name == "layer_norm" && g().value(*x).producer >= 0) attrs.set("eps", AttrValue(int64_t{1}));
    Shape affine(xt.shape.end() - trailing, xt.shape.end());
    int64_t max_affine = name == "layer_norm" ? 2 : 1;
    for (int64_t i = rng_.between(0, max_affine); i > 0; --i) {
      auto p = pick_value([&](const TensorType& t) { return t.dtype == xt.dtype && t.shape == affine; });
      if (!p) break;
      args.push_back(*p);
    }
  } else if (name == "gelu") {
    if (rng_.chance(0.7)) attrs.set("approximate", rng_.chance(0.5) ? "tanh" : "none");
  }
  int before = node_count();
  b_.op(name, args, attrs);
  for (int i = before; i < node_count(); ++i) {
    OpKind k = g().nodes()[i].op;
    STITCH_ASSERT(std::find(spec.primitives.begin(), spec.primitives.end(), k) != spec.primitives.end(),
                  fmt::format("composite {} expanded to {}, missing from its spec", name, op_name(k)));
  }
  STITCH_ASSERT(node_count() - before <= spec.max_nodes, fmt::format("composite {} grew past its spec", name));
  return true;
}

bool Generator::add_repeat() {
  if (g().nodes().empty()) return false;
  const Node n = g().nodes()[rng_.below(node_count())];
  std::vector<Operand> args(n.inputs.begin(), n.inputs.end());
  emit(n.op, args, n.attrs);
  return true;
}

}  // namespace stitch::testing::random_graph_detail
