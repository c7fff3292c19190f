// The generator's reduction -> consumer step (OpMix::reduction_pattern): what
// the stitch planner fuses into one kernel (docs/fusion.md, Stitched groups).
// A reduction over the innermost axes (a row) or over the leading axis (a
// column), its total brought back to the input's shape (keepdims, a reshape
// that inserts 1s, or an explicit broadcast), read by elementwise ops together
// with the reduction's input; softmax, log-softmax and the norms chain two
// reductions. Steps that follow often reduce the same axes again, so chains
// grow longer than one recipe; some totals are returned too (several roots).
// docs/fuzzing.md describes the patterns and what they found.
#include <cstdint>

#include <fmt/format.h>

#include "random_graph_generator.h"

namespace stitch::testing::random_graph_detail {

namespace {

enum class Recipe { Center, Scale, Softmax, LogSoftmax, Normalize, RmsNorm };

constexpr OpKind kPatternOps[] = {OpKind::ReduceSum, OpKind::ReduceMean, OpKind::ReduceMax, OpKind::ReduceMin,
                                  OpKind::Sub,       OpKind::Add,        OpKind::Mul,       OpKind::Div,
                                  OpKind::Exp,       OpKind::Log,        OpKind::Abs,       OpKind::Rsqrt,
                                  OpKind::Reshape,   OpKind::Broadcast};

}  // namespace

// The innermost one or two axes (a row schedule), or the leading axis (a
// column schedule); the axes of the previous pattern when they fit, so that
// reductions chain.
std::vector<int64_t> Generator::pattern_axes(const Shape& s) {
  const auto rank = static_cast<int64_t>(s.size());
  bool reuse = !last_pattern_axes_.empty() && last_pattern_axes_.back() < rank && rng_.chance(0.6);
  if (reuse) return last_pattern_axes_;
  if (rank >= 2 && rng_.chance(0.3)) return {0};
  int64_t count = rank >= 3 && rng_.chance(0.25) ? 2 : 1;
  std::vector<int64_t> axes;
  for (int64_t d = rank - count; d < rank; ++d) axes.push_back(d);
  return axes;
}

// reduce_k(x) over `axes`, brought back to x's shape.
ValueId Generator::reduced_back(OpKind k, ValueId x, const std::vector<int64_t>& axes) {
  const Shape s = type(x).shape;
  const auto rank = static_cast<int>(s.size());
  AttrValue::Ints spelled;
  for (int64_t a : axes) spelled.push_back(rng_.chance(0.3) ? a - rank : a);
  bool keepdims = rng_.chance(0.6);
  Attrs attrs{{"axes", spelled}};
  if (keepdims || rng_.chance(0.5)) attrs.set("keepdims", AttrValue(keepdims));
  ValueId total = emit(k, {x}, std::move(attrs));
  // A per-row total returned beside the rows, as LayerNorm's mean for backward.
  if (rng_.chance(0.2)) pattern_outputs_.push_back(total);
  ValueId back = total;
  // numpy aligns trailing dims, so only a leading-axis total broadcasts back
  // without its 1s; the others get them from a reshape.
  bool leading = axes.front() == 0 && axes.size() < s.size();
  if (!keepdims && !(leading && axes.size() == 1 && rng_.chance(0.5))) {
    Shape with_ones = s;
    for (int64_t a : axes) with_ones[static_cast<size_t>(a)] = Dim(1);
    back = emit(OpKind::Reshape, {total}, {{"shape", AttrValue(with_ones)}});
  }
  if (rng_.chance(0.35)) back = emit(OpKind::Broadcast, {back}, {{"shape", AttrValue(s)}});
  return back;
}

// Every division and rsqrt below has a denominator of at least 1 or eps (sums
// of exponentials after subtracting the max, max |x| + 1, mean square + eps),
// so an f32 kernel stays within the documented tolerance of the float64
// interpreter on the generator's inputs.
bool Generator::add_reduction_pattern() {
  for (OpKind k : kPatternOps) {
    if (!allowed(k)) return false;
  }
  auto picked = pick_value([](const TensorType& t) { return is_float(t.dtype) && t.rank() >= 1; });
  if (!picked) return false;
  const ValueId x = *picked;
  const Shape s = type(x).shape;
  const std::vector<int64_t> axes = pattern_axes(s);
  last_pattern_axes_ = axes;
  // LayerNorm's eps is tiny; on a row that is constant (a broadcast value)
  // x - mean is rounding noise that rsqrt(var + eps) would amplify past any
  // tolerance, so only parameters, whose rows are random, get it.
  bool random_rows = g().value(x).producer < 0;
  double eps = random_rows && rng_.chance(0.5) ? 1e-5 : rng_.chance(0.5) ? 0.5 : 1.0;
  static const OpKind kTotals[] = {OpKind::ReduceSum, OpKind::ReduceMean, OpKind::ReduceMax, OpKind::ReduceMin};
  ValueId y = x;
  switch (static_cast<Recipe>(rng_.below(6))) {
    case Recipe::Center: {
      // Column mean -> broadcast subtract, or any total taken off its rows.
      ValueId total = reduced_back(kTotals[rng_.below(4)], x, axes);
      y = emit(rng_.chance(0.8) ? OpKind::Sub : OpKind::Add, {x, total});
      break;
    }
    case Recipe::Scale: {
      ValueId magnitude = emit(OpKind::Abs, {x});
      OpKind k = rng_.chance(0.5) ? OpKind::ReduceMax : rng_.chance(0.5) ? OpKind::ReduceMean : OpKind::ReduceSum;
      ValueId total = reduced_back(k, magnitude, axes);
      if (rng_.chance(0.5)) {
        y = emit(OpKind::Div, {x, emit(OpKind::Add, {total, Operand(1.0)})});
      } else {
        y = emit(OpKind::Mul, {x, total});
      }
      break;
    }
    case Recipe::Softmax:
    case Recipe::LogSoftmax: {
      bool log = rng_.chance(0.5);
      ValueId shifted = emit(OpKind::Sub, {x, reduced_back(OpKind::ReduceMax, x, axes)});
      ValueId e = emit(OpKind::Exp, {shifted});
      ValueId sum = reduced_back(OpKind::ReduceSum, e, axes);
      y = log ? emit(OpKind::Sub, {shifted, emit(OpKind::Log, {sum})}) : emit(OpKind::Div, {e, sum});
      break;
    }
    case Recipe::Normalize: {
      ValueId centred = emit(OpKind::Sub, {x, reduced_back(OpKind::ReduceMean, x, axes)});
      ValueId var = reduced_back(OpKind::ReduceMean, emit(OpKind::Mul, {centred, centred}), axes);
      y = emit(OpKind::Mul, {centred, emit(OpKind::Rsqrt, {emit(OpKind::Add, {var, Operand(eps)})})});
      break;
    }
    case Recipe::RmsNorm: {
      ValueId ms = reduced_back(OpKind::ReduceMean, emit(OpKind::Mul, {x, x}), axes);
      y = emit(OpKind::Mul, {x, emit(OpKind::Rsqrt, {emit(OpKind::Add, {ms, Operand(eps)})})});
      break;
    }
  }
  // An affine or residual tail (gamma, beta, x + y) now and then.
  if (rng_.chance(0.4)) {
    static const OpKind kTail[] = {OpKind::Mul, OpKind::Add, OpKind::Sub, OpKind::Max};
    OpKind k = kTail[rng_.below(4)];
    std::optional<Operand> other = rng_.chance(0.3) ? std::optional<Operand>(x) : partner(y, true);
    if (other && (other->is_literal || type(other->value).dtype == type(y).dtype)) emit(k, {y, *other});
  }
  return true;
}

}  // namespace stitch::testing::random_graph_detail

namespace stitch::testing {

RandomGraphOptions stitched_options(uint64_t seed) {
  random_graph_detail::Rng rng(random_graph_detail::mix_seed(seed, 3));
  RandomGraphOptions o;
  o.seed = seed;
  o.symbolic_dims = rng.chance(0.4);
  o.max_rank = static_cast<int>(rng.pick(std::vector<int64_t>{1, 2, 2, 3, 3, 4}));
  // Rows shorter than a warp, not multiples of 32, and a few longer ones.
  o.max_extent = rng.pick(std::vector<int64_t>{8, 33, 45, 77, 130});
  o.max_elements = 4096;
  o.max_symbol_extent = 5;
  o.allow_empty = false;
  o.min_nodes = 6;
  o.max_nodes = 32;
  o.max_params = 3;
  // One float dtype per graph, and no op whose result jumps at a point
  // (floor, sign, rem, comparisons and the selects they feed) or blows up near
  // one (a generic div, log, pow): an f32 rounding difference in a long
  // reduction would flip or amplify past any tolerance there (seed 65 of the
  // first version: rem(x, y) of a normalised y). The heavy ops come from the
  // patterns and composites, in their well-conditioned forms. A second float
  // dtype is left out because the tolerance takes eps from an output's own
  // dtype: an f32 result cast to f64 is held to f64's eps (seed 170).
  int64_t roll = rng.below(20);
  o.dtypes = {roll < 14 ? DType::f32 : roll < 17 ? DType::f64 : roll < 19 ? DType::f16 : DType::bf16};
  o.excluded_ops = {OpKind::Floor, OpKind::Ceil, OpKind::Round, OpKind::Sign, OpKind::Rem};
  o.mix.reduction_pattern = 3;
  o.mix.light_elementwise = 2;
  o.mix.heavy_elementwise = 0;
  o.mix.broadcast = 0.2;
  o.mix.layout = 0.4;
  o.mix.gather = 0.1;
  o.mix.source = 0.1;
  o.mix.reduction = 0.5;
  o.mix.dot = 0;
  o.mix.composite = 0.5;
  o.mix.repeat = 0.1;
  return o;
}

}  // namespace stitch::testing
