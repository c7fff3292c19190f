// Canonicalisation: each pass, and the canonical-form verifier.
#include <gtest/gtest.h>

#include "ir/canonicalize.h"
#include "ir/verifier.h"
#include "stitch/builder.h"

namespace stitch {
namespace {

int count_ops(const Graph& g, OpKind k) {
  int n = 0;
  for (const Node& node : g.nodes()) n += node.op == k;
  return n;
}

TEST(Canonicalize, BroadcastsBecomeExplicitAndScalarConstantsSplat) {
  GraphBuilder b("g");
  ValueId x = b.param("x", DType::f32, {Dim::symbol("B"), 8});
  ValueId bias = b.param("bias", DType::f32, {8});
  ValueId y = b.mul(b.add(x, bias), 2.0, "y");
  b.output(y);
  Graph g = b.finish();
  EXPECT_FALSE(verify(g, {.canonical = true}).empty());
  Graph c = canonicalize(g);
  EXPECT_TRUE(verify(c, {.canonical = true}).empty());
  EXPECT_EQ(count_ops(c, OpKind::Broadcast), 1);
  ASSERT_EQ(count_ops(c, OpKind::Constant), 1);
  for (const Node& n : c.nodes()) {
    if (n.op == OpKind::Constant) {
      EXPECT_EQ(c.type(n.output).shape, (Shape{Dim::symbol("B"), 8}));
    }
  }
  EXPECT_EQ(c.outputs()[0].name, "y");
  EXPECT_EQ(c.value_name(c.outputs()[0].value), "y");
}

TEST(Canonicalize, FoldsIdentitiesAndComposesLayoutOps) {
  GraphBuilder b("g");
  ValueId x = b.param("x", DType::f32, {2, 3, 4});
  ValueId t = b.transpose(b.transpose(x, {1, 2, 0}), {2, 0, 1});  // identity overall
  ValueId r = b.reshape(b.reshape(t, {6, 4}), {24});
  ValueId same = b.cast(r, DType::f32);
  ValueId y = b.add(same, same, "y");
  b.output(y);
  Graph c = canonicalize(b.finish());
  EXPECT_EQ(count_ops(c, OpKind::Transpose), 0);
  EXPECT_EQ(count_ops(c, OpKind::Reshape), 1);
  EXPECT_EQ(count_ops(c, OpKind::Cast), 0);
  EXPECT_EQ(c.nodes().size(), 2u);
}

TEST(Canonicalize, TransposeCompositionIsCorrect) {
  GraphBuilder b("g");
  ValueId x = b.param("x", DType::f32, {2, 3, 4});
  ValueId t = b.transpose(b.transpose(x, {1, 2, 0}), {1, 0, 2}, "t");  // [3,4,2] -> [4,3,2]
  b.output(t);
  Graph c = canonicalize(b.finish());
  ASSERT_EQ(c.nodes().size(), 1u);
  EXPECT_EQ(c.nodes()[0].attrs.get("perm").as_ints(), (AttrValue::Ints{2, 1, 0}));
  EXPECT_EQ(c.type(c.outputs()[0].value).shape, (Shape{4, 3, 2}));
}

TEST(Canonicalize, CommonSubexpressionsMergeAndOutputsKeepTheirNames) {
  GraphBuilder b("g");
  ValueId x = b.param("x", DType::f32, {8});
  ValueId a = b.exp(x, "a");
  ValueId e = b.exp(x, "e");
  ValueId y = b.add(a, e, "y");
  b.output(y);
  b.output(e);
  Graph c = canonicalize(b.finish());
  EXPECT_EQ(count_ops(c, OpKind::Exp), 1);
  ASSERT_EQ(c.outputs().size(), 2u);
  EXPECT_EQ(c.outputs()[1].name, "e");
  EXPECT_EQ(c.outputs()[0].value, c.find_value("y"));
}

TEST(Canonicalize, DeadValuesRemovedAndIsIdempotent) {
  GraphBuilder b("g");
  ValueId x = b.param("x", DType::f32, {8});
  b.exp(x, "unused");
  ValueId y = b.unary(OpKind::Neg, x, "y");
  b.output(y);
  Graph c = canonicalize(b.finish());
  EXPECT_EQ(c.nodes().size(), 1u);
  EXPECT_EQ(canonicalize(c), c);
}

TEST(Canonicalize, ReturningAParameterWorks) {
  GraphBuilder b("g");
  ValueId x = b.param("x", DType::f32, {8});
  ValueId r = b.reshape(x, {8}, "r");
  b.output(r);
  Graph c = canonicalize(b.finish());
  EXPECT_TRUE(c.nodes().empty());
  EXPECT_EQ(c.outputs()[0].name, "r");
  EXPECT_EQ(c.outputs()[0].value, c.params()[0]);
}

TEST(Verifier, ReportsBrokenInvariants) {
  Graph g("g");
  ValueId x = g.add_param("x", {DType::f32, {4}});
  g.add_node(OpKind::Exp, {x}, {}, {DType::f32, {5}}, "y");
  g.add_output("y", ValueId{1});
  std::vector<std::string> problems = verify(g);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("stored type f32[5] but the op gives f32[4]"), std::string::npos);
  EXPECT_THROW(verify_or_throw(g), InternalError);
}

TEST(Verifier, RejectsUnnormalisedAttributes) {
  Graph g("g");
  ValueId x = g.add_param("x", {DType::f32, {4, 2}});
  g.add_node(OpKind::ReduceSum, {x}, {{"axes", AttrValue(AttrValue::Ints{-1})}}, {DType::f32, {4}}, "y");
  g.add_output("y", ValueId{1});
  std::vector<std::string> problems = verify(g);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("normal form"), std::string::npos);
}

}  // namespace
}  // namespace stitch
