// The attention op (docs/attention.md) in the Graph IR: its typing, text
// round trip and errors; the pattern pass (ir/attention_pattern.h) on every
// form it recognises and on graphs it must leave alone; the expansion back
// into the composite, which the pass recognises again.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "ir/attention_pattern.h"
#include "ir/canonicalize.h"
#include "ir/verifier.h"
#include "stitch/error.h"
#include "stitch/text.h"

namespace stitch {
namespace {

Graph canonical(const std::string& text) { return canonicalize(parse_module(text).graphs.front()); }

std::string ops(const Graph& g) {
  std::string out;
  for (const Node& n : g.nodes()) out += std::string(op_name(n.op)) + " ";
  return out;
}

// The one attention node of `g`, or null.
const Node* attention_node(const Graph& g) {
  const Node* found = nullptr;
  for (const Node& n : g.nodes()) {
    if (n.op != OpKind::Attention) continue;
    if (found) return nullptr;
    found = &n;
  }
  return found;
}

// The attention graph of `text` after the pass: the pass must give exactly
// one attention node and a canonical graph.
Graph fused(const std::string& text) {
  const Graph g = fuse_attention(canonical(text));
  EXPECT_TRUE(verify(g, {.canonical = true}).empty()) << print_graph(g);
  EXPECT_NE(attention_node(g), nullptr) << print_graph(g);
  return g;
}

constexpr const char* kBert = R"(graph bert(q: f32[2, 4, 16, 8], k: f32[2, 4, 16, 8], v: f32[2, 4, 16, 8],
                                  bias: f32[2, 1, 1, 16]) {
  scores = dot(q, transpose(k, perm=[0, 1, 3, 2]))
  p = softmax(add(mul(scores, 0.125), bias), axis=-1)
  out = dot(p, v)
  return out
})";

TEST(AttentionOp, TypesAndNormalisesItsAttributes) {
  const Graph g = canonical(R"(graph a(q: f32[3, 5, 8], k: f32[3, 7, 8], v: f32[3, 7, 6], b: f32[5, 7]) {
  y = attention(q, k, v, b)
  return y
})");
  const Node& n = g.nodes().back();
  EXPECT_EQ(n.op, OpKind::Attention);
  EXPECT_EQ(shape_str(g.type(n.output).shape), "[3, 5, 6]");
  // scale defaults to 1/sqrt(D); causal is always present.
  EXPECT_DOUBLE_EQ(n.attrs.get("scale").as_number(), 1 / std::sqrt(8.0));
  EXPECT_FALSE(n.attrs.get("causal").as_bool());
  EXPECT_EQ(op_info(OpKind::Attention).category, OpCategory::Dot);
}

TEST(AttentionOp, PrintsAndParsesBack) {
  const std::string text = R"(graph a(q: f64[2, 3, 5, 4], k: f64[2, 3, 9, 4], v: f64[2, 3, 9, 2], m: f64[2, 1, 1, 9]) -> (f64[2, 3, 5, 2]) {
  y = attention(q, k, v, m, causal=true, scale=0.3)
  return y
}
)";
  const Graph g = parse_module(text).graphs.front();
  const std::string printed = print_graph(g);
  EXPECT_EQ(printed, text);
  EXPECT_EQ(parse_module(printed).graphs.front(), g);
}

TEST(AttentionOp, RejectsOperandsThatAreNotAttention) {
  auto error = [](const std::string& body) {
    try {
      canonical(body);
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error(R"(graph a(q: f32[5, 8], k: f32[7, 4], v: f32[7, 6]) {
  y = attention(q, k, v)
  return y
})").find("are not [..., Tq, D]"), std::string::npos);
  EXPECT_NE(error(R"(graph a(q: f32[2, 5, 8], k: f32[3, 7, 8], v: f32[3, 7, 6]) {
  y = attention(q, k, v)
  return y
})").find("are not [..., Tq, D]"), std::string::npos);
  EXPECT_NE(error(R"(graph a(q: f32[5, 8], k: f32[7, 8], v: f32[7, 6], b: f32[5, 6]) {
  y = attention(q, k, v, b)
  return y
})").find("does not broadcast to the scores"), std::string::npos);
  EXPECT_NE(error(R"(graph a(q: i32[5, 8], k: i32[7, 8], v: i32[7, 6]) {
  y = attention(q, k, v)
  return y
})").find("floating-point"), std::string::npos);
  EXPECT_NE(error(R"(graph a(q: f32[5, 8], k: f32[7, 8], v: f32[7, 6]) {
  y = attention(q, k, v, window=3)
  return y
})").find("unknown attribute 'window'"), std::string::npos);
}

TEST(AttentionPattern, BertsScaledScoresWithAPaddingBias) {
  const Graph g = fused(kBert);
  EXPECT_EQ(ops(g), "attention ");
  const Node& a = *attention_node(g);
  EXPECT_DOUBLE_EQ(a.attrs.get("scale").as_number(), 0.125);
  EXPECT_FALSE(a.attrs.get("causal").as_bool());
  // The bias is read in its own shape, not broadcast to the scores'.
  ASSERT_EQ(a.inputs.size(), 4u);
  EXPECT_EQ(g.value_name(a.inputs[3]), "bias");
  EXPECT_EQ(g.value_name(a.inputs[1]), "k");
  EXPECT_EQ(g.outputs()[0].name, "out");
}

TEST(AttentionPattern, ScaleAsADivisionOrOnQ) {
  const Graph div = fused(R"(graph a(q: f32[4, 6, 8], k: f32[4, 6, 8], v: f32[4, 6, 8]) {
  p = softmax(div(dot(q, transpose(k, perm=[0, 2, 1])), 4.0), axis=-1)
  out = dot(p, v)
  return out
})");
  EXPECT_DOUBLE_EQ(attention_node(div)->attrs.get("scale").as_number(), 0.25);
  EXPECT_EQ(attention_node(div)->inputs.size(), 3u);
  // Scaled q (and k, as PyTorch's decomposition scales both by sqrt(scale)).
  const Graph q = fused(R"(graph a(q: f64[6, 8], k: f64[9, 8], v: f64[9, 3]) {
  s = dot(mul(q, 0.5), mul(transpose(k, perm=[1, 0]), 0.25))
  out = dot(softmax(s, axis=-1), v)
  return out
})");
  EXPECT_DOUBLE_EQ(attention_node(q)->attrs.get("scale").as_number(), 0.125);
  EXPECT_EQ(ops(q), "attention ");
}

TEST(AttentionPattern, ASelectMaskBecomesAZeroOrMinusInfinityBias) {
  for (const char* select : {"select(m, s, -inf)", "select(not(m), -inf, s)"}) {
    SCOPED_TRACE(select);
    const Graph g = fused(std::string(R"(graph a(q: f32[2, 3, 5, 8], k: f32[2, 3, 7, 8], v: f32[2, 3, 7, 4], m: bool[2, 1, 1, 7]) {
  s = mul(dot(q, transpose(k, perm=[0, 1, 3, 2])), 0.5)
  out = dot(softmax()") + select + R"(, axis=-1), v)
  return out
})");
    const Node& a = *attention_node(g);
    ASSERT_EQ(a.inputs.size(), 4u);
    // select(mask, 0, -inf) (or the reverse) in the mask's own shape.
    const Node* bias = g.producer(a.inputs[3]);
    ASSERT_NE(bias, nullptr);
    EXPECT_EQ(bias->op, OpKind::Select);
    EXPECT_EQ(shape_str(g.type(a.inputs[3]).shape), "[2, 1, 1, 7]");
  }
}

TEST(AttentionPattern, AMaskAndABiasTogether) {
  const Graph g = fused(R"(graph a(q: f64[3, 7, 5], k: f64[3, 11, 5], v: f64[3, 11, 6], m: bool[3, 1, 11], b: f64[7, 11]) {
  s = dot(q, transpose(k, perm=[0, 2, 1]))
  out = dot(softmax(add(select(m, s, -inf), b), axis=-1), v)
  return out
})");
  const Node& a = *attention_node(g);
  ASSERT_EQ(a.inputs.size(), 4u);
  EXPECT_EQ(shape_str(g.type(a.inputs[3]).shape), "[3, 7, 11]");
  EXPECT_DOUBLE_EQ(a.attrs.get("scale").as_number(), 1.0);
}

TEST(AttentionPattern, ACausalMaskFromIotasBecomesTheFlag) {
  struct Case {
    const char* mask;
    const char* select;
    int64_t tq, tk;
    bool causal;
  };
  const Case cases[] = {
      {"ge(iota(shape=[6, 6], axis=0), iota(shape=[6, 6], axis=1))", "select(c, s, -inf)", 6, 6, true},
      {"le(iota(shape=[6, 6], axis=1), iota(shape=[6, 6], axis=0))", "select(c, s, -inf)", 6, 6, true},
      {"gt(iota(shape=[6, 6], axis=1), iota(shape=[6, 6], axis=0))", "select(c, -inf, s)", 6, 6, true},
      {"gt(iota(shape=[4, 9], axis=1), add(iota(shape=[4, 9], axis=0), 5))", "select(c, -inf, s)", 4, 9, true},
      {"ge(add(iota(shape=[4, 9], axis=0), 5), iota(shape=[4, 9], axis=1))", "select(c, s, -inf)", 4, 9, true},
      // Broadcast iotas: a column of rows against a row of columns.
      {"ge(iota(shape=[6, 1], axis=0, dtype=i32), iota(shape=[6], axis=0, dtype=i32))", "select(c, s, -inf)", 6, 6, true},
      // The wrong offset, or the mask the other way round: a bias, not causal.
      {"ge(iota(shape=[4, 9], axis=0), iota(shape=[4, 9], axis=1))", "select(c, s, -inf)", 4, 9, false},
      {"ge(iota(shape=[6, 6], axis=1), iota(shape=[6, 6], axis=0))", "select(c, s, -inf)", 6, 6, false},
      // The dtype's lowest finite value as the fill (Hugging Face's GPT-2): the same
      // softmax, since a causal mask with Tq <= Tk leaves every row a key.
      {"ge(iota(shape=[6, 6], axis=0), iota(shape=[6, 6], axis=1))", "select(c, s, -3.4028234663852886e+38)", 6, 6,
       true},
      {"gt(iota(shape=[4, 9], axis=1), add(iota(shape=[4, 9], axis=0), 5))", "select(c, -3.4028234663852886e+38, s)",
       4, 9, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.mask) + " " + c.select);
    const std::string tq = std::to_string(c.tq), tk = std::to_string(c.tk);
    const Graph g = fused("graph a(q: f32[2, 3, " + tq + ", 8], k: f32[2, 3, " + tk + ", 8], v: f32[2, 3, " + tk +
                          ", 4]) {\n  c = " + c.mask + "\n  s = dot(q, transpose(k, perm=[0, 1, 3, 2]))\n" +
                          "  out = dot(softmax(" + c.select + ", axis=-1), v)\n  return out\n}");
    const Node& a = *attention_node(g);
    EXPECT_EQ(a.attrs.get("causal").as_bool(), c.causal);
    EXPECT_EQ(a.inputs.size(), c.causal ? 3u : 4u);
    if (c.causal) {
      EXPECT_EQ(ops(g), "attention ");
    }
  }
}

TEST(AttentionPattern, LeavesOtherGraphsAlone) {
  const char* untouched[] = {
      // The probabilities are an output too.
      R"(graph a(q: f32[4, 6, 8], k: f32[4, 6, 8], v: f32[4, 6, 8]) {
  p = softmax(dot(q, transpose(k, perm=[0, 2, 1])), axis=-1)
  out = dot(p, v)
  return out, p
})",
      // The scores are read by something else.
      R"(graph a(q: f32[4, 6, 8], k: f32[4, 6, 8], v: f32[4, 6, 8]) {
  s = dot(q, transpose(k, perm=[0, 2, 1]))
  out = dot(softmax(s, axis=-1), v)
  t = reduce_sum(s, axes=[1, 2])
  return out, t
})",
      // A softmax over the queries, not the keys.
      R"(graph a(q: f32[4, 6, 8], k: f32[4, 6, 8], v: f32[4, 6, 8]) {
  out = dot(softmax(dot(q, transpose(k, perm=[0, 2, 1])), axis=1), v)
  return out
})",
      // A scale that is not a constant.
      R"(graph a(q: f32[4, 6, 8], k: f32[4, 6, 8], v: f32[4, 6, 8], c: f32[]) {
  out = dot(softmax(mul(dot(q, transpose(k, perm=[0, 2, 1])), c), axis=-1), v)
  return out
})",
      // The bias scaled with the scores.
      R"(graph a(q: f32[4, 6, 8], k: f32[4, 6, 8], v: f32[4, 6, 8], b: f32[6, 6]) {
  out = dot(softmax(mul(add(dot(q, transpose(k, perm=[0, 2, 1])), b), 0.5), axis=-1), v)
  return out
})",
      // A finite fill: an all-masked row would be uniform, not NaN.
      R"(graph a(q: f32[4, 6, 8], k: f32[4, 6, 8], v: f32[4, 6, 8], m: bool[6, 6]) {
  out = dot(softmax(select(m, dot(q, transpose(k, perm=[0, 2, 1])), -10000.0), axis=-1), v)
  return out
})",
      // The lowest finite fill with a mask that is not causal (a row may be all masked).
      R"(graph a(q: f32[4, 6, 8], k: f32[4, 6, 8], v: f32[4, 6, 8], m: bool[6, 6]) {
  out = dot(softmax(select(m, dot(q, transpose(k, perm=[0, 2, 1])), -3.4028234663852886e+38), axis=-1), v)
  return out
})",
      // ... or causal with more queries than keys (the first rows hide every key).
      R"(graph a(q: f32[4, 9, 8], k: f32[4, 6, 8], v: f32[4, 6, 8]) {
  c = ge(iota(shape=[9, 6], axis=0), add(iota(shape=[9, 6], axis=1), 3))
  out = dot(softmax(select(c, dot(q, transpose(k, perm=[0, 2, 1])), -3.4028234663852886e+38), axis=-1), v)
  return out
})",
      // k broadcast over the batch (grouped queries): not equal leading dims.
      R"(graph a(q: f32[4, 6, 8], k: f32[6, 8], v: f32[4, 6, 8]) {
  out = dot(softmax(dot(q, transpose(k, perm=[1, 0])), axis=-1), v)
  return out
})",
  };
  for (const char* text : untouched) {
    const Graph g = canonical(text);
    const Graph after = fuse_attention(g);
    EXPECT_EQ(after, g) << text;
  }
}

TEST(AttentionPattern, TheExpansionIsRecognisedAgain) {
  const char* texts[] = {
      R"(graph a(q: f32[2, 3, 5, 8], k: f32[2, 3, 9, 8], v: f32[2, 3, 9, 4], b: f32[2, 1, 1, 9]) {
  y = attention(q, k, v, b, causal=true, scale=0.2)
  return y
})",
      R"(graph a(q: f64[7, 4], k: f64[7, 4], v: f64[7, 3]) {
  y = attention(q, k, v, scale=0.5)
  return y
})",
  };
  for (const char* text : texts) {
    const Graph g = canonical(text);
    const Graph expanded = expand_attention(g);
    EXPECT_TRUE(verify(expanded, {.canonical = true}).empty());
    EXPECT_EQ(attention_node(expanded), nullptr);
    EXPECT_NE(ops(expanded).find("reduce_max"), std::string::npos);
    const Graph again = fuse_attention(expanded);
    const Node* a = attention_node(again);
    ASSERT_NE(a, nullptr) << print_graph(again);
    EXPECT_EQ(a->attrs, g.nodes().back().attrs);
    EXPECT_EQ(a->inputs.size(), g.nodes().back().inputs.size());
  }
}

}  // namespace
}  // namespace stitch
