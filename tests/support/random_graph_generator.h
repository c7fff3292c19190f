// Internals of the random graph generator (random_graph.h): its PRNG, the
// shape rules it predicts results with, and the generator class. The driver
// (parameters, operand choice, outputs) is random_graph.cpp; the steps that add
// one op family each are random_graph_ops.cpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "random_graph.h"
#include "stitch/builder.h"

namespace stitch::testing::random_graph_detail {

// splitmix64 (Steele, Lea and Flood, OOPSLA 2014): a few lines, fully
// specified, so a seed names the same graph everywhere; <random>'s
// distributions are implementation-defined.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n); the modulo bias is negligible for the small n used here.
  int64_t below(int64_t n) {
    STITCH_ASSERT(n > 0, "Rng::below needs a positive bound");
    return static_cast<int64_t>(next() % static_cast<uint64_t>(n));
  }
  int64_t between(int64_t lo, int64_t hi) { return lo + below(hi - lo + 1); }  // inclusive
  bool chance(double p) { return unit() < p; }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[below(static_cast<int64_t>(v.size()))];
  }
  template <class T>
  void shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[below(static_cast<int64_t>(i))]);
  }
  size_t weighted(const std::vector<double>& weights) {
    double total = 0;
    for (double w : weights) total += w;
    double x = unit() * total;
    for (size_t i = 0; i < weights.size(); ++i) {
      if (x < weights[i]) return i;
      x -= weights[i];
    }
    return weights.size() - 1;
  }

 private:
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  uint64_t state_;
};

// An independent stream for each purpose (graph, options, inputs) of one seed.
inline uint64_t mix_seed(uint64_t seed, uint64_t stream) { return Rng(seed ^ (stream * 0xd1342543de82ef95ULL)).next(); }

// The dtypes an op accepts for its data operands (src/ir/type_inference.cpp).
enum class DTypeClass { Any, Numeric, Float, IntOrBool, Bool, Index };
bool in_class(DType t, DTypeClass c);

// Elements of a shape with every symbol at `symbol_extent`, saturating far above any limit.
int64_t capacity(const Shape& s, int64_t symbol_extent);
// numpy broadcasting, written apart from the IR's so the builder checks the generator.
std::optional<Shape> broadcast_result(const Shape& a, const Shape& b);

class Generator {
 public:
  explicit Generator(const RandomGraphOptions& o);

  Graph run();

 private:
  using TypePredicate = std::function<bool(const TensorType&)>;

  const Graph& g() const { return b_.graph(); }
  // Hold a copy of a type across emit(): a new node may reallocate the value table.
  const TensorType& type(ValueId v) const { return g().type(v); }
  int node_count() const { return static_cast<int>(g().nodes().size()); }
  // conv is not generated yet (random_roundtrip_test.cpp, RandomGraph.CoversEveryOpAndDType).
  bool allowed(OpKind k) const {
    return k != OpKind::Conv && std::find(o_.excluded_ops.begin(), o_.excluded_ops.end(), k) == o_.excluded_ops.end();
  }
  bool dtype_allowed(DType t) const { return std::find(o_.dtypes.begin(), o_.dtypes.end(), t) != o_.dtypes.end(); }
  std::vector<DType> dtypes_in(DTypeClass c) const {
    std::vector<DType> out;
    for (DType t : o_.dtypes) {
      if (in_class(t, c)) out.push_back(t);
    }
    return out;
  }
  bool fits(const Shape& s) const {
    return static_cast<int>(s.size()) <= o_.max_rank && capacity(s, o_.max_symbol_extent) <= o_.max_elements;
  }
  bool broadcast_fits(const Shape& a, const Shape& b) const {
    auto r = broadcast_result(a, b);
    return r && fits(*r);
  }

  // The driver (random_graph.cpp).
  ValueId emit(OpKind k, std::vector<Operand> args, Attrs attrs = {});
  void make_params();
  Shape random_shape(int rank);
  bool step();
  void choose_outputs();
  std::optional<ValueId> pick_value(const TypePredicate& ok);
  std::optional<ValueId> value_of_class(DTypeClass c, const TypePredicate& extra = {});
  std::optional<Operand> partner(ValueId a, bool allow_literal);
  std::optional<ValueId> shrunk(ValueId a);
  Operand literal(DType t);
  AttrValue scalar_attr(DType t);

  // One op family each (random_graph_ops.cpp); false when nothing fits.
  bool add_op(OpKind k);
  bool add_unary(OpKind k);
  bool add_binary(OpKind k);
  bool add_select();
  bool add_clamp();
  bool add_cast();
  bool add_broadcast();
  bool add_reshape();
  bool add_transpose();
  bool add_slice();
  ValueId slice_along(ValueId x, int64_t axis);
  bool add_concat();
  bool add_pad();
  bool add_gather();
  std::optional<ValueId> gather_indices(const Dim& extent, int max_rank, int64_t max_elements);
  bool add_iota();
  bool add_constant();
  bool add_reduction(OpKind k);
  bool add_dot();
  bool add_attention();
  bool add_composite();
  bool add_repeat();

  // Reduction -> consumer patterns (random_graph_patterns.cpp).
  bool add_reduction_pattern();
  std::vector<int64_t> pattern_axes(const Shape& s);
  ValueId reduced_back(OpKind k, ValueId x, const std::vector<int64_t>& axes);

  const RandomGraphOptions& o_;
  Rng rng_;
  GraphBuilder b_;
  std::vector<Dim> symbols_;  // the symbols the parameters carry, so inputs bind every one
  std::vector<ValueId> pattern_outputs_;  // per-row totals a pattern asked to return (LayerNorm's mean)
  std::vector<int64_t> last_pattern_axes_;  // so the next pattern may reduce the same axes (a chain)
};

}  // namespace stitch::testing::random_graph_detail
