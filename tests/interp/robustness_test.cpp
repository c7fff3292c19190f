// "Never crash on any graph the builder accepts": random small graphs over
// every primitive op, dtype and attribute shape, zero-size dims included. A
// graph the builder rejects is skipped; running an accepted one may raise a
// UserError (a gather index out of range, argmax over an empty axis) and
// nothing else. Best run under the sanitizers, where it found nothing.
#include <cstdint>

#include <gtest/gtest.h>


#include "random_graph_generator.h"
#include "stitch/builder.h"
#include "stitch/interpreter.h"

namespace stitch {
namespace {

class RandomGraphs {
 public:
  explicit RandomGraphs(uint64_t seed) : rng_(seed) {}

  int64_t pick(int64_t lo, int64_t hi) { return rng_.between(lo, hi); }
  bool coin() { return pick(0, 1) == 1; }
  DType dtype() { return kAllDTypes[pick(0, 7)]; }

  std::vector<int64_t> shape() {
    std::vector<int64_t> s(pick(0, 3));
    for (int64_t& d : s) d = pick(0, 3);
    return s;
  }
  static Shape as_shape(const std::vector<int64_t>& s) { return Shape(s.begin(), s.end()); }

  // Attributes that are often, not always, valid for `op` on an operand of `shape`.
  Attrs attrs_for(OpKind op, const std::vector<int64_t>& shape) {
    const int64_t rank = static_cast<int64_t>(shape.size());
    auto axis = [&] { return pick(-rank, std::max<int64_t>(rank - 1, 0)); };
    AttrValue::Ints all_axes;
    for (int64_t d = 0; d < rank; ++d) {
      if (coin()) all_axes.push_back(d);
    }
    switch (op) {
      case OpKind::Cast: return {{"to", AttrValue(dtype())}};
      case OpKind::Broadcast: {
        std::vector<int64_t> target = shape;
        if (coin()) target.insert(target.begin(), pick(0, 2));
        for (int64_t& d : target) {
          if (d == 1) d = pick(0, 3);
        }
        return {{"shape", AttrValue(as_shape(target))}};
      }
      case OpKind::Reshape: {
        std::vector<int64_t> target{-1};
        if (coin()) target.push_back(1);
        return {{"shape", AttrValue(as_shape(target))}};
      }
      case OpKind::Transpose: {
        AttrValue::Ints perm(rank);
        for (int64_t d = 0; d < rank; ++d) perm[d] = d;
        rng_.shuffle(perm);
        return {{"perm", AttrValue(perm)}};
      }
      case OpKind::Slice: {
        AttrValue::Ints start, stop, step;
        for (int64_t d = 0; d < rank; ++d) {
          start.push_back(pick(-4, 4));
          stop.push_back(pick(-4, 5));
          step.push_back(pick(0, 7) == 0 ? int64_t{1} << 62 : pick(1, 3));
        }
        return {{"start", AttrValue(start)}, {"stop", AttrValue(stop)}, {"step", AttrValue(step)}};
      }
      case OpKind::Concat:
      case OpKind::Gather: return {{"axis", AttrValue(axis())}};
      case OpKind::Pad: {
        AttrValue::Ints low, high;
        for (int64_t d = 0; d < rank; ++d) {
          low.push_back(pick(0, 2));
          high.push_back(pick(0, 2));
        }
        return {{"low", AttrValue(low)}, {"high", AttrValue(high)}, {"value", AttrValue(int64_t{1})}};
      }
      case OpKind::Iota:
        return {{"shape", AttrValue(as_shape(shape))}, {"axis", AttrValue(axis())}, {"dtype", AttrValue(dtype())}};
      case OpKind::Constant:
        return {{"value", AttrValue(int64_t{1})}, {"shape", AttrValue(as_shape(shape))}, {"dtype", AttrValue(dtype())}};
      case OpKind::ArgMax:
      case OpKind::ArgMin: return {{"axes", AttrValue(AttrValue::Ints{axis()})}, {"keepdims", AttrValue(coin())}};
      default:
        if (is_reduction(op)) return {{"axes", AttrValue(all_axes)}, {"keepdims", AttrValue(coin())}};
        return {};
    }
  }

  // One op on fresh parameters; operands share a dtype and a (broadcastable) shape.
  void run_one() {
    const OpKind op = static_cast<OpKind>(pick(0, op_kind_count() - 1));
    const std::vector<int64_t> shape = this->shape();
    const DType t = dtype();
    const OpInfo& info = op_info(op);
    int arity = info.max_inputs < 0 ? static_cast<int>(pick(1, 3)) : static_cast<int>(pick(info.min_inputs, info.max_inputs));
    GraphBuilder b("random");
    std::vector<Tensor> inputs;
    std::vector<ValueId> params;
    try {
      for (int i = 0; i < arity; ++i) {
        DType operand_dtype = t;
        std::vector<int64_t> operand_shape = shape;
        if (op == OpKind::Select && i == 0) operand_dtype = DType::boolean;
        if (op == OpKind::Gather && i == 1) {
          operand_dtype = coin() ? DType::i32 : DType::i64;
          operand_shape = this->shape();
        }
        if (op == OpKind::Dot && i == 1) operand_shape = this->shape();
        if (i > 0 && is_elementwise(op) && coin() && !operand_shape.empty()) operand_shape.back() = 1;
        params.push_back(b.param("p" + std::to_string(i), operand_dtype, RandomGraphs::as_shape(operand_shape)));
        Tensor input(operand_dtype, operand_shape);
        fill_random(input, static_cast<uint64_t>(pick(0, 1 << 30)));
        inputs.push_back(std::move(input));
      }
      b.output(b.op(op, std::vector<Operand>(params.begin(), params.end()), attrs_for(op, shape), "out"));
    } catch (const UserError&) {
      ++rejected_;
      return;
    }
    Graph g = b.finish();
    try {
      interpret(g, inputs);
      ++ran_;
    } catch (const UserError&) {
      ++data_errors_;
    }
  }

  int ran_ = 0, rejected_ = 0, data_errors_ = 0;

 private:
  testing::random_graph_detail::Rng rng_;  // same sequence on every machine
};

TEST(Robustness, RandomSingleOpGraphsNeverCrash) {
  RandomGraphs graphs(20240601);
  for (int i = 0; i < 20000; ++i) graphs.run_one();
  std::printf("ran %d, rejected by the builder %d, data errors %d\n", graphs.ran_, graphs.rejected_,
              graphs.data_errors_);
  EXPECT_GT(graphs.ran_, 5000);
}

}  // namespace
}  // namespace stitch
