// The target rewrite of full reductions into rows plus partials, and on a
// GPU of narrow column reductions (src/ir/split_reductions.h): which
// reductions qualify, the structure of the rewrite, and that the interpreter
// gives the same values within the tolerance of a reduction of the whole
// length.
#include <cstdint>

#include <gtest/gtest.h>

#include "ir/canonicalize.h"
#include "ir/split_reductions.h"
#include "ir/verifier.h"
#include "stitch/interpreter.h"
#include "stitch/text.h"
#include "tensor_compare.h"

namespace stitch {
namespace {

Graph canonical(const char* text) { return canonicalize(parse_module(text).graphs.front()); }

std::string ops(const Graph& g) {
  std::string out;
  for (const Node& n : g.nodes()) out += std::string(op_name(n.op)) + " ";
  return out;
}

// `g` and its rewrite `split` interpreted on the same seeded inputs.
void interpret_both(const Graph& g, const Graph& split, uint64_t seed, std::vector<Tensor>& want,
                    std::vector<Tensor>& got) {
  std::vector<Tensor> inputs;
  for (ValueId p : g.params()) {
    Tensor t(g.type(p).dtype, concrete_shape(g.type(p).shape, {}));
    fill_random(t, seed++);
    inputs.push_back(std::move(t));
  }
  want = interpret(g, inputs);
  got = interpret(split, inputs);
}

TEST(SplitFullReductions, ASumOfEveryElementBecomesRowsThenPartials) {
  Graph g = canonical(R"(graph dot(a: f32[512, 256], b: f32[512, 256]) -> (f32[]) {
  s = reduce_sum(mul(a, b), axes=[0, 1])
  return s
})");
  Graph split = split_full_reductions(g);
  EXPECT_TRUE(verify(split, {.canonical = true}).empty());
  EXPECT_EQ(ops(split), "mul reshape reduce_sum reduce_sum ");
  // 131072 elements: the largest power of two up to 64 whose parts keep >= 1024.
  EXPECT_EQ(shape_str(split.type(split.nodes()[1].output).shape), "[64, 2048]");
  EXPECT_EQ(shape_str(split.type(split.nodes()[2].output).shape), "[64]");
  EXPECT_EQ(split.outputs()[0].name, "s");
  EXPECT_EQ(split.value_name(split.outputs()[0].value), "s");
  EXPECT_EQ(split.type(split.outputs()[0].value), g.type(g.outputs()[0].value));
}

TEST(SplitFullReductions, KeepdimsEndsInAReshapeToTheOriginalShape) {
  Graph g = canonical(R"(graph m(x: f32[256, 512]) -> (f32[1, 1]) {
  m = reduce_max(x, axes=[0, 1], keepdims=true)
  return m
})");
  Graph split = split_full_reductions(g);
  EXPECT_EQ(ops(split), "reshape reduce_max reduce_max reshape ");
  EXPECT_EQ(split.type(split.outputs()[0].value), g.type(g.outputs()[0].value));
}

TEST(SplitFullReductions, WhatStaysWhole) {
  const char* const kept[] = {
      // too short
      R"(graph g(x: f32[1024]) -> (f32[]) {
  s = reduce_sum(x)
  return s
})",
      // not every axis
      R"(graph g(x: f32[512, 512]) -> (f32[512]) {
  s = reduce_sum(x, axes=[1])
  return s
})",
      // symbolic extent
      R"(graph g(x: f32[B, 65536]) -> (f32[]) {
  s = reduce_sum(x, axes=[0, 1])
  return s
})",
      // f16 partials would round once more
      R"(graph g(x: f16[131072]) -> (f16[]) {
  s = reduce_sum(x)
  return s
})",
      // an arg reduction's index is not a partial of partials
      R"(graph g(x: f32[131072]) -> (i64[]) {
  s = argmax(x, axes=[0])
  return s
})",
      // no power of two divides it
      R"(graph g(x: f32[131073]) -> (f32[]) {
  s = reduce_sum(x)
  return s
})"};
  for (const char* text : kept) {
    Graph g = canonical(text);
    EXPECT_EQ(split_full_reductions(g), g) << text;
  }
}

TEST(SplitFullReductions, TheInterpreterAgreesWithinTheReductionTolerance) {
  Graph g = canonical(R"(graph all(x: f32[65536], i: i32[4, 32768], b: bool[131072], d: f64[2, 65536]) ->
    (f32[], f32[], f32[], i32[], bool[], f64[]) {
  s = reduce_sum(x)
  m = reduce_mean(x)
  n = reduce_min(x)
  k = reduce_sum(i, axes=[0, 1])
  a = reduce_any(b)
  p = reduce_prod(d, axes=[0, 1])
  return s, m, n, k, a, p
})");
  Graph split = split_full_reductions(g);
  EXPECT_NE(split, g);
  std::vector<Tensor> want, got;
  interpret_both(g, split, 3, want, got);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(testing::matches_interpreter(got[i], want[i], false, 131072)) << "output " << i;
  }
  // max, min, any and integer sums are exact whatever the order.
  EXPECT_TRUE(testing::tensors_bitwise_equal(got[2], want[2]));
  EXPECT_TRUE(testing::tensors_bitwise_equal(got[3], want[3]));
  EXPECT_TRUE(testing::tensors_bitwise_equal(got[4], want[4]));
}

// Column reductions, split only with a column target (the GPU's options).
TEST(SplitColumnReductions, FewColumnsOverManyRowsBecomeAThreeAxisReductionThenPartials) {
  Graph g = canonical(R"(graph dw(dy: f32[262144, 1024], x: f32[262144, 1024]) -> (f32[1024], f32[1, 1024]) {
  w = reduce_sum(mul(dy, x), axes=[0])
  b = reduce_mean(dy, axes=[0], keepdims=true)
  return w, b
})");
  EXPECT_EQ(split_full_reductions(g), g) << "the default options split no column reduction";
  Graph split = split_full_reductions(g, gpu_split_options());
  EXPECT_TRUE(verify(split, {.canonical = true}).empty());
  EXPECT_EQ(ops(split), "mul reshape reduce_sum reduce_sum reshape reduce_mean reduce_mean reshape ");
  // 1024 columns: P = 128 gives 131072 first-stage columns.
  EXPECT_EQ(shape_str(split.type(split.nodes()[1].output).shape), "[128, 2048, 1024]");
  EXPECT_EQ(shape_str(split.type(split.nodes()[2].output).shape), "[128, 1024]");
  EXPECT_EQ(split.type(split.outputs()[0].value), g.type(g.outputs()[0].value));
  EXPECT_EQ(split.type(split.outputs()[1].value), g.type(g.outputs()[1].value));
  EXPECT_EQ(split.outputs()[1].name, "b");
  EXPECT_EQ(split.value_name(split.outputs()[0].value), "w");
}

// The CPU's options: a column sum of an MLP-Mixer's backward, [6144, 196],
// splits into 64 parts of 96 rows (64 * 196 >= 8192); one of fewer than
// 2^16 elements stays whole.
TEST(SplitColumnReductions, TheCpusOptions) {
  Graph g = canonical(R"(graph db(dy: f32[6144, 196]) -> (f32[1, 196]) {
  s = reduce_sum(dy, axes=[0], keepdims=true)
  return s
})");
  Graph split = split_full_reductions(g, cpu_split_options());
  EXPECT_EQ(ops(split), "reshape reduce_sum reduce_sum reshape ");
  EXPECT_EQ(shape_str(split.type(split.nodes()[0].output).shape), "[64, 96, 196]");
  Graph small = canonical(R"(graph db(dy: f32[256, 196]) -> (f32[196]) {
  s = reduce_sum(dy, axes=[0])
  return s
})");
  EXPECT_EQ(split_full_reductions(small, cpu_split_options()), small);
}

TEST(SplitColumnReductions, WhatStaysWhole) {
  const char* const kept[] = {
      // enough columns already
      R"(graph g(x: f32[64, 262144]) -> (f32[262144]) {
  s = reduce_sum(x, axes=[0])
  return s
})",
      // too few rows for parts of 64
      R"(graph g(x: f32[96, 1024]) -> (f32[1024]) {
  s = reduce_sum(x, axes=[0])
  return s
})",
      // the reduced axis is not a leading one
      R"(graph g(x: f32[1024, 4096, 8]) -> (f32[1024, 8]) {
  s = reduce_sum(x, axes=[1])
  return s
})",
      // bf16 partials would round once more
      R"(graph g(x: bf16[65536, 512]) -> (bf16[512]) {
  s = reduce_sum(x, axes=[0])
  return s
})"};
  for (const char* text : kept) {
    Graph g = canonical(text);
    EXPECT_EQ(split_full_reductions(g, gpu_split_options()), g) << text;
  }
}

TEST(SplitColumnReductions, TheInterpreterAgrees) {
  Graph g = canonical(R"(graph c(x: f32[4096, 3, 5], i: i32[2048, 7]) -> (f32[3, 5], f32[3, 5], i32[7]) {
  s = reduce_sum(x, axes=[0])
  m = reduce_max(x, axes=[0])
  k = reduce_sum(i, axes=[0])
  return s, m, k
})");
  SplitReductionOptions o;
  o.column_target = 64;
  o.min_column_part_length = 16;
  Graph split = split_full_reductions(g, o);
  EXPECT_EQ(ops(split), "reshape reduce_sum reduce_sum reshape reduce_max reduce_max reshape reduce_sum reduce_sum ");
  EXPECT_EQ(shape_str(split.type(split.nodes()[0].output).shape), "[8, 512, 3, 5]");  // 8 * 15 >= 64
  std::vector<Tensor> want, got;
  interpret_both(g, split, 5, want, got);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_TRUE(testing::matches_interpreter(got[0], want[0], false, 4096));
  EXPECT_TRUE(testing::tensors_bitwise_equal(got[1], want[1]));
  EXPECT_TRUE(testing::tensors_bitwise_equal(got[2], want[2]));
}

}  // namespace
}  // namespace stitch
