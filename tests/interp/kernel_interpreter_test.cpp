// The reference execution of user kernels: values, reductions, and the errors
// it reports (bad arguments, indices outside an array, races).
#include <gtest/gtest.h>

#include <string>

#include "stitch/interpreter.h"
#include "stitch/text.h"

namespace stitch {
namespace {

UserKernel kernel(const std::string& text) { return parse_module(text, "k.stitch").kernels.at(0); }

std::string error_of(const UserKernel& k, const std::vector<KernelArg>& args) {
  try {
    interpret_kernel(k, args);
  } catch (const UserError& e) {
    return e.formatted();
  }
  return "no error";
}

Tensor iota_f32(int64_t n) {
  Tensor t(DType::f32, {n});
  for (int64_t i = 0; i < n; ++i) t.set_f64(i, static_cast<double>(i));
  return t;
}

TEST(KernelInterpreter, SaxpyWritesInPlace) {
  UserKernel k = kernel("kernel saxpy(a: f32, x: f32[n], y: f32[n]) over i < n {\n  y[i] = a * x[i] + y[i]\n}\n");
  Tensor x = iota_f32(5);
  Tensor y = iota_f32(5);
  EXPECT_EQ(interpret_kernel(k, {2.0, x, y}).numel(), 0);
  for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(y.get_f64(i), 3.0 * static_cast<double>(i));
}

TEST(KernelInterpreter, ReductionsAndTheirIdentities) {
  UserKernel sum = kernel("kernel s(x: f32[n]) -> sum f64 over i < n {\n  yield f64(x[i])\n}\n");
  UserKernel mx = kernel("kernel m(x: i32[n]) -> max i32 over i < n {\n  if x[i] % 2 == 0 {\n    yield x[i]\n  }\n}\n");
  Tensor x = iota_f32(101);
  EXPECT_EQ(interpret_kernel(sum, {x}).get_f64(0), 5050.0);
  Tensor ints(DType::i32, {7});
  for (int64_t i = 0; i < 7; ++i) ints.set_i64(i, 10 - i);
  EXPECT_EQ(interpret_kernel(mx, {ints}).get_i64(0), 10);
  Tensor odd(DType::i32, {1});
  odd.set_i64(0, 3);
  EXPECT_EQ(interpret_kernel(mx, {odd}).get_i64(0), INT32_MIN);  // nothing yielded: max's identity
  Tensor none(DType::f32, {0});
  EXPECT_EQ(interpret_kernel(sum, {none}).get_f64(0), 0.0);
}

TEST(KernelInterpreter, RangeExtentsAreExpressionsOverScalarsAndSymbols) {
  UserKernel k = kernel("kernel k(m: i64, x: f32[n]) over i < n - m, j < 2 {\n  x[i * 2 + j] = f32(i)\n}\n");
  Tensor x(DType::f32, {10});
  interpret_kernel(k, {int64_t{6}, x});  // 4 x 2 indices write x[0..7]
  EXPECT_EQ(x.get_f64(7), 3.0);
  EXPECT_EQ(x.get_f64(8), 0.0);
  EXPECT_EQ(error_of(k, {int64_t{11}, x}), "error: kernel 'k': the range of 'i' has negative extent -1");
}

TEST(KernelInterpreter, ArgumentsAreCheckedAgainstParameters) {
  UserKernel k = kernel("kernel k(a: i8, x: f32[n], y: f32[n, 2]) over i < n {\n  y[i, 0] = x[i]\n}\n");
  Tensor x(DType::f32, {3});
  Tensor y(DType::f32, {3, 2});
  Tensor y4(DType::f32, {4, 2});
  Tensor xd(DType::f64, {3});
  EXPECT_EQ(error_of(k, {1, x}), "error: kernel 'k' takes 3 arguments, got 2");
  EXPECT_EQ(error_of(k, {300, x, y}), "error: kernel 'k': argument 1 ('a'): value 300 does not fit i8");
  EXPECT_EQ(error_of(k, {1.5, x, y}), "error: kernel 'k': argument 1 ('a') is i8 but 1.5 is not an integer");
  EXPECT_EQ(error_of(k, {x, x, y}), "error: kernel 'k': argument 1 ('a') is a scalar i8, got an array");
  EXPECT_EQ(error_of(k, {1, 2, y}), "error: kernel 'k': argument 2 ('x') is an array f32[n], got a scalar");
  EXPECT_EQ(error_of(k, {1, xd, y}), "error: kernel 'k': argument 2 ('x') must be f32[n], got f64[3]");
  EXPECT_EQ(error_of(k, {1, x, y4}),
            "error: kernel 'k': argument 3 ('y'): axis 0 binds symbol n to 4, but an earlier argument bound it to 3");
}

TEST(KernelInterpreter, AnIndexOutsideItsArrayIsAnError) {
  UserKernel k = kernel("kernel k(x: f32[n], y: f32[n]) over i < n {\n  y[i] = x[i + 1]\n}\n");
  Tensor x(DType::f32, {4});
  Tensor y(DType::f32, {4});
  EXPECT_EQ(error_of(k, {x, y}),
            "k.stitch:2:10: error: kernel 'k': index (i=3) reads x[4], outside axis 0 of extent 4");
}

TEST(KernelInterpreter, RacesBetweenIndicesAreErrors) {
  UserKernel shift = kernel("kernel k(x: f32[n]) over i < n - 1 {\n  x[i] = x[i + 1]\n}\n");
  Tensor x = iota_f32(4);
  EXPECT_EQ(error_of(shift, {x}),
            "k.stitch:2:3: error: kernel 'k': race on x (element 1): index (i=1) writes it, and index (i=0) reads "
            "it; the result would depend on the order the indices run in");
  UserKernel same = kernel("kernel k(x: f32[n], y: f32[1]) over i < n {\n  y[0] = x[i]\n}\n");
  Tensor y(DType::f32, {1});
  EXPECT_EQ(error_of(same, {x, y}),
            "k.stitch:2:3: error: kernel 'k': race on y (element 0): index (i=1) writes it, and index (i=0) writes "
            "it too; the result would depend on the order the indices run in");
  // One index reading and writing its own element, and many reading one, are fine.
  UserKernel fine = kernel("kernel k(x: f32[n], c: f32[1]) over i < n {\n  x[i] = x[i] * c[0]\n}\n");
  Tensor c(DType::f32, {1});
  c.set_f64(0, 2.0);
  EXPECT_EQ(error_of(fine, {x, c}), "no error");
  EXPECT_EQ(x.get_f64(3), 6.0);
}

TEST(KernelInterpreter, AliasedArgumentsShareStorage) {
  // x passed twice: each index reads and writes only its own element, so no race.
  UserKernel k = kernel("kernel k(a: f32[n], b: f32[n]) over i < n {\n  b[i] = a[i] + 1\n}\n");
  Tensor x = iota_f32(3);
  interpret_kernel(k, {x, x});
  EXPECT_EQ(x.get_f64(2), 3.0);
}

}  // namespace
}  // namespace stitch
