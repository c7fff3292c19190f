// The interpreter's attention (docs/attention.md) is its definition: it
// agrees with the composite it expands into (ir/attention_pattern.h) run op
// by op, and a row with no visible key is NaN, as softmax of an all -inf row.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "ir/attention_pattern.h"
#include "ir/canonicalize.h"
#include "random_graph.h"
#include "stitch/interpreter.h"
#include "stitch/text.h"
#include "tensor_compare.h"

namespace stitch {
namespace {

TEST(InterpretAttention, AgreesWithItsComposite) {
  const char* texts[] = {
      R"(graph a(q: f64[2, 3, 6, 5], k: f64[2, 3, 9, 5], v: f64[2, 3, 9, 4], b: f64[2, 1, 6, 9]) {
  y = attention(q, k, v, b, scale=0.7, causal=true)
  return y
})",
      R"(graph a(q: f32[7, 3], k: f32[4, 3], v: f32[4, 2], b: f32[4]) {
  y = attention(q, k, v, b)
  return y
})",
      R"(graph a(q: f64[3, 5, 2], k: f64[3, 5, 2], v: f64[3, 5, 6]) {
  y = attention(q, k, v, scale=-1.5)
  return y
})",
  };
  for (const char* text : texts) {
    SCOPED_TRACE(text);
    const Graph g = canonicalize(parse_module(text).graphs.front());
    const std::vector<Tensor> inputs = testing::random_inputs(g, 5, {});
    const std::vector<Tensor> direct = interpret(g, inputs);
    const std::vector<Tensor> composite = interpret(expand_attention(g), inputs);
    // The composite rounds its intermediates to the dtype; the op only its result.
    const int64_t k = g.type(g.params()[1]).shape.back().extent() + 2 * g.type(g.params()[1]).shape.end()[-2].extent();
    EXPECT_TRUE(testing::outputs_match_interpreter(direct, composite, true, k));
  }
}

TEST(InterpretAttention, ARowWithNoVisibleKeyIsNaN) {
  // Tq = 3 > Tk = 2, causal: query 0 sees no key (j <= i - 1), 1 sees key 0.
  const Graph g = canonicalize(parse_module(R"(graph a(q: f32[3, 1], k: f32[2, 1], v: f32[2, 1]) {
  y = attention(q, k, v, causal=true)
  return y
})").graphs.front());
  const std::vector<Tensor> out = interpret(g, {testing::float_tensor(DType::f32, {3, 1}, {1, 2, 3}),
                                                testing::float_tensor(DType::f32, {2, 1}, {1, 1}),
                                                testing::float_tensor(DType::f32, {2, 1}, {10, 20})});
  const float* y = out[0].data<float>();
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_FLOAT_EQ(y[1], 10);
  EXPECT_FLOAT_EQ(y[2], 15);  // equal scores: the mean of v
}

}  // namespace
}  // namespace stitch
