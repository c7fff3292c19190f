// The text parser on well-formed input: what it builds, how it names things,
// and the lexer underneath it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <set>

#include "ir/lexer.h"
#include "stitch/text.h"

namespace stitch {
namespace {

Graph parse_one(const std::string& text) {
  try {
    Module m = parse_module(text, "t.stitch");
    EXPECT_EQ(m.graphs.size(), 1u);
    return m.graphs.at(0);
  } catch (const UserError& e) {
    ADD_FAILURE() << e.formatted();
    throw;
  }
}

const Node& node_named(const Graph& g, const std::string& name) {
  ValueId v = g.find_value(name);
  EXPECT_TRUE(v.valid()) << "no value '" << name << "'";
  const Node* n = g.producer(v);
  EXPECT_NE(n, nullptr) << "'" << name << "' is a parameter";
  return *n;
}

std::vector<OpKind> op_sequence(const Graph& g) {
  std::vector<OpKind> ops;
  for (const Node& n : g.nodes()) ops.push_back(n.op);
  return ops;
}

// ---------------------------------------------------------------- literals

TEST(Parser, LiteralTakesTheOtherOperandsDType) {
  Graph g = parse_one(R"(graph g(h: f16[4], n: i8[4], c: bool[4], d: i32[4]) {
  a = add(h, 1)
  b = mul(n, 2.0)
  s = select(c, 0, d)
  return a, b, s
})");
  const Node& a = node_named(g, "a");
  const Node& one = *g.producer(a.inputs[1]);
  EXPECT_EQ(one.op, OpKind::Constant);
  EXPECT_EQ(g.type(one.output), (TensorType{DType::f16, {}}));
  EXPECT_EQ(one.attrs.get("value"), AttrValue(1.0));  // an int literal stored as the float dtype wants
  const Node& b = node_named(g, "b");
  EXPECT_EQ(g.type(b.inputs[1]).dtype, DType::i8);
  EXPECT_EQ(g.producer(b.inputs[1])->attrs.get("value"), AttrValue(int64_t{2}));
  const Node& s = node_named(g, "s");
  EXPECT_EQ(g.type(s.inputs[1]).dtype, DType::i32);  // select's condition does not lend its dtype
  EXPECT_EQ(g.type(s.output), (TensorType{DType::i32, {4}}));
}

TEST(Parser, SpecialAndNegativeLiterals) {
  Graph g = parse_one(R"(graph g(x: f64[2]) {
  a = max(x, -inf)
  b = min(a, inf)
  c = add(b, nan)
  d = add(c, -1.5e-3)
  e = add(d, - 2)
  f = add(e, .5)
  h = add(f, 2.)
  return h
})");
  auto value_of = [&](const char* name) { return g.producer(node_named(g, name).inputs[1])->attrs.get("value"); };
  EXPECT_EQ(value_of("a"), AttrValue(-std::numeric_limits<double>::infinity()));
  EXPECT_EQ(value_of("b"), AttrValue(std::numeric_limits<double>::infinity()));
  EXPECT_TRUE(std::isnan(value_of("c").as_float()));
  EXPECT_EQ(value_of("d"), AttrValue(-1.5e-3));
  EXPECT_EQ(value_of("e"), AttrValue(-2.0));
  EXPECT_EQ(value_of("f"), AttrValue(0.5));
  EXPECT_EQ(value_of("h"), AttrValue(2.0));
}

TEST(Parser, ExtremeIntegersSurvive) {
  Graph g = parse_one(R"(graph g(x: i64[2]) {
  a = add(x, -9223372036854775808)
  b = add(a, 9223372036854775807)
  return b
})");
  EXPECT_EQ(g.producer(node_named(g, "a").inputs[1])->attrs.get("value"),
            AttrValue(std::numeric_limits<int64_t>::min()));
  EXPECT_EQ(g.producer(node_named(g, "b").inputs[1])->attrs.get("value"),
            AttrValue(std::numeric_limits<int64_t>::max()));
}

// ---------------------------------------------------------------- names

TEST(Parser, NestedCallNamesNeverCollideWithLaterUserNames) {
  Graph g = parse_one(R"(graph g(x: f32[4]) {
  y = add(mul(x, 2), exp(x))
  mul = neg(y)
  exp = abs(mul)
  constant = sqrt(exp)
  add_1 = add(constant, 1)
  return add_1
})");
  // The user's names keep the nodes the user wrote.
  EXPECT_EQ(node_named(g, "mul").op, OpKind::Neg);
  EXPECT_EQ(node_named(g, "exp").op, OpKind::Abs);
  EXPECT_EQ(node_named(g, "constant").op, OpKind::Sqrt);
  EXPECT_EQ(node_named(g, "add_1").op, OpKind::Add);
  EXPECT_EQ(node_named(g, "mul").loc.line, 3);
  // The nested ones got other names, and they still feed y.
  const Node& y = node_named(g, "y");
  EXPECT_EQ(g.producer(y.inputs[0])->op, OpKind::Mul);
  EXPECT_EQ(g.producer(y.inputs[1])->op, OpKind::Exp);
  std::set<std::string> user = {"x", "y", "mul", "exp", "constant", "add_1"};
  EXPECT_FALSE(user.count(g.value_name(y.inputs[0])));
  EXPECT_FALSE(user.count(g.value_name(y.inputs[1])));
  ASSERT_EQ(g.outputs().size(), 1u);
  EXPECT_EQ(g.outputs()[0].name, "add_1");
}

TEST(Parser, OutputsAreNamedAsReturned) {
  Graph g = parse_one(R"(graph g(x: f32[4]) {
  a = neg(x)
  b = abs(x)
  return b, a, x
})");
  ASSERT_EQ(g.outputs().size(), 3u);
  EXPECT_EQ(g.outputs()[0].name, "b");
  EXPECT_EQ(g.outputs()[1].name, "a");
  EXPECT_EQ(g.outputs()[2].name, "x");
  EXPECT_EQ(g.outputs()[2].value, g.params()[0]);
}

TEST(Parser, AValueMayBeReturnedTwice) {
  Graph g = parse_one("graph g(x: f32[4]) {\n  y = neg(x)\n  return y, y\n}\n");
  ASSERT_EQ(g.outputs().size(), 2u);
  EXPECT_EQ(g.outputs()[0].value, g.outputs()[1].value);
}

TEST(Parser, SeveralGraphsFirstIsEntry) {
  Module m = parse_module(R"(graph first(x: f32[2]) { return x }
graph second(y: i32[3]) -> (i32[3]) {
  z = neg(y)
  return z
})", "t.stitch");
  ASSERT_EQ(m.graphs.size(), 2u);
  EXPECT_EQ(m.graphs[0].name(), "first");
  ASSERT_NE(m.find("second"), nullptr);
  EXPECT_EQ(m.find("second")->nodes().size(), 1u);
}

TEST(Parser, NodesCarryTheLocationOfTheirCall) {
  Graph g = parse_one("graph g(x: f32[4]) {\n  y = add(x,\n      exp(x))\n  return y\n}\n");
  const Node& y = node_named(g, "y");
  EXPECT_EQ(y.loc.file, "t.stitch");
  EXPECT_EQ(y.loc.line, 2);
  EXPECT_EQ(y.loc.col, 7);
  const Node* e = g.producer(y.inputs[1]);
  EXPECT_EQ(e->loc.line, 3);
  EXPECT_EQ(e->loc.col, 7);
}

// ---------------------------------------------------------------- ops and attributes

TEST(Parser, CompositesExpandToPrimitives) {
  Graph g = parse_one(R"(graph g(x: f32[3, 8]) {
  y = softmax(x)
  return y
})");
  EXPECT_EQ(op_sequence(g), (std::vector<OpKind>{OpKind::ReduceMax, OpKind::Sub, OpKind::Exp, OpKind::ReduceSum,
                                                 OpKind::Div}));
  EXPECT_EQ(node_named(g, "y").op, OpKind::Div);
  EXPECT_EQ(node_named(g, "y").loc.line, 2);
  EXPECT_EQ(g.producer(node_named(g, "y").inputs[1])->attrs.get("axes"), AttrValue(AttrValue::Ints{1}));
}

TEST(Parser, CompositeIntermediatesAvoidLaterUserNames) {
  Graph g = parse_one(R"(graph g(x: f32[3, 8]) {
  y = softmax(x)
  y_max = neg(y)
  return y_max
})");
  EXPECT_EQ(node_named(g, "y_max").op, OpKind::Neg);
  EXPECT_EQ(g.producer(g.producer(node_named(g, "y").inputs[1])->inputs[0])->op, OpKind::Exp);
}

TEST(Parser, AttributesAreNormalised) {
  Graph g = parse_one(R"(graph g(x: f32[2, 3, 4], i: i64[5]) {
  s = reduce_sum(x, axes=[-1, 0])
  t = transpose(x)
  c = concat(x, x, axis=-2)
  k = gather(x, i)
  return s, t, c, k
})");
  EXPECT_EQ(node_named(g, "s").attrs, (Attrs{{"axes", AttrValue::Ints{0, 2}}, {"keepdims", false}}));
  EXPECT_EQ(node_named(g, "t").attrs.get("perm"), AttrValue(AttrValue::Ints{2, 1, 0}));
  EXPECT_EQ(node_named(g, "c").attrs.get("axis"), AttrValue(int64_t{1}));
  EXPECT_EQ(node_named(g, "k").attrs.get("axis"), AttrValue(int64_t{0}));
  EXPECT_EQ(g.type(node_named(g, "k").output), (TensorType{DType::f32, {5, 3, 4}}));
}

TEST(Parser, AttributeValueKinds) {
  Graph g = parse_one(R"(graph g(x: f32[4, 6]) {
  a = cast(x, to=bf16)
  b = reduce_max(x, axes=[1], keepdims=true)
  c = gelu(x, approximate="tanh")
  d = pad(x, low=[0, 1], high=[2, 0], value=-inf)
  e = reduce_sum(x, axes=[])
  return a, b, c, d, e
})");
  EXPECT_EQ(node_named(g, "a").attrs.get("to"), AttrValue(DType::bf16));
  EXPECT_EQ(node_named(g, "b").attrs.get("keepdims"), AttrValue(true));
  EXPECT_EQ(node_named(g, "d").attrs.get("value"), AttrValue(-std::numeric_limits<double>::infinity()));
  EXPECT_EQ(g.type(node_named(g, "d").output).shape, (Shape{6, 7}));
  EXPECT_EQ(g.type(node_named(g, "e").output).shape, (Shape{4, 6}));  // axes=[] reduces nothing
  EXPECT_EQ(node_named(g, "c").op, OpKind::Mul);
}

TEST(Parser, SymbolicDimsInParamsAndAttributes) {
  Graph g = parse_one(R"(graph g(x: f32[B, 4], v: f32[4]) -> (f32[B, 4], f32[B, 2, 2]) {
  b = broadcast(v, shape=[B, 4])
  y = add(x, b)
  r = reshape(y, shape=[B, 2, -1])
  return y, r
})");
  EXPECT_EQ(g.type(g.params()[0]).shape, (Shape{Dim::symbol("B"), 4}));
  EXPECT_EQ(node_named(g, "b").attrs.get("shape"), AttrValue(Shape{Dim::symbol("B"), 4}));
  EXPECT_EQ(g.type(node_named(g, "b").output), (TensorType{DType::f32, {Dim::symbol("B"), 4}}));
  EXPECT_EQ(node_named(g, "r").attrs.get("shape"), AttrValue(Shape{Dim::symbol("B"), 2, 2}));
}

TEST(Parser, ScalarsAndEmptyParameterLists) {
  Graph g = parse_one(R"(graph g() -> (i32[3]) {
  r = iota(shape=[3], axis=0, dtype=i32)
  return r
})");
  EXPECT_TRUE(g.params().empty());
  Graph s = parse_one("graph s(x: f32[]) { y = neg(x) return y }");
  EXPECT_EQ(s.type(s.params()[0]).rank(), 0);
}

TEST(Parser, CommentsWhitespaceAndCrLf) {
  Graph g = parse_one("# header\r\ngraph g(x: f32[4]) {   # trailing\r\n\t y = neg(x)#no space\r\n  return y\r\n}\r\n# end");
  EXPECT_EQ(node_named(g, "y").loc.line, 3);
  EXPECT_EQ(node_named(g, "y").loc.col, 7);
}

TEST(Parser, ParseFileReadsAndLocates) {
  Module m = parse_file(STITCH_SOURCE_DIR "/tests/ir/corpus/composites.stitch");
  ASSERT_FALSE(m.graphs.empty());
  EXPECT_EQ(m.graphs[0].nodes()[0].loc.file, STITCH_SOURCE_DIR "/tests/ir/corpus/composites.stitch");
}

TEST(Parser, LargeInputsStayLinear) {
  // 20000 literals once took 20 s because every generated name rescanned its suffixes.
  std::string text = "graph g(x: f32[4]) {\n  v0 = add(x, 1)\n";
  for (int i = 1; i < 20000; ++i) text += "  v" + std::to_string(i) + " = add(v" + std::to_string(i - 1) + ", 1.5)\n";
  text += "  return v19999\n}\n";
  Graph g = parse_one(text);
  EXPECT_EQ(g.nodes().size(), 40000u);
}

// Inputs the fuzzer found to hit undefined behaviour (docs/fuzzing.md); they
// matter most under the sanitizers, but the results are pinned here too.
TEST(Parser, FuzzerFindingsStayFixed) {
  Graph g = parse_one(R"(graph g(x: f32[10], n: i64[2]) {
  s = slice(x, start=[0], stop=[10], step=[9223372036854775807])
  i = iota(shape=[5], axis=0)
  m = add(n, -9.2233720368547758e18)
  return s, i, m
})");
  EXPECT_EQ(g.type(node_named(g, "s").output).shape, (Shape{1}));
  EXPECT_EQ(g.type(node_named(g, "i").output), (TensorType{DType::i64, {5}}));
  EXPECT_EQ(g.producer(node_named(g, "m").inputs[1])->attrs.get("value"),
            AttrValue(std::numeric_limits<int64_t>::min()));
}

// ---------------------------------------------------------------- lexer

TEST(Lexer, TokensWithPositions) {
  std::vector<Token> t = tokenize("graph g(x: f32[B, -1]) -> (\n  y = max(x, -inf, 1e-5, .5, 2.)  # c\n", "f");
  std::vector<TokenKind> kinds;
  for (const Token& tok : t) kinds.push_back(tok.kind);
  using K = TokenKind;
  EXPECT_EQ(kinds, (std::vector<K>{K::Ident, K::Ident, K::LParen, K::Ident, K::Colon, K::Ident, K::LBracket, K::Ident,
                                   K::Comma, K::Int, K::RBracket, K::RParen, K::Arrow, K::LParen, K::Ident, K::Equals,
                                   K::Ident, K::LParen, K::Ident, K::Comma, K::Minus, K::Ident, K::Comma, K::Float,
                                   K::Comma, K::Float, K::Comma, K::Float, K::RParen, K::End}));
  EXPECT_EQ(t[9].int_value, -1);
  EXPECT_EQ(t[9].col, 19);
  EXPECT_EQ(t[14].line, 2);
  EXPECT_EQ(t[14].col, 3);
  EXPECT_EQ(t[23].float_value, 1e-5);
  EXPECT_EQ(t[25].float_value, 0.5);
  EXPECT_EQ(t[27].float_value, 2.0);
  EXPECT_EQ(t.back().line, 3);
}

TEST(Lexer, StringEscapes) {
  std::vector<Token> t = tokenize(R"("a\"b\\c")", "f");
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].kind, TokenKind::String);
  EXPECT_EQ(t[0].text, "a\"b\\c");
}

TEST(Lexer, ColumnsCountBytes) {
  std::vector<Token> t = tokenize("# \xc3\xa9\xc3\xa9\nx y", "f");
  EXPECT_EQ(t[0].line, 2);
  EXPECT_EQ(t[1].col, 3);
  try {
    tokenize("ab\xc3\xa9", "f");
    FAIL() << "accepted a non-ASCII byte outside a comment";
  } catch (const UserError& e) {
    EXPECT_EQ(e.formatted(), "f:1:3: error: unexpected character '\\xc3'");
  }
}

}  // namespace
}  // namespace stitch
