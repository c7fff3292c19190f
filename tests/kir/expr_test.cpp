// Every elementwise op of the Graph IR is a Kernel IR expression, typed by the
// Graph IR's own rule, printed under its ops.def name, and accepted by the verifier.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>

#include "kir/kernel_builder.h"
#include "kir/printer.h"
#include "kir/verifier.h"
#include "stitch/error.h"

namespace stitch::kir {
namespace {

// The first operand dtype (f32, then i32, then bool) the op's typing rule accepts.
std::vector<Expr> operands_for(OpKind kind) {
  int arity = op_info(kind).min_inputs;
  for (DType t : {DType::f32, DType::i32, DType::boolean}) {
    std::vector<DType> dtypes(static_cast<size_t>(arity), t);
    if (kind == OpKind::Select) dtypes[0] = DType::boolean;
    DType result;
    std::string problem;
    if (!infer_op_dtype(kind, dtypes, DType::f64, &result, &problem)) continue;
    std::vector<Expr> operands;
    for (int i = 0; i < arity; ++i) operands.push_back(var(fmt::format("{}{}", dtype_name(dtypes[i]), i), dtypes[i]));
    return operands;
  }
  ADD_FAILURE() << "no operand dtype works for " << op_name(kind);
  return {};
}

TEST(KernelExpr, EveryElementwiseOpPrintsAndVerifies) {
  KernelBuilder kb("all_ops");
  for (DType t : {DType::f32, DType::i32, DType::boolean}) {
    for (int i = 0; i < 3; ++i) kb.scalar_param(fmt::format("{}{}", dtype_name(t), i), t);
  }
  kb.launch(int_const(1), 32);
  int count = 0;
  kb.grid("b", int_const(1), [&](const Expr&) {
    for (int i = 0; i < op_kind_count(); ++i) {
      auto kind = static_cast<OpKind>(i);
      if (!is_elementwise(kind)) continue;
      std::vector<Expr> operands = operands_for(kind);
      Expr e = kind == OpKind::Cast ? cast(operands[0], DType::f64) : op(kind, operands);
      std::string expected = std::string(op_name(kind)) + "(";
      for (size_t j = 0; j < operands.size(); ++j) expected += (j ? ", " : "") + operands[j]->name;
      expected += kind == OpKind::Cast ? ", to=f64)" : ")";
      EXPECT_EQ(print_expr(e), expected);
      kb.let(fmt::format("r{}", i), e);
      ++count;
    }
  });
  EXPECT_EQ(count, 25 + 18 + 3);  // unary, binary, select/clamp/cast in ops.def
  EXPECT_EQ(verify_kernel(kb.finish_unverified()), std::vector<std::string>{});
}

TEST(KernelExpr, ResultDtypesFollowTheGraphIrRules) {
  Expr x = var("x", DType::f16);
  Expr n = var("n", DType::i32);
  EXPECT_EQ(op(OpKind::Lt, {x, x}).dtype(), DType::boolean);
  EXPECT_EQ(op(OpKind::IsNan, {x}).dtype(), DType::boolean);
  EXPECT_EQ(op(OpKind::Exp, {x}).dtype(), DType::f16);
  EXPECT_EQ(op(OpKind::Select, {bool_const(true), n, n}).dtype(), DType::i32);
  EXPECT_EQ((n * 3).dtype(), DType::i32);
  EXPECT_THROW(op(OpKind::Exp, {n}), InternalError);
  EXPECT_THROW(op(OpKind::Add, {x, n}), InternalError);
  EXPECT_THROW(op(OpKind::ReduceSum, {x}), InternalError);
}

TEST(KernelExpr, StructuralEquality) {
  EXPECT_EQ(var("N") * 4 + 1, var("N") * 4 + 1);
  EXPECT_NE(var("N") * 4 + 1, var("N") * 4 + 2);
  EXPECT_NE(var("N"), var("N", DType::i32));
  EXPECT_EQ(float_const(NAN, DType::f32), float_const(NAN, DType::f32));
  EXPECT_NE(float_const(0.0, DType::f32), float_const(-0.0, DType::f32));
  EXPECT_EQ(load("x", DType::f32, {var("i")}), load("x", DType::f32, {var("i")}));
  EXPECT_EQ(Expr(), Expr());
  EXPECT_NE(Expr(), var("i"));
}

}  // namespace
}  // namespace stitch::kir
