// The limit on one tensor (docs/limits.md) where graphs and kernels are read:
// the text parser, GraphBuilder and the kernel language, each a located
// UserError naming the shape, its size and the limit.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "stitch/builder.h"
#include "stitch/shape.h"
#include "stitch/text.h"

namespace stitch {
namespace {

const std::string kLimit = "the limit is 281474976710656 bytes (2^48) per tensor";

// The formatted UserError of parsing `text`; a test failure when it parses.
std::string parse_error(const std::string& text) {
  try {
    parse_module(text, "t.stitch");
  } catch (const UserError& e) {
    return e.formatted();
  }
  ADD_FAILURE() << "expected a UserError for:\n" << text;
  return "";
}

TEST(TensorSizeLimit, SpanCountsZeroExtentsAsOne) {
  EXPECT_EQ(tensor_span_bytes(DType::f32, {2, 3}), 24);
  EXPECT_EQ(tensor_span_bytes(DType::f32, {0, 5}), 20);
  EXPECT_EQ(tensor_span_bytes(DType::i8, {kMaxTensorBytes}), kMaxTensorBytes);
  EXPECT_EQ(tensor_span_bytes(DType::i8, {kMaxTensorBytes + 1}), std::nullopt);
  EXPECT_EQ(tensor_span_bytes(DType::f64, {int64_t{1} << 45}), kMaxTensorBytes);
  EXPECT_EQ(tensor_span_bytes(DType::f64, {(int64_t{1} << 45) + 1}), std::nullopt);
  // A product that overflows int64 is over the limit, not wrapped.
  EXPECT_EQ(tensor_span_bytes(DType::f32, {int64_t{1} << 62, 4}), std::nullopt);
  EXPECT_EQ(tensor_span_bytes(DType::f32, {0, int64_t{1} << 62, int64_t{1} << 62}), std::nullopt);
}

TEST(TensorSizeLimit, CheckNamesTheShapeTheCountsAndTheLimit) {
  try {
    check_tensor_size("input 'x'", DType::f32, {100000000000, 100000000});
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()),
              "input 'x': f32[100000000000, 100000000] has 10000000000000000000 elements of 4 bytes "
              "(40000000000000000000 bytes); " + kLimit);
  }
  EXPECT_NO_THROW(check_tensor_size("x", DType::f32, {int64_t{1} << 46}));
}

TEST(TensorSizeLimit, ParameterOverTheLimitIsALocatedError) {
  const std::string err = parse_error(
      "graph g(x: f32[100000000000, 100000000]) -> (f32[100000000000, 100000000]) {\n  y = exp(x)\n  return y\n}\n");
  EXPECT_EQ(err, "t.stitch:1:9: error: parameter 'x': f32[100000000000, 100000000] has 10000000000000000000 "
                 "elements of 4 bytes (40000000000000000000 bytes); " + kLimit);
}

TEST(TensorSizeLimit, OpResultOverTheLimitIsALocatedError) {
  // 4 GB in, 400 TB out.
  const std::string err = parse_error(
      "graph g(x: f32[1000000, 1000]) {\n  y = broadcast(x, shape=[100000, 1000000, 1000])\n  return y\n}\n");
  EXPECT_NE(err.find("t.stitch:2:"), std::string::npos) << err;
  EXPECT_NE(err.find("broadcast 'y': f32[100000, 1000000, 1000] has 100000000000000 elements"), std::string::npos)
      << err;
  EXPECT_NE(err.find(kLimit), std::string::npos) << err;
}

TEST(TensorSizeLimit, SymbolicShapeChecksItsStaticDims) {
  const std::string err = parse_error(
      "graph g(x: f32[N, 100000000000, 100000000]) {\n  y = exp(x)\n  return y\n}\n");
  EXPECT_NE(err.find("t.stitch:1:9: error: parameter 'x': f32[N, 100000000000, 100000000] spans at least "
                     "40000000000000000000 bytes (each symbol counted as 1); the limit is 281474976710656 bytes"),
            std::string::npos)
      << err;
  // Within the limit with the symbols at 1: accepted, checked when bound.
  EXPECT_NO_THROW(parse_module("graph g(x: f32[N, N, N]) {\n  y = exp(x)\n  return y\n}\n", "t.stitch"));
}

TEST(TensorSizeLimit, EmptyTensorWithHugeExtentsIsOverTheLimit) {
  const std::string err = parse_error("graph g(x: f32[0, 100000000000, 100000000]) {\n  return x\n}\n");
  EXPECT_NE(err.find("has 0 elements of 4 bytes (40000000000000000000 bytes counting each zero extent as 1)"),
            std::string::npos)
      << err;
}

TEST(TensorSizeLimit, LargestTensorIsAccepted) {
  EXPECT_NO_THROW(parse_module("graph g(x: i8[281474976710656]) {\n  return x\n}\n", "t.stitch"));
  const std::string err = parse_error("graph g(x: i8[281474976710657]) {\n  return x\n}\n");
  EXPECT_NE(err.find("281474976710657 bytes"), std::string::npos) << err;
}

TEST(TensorSizeLimit, GraphBuilderChecksParamsAndOps) {
  GraphBuilder b("g");
  try {
    b.param("x", DType::f64, Shape{int64_t{1} << 30, int64_t{1} << 30});
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("parameter 'x': f64[1073741824, 1073741824] has 1152921504606846976 "
                                         "elements of 8 bytes (9223372036854775808 bytes)"),
              std::string::npos)
        << e.what();
  }
  ValueId x = b.param("x", DType::f32, Shape{1 << 20});
  try {
    b.broadcast(x, Shape{int64_t{1} << 30, 1 << 20}, "y");
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("broadcast 'y': f32[1073741824, 1048576]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(kLimit), std::string::npos) << e.what();
  }
}

TEST(TensorSizeLimit, KernelArrayOverTheLimitIsALocatedError) {
  const std::string err = parse_error(
      "kernel k(x: f32[100000000000, 100000000]) over i < 1 {\n  x[0, 0] = 1.0\n}\n");
  EXPECT_NE(err.find("t.stitch:1:10: error: array 'x': f32[100000000000, 100000000] has 10000000000000000000 "
                     "elements"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find(kLimit), std::string::npos) << err;
}

TEST(TensorSizeLimit, KernelRangeLiteralOverTheLimitIsALocatedError) {
  std::string err = parse_error("kernel k(x: f32[n]) over i < 281474976710657 {\n  x[0] = 1.0\n}\n");
  EXPECT_NE(err.find("t.stitch:1:"), std::string::npos) << err;
  EXPECT_NE(err.find("the range of 'i' has extent 281474976710657; the limit on the indices of a range is "
                     "281474976710656 (2^48)"),
            std::string::npos)
      << err;
  err = parse_error("kernel k(x: f32[n]) over i < 100000000, j < 100000000 {\n  x[0] = 1.0\n}\n");
  EXPECT_NE(err.find("the range's literal extents alone give more than 281474976710656 indices"), std::string::npos)
      << err;
}

}  // namespace
}  // namespace stitch
