// The interpreter as a whole: data-dependent errors, zero-size tensors on
// every op family, symbolic shapes, graph outputs that are parameters, dead
// nodes, and a large input.
#include "stitch/interpreter.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>

#include "single_op.h"
#include "stitch/builder.h"
#include "tensor_compare.h"

namespace stitch {
namespace {

using testing::float_tensor;
using testing::int_tensor;
using testing::run_single_op;
using testing::tensors_match;
using testing::Tolerance;

std::string user_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no UserError)";
}

TEST(Interpreter, GatherOutOfRangeIsAUserError) {
  Tensor x = float_tensor(DType::f32, {2, 5}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  Attrs axis1{{"axis", AttrValue(int64_t{1})}};
  EXPECT_EQ(user_error_of([&] { run_single_op("gather", {x, int_tensor(DType::i64, {2}, {1, 7})}, axis1); }),
            "gather: index 7 is out of range for axis 1 of extent 5");
  EXPECT_EQ(user_error_of([&] { run_single_op("gather", {x, int_tensor(DType::i32, {1}, {-6})}, axis1); }),
            "gather: index -6 is out of range for axis 1 of extent 5");
  // -5 is the first element: negative indices wrap once.
  EXPECT_TRUE(tensors_match(run_single_op("gather", {x, int_tensor(DType::i32, {1}, {-5})}, axis1),
                            float_tensor(DType::f32, {2, 1}, {0, 5}), Tolerance::exact()));
  Tensor empty_axis(DType::f32, {2, 0});
  EXPECT_EQ(user_error_of([&] { run_single_op("gather", {empty_axis, int_tensor(DType::i64, {1}, {0})}, axis1); }),
            "gather: index 0 is out of range for axis 1 of extent 0");
}

TEST(Interpreter, ArgmaxOverAnEmptyAxisIsAUserError) {
  Tensor x(DType::f32, {3, 0});
  Attrs axis1{{"axes", AttrValue(AttrValue::Ints{1})}};
  EXPECT_THROW(run_single_op("argmax", {x}, axis1), UserError);
  EXPECT_THROW(run_single_op("argmin", {x}, axis1), UserError);
  // Over the non-empty axis there is nothing to reduce into: an empty result.
  Attrs axis0{{"axes", AttrValue(AttrValue::Ints{0})}};
  EXPECT_EQ(run_single_op("argmax", {x}, axis0).shape(), (std::vector<int64_t>{0}));
}

TEST(Interpreter, DataErrorsCarryTheNodeLocation) {
  GraphBuilder b("located");
  ValueId x = b.param("x", DType::f32, {3});
  ValueId i = b.param("i", DType::i64, {1});
  b.set_loc({"model.stitch", 4, 7});
  b.output(b.op("gather", {x, i}), "y");
  Graph g = b.finish();
  try {
    interpret(g, {Tensor(DType::f32, {3}), int_tensor(DType::i64, {1}, {3})});
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.loc().line, 4);
    EXPECT_EQ(e.formatted(), "model.stitch:4:7: error: gather: index 3 is out of range for axis 0 of extent 3");
  }
}

TEST(Interpreter, ChecksInputsAgainstParameters) {
  GraphBuilder b("typed");
  ValueId x = b.param("x", DType::f32, {2});
  b.output(b.exp(x), "y");
  Graph g = b.finish();
  EXPECT_THROW(interpret(g, {Tensor(DType::f64, {2})}), UserError);
  EXPECT_THROW(interpret(g, {Tensor(DType::f32, {3})}), UserError);
  EXPECT_THROW(interpret(g, {}), UserError);
}

// One graph touching every op family on a [0, 4] operand.
TEST(Interpreter, ZeroSizeTensorsFlowThroughEveryOpFamily) {
  GraphBuilder b("empty");
  ValueId x = b.param("x", DType::f32, {0, 4});
  ValueId row = b.param("row", DType::f32, {4});
  ValueId e = b.exp(x, "e");
  ValueId s = b.add(e, row, "s");
  b.output(b.reduce(OpKind::ReduceSum, s, {0}), "sum0");
  b.output(b.reduce(OpKind::ReduceMax, s, {1}), "max1");
  b.output(b.transpose(s, {1, 0}), "t");
  b.output(b.op("concat", {s, b.broadcast(row, {2, 4})}, {{"axis", AttrValue(int64_t{0})}}), "cat");
  b.output(b.op("pad", {s}, {{"low", AttrValue(AttrValue::Ints{1, 0})}, {"high", AttrValue(AttrValue::Ints{0, 0})}}),
           "padded");
  b.output(b.op("dot", {s, b.transpose(b.broadcast(row, {3, 4}), {1, 0})}), "mm");
  b.output(b.op("argmax", {s}, {{"axes", AttrValue(AttrValue::Ints{1})}}), "am");
  b.output(b.op("slice", {s}, {{"start", AttrValue(AttrValue::Ints{0, 1})}}), "sl");
  b.output(b.cast(b.op("lt", {s, 0.0}), DType::i32), "mask");
  b.output(b.reshape(s, {4, 0}), "r");
  b.output(b.op("select", {b.op("isnan", {s}), s, row}), "sel");
  b.output(b.op("gather", {row, b.op("iota", {}, {{"shape", AttrValue(Shape{0})}, {"axis", AttrValue(int64_t{0})}})}),
           "g");
  Graph g = b.finish();
  std::vector<Tensor> out = interpret(g, {Tensor(DType::f32, {0, 4}), float_tensor(DType::f32, {4}, {1, 2, 3, 4})});
  ASSERT_EQ(out.size(), 12u);
  EXPECT_TRUE(tensors_match(out[0], float_tensor(DType::f32, {4}, {0, 0, 0, 0}), Tolerance::exact()));
  EXPECT_EQ(out[1].shape(), (std::vector<int64_t>{0}));
  EXPECT_EQ(out[2].shape(), (std::vector<int64_t>{4, 0}));
  EXPECT_TRUE(tensors_match(out[3], float_tensor(DType::f32, {2, 4}, {1, 2, 3, 4, 1, 2, 3, 4}), Tolerance::exact()));
  EXPECT_TRUE(tensors_match(out[4], float_tensor(DType::f32, {1, 4}, {0, 0, 0, 0}), Tolerance::exact()));
  EXPECT_EQ(out[5].shape(), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(out[6].shape(), (std::vector<int64_t>{0}));
  EXPECT_EQ(out[7].shape(), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(out[8].dtype(), DType::i32);
  EXPECT_EQ(out[9].shape(), (std::vector<int64_t>{4, 0}));
  EXPECT_EQ(out[10].shape(), (std::vector<int64_t>{0, 4}));
  EXPECT_EQ(out[11].shape(), (std::vector<int64_t>{0}));
}

TEST(Interpreter, SliceWithAHugeStepTakesTheFirstElement) {
  Tensor x = float_tensor(DType::f32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Attrs attrs{{"start", AttrValue(AttrValue::Ints{1, 1})},
              {"step", AttrValue(AttrValue::Ints{int64_t{1} << 62, std::numeric_limits<int64_t>::max()})}};
  EXPECT_TRUE(tensors_match(run_single_op("slice", {x}, attrs), float_tensor(DType::f32, {1, 1}, {5}),
                            Tolerance::exact()));
}

TEST(Interpreter, SymbolicShapesBindPerRun) {
  GraphBuilder b("symbolic");
  ValueId x = b.param("x", DType::f32, {Dim::symbol("B"), 3});
  ValueId rows = b.op("iota", {}, {{"shape", AttrValue(Shape{Dim::symbol("B"), 3})}, {"axis", AttrValue(int64_t{0})},
                                   {"dtype", AttrValue(DType::f32)}});
  ValueId y = b.add(x, rows, "y");
  b.output(b.reduce(OpKind::ReduceSum, y, {1}), "total");
  Graph g = b.finish();
  std::vector<Tensor> out = interpret(g, {float_tensor(DType::f32, {2, 3}, {1, 1, 1, 2, 2, 2})});
  EXPECT_TRUE(tensors_match(out.at(0), float_tensor(DType::f32, {2}, {3, 9}), Tolerance::exact()));
  out = interpret(g, {Tensor(DType::f32, {0, 3})});
  EXPECT_EQ(out.at(0).shape(), (std::vector<int64_t>{0}));
}

TEST(Interpreter, OutputsMayBeParametersAndRepeat) {
  GraphBuilder b("passthrough");
  ValueId x = b.param("x", DType::i32, {2});
  ValueId y = b.op("neg", {x}, {}, "y");
  b.output(x, "x_again");
  b.output(y);
  b.output(y, "y_again");
  Graph g = b.finish();
  Tensor in = int_tensor(DType::i32, {2}, {3, -4});
  std::vector<Tensor> out = interpret(g, {in});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_TRUE(tensors_match(out[0], in, Tolerance::exact()));
  EXPECT_TRUE(tensors_match(out[1], int_tensor(DType::i32, {2}, {-3, 4}), Tolerance::exact()));
  EXPECT_TRUE(tensors_match(out[2], out[1], Tolerance::exact()));
}

// A node whose value reaches no output is not evaluated, so its data errors
// do not surface, as in any back end that removes dead code.
TEST(Interpreter, DeadNodesAreNotEvaluated) {
  GraphBuilder b("dead");
  ValueId x = b.param("x", DType::f32, {3});
  ValueId i = b.param("i", DType::i64, {1});
  b.op("gather", {x, i}, {}, "unused");
  b.output(b.exp(x), "y");
  Graph g = b.finish();
  EXPECT_NO_THROW(interpret(g, {Tensor(DType::f32, {3}), int_tensor(DType::i64, {1}, {99})}));
}

// Values are freed after their last use; a long chain must still see every
// operand it needs (reused operands, outputs read again later).
TEST(Interpreter, LongChainsReuseValuesCorrectly) {
  GraphBuilder b("chain");
  ValueId x = b.param("x", DType::i64, {3});
  ValueId acc = x;
  for (int i = 0; i < 50; ++i) acc = b.add(acc, x);
  b.output(acc, "acc");
  b.output(b.mul(acc, x), "late");
  std::vector<Tensor> out = interpret(b.finish(), {int_tensor(DType::i64, {3}, {1, 2, 3})});
  EXPECT_TRUE(tensors_match(out[0], int_tensor(DType::i64, {3}, {51, 102, 153}), Tolerance::exact()));
  EXPECT_TRUE(tensors_match(out[1], int_tensor(DType::i64, {3}, {51, 204, 459}), Tolerance::exact()));
}

// The CLI runs the interpreter on workloads of this size; it must take well
// under a second per elementwise op. The time is reported, not asserted.
TEST(Interpreter, LargeElementwiseAndReduction) {
  constexpr int64_t kRows = 4096, kCols = 4096;
  Tensor x(DType::f32, {kRows, kCols});
  float* px = x.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) px[i] = static_cast<float>(i % 7);
  GraphBuilder b("large");
  ValueId v = b.param("x", DType::f32, {kRows, kCols});
  ValueId y = b.add(v, v, "y");
  b.output(b.reduce(OpKind::ReduceSum, y, {1}), "rows");
  Graph g = b.finish();
  auto start = std::chrono::steady_clock::now();
  std::vector<Tensor> out = interpret(g, {x});
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  RecordProperty("seconds", std::to_string(seconds));
  std::printf("16M-element add + row reduction: %.3f s\n", seconds);
  double want_row0 = 0;
  for (int64_t j = 0; j < kCols; ++j) want_row0 += 2.0 * static_cast<double>(j % 7);
  EXPECT_EQ(out.at(0).get_f64(0), want_row0);
}

}  // namespace
}  // namespace stitch
