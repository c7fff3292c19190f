#include "random_graph.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <stdexcept>

#include "random_graph_generator.h"
#include "stitch/text.h"

namespace stitch::testing {

namespace random_graph_detail {

bool in_class(DType t, DTypeClass c) {
  switch (c) {
    case DTypeClass::Any: return true;
    case DTypeClass::Numeric: return !is_bool(t);
    case DTypeClass::Float: return is_float(t);
    case DTypeClass::IntOrBool: return !is_float(t);
    case DTypeClass::Bool: return is_bool(t);
    case DTypeClass::Index: return t == DType::i32 || t == DType::i64;
  }
  return false;
}

int64_t capacity(const Shape& s, int64_t symbol_extent) {
  int64_t n = 1;
  for (const Dim& d : s) {
    n *= d.is_symbolic() ? symbol_extent : d.extent();
    n = std::min<int64_t>(n, int64_t{1} << 40);
  }
  return n;
}

std::optional<Shape> broadcast_result(const Shape& a, const Shape& b) {
  const Shape& longer = a.size() >= b.size() ? a : b;
  const Shape& shorter = a.size() >= b.size() ? b : a;
  Shape out = longer;
  size_t lead = longer.size() - shorter.size();
  for (size_t i = 0; i < shorter.size(); ++i) {
    const Dim& x = longer[lead + i];
    const Dim& y = shorter[i];
    if (x == y || y == Dim(1)) continue;
    if (x != Dim(1)) return std::nullopt;
    out[lead + i] = y;
  }
  return out;
}

Generator::Generator(const RandomGraphOptions& o) : o_(o), rng_(o.seed), b_(fmt::format("random_{}", o.seed)) {}

ValueId Generator::emit(OpKind k, std::vector<Operand> args, Attrs attrs) {
  STITCH_ASSERT(allowed(k), fmt::format("the generator added the excluded op {}", op_name(k)));
  ValueId v = b_.op(k, std::move(args), std::move(attrs));
  STITCH_ASSERT(fits(type(v).shape) && dtype_allowed(type(v).dtype),
                fmt::format("the generator made {} of type {}, outside its options", op_name(k), type(v).str()));
  return v;
}

Shape Generator::random_shape(int rank) {
  Shape s;
  int64_t room = o_.max_elements;
  for (int i = 0; i < rank; ++i) {
    if (!symbols_.empty() && room >= o_.max_symbol_extent && rng_.chance(0.25)) {
      s.push_back(rng_.pick(symbols_));
      room /= o_.max_symbol_extent;
    } else {
      int64_t extent = rng_.chance(0.15) || room < 2 ? 1 : rng_.between(2, std::min(o_.max_extent, room));
      s.push_back(Dim(extent));
      room /= extent;
    }
  }
  return s;
}

void Generator::make_params() {
  if (o_.symbolic_dims) {
    symbols_.push_back(Dim::symbol("B"));
    if (rng_.chance(0.4)) symbols_.push_back(Dim::symbol("N"));
  }
  int base_rank = rng_.chance(0.5) ? o_.max_rank : static_cast<int>(rng_.between(std::min(1, o_.max_rank), o_.max_rank));
  Shape base = random_shape(base_rank);
  int count = static_cast<int>(rng_.between(std::min(1, o_.max_params), o_.max_params));
  for (int i = 0; i < count; ++i) {
    // Shapes related to one base shape, so numpy broadcasting finds partners.
    Shape s = base;
    switch (rng_.below(5)) {
      case 0: break;
      case 1: s.erase(s.begin(), s.begin() + rng_.between(0, static_cast<int64_t>(s.size()))); break;
      case 2:
        for (Dim& d : s) d = rng_.chance(0.5) ? Dim(1) : d;
        break;
      case 3: rng_.shuffle(s); break;
      default: s = random_shape(static_cast<int>(rng_.between(0, o_.max_rank))); break;
    }
    b_.param(fmt::format("p{}", i), rng_.pick(o_.dtypes), s);
  }
  // A symbol no parameter carries could not be bound from the inputs.
  std::vector<Dim> used;
  for (const Dim& sym : symbols_) {
    for (ValueId p : g().params()) {
      const Shape& s = type(p).shape;
      if (std::find(s.begin(), s.end(), sym) != s.end()) {
        used.push_back(sym);
        break;
      }
    }
  }
  symbols_ = used;
}

std::optional<ValueId> Generator::pick_value(const TypePredicate& ok) {
  std::vector<ValueId> candidates;
  for (int i = 0; i < g().num_values(); ++i) {
    if (ok(type(ValueId{i}))) candidates.push_back(ValueId{i});
  }
  if (candidates.empty()) return std::nullopt;
  // Recent values half the time, so chains grow deep instead of fanning out
  // from the parameters; values nothing reads yet a quarter of the time, so
  // few nodes end up dead.
  int64_t roll = rng_.below(4);
  if (roll < 2) {
    int64_t recent = std::min<int64_t>(3, static_cast<int64_t>(candidates.size()));
    return candidates[candidates.size() - 1 - rng_.below(recent)];
  }
  if (roll == 2) {
    std::vector<bool> read(g().num_values(), false);
    for (const Node& n : g().nodes()) {
      for (ValueId v : n.inputs) read[v.index] = true;
    }
    std::vector<ValueId> unread;
    for (ValueId v : candidates) {
      if (!read[v.index]) unread.push_back(v);
    }
    if (!unread.empty()) return rng_.pick(unread);
  }
  return rng_.pick(candidates);
}

std::optional<ValueId> Generator::value_of_class(DTypeClass c, const TypePredicate& extra) {
  auto ok_extra = [&](const TensorType& t) { return !extra || extra(t); };
  if (auto v = pick_value([&](const TensorType& t) { return in_class(t.dtype, c) && ok_extra(t); })) return v;
  std::vector<DType> targets = dtypes_in(c);
  if (targets.empty() || !allowed(OpKind::Cast)) return std::nullopt;
  auto source = pick_value(ok_extra);
  if (!source) return std::nullopt;
  return emit(OpKind::Cast, {*source}, {{"to", AttrValue(rng_.pick(targets))}});
}

AttrValue Generator::scalar_attr(DType t) {
  if (is_bool(t)) return rng_.chance(0.5) ? AttrValue(rng_.chance(0.5)) : AttrValue(rng_.below(2));
  if (is_float(t)) {
    static const std::vector<double> kValues = {0.0,  -0.0, 0.5, 1.0,  2.0,  -1.0, -2.5,
                                                0.1,  3.0,  1e-3, 1e4, std::numeric_limits<double>::infinity(),
                                                -std::numeric_limits<double>::infinity(),
                                                std::numeric_limits<double>::quiet_NaN()};
    return rng_.chance(0.8) ? AttrValue(rng_.pick(kValues)) : AttrValue(rng_.between(-3, 3));
  }
  if (rng_.chance(0.1)) {
    int64_t lo = t == DType::i8 ? -128 : t == DType::i32 ? std::numeric_limits<int32_t>::min()
                                                         : std::numeric_limits<int64_t>::min();
    int64_t hi = t == DType::i8 ? 127 : t == DType::i32 ? std::numeric_limits<int32_t>::max()
                                                        : std::numeric_limits<int64_t>::max();
    return AttrValue(rng_.chance(0.5) ? lo : hi);
  }
  int64_t v = rng_.between(-4, 4);
  // An integer-valued float is accepted for an integer dtype.
  return rng_.chance(0.2) ? AttrValue(static_cast<double>(v)) : AttrValue(v);
}

Operand Generator::literal(DType t) {
  AttrValue v = scalar_attr(t);
  if (v.is_bool()) return Operand(int64_t{v.as_bool()});
  if (v.is_int()) return Operand(v.as_int());
  return Operand(v.as_float());
}

// A value derived from `a` with unit dims and fewer leading dims, so numpy
// broadcasting stretches it back (the bias of a bias-add, a keepdims mean).
std::optional<ValueId> Generator::shrunk(ValueId a) {
  const Shape s = type(a).shape;
  if (s.empty() || !allowed(OpKind::Slice)) return std::nullopt;
  AttrValue::Ints start, step;
  Shape stop;
  for (const Dim& d : s) {
    bool unit = d.is_static() && d.extent() > 0 && rng_.chance(0.5);
    int64_t at = unit ? rng_.below(d.extent()) : 0;
    start.push_back(at);
    stop.push_back(unit ? Dim(at + 1) : d);
    step.push_back(1);
  }
  ValueId v = emit(OpKind::Slice, {a}, {{"start", start}, {"stop", AttrValue(stop)}, {"step", step}});
  size_t drop = 0;
  while (drop < stop.size() && type(v).shape[drop] == Dim(1)) ++drop;
  if (drop > 0 && allowed(OpKind::Reshape) && rng_.chance(0.6)) {
    drop = rng_.between(1, static_cast<int64_t>(drop));
    const Shape sliced = type(v).shape;
    v = emit(OpKind::Reshape, {v}, {{"shape", AttrValue(Shape(sliced.begin() + drop, sliced.end()))}});
  }
  return v;
}

std::optional<Operand> Generator::partner(ValueId a, bool allow_literal) {
  const TensorType t = type(a);
  bool literal_ok = allow_literal && allowed(OpKind::Constant);
  int64_t roll = rng_.below(10);
  if (literal_ok && roll < 2) return literal(t.dtype);
  if (roll < 3) return Operand(a);
  if (roll < 7) {
    auto v = pick_value([&](const TensorType& u) { return u.dtype == t.dtype && broadcast_fits(t.shape, u.shape); });
    if (v) return Operand(*v);
  }
  if (auto v = shrunk(a)) return Operand(*v);
  return literal_ok ? literal(t.dtype) : Operand(a);
}

bool Generator::step() {
  constexpr OpCategory kCategories[] = {OpCategory::LightElementwise, OpCategory::HeavyElementwise,
                                        OpCategory::Broadcast, OpCategory::Layout, OpCategory::Gather,
                                        OpCategory::Source, OpCategory::Reduction, OpCategory::Dot};
  std::vector<std::vector<OpKind>> families;
  std::vector<double> weights;
  for (OpCategory c : kCategories) {
    std::vector<OpKind> ops;
    for (int i = 0; i < op_kind_count(); ++i) {
      auto k = static_cast<OpKind>(i);
      if (op_info(k).category == c && allowed(k)) ops.push_back(k);
    }
    if (ops.empty()) continue;
    families.push_back(std::move(ops));
    weights.push_back(o_.mix.weight(c));
  }
  weights.push_back(o_.mix.composite);
  weights.push_back(o_.mix.repeat);
  // Only when on, so that the default mix draws exactly as before.
  if (o_.mix.reduction_pattern > 0) weights.push_back(o_.mix.reduction_pattern);
  size_t chosen = rng_.weighted(weights);
  if (chosen == families.size()) return add_composite();
  if (chosen == families.size() + 1) return add_repeat();
  if (chosen == families.size() + 2) return add_reduction_pattern();
  return add_op(rng_.pick(families[chosen]));
}

void Generator::choose_outputs() {
  if (g().nodes().empty()) {
    b_.output(g().params()[0]);
    return;
  }
  std::vector<int> consumers(g().num_values(), 0);
  for (const Node& n : g().nodes()) {
    for (ValueId v : n.inputs) ++consumers[v.index];
  }
  std::vector<ValueId> outputs{g().nodes().back().output};
  for (ValueId v : pattern_outputs_) {
    bool fresh = std::find(outputs.begin(), outputs.end(), v) == outputs.end();
    if (fresh && static_cast<int>(outputs.size()) < o_.max_outputs) outputs.push_back(v);
  }
  for (auto it = g().nodes().rbegin() + 1; it != g().nodes().rend(); ++it) {
    if (static_cast<int>(outputs.size()) >= o_.max_outputs) break;
    if (consumers[it->output.index] == 0 && rng_.chance(0.5)) outputs.push_back(it->output);
  }
  // Rarer shapes of a return list: an intermediate value, a parameter, a value twice.
  auto room = [&]() { return static_cast<int>(outputs.size()) < o_.max_outputs; };
  if (room() && rng_.chance(0.15)) outputs.push_back(rng_.pick(g().nodes()).output);
  if (room() && !g().params().empty() && rng_.chance(0.05)) outputs.push_back(rng_.pick(g().params()));
  if (room() && rng_.chance(0.05)) outputs.push_back(outputs[0]);
  for (ValueId v : outputs) b_.output(v);
}

Graph Generator::run() {
  make_params();
  int target = static_cast<int>(rng_.between(o_.min_nodes, o_.max_nodes));
  // A step can fail (no operand of a usable dtype); many in a row means nothing more fits.
  for (int failures = 0; node_count() < target && failures < 100;) {
    failures = step() ? 0 : failures + 1;
  }
  if (g().nodes().empty() && g().params().empty() && !(allowed(OpKind::Constant) && add_constant())) {
    throw std::invalid_argument("random_graph: no parameters and no constants to start from");
  }
  choose_outputs();
  Graph graph = b_.finish();
  for (int i = 0; i < graph.num_values(); ++i) {
    const TensorType& t = graph.type(ValueId{i});
    STITCH_ASSERT(fits(t.shape) && dtype_allowed(t.dtype),
                  fmt::format("random graph value '{}' of type {} is outside the options", graph.value_name(ValueId{i}),
                              t.str()));
  }
  for (const Node& n : graph.nodes()) STITCH_ASSERT(allowed(n.op), fmt::format("excluded op {} in a random graph", op_name(n.op)));
  return graph;
}

}  // namespace random_graph_detail

namespace {

using random_graph_detail::mix_seed;
using random_graph_detail::Rng;

int64_t env_int(const char* name, int64_t fallback) {
  const char* text = std::getenv(name);
  if (!text || !*text) return fallback;
  char* end = nullptr;
  long long v = std::strtoll(text, &end, 10);
  if (*end != '\0' || v < 0) throw std::invalid_argument(fmt::format("{}={} is not a count", name, text));
  return v;
}

}  // namespace

double OpMix::weight(OpCategory c) const {
  switch (c) {
    case OpCategory::LightElementwise: return light_elementwise;
    case OpCategory::HeavyElementwise: return heavy_elementwise;
    case OpCategory::Broadcast: return broadcast;
    case OpCategory::Layout: return layout;
    case OpCategory::Gather: return gather;
    case OpCategory::Source: return source;
    case OpCategory::Reduction: return reduction;
    case OpCategory::Dot: return dot;
  }
  STITCH_ASSERT(false, "unknown op category");
}

Graph random_graph(const RandomGraphOptions& opts) {
  if (opts.dtypes.empty() || opts.min_nodes < 0 || opts.min_nodes > opts.max_nodes || opts.max_rank < 0 ||
      opts.max_extent < 2 || opts.max_elements < 1 || opts.max_symbol_extent < 1 || opts.max_params < 0 ||
      opts.max_outputs < 1) {
    throw std::invalid_argument("random_graph: contradictory options");
  }
  return random_graph_detail::Generator(opts).run();
}

RandomGraphOptions varied_options(uint64_t seed) {
  Rng rng(mix_seed(seed, 1));
  RandomGraphOptions o;
  o.seed = seed;
  o.symbolic_dims = rng.chance(0.5);
  o.max_rank = static_cast<int>(rng.pick(std::vector<int64_t>{1, 2, 3, 3, 4, 4}));
  if (rng.chance(0.125)) {
    o.min_nodes = 20;
    o.max_nodes = 60;
  }
  if (rng.chance(0.25)) o.max_elements = 48;
  int64_t roll = rng.below(5);
  if (roll == 0) {
    o.dtypes = {DType::f32, DType::boolean, DType::i64};  // what a first back end supports
  } else if (roll == 1) {
    std::vector<DType> all(std::begin(kAllDTypes), std::end(kAllDTypes));
    rng.shuffle(all);
    o.dtypes.assign(all.begin(), all.begin() + rng.between(1, 5));
  }
  return o;
}

SymbolBindings random_symbol_bindings(const Graph& g, uint64_t seed, int64_t max_extent) {
  SymbolBindings symbols;
  for (ValueId p : g.params()) {
    for (const Dim& d : g.type(p).shape) {
      if (d.is_symbolic()) symbols[d.name()] = 0;
    }
  }
  Rng rng(mix_seed(seed, 2));
  for (auto& [name, extent] : symbols) extent = rng.between(1, max_extent);
  return symbols;
}

std::vector<Tensor> random_inputs(const Graph& g, uint64_t seed, const SymbolBindings& symbols, bool special_values) {
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < g.params().size(); ++i) {
    const TensorType& t = g.type(g.params()[i]);
    Tensor tensor(t.dtype, concrete_shape(t.shape, symbols));
    fill_random(tensor, mix_seed(seed, 100 + i));
    if (special_values && !is_bool(t.dtype)) {
      static const std::vector<double> kFloats = {0.0, -0.0, std::numeric_limits<double>::infinity(),
                                                  -std::numeric_limits<double>::infinity(),
                                                  std::numeric_limits<double>::quiet_NaN()};
      int bits = 8 * dtype_size(t.dtype);
      int64_t min = bits == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (bits - 1));
      Rng rng(mix_seed(seed, 200 + i));
      for (int64_t e = 0; e < tensor.numel(); ++e) {
        if (rng.below(8) != 0) continue;
        if (is_float(t.dtype)) {
          tensor.set_f64(e, rng.pick(kFloats));
        } else {
          tensor.set_i64(e, rng.chance(0.5) ? min : -(min + 1));
        }
      }
    }
    inputs.push_back(std::move(tensor));
  }
  return inputs;
}

SeedRange random_seed_range(uint64_t normal_count) {
  int64_t soak = env_int("STITCH_SOAK_GRAPHS", -1);
  if (soak < 0) return {0, normal_count, false};
  return {static_cast<uint64_t>(env_int("STITCH_SOAK_FIRST_SEED", 0)), static_cast<uint64_t>(soak), true};
}

std::string reproducer(uint64_t seed, const Graph& g) {
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string filter = test ? fmt::format(" --gtest_filter={}.{}", test->test_suite_name(), test->name()) : "";
  return fmt::format("seed {} (rerun it alone: STITCH_SOAK_FIRST_SEED={} STITCH_SOAK_GRAPHS=1 <test binary>{})\n{}",
                     seed, seed, filter, print_graph(g));
}

void check_random_graphs(uint64_t normal_count, const std::function<std::string(const RandomCase&)>& check,
                         int max_reports) {
  SeedRange seeds = random_seed_range(normal_count);
  int reports = 0;
  for (uint64_t seed = seeds.first; seed < seeds.first + seeds.count && reports < max_reports; ++seed) {
    RandomGraphOptions opts = varied_options(seed);
    Graph g;
    try {
      g = random_graph(opts);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "seed " << seed << ": the generator failed: " << e.what();
      ++reports;
      continue;
    }
    std::string failure;
    try {
      failure = check({seed, opts, g});
    } catch (const std::exception& e) {
      failure = std::string("exception: ") + e.what();
    }
    if (!failure.empty()) {
      ADD_FAILURE() << failure << "\n" << reproducer(seed, g);
      ++reports;
    }
  }
  if (seeds.soak) {
    std::printf("soak: %llu random graphs from seed %llu\n", static_cast<unsigned long long>(seeds.count),
                static_cast<unsigned long long>(seeds.first));
  }
}

}  // namespace stitch::testing
