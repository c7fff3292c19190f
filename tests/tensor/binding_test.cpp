// bind_inputs: dtype/shape checks and consistent binding of symbolic dims.
#include <gtest/gtest.h>

#include "stitch/builder.h"
#include "stitch/interpreter.h"

namespace stitch {
namespace {

Graph two_param_graph() {
  GraphBuilder b("g");
  ValueId x = b.param("x", DType::f32, {Dim::symbol("B"), Dim::symbol("N")});
  ValueId y = b.param("y", DType::f32, {Dim::symbol("N"), 3});
  b.output(b.op(OpKind::Dot, {x, y}));
  return b.finish();
}

std::string error_of(const Graph& g, const std::vector<Tensor>& in) {
  try {
    bind_inputs(g, in);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(Binding, BindsEverySymbol) {
  Graph g = two_param_graph();
  SymbolBindings b = bind_inputs(g, {Tensor(DType::f32, {2, 5}), Tensor(DType::f32, {5, 3})});
  EXPECT_EQ(b, (SymbolBindings{{"B", 2}, {"N", 5}}));
}

TEST(Binding, ZeroExtentsBind) {
  Graph g = two_param_graph();
  SymbolBindings b = bind_inputs(g, {Tensor(DType::f32, {0, 0}), Tensor(DType::f32, {0, 3})});
  EXPECT_EQ(b, (SymbolBindings{{"B", 0}, {"N", 0}}));
}

TEST(Binding, ConflictNamesBothInputs) {
  Graph g = two_param_graph();
  EXPECT_EQ(error_of(g, {Tensor(DType::f32, {2, 5}), Tensor(DType::f32, {4, 3})}),
            "input 'y': dim 0 binds N = 4, but input 'x' bound N = 5");
}

TEST(Binding, StaticMismatchDtypeRankAndCount) {
  Graph g = two_param_graph();
  EXPECT_EQ(error_of(g, {Tensor(DType::f32, {2, 5}), Tensor(DType::f32, {5, 4})}),
            "input 'y': expected f32[N, 3], got f32[5, 4] (dim 1 is 4, not 3)");
  EXPECT_EQ(error_of(g, {Tensor(DType::f64, {2, 5}), Tensor(DType::f32, {5, 3})}),
            "input 'x': expected f32[B, N], got f64[2, 5]");
  EXPECT_EQ(error_of(g, {Tensor(DType::f32, {2, 5, 1}), Tensor(DType::f32, {5, 3})}),
            "input 'x': expected f32[B, N], got f32[2, 5, 1]");
  EXPECT_EQ(error_of(g, {Tensor(DType::f32, {2, 5})}), "graph 'g' takes 2 inputs, got 1");
}

TEST(Binding, SameSymbolTwiceInOneInput) {
  GraphBuilder b("sq");
  ValueId m = b.param("m", DType::f32, {Dim::symbol("N"), Dim::symbol("N")});
  b.output(b.transpose(m, {1, 0}));
  Graph g = b.finish();
  EXPECT_NO_THROW(bind_inputs(g, {Tensor(DType::f32, {3, 3})}));
  EXPECT_EQ(error_of(g, {Tensor(DType::f32, {3, 4})}), "input 'm': dim 1 binds N = 4, but input 'm' bound N = 3");
}

}  // namespace
}  // namespace stitch
