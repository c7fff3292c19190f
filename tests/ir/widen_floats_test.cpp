// f16 and bf16 intermediates computed in f32 (src/ir/widen_floats.h): which
// values are widened and where they are rounded back, checked against the
// same computation written out with explicit casts, which the interpreter
// must reproduce bit for bit.
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ir/canonicalize.h"
#include "ir/verifier.h"
#include "ir/widen_floats.h"
#include "stitch/interpreter.h"
#include "stitch/text.h"
#include "random_graph.h"
#include "tensor_compare.h"

namespace stitch {
namespace {

Graph widen_case(const char* text) { return canonicalize(parse_module(text).graphs.front()); }

std::string ops_and_casts(const Graph& g) {
  std::string out;
  for (const Node& n : g.nodes()) {
    out += std::string(op_name(n.op));
    out += n.op == OpKind::Cast ? "->" + std::string(dtype_name(g.type(n.output).dtype)) + " " : " ";
  }
  return out;
}

// The widened graph computes what `by_hand` (the same ops with the casts
// written out) computes, bit for bit; the graph as written rounds after
// every op, which some element of the seeded inputs shows.
void expect_computes_as(const Graph& written, const Graph& by_hand) {
  const Graph widened = widen_narrow_floats(written);
  verify_or_throw(widened);
  const std::vector<Tensor> inputs = testing::random_inputs(written, 11, {});
  const std::vector<Tensor> got = interpret(widened, inputs);
  const std::vector<Tensor> want = interpret(by_hand, inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].dtype(), written.type(written.outputs()[i].value).dtype);
    EXPECT_TRUE(testing::tensors_bitwise_equal(got[i], want[i])) << print_graph(widened);
  }
  const std::vector<Tensor> rounded = interpret(written, inputs);
  bool differs = false;
  for (size_t i = 0; i < got.size(); ++i) differs = differs || !testing::tensors_bitwise_equal(got[i], rounded[i]);
  EXPECT_TRUE(differs) << "the inputs do not show the roundings the rewrite removes";
}

TEST(WidenFloats, AChainRoundsOnceAtItsOutput) {
  const Graph g = widen_case(R"(
graph chain(x: bf16[64, 33], y: bf16[33]) -> (bf16[64, 33]) {
  s = add(mul(x, x), y)
  e = exp(s)
  return e
}
)");
  const Graph w = widen_narrow_floats(g);
  EXPECT_EQ(ops_and_casts(w), "cast->f32 mul broadcast cast->f32 add exp cast->bf16 ");
  expect_computes_as(g, widen_case(R"(
graph chain(x: bf16[64, 33], y: bf16[33]) -> (bf16[64, 33]) {
  xf = cast(x, to=f32)
  yf = cast(broadcast(y, shape=[64, 33]), to=f32)
  e = cast(exp(add(mul(xf, xf), yf)), to=bf16)
  return e
}
)"));
}

TEST(WidenFloats, AReductionKeepsItsF32TotalAndLayoutOpsCarryF32) {
  const Graph g = widen_case(R"(
graph norm(x: f16[16, 100]) -> (f16[16, 100], f16[100, 16]) {
  m = reduce_mean(mul(x, x), axes=[1], keepdims=true)
  y = mul(x, rsqrt(add(m, 0.001)))
  t = transpose(y, perm=[1, 0])
  return y, t
}
)");
  const Graph w = widen_narrow_floats(g);
  for (const Node& n : w.nodes()) {
    if (n.op != OpKind::Cast && n.op != OpKind::Constant) {  // a constant keeps its dtype (eps: f16's 0.001)
      EXPECT_EQ(w.type(n.output).dtype, DType::f32) << print_graph(w);
    }
  }
  expect_computes_as(g, widen_case(R"(
graph norm(x: f16[16, 100]) -> (f16[16, 100], f16[100, 16]) {
  xf = cast(x, to=f32)
  m = reduce_mean(mul(xf, xf), axes=[1], keepdims=true)
  eps = cast(constant(value=0.001, shape=[16, 1], dtype=f16), to=f32)
  y = mul(xf, rsqrt(add(m, eps)))
  t = transpose(y, perm=[1, 0])
  yh = cast(y, to=f16)
  th = cast(t, to=f16)
  return yh, th
}
)"));
}

TEST(WidenFloats, DotOperandsRoundAndCastsToANarrowFloatDoNot) {
  // As PyTorch's ops are lowered: each bf16 op in f32 between casts.
  const Graph g = widen_case(R"(
graph mlp(a: bf16[8, 32], w: bf16[32, 16]) -> (bf16[8, 16]) {
  h = dot(cast(tanh(cast(a, to=f32)), to=bf16), w)
  r = cast(mul(cast(h, to=f32), 3.0), to=bf16)
  y = cast(add(mul(cast(r, to=f32), cast(h, to=f32)), cast(h, to=f32)), to=bf16)
  return y
}
)");
  const Graph w = widen_narrow_floats(g);
  // tanh in f32, rounded for the dot; from the dot's bf16 result on, f32 to the output.
  EXPECT_EQ(ops_and_casts(w), "cast->f32 tanh cast->bf16 dot cast->f32 constant mul mul add cast->bf16 ")
      << print_graph(w);
  expect_computes_as(g, widen_case(R"(
graph mlp(a: bf16[8, 32], w: bf16[32, 16]) -> (bf16[8, 16]) {
  h = dot(cast(tanh(cast(a, to=f32)), to=bf16), w)
  hf = cast(h, to=f32)
  y = cast(add(mul(mul(hf, 3.0), hf), hf), to=bf16)
  return y
}
)"));
}

TEST(WidenFloats, AValueTheGraphReturnsIsReadAsReturned) {
  // A gradient and its bias gradient: the sum reads the gradient the graph
  // returns, rounded, as a sum outside the graph would; exp's result and the
  // sum's total stay in f32.
  const Graph g = widen_case(R"(
graph grad(g: bf16[64, 48], x: bf16[64, 48]) -> (bf16[64, 48], bf16[48]) {
  d = mul(g, exp(x))
  s = reduce_sum(d, axes=[0], keepdims=false)
  return d, s
}
)");
  const Graph w = widen_narrow_floats(g);
  EXPECT_EQ(ops_and_casts(w), "cast->f32 exp cast->f32 mul cast->bf16 cast->f32 reduce_sum cast->bf16 ")
      << print_graph(w);
  expect_computes_as(g, widen_case(R"(
graph grad(g: bf16[64, 48], x: bf16[64, 48]) -> (bf16[64, 48], bf16[48]) {
  d = cast(mul(cast(g, to=f32), exp(cast(x, to=f32))), to=bf16)
  s = cast(reduce_sum(cast(d, to=f32), axes=[0], keepdims=false), to=bf16)
  return d, s
}
)"));
}

TEST(WidenFloats, AGraphThatComputesNoNarrowFloatIsUnchanged) {
  const Graph g = widen_case(R"(
graph f(x: f32[4, 4], h: bf16[4, 4]) -> (f32[4, 4], bf16[4, 4]) {
  y = exp(x)
  t = transpose(h, perm=[1, 0])
  return y, t
}
)");
  EXPECT_EQ(print_graph(widen_narrow_floats(g)), print_graph(g));
}

}  // namespace
}  // namespace stitch
