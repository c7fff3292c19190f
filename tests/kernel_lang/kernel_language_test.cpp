// The user-kernel language (docs/kernel-language.md): parsing, checking,
// printing and the C++ builder.
#include <gtest/gtest.h>

#include <string>

#include "stitch/kernel.h"
#include "stitch/text.h"

namespace stitch {
namespace {

UserKernel parse_one(const std::string& text) {
  Module m = parse_module(text, "k.stitch");
  EXPECT_EQ(m.kernels.size(), 1u);
  return m.kernels.at(0);
}

std::string error_of(const std::string& text) {
  try {
    parse_module(text, "k.stitch");
  } catch (const UserError& e) {
    return e.formatted();
  }
  return "no error";
}

TEST(KernelLanguage, ParsesTypesAndRecordsAccess) {
  UserKernel k = parse_one(R"(
kernel saxpy(a: f32, x: f32[n], y: f32[n]) over i < n {
  y[i] = a * x[i] + y[i]
}
)");
  EXPECT_EQ(k.name, "saxpy");
  ASSERT_EQ(k.params.size(), 3u);
  EXPECT_FALSE(k.params[0].is_array);
  EXPECT_EQ(k.params[1].access, ArrayAccess::Read);
  EXPECT_EQ(k.params[2].access, ArrayAccess::ReadWrite);
  EXPECT_EQ(k.symbols(), std::vector<std::string>{"n"});
  ASSERT_EQ(k.body.size(), 1u);
  EXPECT_EQ(k.body[0].value->dtype, DType::f32);
}

TEST(KernelLanguage, GraphsAndKernelsShareAFile) {
  Module m = parse_module(R"(
graph g(x: f32[4]) {
  y = exp(x)
  return y
}
kernel k(x: f32[n]) -> sum f32 over i < n {
  yield x[i]
}
)",
                          "k.stitch");
  EXPECT_EQ(m.graphs.size(), 1u);
  ASSERT_EQ(m.kernels.size(), 1u);
  EXPECT_NE(m.find_kernel("k"), nullptr);
  EXPECT_EQ(m.find_kernel("g"), nullptr);
}

TEST(KernelLanguage, LiteralsTakeTheOtherOperandsDtype) {
  UserKernel k = parse_one(R"(
kernel lit(x: f16[n], c: i8[n]) over i < n {
  x[i] = x[i] * 2 + 0.5
  c[i] = c[i] - 1
  let big = 3000000000
  let f = 1.5
  let m: f32 = 1 / 3
}
)");
  EXPECT_EQ(k.body[0].value->dtype, DType::f16);
  EXPECT_EQ(k.body[1].value->dtype, DType::i8);
  EXPECT_EQ(k.body[2].declared_type, DType::i64);
  EXPECT_EQ(k.body[3].declared_type, DType::f64);
  EXPECT_EQ(k.body[4].declared_type, DType::f32);
}

TEST(KernelLanguage, GluedMinusIsASubtraction) {
  UserKernel k = parse_one(R"(
kernel shift(a: f32[n], b: f32[n]) over i < n-1 {
  b[i] = a[i+1-1] -1.5
}
)");
  EXPECT_EQ(print_kernel(k), R"(kernel shift(a: f32[n], b: f32[n]) over i < n - 1 {
  b[i] = a[i + 1 - 1] - 1.5
}
)");
}

TEST(KernelLanguage, PrintingParsesBackToTheSameKernel) {
  const std::string text = R"(
kernel all(n: i64, alpha: f64, A: f64[N, M], C: f64[N, N], flags: bool[N]) -> max f64 over i < n, j < M {
  let s: f64 = 0
  for k < N {
    s += alpha * A[k, j] / f64(k + 1)
  }
  if flags[i] && !(s < 0.0) || i % 2 == 0 {
    C[i, i] = max(s, -inf)
  } else if i > 3 {
    C[i, 0] -= select(flags[i], 1.0, -(2.5))
  } else {
    yield sqrt(abs(s)) * -1
  }
  yield f64(i32(s)) - (1 - (2 - 3))
}
)";
  UserKernel k = parse_one(text);
  std::string printed = print_kernel(k);
  UserKernel again = parse_one(printed);
  EXPECT_TRUE(same_kernel(k, again)) << printed << "\n---\n" << print_kernel(again);
  EXPECT_EQ(print_kernel(again), printed);
}

TEST(KernelLanguage, BuilderMakesTheParsedKernel) {
  UserKernelBuilder b("rowsum");
  b.array("a", DType::f32, {Dim::symbol("n"), Dim::symbol("m")});
  b.array("out", DType::f32, {Dim::symbol("n")});
  KExpr i = b.index("i", b.symbol("n"));
  KExpr s = b.let("s", DType::f32, 0);
  b.for_("j", b.symbol("m"), [&](KExpr j) { b.assign("s", s + b.load("a", {i, j})); });
  b.if_(s > 0, [&] { b.store("out", {i}, s); }, [&] { b.store("out", {i}, -s); });
  UserKernel built = b.finish();
  UserKernel parsed = parse_one(R"(
kernel rowsum(a: f32[n, m], out: f32[n]) over i < n {
  let s: f32 = 0
  for j < m {
    s = s + a[i, j]
  }
  if s > 0 {
    out[i] = s
  } else {
    out[i] = -s
  }
}
)");
  EXPECT_TRUE(same_kernel(built, parsed)) << print_kernel(built) << "\n---\n" << print_kernel(parsed);
}

TEST(KernelLanguage, BuilderErrorsNameTheKernel) {
  UserKernelBuilder b("bad");
  b.array("x", DType::f32, {Dim::symbol("n")});
  KExpr i = b.index("i", b.symbol("n"));
  b.store("x", {i}, b.load("x", {i}) + kernel_cast(i, DType::f64));
  try {
    b.finish();
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), "kernel 'bad': add needs operands of one dtype, got f32, f64 (insert a cast)");
  }
}

struct ErrorCase {
  const char* name;
  const char* text;
  const char* error;
};

class KernelLanguageErrors : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(KernelLanguageErrors, ReportsFileLineColumn) { EXPECT_EQ(error_of(GetParam().text), GetParam().error); }

INSTANTIATE_TEST_SUITE_P(
    All, KernelLanguageErrors,
    ::testing::Values(
        ErrorCase{"no_range", "kernel k(x: f32[n]) {\n}\n",
                  "k.stitch:1:21: error: expected 'over' and the range of kernel 'k', got '{'"},
        ErrorCase{"undefined", "kernel k(x: f32[n]) over i < n {\n  x[i] = y\n}\n",
                  "k.stitch:2:10: error: undefined name 'y'"},
        ErrorCase{"unindexed", "kernel k(x: f32[n]) over i < n {\n  let v = x\n}\n",
                  "k.stitch:2:11: error: array 'x' is used as a value; index it: x[...]"},
        ErrorCase{"rank", "kernel k(x: f32[n, m]) over i < n {\n  x[i] = 1\n}\n",
                  "k.stitch:2:3: error: array 'x' has rank 2 but is indexed with 1 index"},
        ErrorCase{"float_index", "kernel k(x: f32[n]) over i < n {\n  x[f32(i)] = 1\n}\n",
                  "k.stitch:2:5: error: an index of 'x' must be an integer, got f32"},
        ErrorCase{"store_type", "kernel k(x: f32[n], y: f64[n]) over i < n {\n  x[i] = y[i]\n}\n",
                  "k.stitch:2:10: error: the value stored to 'x' must be f32, got f64 (convert with f32(...))"},
        ErrorCase{"assign_index", "kernel k(x: f32[n]) over i < n {\n  i = 2\n}\n",
                  "k.stitch:2:3: error: cannot assign to index variable 'i'; only locals (declared with 'let') change"},
        ErrorCase{"redefine", "kernel k(x: f32[n]) over i < n {\n  let x = 1\n}\n",
                  "k.stitch:2:3: error: 'x' is already defined as an array at line 1"},
        ErrorCase{"yield_in_for", "kernel k(x: f32[n]) over i < n {\n  yield x[i]\n}\n",
                  "k.stitch:2:3: error: 'yield' outside a reduction kernel (declare one with '-> sum f32' before 'over')"},
        ErrorCase{"literal_fit", "kernel k(x: i8[n]) over i < n {\n  x[i] = x[i] + 300\n}\n",
                  "k.stitch:2:17: error: an operand of add: literal 300 does not fit i8"},
        ErrorCase{"float_literal_int", "kernel k(x: i32[n]) over i < n {\n  x[i] = 1.5\n}\n",
                  "k.stitch:2:10: error: the value stored to 'x': literal 1.5 is not an integer, as i32 needs"},
        ErrorCase{"extent_reads", "kernel k(x: i64[n]) over i < x[0] {\n}\n",
                  "k.stitch:1:30: error: a range extent cannot read array 'x'"},
        ErrorCase{"not_elementwise", "kernel k(x: f32[n]) over i < n {\n  x[i] = reduce_sum(x[i])\n}\n",
                  "k.stitch:2:10: error: 'reduce_sum' is not an elementwise function; a kernel body uses scalar math only"},
        ErrorCase{"unknown_function", "kernel k(x: f32[n]) over i < n {\n  x[i] = expp(x[i])\n}\n",
                  "k.stitch:2:10: error: unknown function 'expp'"},
        ErrorCase{"chain", "kernel k(x: bool[n]) over i < n {\n  x[i] = 1 < i < 3\n}\n",
                  "k.stitch:2:16: error: comparisons do not chain; write (a < b) && (b < c)"},
        ErrorCase{"bool_cond", "kernel k(x: f32[n]) over i < n {\n  if x[i] {\n  }\n}\n",
                  "k.stitch:2:6: error: an 'if' condition must be bool, got f32 (convert with bool(...))"},
        ErrorCase{"bad_reduction", "kernel k(x: f32[n]) -> prod f32 over i < n {\n}\n",
                  "k.stitch:1:24: error: unknown reduction 'prod'; a kernel reduces with sum, max or min"},
        ErrorCase{"symbol_clash", "kernel k(n: i64, x: f32[n]) over i < n {\n}\n",
                  "k.stitch:1:18: error: shape symbol 'n' of array 'x' is also the name of a scalar parameter"},
        ErrorCase{"duplicate", "kernel k(x: f32[n]) over i < n {\n}\nkernel k(x: f32[n]) over i < n {\n}\n",
                  "k.stitch:3:1: error: kernel 'k' is already defined at line 1"},
        ErrorCase{"unclosed", "kernel k(x: f32[n]) over i < n {\n  x[i] = 1\n",
                  "k.stitch:3:1: error: expected '}' to close the body of kernel 'k', got end of input"},
        ErrorCase{"top_level", "kernel k(x: f32[n]) over i < n {\n}\nbanana\n",
                  "k.stitch:3:1: error: expected 'graph', 'kernel' or end of input after kernel 'k', got 'banana'"}),
    [](const ::testing::TestParamInfo<ErrorCase>& info) { return info.param.name; });

}  // namespace
}  // namespace stitch
