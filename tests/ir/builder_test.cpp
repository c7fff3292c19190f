// GraphBuilder and type inference: every rule a user can trip over.
#include <gtest/gtest.h>

#include "ir/type_inference.h"
#include "stitch/builder.h"

namespace stitch {
namespace {

Shape S(std::initializer_list<Dim> dims) { return Shape(dims); }

TEST(Builder, LiteralTakesTheOtherOperandsDtype) {
  GraphBuilder b("g");
  ValueId x = b.param("x", DType::f16, {4});
  ValueId y = b.add(x, 1.5);
  const Node* c = b.graph().producer(b.graph().producer(y)->inputs[1]);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->op, OpKind::Constant);
  EXPECT_EQ(b.graph().type(c->output), (TensorType{DType::f16, {}}));
  EXPECT_EQ(b.graph().type(y), (TensorType{DType::f16, {4}}));
}

TEST(Builder, SelectLiteralUsesTheValueOperandNotTheCondition) {
  GraphBuilder b("g");
  ValueId c = b.param("c", DType::boolean, {3});
  ValueId x = b.param("x", DType::i32, {3});
  ValueId y = b.op(OpKind::Select, {c, 0, x});
  EXPECT_EQ(b.graph().type(y).dtype, DType::i32);
}

TEST(Builder, IntegerLiteralMustFitItsDtype) {
  GraphBuilder b("g");
  ValueId x = b.param("x", DType::i8, {3});
  EXPECT_THROW(b.add(x, 300), UserError);
  EXPECT_THROW(b.add(x, 1.5), UserError);
  EXPECT_NO_THROW(b.add(x, 2.0));
}

TEST(Builder, AllLiteralOperandsIsAnError) {
  GraphBuilder b("g");
  try {
    b.add(1.0, 2.0);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot tell the dtype"), std::string::npos);
  }
}

TEST(Builder, NumpyBroadcastingOfShapes) {
  EXPECT_EQ(broadcast_shapes(S({3, 1}), S({4})), S({3, 4}));
  EXPECT_EQ(broadcast_shapes(S({Dim::symbol("B"), 1}), S({1, 8})), S({Dim::symbol("B"), 8}));
  EXPECT_EQ(broadcast_shapes(S({}), S({2, 3})), S({2, 3}));
  EXPECT_THROW(broadcast_shapes(S({3}), S({4})), UserError);
  EXPECT_THROW(broadcast_shapes(S({Dim::symbol("B")}), S({4})), UserError);
  EXPECT_THROW(broadcast_shapes(S({Dim::symbol("B")}), S({Dim::symbol("N")})), UserError);
}

TEST(Builder, MixedDtypesNeedACast) {
  GraphBuilder b("g");
  ValueId x = b.param("x", DType::f32, {2});
  ValueId i = b.param("i", DType::i32, {2});
  try {
    b.add(x, i);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "add needs operands of one dtype, got f32, i32 (insert a cast)");
  }
  EXPECT_EQ(b.graph().type(b.add(x, b.cast(i, DType::f32))).dtype, DType::f32);
}

TEST(Builder, ComparisonsGiveBoolAndLogicalOpsRejectFloats) {
  GraphBuilder b("g");
  ValueId x = b.param("x", DType::f32, {2});
  EXPECT_EQ(b.graph().type(b.binary(OpKind::Lt, x, 0.0)).dtype, DType::boolean);
  EXPECT_THROW(b.binary(OpKind::And, x, x), UserError);
  EXPECT_THROW(b.unary(OpKind::Exp, b.param("k", DType::i32, {2})), UserError);
}

TEST(TypeInference, ReductionNormalisesAxes) {
  Attrs a{{"axes", AttrValue(AttrValue::Ints{-1, 0})}};
  TensorType t = infer_type(OpKind::ReduceSum, {{DType::f32, S({2, 3, 4})}}, a);
  EXPECT_EQ(t, (TensorType{DType::f32, S({3})}));
  EXPECT_EQ(a.get("axes").as_ints(), (AttrValue::Ints{0, 2}));
  EXPECT_FALSE(a.get("keepdims").as_bool());
  Attrs again = a;
  infer_type(OpKind::ReduceSum, {{DType::f32, S({2, 3, 4})}}, again);
  EXPECT_EQ(again, a) << "normalisation must be idempotent";
}

TEST(TypeInference, ReductionDefaultsToAllAxes) {
  Attrs a;
  EXPECT_EQ(infer_type(OpKind::ReduceMax, {{DType::i32, S({2, 3})}}, a), (TensorType{DType::i32, {}}));
  Attrs k{{"keepdims", true}};
  EXPECT_EQ(infer_type(OpKind::ReduceMax, {{DType::i32, S({2, 3})}}, k), (TensorType{DType::i32, S({1, 1})}));
}

TEST(TypeInference, ReductionErrors) {
  Attrs dup{{"axes", AttrValue(AttrValue::Ints{1, -1})}};
  EXPECT_THROW(infer_type(OpKind::ReduceSum, {{DType::f32, S({2, 3})}}, dup), UserError);
  Attrs out_of_range{{"axes", AttrValue(AttrValue::Ints{2})}};
  try {
    infer_type(OpKind::ReduceSum, {{DType::f32, S({2, 3})}}, out_of_range);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "reduce_sum: axis 2 is out of range for rank 2");
  }
  Attrs none;
  EXPECT_THROW(infer_type(OpKind::ReduceMean, {{DType::i32, S({2})}}, none), UserError);
  Attrs two{{"axes", AttrValue(AttrValue::Ints{0, 1})}};
  EXPECT_THROW(infer_type(OpKind::ArgMax, {{DType::f32, S({2, 3})}}, two), UserError);
}

TEST(TypeInference, ArgmaxGivesI64) {
  Attrs a{{"axes", AttrValue(AttrValue::Ints{-1})}};
  EXPECT_EQ(infer_type(OpKind::ArgMax, {{DType::f16, S({5, 7})}}, a), (TensorType{DType::i64, S({5})}));
}

TEST(TypeInference, UnknownAndMissingAttributes) {
  Attrs bogus{{"axis", 1}};
  try {
    infer_type(OpKind::ReduceSum, {{DType::f32, S({2})}}, bogus);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "unknown attribute 'axis' for reduce_sum (expected axes, keepdims)");
  }
  Attrs none;
  EXPECT_THROW(infer_type(OpKind::Cast, {{DType::f32, S({2})}}, none), UserError);
  Attrs wrong_kind{{"to", 3}};
  EXPECT_THROW(infer_type(OpKind::Cast, {{DType::f32, S({2})}}, wrong_kind), UserError);
}

TEST(TypeInference, Reshape) {
  Attrs a{{"shape", AttrValue(AttrValue::Ints{-1, 4})}};
  EXPECT_EQ(infer_type(OpKind::Reshape, {{DType::f32, S({2, 3, 4})}}, a), (TensorType{DType::f32, S({6, 4})}));
  EXPECT_EQ(a.get("shape").as_shape(), S({6, 4}));
  Attrs sym{{"shape", AttrValue(S({Dim::symbol("B"), 12}))}};
  EXPECT_EQ(infer_type(OpKind::Reshape, {{DType::f32, S({Dim::symbol("B"), 3, 4})}}, sym).shape,
            S({Dim::symbol("B"), 12}));
  Attrs bad{{"shape", AttrValue(AttrValue::Ints{5, 5})}};
  EXPECT_THROW(infer_type(OpKind::Reshape, {{DType::f32, S({2, 3, 4})}}, bad), UserError);
  Attrs flat{{"shape", AttrValue(AttrValue::Ints{-1})}};
  EXPECT_THROW(infer_type(OpKind::Reshape, {{DType::f32, S({Dim::symbol("B"), 4})}}, flat), UserError);
}

TEST(TypeInference, TransposeDefaultsToReversal) {
  Attrs a;
  EXPECT_EQ(infer_type(OpKind::Transpose, {{DType::f32, S({2, 3, 4})}}, a).shape, S({4, 3, 2}));
  EXPECT_EQ(a.get("perm").as_ints(), (AttrValue::Ints{2, 1, 0}));
  Attrs bad{{"perm", AttrValue(AttrValue::Ints{0, 0, 1})}};
  EXPECT_THROW(infer_type(OpKind::Transpose, {{DType::f32, S({2, 3, 4})}}, bad), UserError);
}

TEST(TypeInference, SliceFollowsPythonSemantics) {
  Attrs a{{"start", AttrValue(AttrValue::Ints{1, -3})},
          {"stop", AttrValue(AttrValue::Ints{100, -1})},
          {"step", AttrValue(AttrValue::Ints{2, 1})}};
  EXPECT_EQ(infer_type(OpKind::Slice, {{DType::f32, S({10, 8})}}, a).shape, S({5, 2}));
  EXPECT_EQ(a.get("start").as_ints(), (AttrValue::Ints{1, 5}));
  EXPECT_EQ(a.get("stop").as_shape(), S({10, 7}));
  Attrs empty{{"start", AttrValue(AttrValue::Ints{7})}, {"stop", AttrValue(AttrValue::Ints{3})}};
  EXPECT_EQ(infer_type(OpKind::Slice, {{DType::f32, S({10})}}, empty).shape, S({0}));
  Attrs zero_step{{"step", AttrValue(AttrValue::Ints{0})}};
  EXPECT_THROW(infer_type(OpKind::Slice, {{DType::f32, S({10})}}, zero_step), UserError);
}

TEST(TypeInference, SliceOfSymbolicAxisOnlyWhole) {
  Attrs whole;
  EXPECT_EQ(infer_type(OpKind::Slice, {{DType::f32, S({Dim::symbol("B"), 8})}}, whole).shape,
            S({Dim::symbol("B"), 8}));
  Attrs part{{"start", AttrValue(AttrValue::Ints{1, 0})}};
  EXPECT_THROW(infer_type(OpKind::Slice, {{DType::f32, S({Dim::symbol("B"), 8})}}, part), UserError);
}

TEST(TypeInference, ConcatPadGatherIotaConstant) {
  Attrs c{{"axis", -1}};
  EXPECT_EQ(infer_type(OpKind::Concat, {{DType::f32, S({2, 3})}, {DType::f32, S({2, 5})}}, c).shape, S({2, 8}));
  Attrs c2{{"axis", 0}};
  EXPECT_THROW(infer_type(OpKind::Concat, {{DType::f32, S({2, 3})}, {DType::f32, S({2, 5})}}, c2), UserError);
  Attrs p{{"low", AttrValue(AttrValue::Ints{1, 0})}, {"high", AttrValue(AttrValue::Ints{2, 3})}};
  EXPECT_EQ(infer_type(OpKind::Pad, {{DType::i32, S({2, 3})}}, p).shape, S({5, 6}));
  EXPECT_TRUE(p.get("value").is_int());
  Attrs g{{"axis", 1}};
  EXPECT_EQ(infer_type(OpKind::Gather, {{DType::f32, S({4, 5, 6})}, {DType::i64, S({2, 3})}}, g).shape,
            S({4, 2, 3, 6}));
  Attrs bad_idx;
  EXPECT_THROW(infer_type(OpKind::Gather, {{DType::f32, S({4})}, {DType::f32, S({2})}}, bad_idx), UserError);
  Attrs i{{"shape", AttrValue(AttrValue::Ints{3, 4})}, {"axis", 1}};
  EXPECT_EQ(infer_type(OpKind::Iota, {}, i), (TensorType{DType::i64, S({3, 4})}));
  Attrs k{{"value", 1}, {"dtype", DType::f32}};
  EXPECT_EQ(infer_type(OpKind::Constant, {}, k), (TensorType{DType::f32, {}}));
  EXPECT_TRUE(k.get("value").is_float());
}

TEST(TypeInference, DotFollowsMatmul) {
  Attrs a;
  EXPECT_EQ(infer_type(OpKind::Dot, {{DType::f32, S({2, 3})}, {DType::f32, S({3, 4})}}, a).shape, S({2, 4}));
  EXPECT_EQ(infer_type(OpKind::Dot, {{DType::f32, S({3})}, {DType::f32, S({3, 4})}}, a).shape, S({4}));
  EXPECT_EQ(infer_type(OpKind::Dot, {{DType::f32, S({3})}, {DType::f32, S({3})}}, a).shape, S({}));
  EXPECT_EQ(infer_type(OpKind::Dot, {{DType::f32, S({5, 1, 2, 3})}, {DType::f32, S({7, 3, 4})}}, a).shape,
            S({5, 7, 2, 4}));
  EXPECT_THROW(infer_type(OpKind::Dot, {{DType::f32, S({2, 3})}, {DType::f32, S({4, 5})}}, a), UserError);
}

TEST(TypeInference, Arity) {
  Attrs a;
  try {
    infer_type(OpKind::Add, {{DType::f32, S({2})}}, a);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "add takes 2 operands, got 1");
  }
}

}  // namespace
}  // namespace stitch
