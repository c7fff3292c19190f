// libFuzzer target for the fusion planners (docs/fuzzing.md, The planners).
// The input is a list of decisions, read a byte at a time: which op to add
// next, which earlier values it reads, its shapes and attributes. They build
// a well-typed graph through GraphBuilder (every op is chosen from the types
// already in the graph, so the builder never rejects one); the graph is
// canonicalised and planned by every planner, and each plan must be a valid
// cover (tests/support/plan_checks.h). A violation, an exception escaping a
// planner, or a UserError while building (a bug in this generator) aborts
// with the graph printed, so libFuzzer records it.
//
// Two modes, chosen by the first byte: free graphs of at most kFreeNodes
// nodes, and model-shaped ones, where a block of ops read from the input is
// repeated over a residual stream up to kModelNodes nodes, so that long
// chains and packing (kernels of at most 64 Ki elements) are reached.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "fusion/planner.h"
#include "ir/canonicalize.h"
#include "plan_checks.h"
#include "stitch/builder.h"
#include "stitch/text.h"

namespace stitch {
namespace {

// Primitive nodes (composite expansions and literals count) past which no
// more ops are added. The five planners take about half a second on a graph
// of kModelNodes under the sanitizers, and a tenth on one of kFreeNodes.
constexpr int kFreeNodes = 200;
constexpr int kModelNodes = 500;
constexpr int kMaxRank = 4;
// Concat and pad, repeated in a block, grow an extent without bound, and a
// reshape can gather a tensor into one; kept at most 2^11, a tensor of rank 4
// has at most 2^44 elements, 2^47 bytes of f64, inside the 2^48 a tensor may
// have (docs/limits.md).
constexpr int64_t kMaxExtent = 2048;
constexpr int64_t kToEnd = std::numeric_limits<int64_t>::max();  // a slice bound clamped to the extent

constexpr PlannerKind kPlanners[] = {PlannerKind::None, PlannerKind::Xla, PlannerKind::Greedy, PlannerKind::Stitch,
                                     PlannerKind::Ilp};

// The input as decisions; once it is spent every byte reads as 0, so any
// decision still pending takes its first choice and the graph is finished.
class ByteReader {
 public:
  ByteReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool spent() const { return pos_ >= size_; }
  size_t pos() const { return pos_; }
  void seek(size_t pos) { pos_ = pos; }
  uint8_t byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  // Uniform enough in [0, n) for the small n used here.
  int below(int n) {
    if (n <= 1) return 0;
    if (n <= 256) return byte() % n;
    const int low = byte();
    return (low | byte() << 8) % n;
  }
  bool chance(int in_256) { return byte() < in_256; }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[below(static_cast<int>(v.size()))];
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// Extents of new tensors: small, with the edges the planners care about (1
// broadcasts, 32 and 33 around the small dot's contraction limit, 0 for empty
// tensors) and symbols, which the cost model counts as 1,024.
const std::vector<int64_t> kExtents{1, 2, 3, 4, 5, 8, 16, 32, 33, 64, 128, 256};
const std::vector<DType> kFloats{DType::f32, DType::f32, DType::f32, DType::f16, DType::bf16, DType::f64};

bool broadcastable(const Shape& a, const Shape& b) {
  for (size_t i = 1; i <= std::min(a.size(), b.size()); ++i) {
    const Dim& x = a[a.size() - i];
    const Dim& y = b[b.size() - i];
    bool one = (x.is_static() && x.extent() == 1) || (y.is_static() && y.extent() == 1);
    if (x != y && !one) return false;
  }
  return true;
}

// Whether `from` broadcasts to exactly `to`.
bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  for (size_t i = 1; i <= from.size(); ++i) {
    const Dim& x = from[from.size() - i];
    if (x != to[to.size() - i] && !(x.is_static() && x.extent() == 1)) return false;
  }
  return true;
}

std::vector<int64_t> prime_factors(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t p = 2; p * p <= n; ++p)
    for (; n % p == 0; n /= p) out.push_back(p);
  if (n > 1) out.push_back(n);
  return out;
}

// GraphBuilder takes parameters only before the first op, and a new input's
// type is known only when an op needs it: the generator runs twice on the
// same bytes. The first run stands a constant in for each input and records
// its type; the second declares those parameters first and uses them.
// Decisions are read in separate statements, never two in one call's
// arguments, whose order of evaluation is unspecified: an input means the
// same graph whatever the compiler.
class PlannerGraphGenerator {
 public:
  PlannerGraphGenerator(const uint8_t* data, size_t size, const std::vector<TensorType>* declared)
      : in_(data, size), b_("fuzz"), declared_(declared != nullptr) {
    if (declared) {
      for (const TensorType& t : *declared)
        inputs_.push_back(b_.param("in" + std::to_string(inputs_.size()), t.dtype, t.shape));
    }
  }

  const std::vector<TensorType>& input_types() const { return input_types_; }
  const GraphBuilder& builder() const { return b_; }
  PlanOptions options() const { return options_; }

  Graph run() {
    // The first byte: the mode (one input in eight model-shaped) and the
    // planners' options: the CPU's, the GPU's, or the CPU's under a fusion
    // cap. A cap leaves xla's plan nearly unfused, and the searching planners
    // then score patterns over hundreds of one-op kernels (seconds under the
    // sanitizers at 500 nodes), so it is drawn for free graphs only.
    const uint8_t header = in_.byte();
    const bool model = (header & 7) == 7;
    if (header >> 6 == 2) {
      options_ = PlanOptions::for_gpu();
    } else if (header >> 6 == 3 && !model) {
      options_.max_fusions = in_.below(24);
    }
    if (model) {
      model_graph();
    } else {
      free_graph();
    }
    return finish();
  }

 private:
  int nodes() const { return static_cast<int>(b_.graph().nodes().size()) - stand_ins_; }
  const TensorType& type(ValueId v) const { return b_.graph().type(v); }
  const Shape& shape(ValueId v) const { return type(v).shape; }
  int rank(ValueId v) const { return type(v).rank(); }

  // `v`, kept for later ops to read.
  ValueId pooled(ValueId v) {
    pool_.push_back(v);
    return v;
  }

  // A new input: a parameter, or sometimes a constant or an iota.
  ValueId leaf(DType dtype, Shape shape) {
    const int kind = in_.below(8);
    if (kind == 0) return pooled(b_.constant(0.5, dtype, std::move(shape)));
    if (kind == 1 && !shape.empty()) {
      const int64_t axis = in_.below(static_cast<int>(shape.size()));
      return pooled(b_.op("iota", {}, {{"shape", shape}, {"axis", axis}, {"dtype", dtype}}));
    }
    if (declared_) {
      ValueId v = inputs_.at(inputs_used_++);
      return pooled(v);
    }
    input_types_.push_back({dtype, shape});
    ++stand_ins_;
    return pooled(b_.constant(0.0, dtype, std::move(shape)));
  }

  Dim extent() {
    const int r = in_.below(64);
    if (r == 0) return Dim(0);
    if (r == 1) return Dim::symbol("B");
    if (r == 2) return Dim::symbol("S");
    return Dim(kExtents[r % kExtents.size()]);
  }

  Shape new_shape() {
    Shape s;
    for (int d = 0, r = 1 + in_.below(kMaxRank); d < r; ++d) s.push_back(extent());
    return s;
  }

  // An earlier value that `ok` accepts, the recent ones more likely, so that
  // chains form, but any of them reachable, so that values get many readers;
  // without a list of the candidates: generating is a third of a run's time
  // otherwise.
  template <class Pred>
  std::optional<ValueId> pick(Pred ok) {
    const uint8_t r = in_.byte();
    if (r < 128) {
      // The (r % k)-th last of the last k <= 8 candidates.
      ValueId recent[8];
      int k = 0;
      for (size_t i = pool_.size(); i-- > 0 && k < 8;)
        if (ok(pool_[i])) recent[k++] = pool_[i];
      if (k == 0) return std::nullopt;
      return recent[r % k];
    }
    size_t count = 0;
    for (ValueId v : pool_) count += ok(v);
    if (count == 0) return std::nullopt;
    size_t want = (static_cast<size_t>(r) << 8 | in_.byte()) % count;
    for (ValueId v : pool_)
      if (ok(v) && want-- == 0) return v;
    return std::nullopt;
  }

  ValueId any_float() {
    if (auto v = pick([&](ValueId x) { return is_float(type(x).dtype); })) return *v;
    return leaf(DType::f32, new_shape());
  }

  // A float value of rank 1 or more.
  ValueId ranked_float() {
    if (auto v = pick([&](ValueId x) { return rank(x) >= 1 && is_float(type(x).dtype); })) return *v;
    return leaf(DType::f32, new_shape());
  }

  // A value of `dtype` and of `like`'s shape, or a shape that broadcasts
  // with it: an earlier value or a new input (the same shape, some dims 1,
  // or a suffix).
  Operand partner(DType dtype, Shape like) {
    const int r = in_.below(8);
    if (r == 0) return Operand(0.5 + in_.below(4));
    if (r <= 4) {
      auto v = pick([&](ValueId x) { return type(x).dtype == dtype && broadcastable(shape(x), like); });
      if (v) return *v;
    }
    Shape s(like.begin() + in_.below(static_cast<int>(like.size()) + 1), like.end());
    for (Dim& d : s)
      if (in_.chance(48)) d = Dim(1);
    return leaf(dtype, s);
  }

  // Each op adds one or a few values, read from earlier ones by type.
  void step() {
    static const std::vector<int> kWeights{6, 8, 2, 6, 1, 3, 4, 3, 3, 2, 1, 3, 3, 3, 3, 2, 1, 1, 1};
    int total = 0;
    for (int w : kWeights) total += w;
    int r = in_.below(total), op = 0;
    while (r >= kWeights[op]) r -= kWeights[op++];
    switch (op) {
      case 0: return unary();
      case 1: return binary();
      case 2: return compare_select();
      case 3: return reduction();
      case 4: return arg_reduction();
      case 5: return broadcast();
      case 6: return reshape();
      case 7: return transpose();
      case 8: return slice();
      case 9: return concat();
      case 10: return pad();
      case 11: return dot(/*small=*/true);
      case 12: return dot(/*small=*/false);
      case 13: return softmax();
      case 14: return norm();
      case 15: return activation();
      case 16: return logsumexp();
      case 17: return cast();
      default: {
        // An output that is also read: a kernel's root that leaves the graph.
        if (!pool_.empty()) marked_.push_back(pool_[in_.below(static_cast<int>(pool_.size()))]);
        return;
      }
    }
  }

  void unary() {
    static const std::vector<const char*> kOps{"neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid",
                                               "relu", "erf", "sin", "floor", "reciprocal", "log1p"};
    const char* op = in_.pick(kOps);
    pooled(b_.op(op, {any_float()}));
  }

  void binary() {
    static const std::vector<const char*> kOps{"add", "add", "sub", "mul", "mul", "div", "max", "min", "pow"};
    ValueId x = any_float();
    Operand y = partner(type(x).dtype, shape(x));
    const char* op = in_.pick(kOps);
    pooled(in_.chance(64) ? b_.op(op, {y, x}) : b_.op(op, {x, y}));
  }

  void compare_select() {
    static const std::vector<const char*> kOps{"gt", "lt", "ge", "eq"};
    ValueId x = any_float();
    const char* op = in_.pick(kOps);
    ValueId c = pooled(b_.op(op, {x, partner(type(x).dtype, shape(x))}));
    // c's shape is x's broadcast with the first partner: the second must broadcast with it.
    pooled(b_.op("select", {c, x, partner(type(x).dtype, shape(c))}));
  }

  std::vector<int64_t> axes_of(int r) {
    std::vector<int64_t> axes;
    const int mask = in_.byte();
    for (int d = 0; d < r; ++d)
      if (mask & (1 << d)) axes.push_back(d);
    if (axes.empty()) axes.push_back(r - 1);
    return axes;
  }

  void reduction() {
    static const std::vector<OpKind> kOps{OpKind::ReduceSum, OpKind::ReduceMax, OpKind::ReduceMean,
                                          OpKind::ReduceMin, OpKind::ReduceProd};
    ValueId x = ranked_float();
    const OpKind k = in_.pick(kOps);
    std::vector<int64_t> axes = axes_of(rank(x));
    pooled(b_.reduce(k, x, std::move(axes), in_.chance(128)));
  }

  void arg_reduction() {
    ValueId x = any_float();
    if (rank(x) == 0) return;
    const char* op = in_.chance(128) ? "argmax" : "argmin";
    ValueId i = b_.op(op, {x}, {{"axes", AttrValue::Ints{in_.below(rank(x))}}, {"keepdims", in_.chance(128)}});
    pooled(b_.cast(i, type(x).dtype));
  }

  void broadcast() {
    ValueId x = any_float();
    Shape target = shape(x);
    for (Dim& d : target)
      if (d.is_static() && d.extent() == 1 && in_.chance(160)) d = extent();
    for (int n = in_.below(kMaxRank - rank(x) + 1); n > 0; --n) target.insert(target.begin(), extent());
    pooled(b_.broadcast(x, target));
  }

  void reshape() {
    ValueId x = any_float();
    std::vector<Dim> symbols;
    int64_t product = 1;
    for (const Dim& d : shape(x)) {
      if (d.is_symbolic()) symbols.push_back(d);
      else product *= d.extent();
    }
    const int statics = std::max(product == 1 ? 0 : 1, 1 + in_.below(kMaxRank) - static_cast<int>(symbols.size()));
    std::vector<int64_t> dims(statics, 1);
    if (product == 0) {
      for (int64_t& d : dims) d = kExtents[in_.below(static_cast<int>(kExtents.size()))];
      dims[in_.below(statics)] = 0;
    } else if (statics > 0) {
      // Each factor, largest first, to a chosen dim, or the next one it fits
      // in (kMaxExtent); none: no reshape.
      std::vector<int64_t> factors = prime_factors(product);
      for (auto p = factors.rbegin(); p != factors.rend(); ++p) {
        int at = in_.below(statics);
        for (int tried = 1; tried < statics && dims[at] * *p > kMaxExtent; ++tried) at = (at + 1) % statics;
        if (dims[at] * *p > kMaxExtent) return;
        dims[at] *= *p;
      }
    }
    // The symbols keep their order, each at a chosen place among the static dims.
    Shape target;
    for (int64_t d : dims) target.push_back(Dim(d));
    for (const Dim& s : symbols) {
      const int at = in_.below(static_cast<int>(target.size()) + 1);
      target.insert(target.begin() + at, s);
    }
    pooled(b_.reshape(x, target));
  }

  void transpose() {
    ValueId x = any_float();
    std::vector<int64_t> perm(rank(x));
    for (int i = 0; i < rank(x); ++i) perm[i] = i;
    for (int i = rank(x) - 1; i > 0; --i) std::swap(perm[i], perm[in_.below(i + 1)]);
    pooled(b_.transpose(x, perm));
  }

  void slice() {
    ValueId x = any_float();
    AttrValue::Ints start, step;
    Shape stop;
    for (const Dim& d : shape(x)) {
      int64_t s = 0, e = kToEnd, st = 1;
      if (d.is_static() && d.extent() > 1 && in_.chance(170)) {
        const int64_t n = d.extent();
        s = in_.below(static_cast<int>(std::min<int64_t>(n, 256)));
        e = s + 1 + in_.below(static_cast<int>(std::min<int64_t>(n - s, 256)));
        st = 1 + (in_.chance(64) ? in_.below(3) : 0);
        if (in_.chance(48)) s -= n;  // counted from the end
      }
      start.push_back(s);
      stop.push_back(Dim(e));
      step.push_back(st);
    }
    pooled(b_.op("slice", {x}, {{"start", start}, {"stop", stop}, {"step", step}}));
  }

  void concat() {
    ValueId x = any_float();
    std::vector<int> axes;
    for (int d = 0; d < rank(x); ++d)
      if (shape(x)[d].is_static()) axes.push_back(d);
    if (axes.empty()) return;
    const int axis = in_.pick(axes);
    std::vector<Operand> args{x};
    for (int n = 1 + in_.below(3); n > 0; --n) {
      const int r = in_.below(4);
      if (r == 0) {
        args.emplace_back(x);
        continue;
      }
      auto same_off_axis = [&](ValueId v) {
        if (type(v).dtype != type(x).dtype || rank(v) != rank(x) || shape(v)[axis].is_symbolic()) return false;
        for (int d = 0; d < rank(x); ++d)
          if (d != axis && shape(v)[d] != shape(x)[d]) return false;
        return true;
      };
      std::optional<ValueId> v;
      if (r == 1) v = pick(same_off_axis);
      if (!v) {
        Shape s = shape(x);
        s[axis] = Dim(kExtents[in_.below(static_cast<int>(kExtents.size()))]);
        v = leaf(type(x).dtype, s);
      }
      args.emplace_back(*v);
    }
    int64_t extent = 0;
    for (const Operand& a : args) extent += shape(a.value)[axis].extent();
    if (extent > kMaxExtent) return;
    pooled(b_.op("concat", args, {{"axis", int64_t{axis}}}));
  }

  void pad() {
    ValueId x = any_float();
    AttrValue::Ints low, high;
    for (const Dim& d : shape(x)) {
      const bool padded = d.is_static() && in_.chance(128) && d.extent() + 4 <= kMaxExtent;
      low.push_back(padded ? in_.below(3) : 0);
      high.push_back(padded ? in_.below(3) : 0);
    }
    pooled(b_.op("pad", {x}, {{"low", low}, {"high", high}}));
  }

  // x[..., K] @ w[..., K, N]: `small` takes a static K of at most 32 (the
  // small dot fused into its consumer), otherwise a larger or symbolic one.
  void dot(bool small) {
    auto fits = [&](ValueId v) {
      if (!is_float(type(v).dtype) || rank(v) == 0) return false;
      const Dim& k = shape(v).back();
      return small ? k.is_static() && k.extent() <= 32 : !k.is_static() || k.extent() > 32;
    };
    std::optional<ValueId> x = in_.chance(192) ? pick(fits) : std::nullopt;
    if (!x) {
      Shape s = new_shape();
      s.back() = small ? Dim(1 + in_.below(32)) : Dim(in_.chance(32) ? 1024 : 33 + in_.below(224));
      x = leaf(DType::f32, s);
    }
    const Shape xs = shape(*x);  // a copy: leaf() below may move the graph's values
    const Dim k = xs.back();
    // w is a vector [K], a matrix [K, N], or batched like x.
    Shape ws;
    const int form = in_.below(4);
    if (form == 1 && xs.size() >= 3) ws.assign(xs.begin(), xs.end() - 2);
    ws.push_back(k);
    if (form != 0) ws.push_back(Dim(kExtents[in_.below(static_cast<int>(kExtents.size()))]));
    const DType dtype = type(*x).dtype;
    std::optional<ValueId> w;
    if (in_.chance(96)) w = pick([&](ValueId v) { return type(v).dtype == dtype && shape(v) == ws; });
    if (!w) w = leaf(dtype, ws);
    pooled(b_.op("dot", {*x, *w}));
  }

  void softmax() {
    ValueId x = ranked_float();
    const int64_t axis = in_.below(2 * rank(x)) - rank(x);
    pooled(b_.op(in_.chance(200) ? "softmax" : "log_softmax", {x}, {{"axis", axis}}));
  }

  void norm() {
    ValueId x = ranked_float();
    const int normed = rank(x) >= 2 && in_.chance(48) ? 2 : 1;
    const Shape row(shape(x).end() - normed, shape(x).end());
    AttrValue::Ints axes;
    for (int i = -normed; i < 0; ++i) axes.push_back(i);
    const bool layer = in_.chance(128);
    std::vector<Operand> args{x};
    for (int n = in_.below(layer ? 3 : 2); n > 0; --n) {
      std::optional<ValueId> p;
      if (in_.chance(96)) p = pick([&](ValueId v) { return type(v).dtype == type(x).dtype && shape(v) == row; });
      args.emplace_back(p ? *p : leaf(type(x).dtype, row));
    }
    pooled(b_.op(layer ? "layer_norm" : "rms_norm", args, {{"axes", axes}, {"eps", 1e-5}}));
  }

  void activation() {
    ValueId x = any_float();
    const int r = in_.below(3);
    if (r == 2) {
      pooled(b_.op("silu", {x}));
    } else {
      pooled(b_.op("gelu", {x}, {{"approximate", r == 0 ? "none" : "tanh"}}));
    }
  }

  void logsumexp() {
    ValueId x = ranked_float();
    pooled(b_.op("logsumexp", {x}, {{"axes", axes_of(rank(x))}, {"keepdims", in_.chance(128)}}));
  }

  void cast() {
    ValueId x = any_float();
    pooled(b_.cast(x, in_.pick(kFloats)));
  }

  void free_graph() {
    for (int n = 1 + in_.below(3); n > 0; --n) {
      const DType dtype = in_.pick(kFloats);
      leaf(dtype, new_shape());
    }
    while (!in_.spent() && nodes() < kFreeNodes) step();
  }

  // A residual stream f32[batch, seq, hidden] through a block of ops read
  // once from the input and repeated, each repetition ending in h + v for
  // the block's last value v that broadcasts to the stream.
  void model_graph() {
    static const std::vector<int64_t> kSeq{1, 4, 8, 16, 64, 128, 512};
    static const std::vector<int64_t> kHidden{8, 16, 32, 48, 64, 256, 768};
    const Dim batch = in_.chance(64) ? Dim::symbol("B") : Dim(1 + in_.below(8));
    const Shape stream{batch, Dim(in_.pick(kSeq)), Dim(in_.pick(kHidden))};
    const int repeats = 2 + in_.below(200);
    const int ops = 2 + in_.below(14);
    ValueId h = leaf(DType::f32, stream);
    const size_t block = in_.pos();
    for (int rep = 0; rep < repeats && nodes() < kModelNodes; ++rep) {
      in_.seek(block);
      const size_t first = pool_.size();
      pool_.push_back(h);
      for (int i = 0; i < ops && nodes() < kModelNodes; ++i) step();
      ValueId v = h;
      for (size_t i = pool_.size(); i-- > first + 1;) {
        if (type(pool_[i]).dtype == DType::f32 && broadcasts_to(shape(pool_[i]), stream)) {
          v = pool_[i];
          break;
        }
      }
      h = pooled(b_.add(h, v == h ? b_.op("tanh", {h}) : v));
    }
    while (!in_.spent() && nodes() < kModelNodes) step();
    marked_.push_back(h);
  }

  // Outputs: the values marked as outputs and every value no op reads.
  Graph finish() {
    std::vector<bool> read(b_.graph().num_values(), false), out(b_.graph().num_values(), false);
    for (const Node& n : b_.graph().nodes())
      for (ValueId v : n.inputs) read[v.index] = true;
    if (!pool_.empty()) marked_.push_back(pool_.back());
    for (ValueId v : pool_)
      if (!read[v.index] && b_.graph().value(v).producer >= 0) marked_.push_back(v);
    if (marked_.empty()) marked_.push_back(any_float());
    for (ValueId v : marked_) {
      if (out[v.index]) continue;
      out[v.index] = true;
      b_.output(v);
    }
    return b_.finish();
  }

  ByteReader in_;
  GraphBuilder b_;
  const bool declared_;
  PlanOptions options_;
  std::vector<ValueId> inputs_;           // the second run's parameters
  std::vector<TensorType> input_types_;   // the first run's
  size_t inputs_used_ = 0;
  int stand_ins_ = 0;                     // the first run's constants standing in for inputs
  std::vector<ValueId> pool_;             // every value an op may read, in creation order
  std::vector<ValueId> marked_;           // outputs chosen while building
};

[[noreturn]] void finding(const std::string& what, const std::string& detail) {
  std::fprintf(stderr, "planner_fuzzer: %s\n%s\n", what.c_str(), detail.c_str());
  std::abort();
}

}  // namespace
}  // namespace stitch

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace stitch;
  Graph g;
  PlanOptions options;
  {
    PlannerGraphGenerator first(data, size, nullptr);
    try {
      first.run();
    } catch (const UserError& e) {
      finding(std::string("the generator built an invalid op: ") + e.what(), print_graph(first.builder().graph()));
    }
    PlannerGraphGenerator second(data, size, &first.input_types());
    try {
      g = second.run();
    } catch (const UserError& e) {
      finding(std::string("the generator built an invalid op: ") + e.what(), print_graph(second.builder().graph()));
    }
    options = second.options();
  }
  // CBC's branch and bound on a 500-node graph can take seconds under the
  // sanitizers' allocator (an input of 422 nodes took 11 s, past libFuzzer's
  // timeout); the ILP planner must make a valid plan under any time limit,
  // and a short one also reaches its unproven path.
  options.ilp_time_limit_seconds = 1;
  Graph canonical;
  try {
    canonical = canonicalize(g);
  } catch (const std::exception& e) {
    finding(std::string("canonicalize failed: ") + e.what(), print_graph(g));
  }
  // PLANNER_FUZZER_PRINT=1: the canonical graph of each input and what each
  // planner made of it, to replay a finding with `stitch plan`.
  static const bool print = std::getenv("PLANNER_FUZZER_PRINT") != nullptr;
  if (print) {
    std::fprintf(stderr, "%s\n%zu nodes, %zu outputs\n", print_graph(canonical).c_str(), canonical.nodes().size(),
                 canonical.outputs().size());
  }
  for (PlannerKind kind : kPlanners) {
    const std::string planner(planner_name(kind));
    FusionPlan p;
    const auto start = std::chrono::steady_clock::now();
    try {
      p = plan(canonical, kind, options);
    } catch (const std::exception& e) {
      finding("planner " + planner + " failed: " + e.what(), print_graph(canonical));
    }
    if (print) {
      std::fprintf(stderr, "planner %s: %d kernels, %.3f s\n", planner.c_str(), p.kernel_count(),
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    const std::string problems = testing::plan_invariant_violations(canonical, p);
    if (!problems.empty()) {
      finding("planner " + planner + " made an invalid plan:\n" + problems,
              print_graph(canonical) + "\n" + print_plan(canonical, p));
    }
  }
  return 0;
}
