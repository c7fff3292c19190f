// Composites expand to primitives only, with the documented structure.
#include <gtest/gtest.h>

#include "ir/composites.h"
#include "ir/verifier.h"
#include "stitch/builder.h"

namespace stitch {
namespace {

std::vector<OpKind> ops_of(const Graph& g) {
  std::vector<OpKind> out;
  for (const Node& n : g.nodes()) {
    if (n.op != OpKind::Constant) out.push_back(n.op);
  }
  return out;
}

TEST(Composites, SoftmaxExpandsToFivePrimitives) {
  GraphBuilder b("g");
  ValueId x = b.param("x", DType::f32, {4, 7});
  ValueId y = b.op("softmax", {x}, {}, "y");
  b.output(y);
  Graph g = b.finish();
  EXPECT_EQ(ops_of(g), (std::vector<OpKind>{OpKind::ReduceMax, OpKind::Sub, OpKind::Exp, OpKind::ReduceSum,
                                            OpKind::Div}));
  EXPECT_EQ(g.value_name(y), "y");
  EXPECT_EQ(g.producer(g.producer(y)->inputs[0])->op, OpKind::Exp);
  EXPECT_EQ(g.producer(g.nodes()[0].output)->attrs.get("axes").as_ints(), (AttrValue::Ints{1}));
}

TEST(Composites, EveryCompositeBuildsAndVerifies) {
  for (std::string_view name : composite_op_names()) {
    for (DType t : {DType::f32, DType::f16, DType::bf16, DType::f64}) {
      GraphBuilder b("g");
      // The pools take [N, C, H, W]: a 3 x 3 window, stride 1, no pads.
      const bool windowed = name == "max_pool" || name == "avg_pool";
      ValueId x = windowed ? b.param("x", t, {Dim::symbol("B"), 4, 8, 8}) : b.param("x", t, {Dim::symbol("B"), 16});
      std::vector<Operand> args{x};
      Attrs attrs;
      if (name == "layer_norm" || name == "rms_norm") args.push_back(b.param("gamma", t, {16}));
      if (name == "layer_norm") args.push_back(b.param("beta", t, {16}));
      if (name == "max_pool" || name == "avg_pool") attrs.set("kernel_shape", AttrValue(AttrValue::Ints{3, 3}));
      // resize keeps the symbolic batch (-1) and doubles the rest; top_k picks 4.
      if (name == "resize") attrs.set("sizes", AttrValue(AttrValue::Ints{-1, 32}));
      const bool top_k = name == "top_k" || name == "top_k_indices";
      if (top_k) attrs.set("k", AttrValue(4));
      ValueId y = b.op(name, args, attrs);
      b.output(y);
      Graph g = b.finish();
      EXPECT_TRUE(verify(g).empty()) << name;
      for (const Node& n : g.nodes()) EXPECT_FALSE(is_composite_op(op_name(n.op))) << name;
      const Shape want = name == "logsumexp" ? Shape{}
                         : windowed          ? Shape{Dim::symbol("B"), 4, 6, 6}
                         : name == "resize"  ? Shape{Dim::symbol("B"), 32}
                         : top_k             ? Shape{Dim::symbol("B"), 4}
                                             : Shape{Dim::symbol("B"), 16};
      EXPECT_EQ(g.type(y).shape, want) << name;
      EXPECT_EQ(g.type(y).dtype, name == "top_k_indices" ? DType::i64 : t) << name;
    }
  }
}

TEST(Composites, LayerNormOptionalAffine) {
  for (int n = 1; n <= 3; ++n) {
    GraphBuilder b("g");
    ValueId x = b.param("x", DType::f32, {2, 8});
    std::vector<Operand> args{x};
    if (n >= 2) args.push_back(b.param("g", DType::f32, {8}));
    if (n >= 3) args.push_back(b.param("b", DType::f32, {8}));
    ValueId y = b.op("layer_norm", args, {{"eps", 1e-3}}, "y");
    EXPECT_EQ(b.graph().value_name(y), "y");
    EXPECT_EQ(b.graph().type(y), (TensorType{DType::f32, {2, 8}}));
  }
}

TEST(Composites, Errors) {
  GraphBuilder b("g");
  ValueId x = b.param("x", DType::f32, {2, 8});
  ValueId i = b.param("i", DType::i32, {2, 8});
  EXPECT_THROW(b.op("softmax", {i}), UserError);
  EXPECT_THROW(b.op("softmax", {x, x}), UserError);
  EXPECT_THROW(b.op("softmax", {x}, {{"axis", 2}}), UserError);
  EXPECT_THROW(b.op("softmax", {x}, {{"axes", AttrValue(AttrValue::Ints{1})}}), UserError);
  EXPECT_THROW(b.op("gelu", {x}, {{"approximate", "fast"}}), UserError);
  EXPECT_THROW(b.op("frobnicate", {x}), UserError);
  // resize: sizes required, one per axis, static resized axes, known modes,
  // nearest only for integers.
  EXPECT_THROW(b.op("resize", {x}), UserError);
  EXPECT_THROW(b.op("resize", {x}, {{"sizes", AttrValue(AttrValue::Ints{4})}}), UserError);
  EXPECT_THROW(b.op("resize", {x}, {{"sizes", AttrValue(AttrValue::Ints{2, 0})}}), UserError);
  EXPECT_THROW(b.op("resize", {x}, {{"sizes", AttrValue(AttrValue::Ints{2, 4})}, {"mode", "area"}}), UserError);
  EXPECT_THROW(b.op("resize", {i}, {{"sizes", AttrValue(AttrValue::Ints{2, 4})}, {"mode", "linear"}}), UserError);
  EXPECT_NO_THROW(b.op("resize", {i}, {{"sizes", AttrValue(AttrValue::Ints{2, 4})}}));
  EXPECT_THROW(b.op("resize", {x},
                    {{"sizes", AttrValue(AttrValue::Ints{2, 4})}, {"coordinate_transformation_mode", "centre"}}),
               UserError);
  // top_k: k in [1, extent] and at most kMaxTopK, a static axis in range.
  EXPECT_THROW(b.op("top_k", {x}), UserError);
  EXPECT_THROW(b.op("top_k", {x}, {{"k", 9}}), UserError);
  EXPECT_THROW(b.op("top_k", {x}, {{"k", 1}, {"axis", 2}}), UserError);
  EXPECT_EQ(b.graph().type(b.op("top_k_indices", {i}, {{"k", 2}, {"axis", 0}})), (TensorType{DType::i64, {2, 8}}));
  GraphBuilder wide("w");
  EXPECT_THROW(wide.op("top_k", {wide.param("x", DType::f32, {1000})}, {{"k", 200}}), UserError);
  GraphBuilder symbolic("s");
  EXPECT_THROW(symbolic.op("top_k", {symbolic.param("x", DType::f32, {Dim::symbol("N")})}, {{"k", 1}}), UserError);
}

TEST(Composites, LogsumexpKeepdims) {
  GraphBuilder b("g");
  ValueId x = b.param("x", DType::f32, {3, 5, 7});
  EXPECT_EQ(b.graph().type(b.op("logsumexp", {x}, {{"axes", AttrValue(AttrValue::Ints{1})}})).shape,
            (Shape{3, 7}));
  EXPECT_EQ(b.graph().type(b.op("logsumexp", {x}, {{"axes", AttrValue(AttrValue::Ints{-1, 0})},
                                                   {"keepdims", true}})).shape,
            (Shape{1, 5, 1}));
}

}  // namespace
}  // namespace stitch
