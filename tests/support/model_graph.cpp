#include "model_graph.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "random_graph_generator.h"
#include "stitch/builder.h"

namespace stitch::testing {
namespace {

using random_graph_detail::mix_seed;
using random_graph_detail::Rng;

constexpr int64_t kToEnd = std::numeric_limits<int64_t>::max();  // a slice bound clamped to the extent

// GraphBuilder takes parameters only before the first op, and a block knows
// its weights' shapes only as it is drawn: the generator runs twice with the
// same draws. The first run stands a constant in for each weight and records
// its shape; the second declares those parameters first and uses them.
//
// Every call that draws or adds nodes is its own statement (C++ leaves the
// order of a call's arguments to the compiler), so a seed names one graph
// whatever compiles it.
class ModelGenerator {
 public:
  // `weights`: null for the first run; the first run's shapes for the second.
  ModelGenerator(const ModelGraphOptions& o, const std::vector<Shape>* weights)
      : o_(o), rng_(mix_seed(o.seed, 11)), b_(fmt::format("model_{}", o.seed)), declared_(weights != nullptr) {
    input_ = b_.param("x", DType::f32, stream(o_.hidden));
    if (weights) {
      for (const Shape& shape : *weights) weights_.push_back(b_.param(fmt::format("w{}", weights_.size()), DType::f32, shape));
    }
  }

  const std::vector<Shape>& weight_shapes() const { return shapes_; }

  Graph run() {
    ValueId h = input_;
    history_.push_back(h);
    int outputs = 0;
    while (static_cast<int>(b_.graph().nodes().size()) - stand_ins_ < o_.target_nodes) {
      h = block(h);
      history_.push_back(h);
      // A model that also returns some hidden states (a feature extractor).
      if (outputs < 3 && rng_.chance(0.02)) {
        b_.output(h);
        ++outputs;
      }
    }
    b_.output(norm(h), "y");
    return b_.finish();
  }

 private:
  Shape stream(int64_t last) const {
    return {o_.symbolic_batch ? Dim::symbol("B") : Dim(o_.batch), Dim(o_.seq), Dim(last)};
  }
  Dim batch() const { return o_.symbolic_batch ? Dim::symbol("B") : Dim(o_.batch); }

  ValueId param(Shape shape) {
    if (declared_) return weights_.at(shapes_used_++);
    shapes_.push_back(shape);
    ++stand_ins_;
    return b_.constant(0.0, DType::f32, std::move(shape));
  }

  // x[..., in] @ W[in, out] / sqrt(in) (+ bias[out]), as a model's
  // initialisation scales it, so the stream's magnitude stays modest.
  ValueId linear(ValueId x, int64_t in, int64_t out, bool bias) {
    ValueId y = b_.mul(b_.op("dot", {x, param({Dim(in), Dim(out)})}), 1.0 / std::sqrt(static_cast<double>(in)));
    return bias ? b_.add(y, param({Dim(out)})) : y;
  }

  ValueId norm(ValueId x) {
    const int64_t h = o_.hidden;
    if (rng_.chance(0.5)) return b_.op("layer_norm", {x, param({Dim(h)}), param({Dim(h)})}, {{"eps", 1e-5}});
    return b_.op("rms_norm", {x, param({Dim(h)})}, {{"eps", 1e-6}});
  }

  ValueId activation(ValueId x) {
    switch (rng_.below(4)) {
      case 0: return b_.op("gelu", {x});
      case 1: return b_.op("gelu", {x}, {{"approximate", "tanh"}});
      case 2: return b_.op("silu", {x});
      default: return b_.op("relu", {x});
    }
  }

  // Multi-head attention on the normed stream: QKV projections (one fused
  // projection sliced in three, or three), heads split by reshape and
  // transpose, scaled scores, a causal mask on some blocks, softmax,
  // probabilities times values, heads merged, output projection.
  ValueId attention(ValueId n) {
    const int64_t h = o_.hidden, nh = o_.heads, hd = o_.hidden / o_.heads, s = o_.seq;
    ValueId q, k, v;
    if (rng_.chance(0.5)) {
      ValueId qkv = linear(n, h, 3 * h, true);
      auto part = [&](int64_t i) {
        return b_.op("slice", {qkv}, {{"start", AttrValue::Ints{0, 0, i * h}}, {"stop", AttrValue::Ints{kToEnd, kToEnd, (i + 1) * h}}});
      };
      q = part(0), k = part(1), v = part(2);
    } else {
      q = linear(n, h, h, true), k = linear(n, h, h, false), v = linear(n, h, h, true);
    }
    auto heads = [&](ValueId x, AttrValue::Ints perm) {
      return b_.transpose(b_.reshape(x, {batch(), Dim(s), Dim(nh), Dim(hd)}), std::move(perm));
    };
    ValueId scores = b_.mul(b_.op("dot", {heads(q, {0, 2, 1, 3}), heads(k, {0, 2, 3, 1})}),
                            1.0 / std::sqrt(static_cast<double>(hd)));
    if (rng_.chance(0.5)) {
      const Shape square{Dim(s), Dim(s)};
      ValueId rows = b_.op("iota", {}, {{"shape", square}, {"axis", int64_t{0}}});
      ValueId cols = b_.op("iota", {}, {{"shape", square}, {"axis", int64_t{1}}});
      scores = b_.op("select", {b_.op("ge", {rows, cols}), scores, b_.constant(-1e9, DType::f32)});
    }
    ValueId probs = b_.op("softmax", {scores}, {{"axis", int64_t{-1}}});
    ValueId out = b_.op("dot", {probs, heads(v, {0, 2, 1, 3})});
    out = b_.reshape(b_.transpose(out, {0, 2, 1, 3}), stream(h));
    return linear(out, h, h, true);
  }

  // An MLP: dense, activation (or SwiGLU's gate), dense back.
  ValueId mlp(ValueId n) {
    const int64_t h = o_.hidden, f = o_.ffn;
    ValueId inner;
    if (rng_.chance(0.3)) {
      const ValueId up = linear(n, h, f, false);
      inner = b_.mul(b_.op("silu", {linear(n, h, f, false)}), up);
    } else {
      inner = activation(linear(n, h, f, true));
    }
    return linear(inner, f, h, true);
  }

  // The block of the model-scale crash, as a user wrote it:
  // a = h*c1 + c2; n = layer_norm(a); s = softmax(n); h + 0.5*gelu_tanh(n + s),
  // c1 and c2 scalars or rows (broadcast implicitly or explicitly).
  ValueId softmax_gelu_block(ValueId h) {
    Operand c1 = 1.5, c2 = 0.25;
    if (rng_.chance(0.5)) {
      c1 = param({Dim(o_.hidden)});
      c2 = rng_.chance(0.5) ? b_.broadcast(param({Dim(o_.hidden)}), stream(o_.hidden)) : param({Dim(o_.hidden)});
    }
    ValueId n = b_.op("layer_norm", {b_.add(b_.mul(h, c1), c2)}, {{"eps", 1e-5}});
    ValueId s = b_.op("softmax", {n}, {{"axis", int64_t{-1}}});
    return b_.add(h, b_.mul(b_.op("gelu", {b_.add(n, s)}, {{"approximate", "tanh"}}), 0.5));
  }

  // The hidden dim split in two halves, each through its own ops, joined.
  ValueId split_concat(ValueId x) {
    const int64_t half = o_.hidden / 2;
    ValueId lo = b_.op("slice", {x}, {{"start", AttrValue::Ints{0, 0, 0}}, {"stop", AttrValue::Ints{kToEnd, kToEnd, half}}});
    ValueId hi = b_.op("slice", {x}, {{"start", AttrValue::Ints{0, 0, half}}, {"stop", AttrValue::Ints{kToEnd, kToEnd, kToEnd}}});
    return b_.op("concat", {b_.op("tanh", {lo}), b_.mul(b_.op("sigmoid", {hi}), hi)}, {{"axis", int64_t{-1}}});
  }

  // RWKV-style token shift: each position mixed with the one before (pad
  // then slice along the sequence).
  ValueId token_shift(ValueId x) {
    ValueId padded = b_.op("pad", {x}, {{"low", AttrValue::Ints{0, 1, 0}}, {"high", AttrValue::Ints{0, 0, 0}}});
    ValueId before = b_.op("slice", {padded}, {{"start", AttrValue::Ints{0, 0, 0}}, {"stop", AttrValue::Ints{kToEnd, o_.seq, kToEnd}}});
    ValueId mu = b_.op("sigmoid", {param({Dim(o_.hidden)})});
    const ValueId kept = b_.mul(before, b_.sub(1.0, mu));
    return b_.add(b_.mul(x, mu), kept);
  }

  // MLP-Mixer's token mixing: the stream transposed to [batch, hidden, seq],
  // a dense layer over the sequence, transposed back.
  ValueId token_mixing(ValueId n) {
    ValueId t = b_.transpose(n, {0, 2, 1});
    ValueId mixed = activation(linear(t, o_.seq, o_.seq, true));
    return b_.transpose(mixed, {0, 2, 1});
  }

  // A softmax over the sequence (a column of the stream), through transposes.
  ValueId sequence_softmax(ValueId x) {
    ValueId t = b_.op("softmax", {b_.transpose(x, {0, 2, 1})}, {{"axis", int64_t{-1}}});
    return b_.mul(b_.transpose(t, {0, 2, 1}), x);
  }

  // Batch-norm-like centring and scaling over the sequence (column reductions).
  ValueId column_norm(ValueId x) {
    ValueId centred = b_.sub(x, b_.reduce(OpKind::ReduceMean, x, {1}, true));
    ValueId var = b_.reduce(OpKind::ReduceMean, b_.mul(centred, centred), {1}, true);
    const ValueId scale = param({Dim(o_.hidden)});
    return b_.mul(b_.mul(centred, b_.op("rsqrt", {b_.add(var, 1.0)})), scale);
  }

  ValueId block(ValueId h) {
    const std::vector<double> weights{3, 3, 2, 1, 1, 1, 1, 1, 1.5, 0.5};
    switch (rng_.weighted(weights)) {
      case 0: return b_.add(h, attention(norm(h)));
      case 1: return b_.add(h, mlp(norm(h)));
      case 2: return softmax_gelu_block(h);
      case 3: return b_.add(h, b_.mul(split_concat(norm(h)), 0.5));
      case 4: return token_shift(h);
      case 5: return b_.add(h, token_mixing(norm(h)));
      case 6: return b_.add(h, b_.mul(sequence_softmax(norm(h)), 0.5));
      case 7: return b_.add(h, column_norm(h));
      case 8: {
        // Parallel branches on one normed input (GPT-J's block).
        ValueId n = norm(h);
        const ValueId m = mlp(n);
        return b_.add(b_.add(h, attention(n)), m);
      }
      default: {
        // A long skip from an earlier block's stream.
        const ValueId earlier = history_[rng_.below(static_cast<int64_t>(history_.size()))];
        return b_.add(h, b_.mul(earlier, 0.5));
      }
    }
  }

  const ModelGraphOptions o_;
  Rng rng_;
  GraphBuilder b_;
  const bool declared_;
  ValueId input_;
  std::vector<ValueId> weights_;  // the second run's parameters
  std::vector<Shape> shapes_;     // the first run's weight shapes
  size_t shapes_used_ = 0;
  int stand_ins_ = 0;             // the first run's constants standing in for weights
  std::vector<ValueId> history_;
};

}  // namespace

ModelGraphOptions model_graph_options(uint64_t seed, int min_nodes, int max_nodes, bool run_sized) {
  Rng rng(mix_seed(seed, 12));
  ModelGraphOptions o;
  o.seed = seed;
  o.target_nodes = static_cast<int>(rng.between(min_nodes, max_nodes));
  o.symbolic_batch = rng.chance(0.3);
  if (run_sized) {
    // At most 2 x 8 x 32 = 512 elements a stream (B bound to at most 3).
    o.batch = rng.between(1, 2);
    o.seq = rng.pick(std::vector<int64_t>{4, 8});
    o.hidden = rng.pick(std::vector<int64_t>{16, 32});
    o.heads = rng.pick(std::vector<int64_t>{1, 2});
    o.ffn = rng.pick(std::vector<int64_t>{8, 2 * o.hidden});
    return o;
  }
  // A few thousand to a few million elements a tensor: the stream, the
  // scores (batch x heads x seq x seq), the weights (hidden x 3 hidden, hidden
  // x ffn). A symbolic batch counts as the cost model's 1024 when planned
  // unbound, so it gets the short sequences.
  const std::vector<int64_t> hiddens{32, 64, 128, 256, 512, 768};
  const std::vector<int64_t> seqs{8, 16, 32, 64, 128, 256, 512};
  for (;;) {
    o.hidden = rng.pick(hiddens);
    o.seq = rng.pick(seqs);
    o.batch = rng.pick(std::vector<int64_t>{1, 2, 4, 8});
    const int64_t head_dim = rng.pick(std::vector<int64_t>{16, 32, 64});
    o.heads = std::max<int64_t>(1, o.hidden / head_dim);
    o.ffn = rng.chance(0.25) ? 16 : 4 * o.hidden;
    const int64_t b = o.symbolic_batch ? 4 : o.batch;
    const int64_t stream = b * o.seq * o.hidden;
    const int64_t scores = b * o.heads * o.seq * o.seq;
    if (stream >= 2048 && stream <= (4 << 20) && scores <= (4 << 20) && o.hidden * o.ffn <= (4 << 20)) break;
  }
  return o;
}

Graph model_graph(const ModelGraphOptions& options) {
  ModelGenerator first(options, nullptr);
  first.run();
  const std::vector<Shape> weights = first.weight_shapes();
  return ModelGenerator(options, &weights).run();
}

std::string describe(const ModelGraphOptions& o) {
  return fmt::format("model graph seed {}: ~{} nodes, stream [{}, {}, {}], {} heads, ffn {}", o.seed, o.target_nodes,
                     o.symbolic_batch ? std::string("B") : std::to_string(o.batch), o.seq, o.hidden, o.heads, o.ffn);
}

}  // namespace stitch::testing
