// The limit on one tensor where tensors are made and sizes are read: .npy
// headers, bound symbols, the Tensor constructors; and a host allocation that
// fails, which is an error naming the bytes and the tensor (docs/limits.md).
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>

#include "stitch/builder.h"
#include "stitch/interpreter.h"
#include "stitch/npy.h"
#include "stitch/shape.h"
#include "stitch/tensor.h"

namespace stitch {
namespace {

const std::string kLimit = "281474976710656 bytes (2^48)";

// A version 1.0 .npy file with `dict` as its header and `payload` after it.
std::string npy_bytes(const std::string& dict, const std::string& payload = "") {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xFF);
  out += static_cast<char>(header.size() >> 8);
  return out + header + payload;
}

std::string npy_error(const std::string& bytes) {
  try {
    parse_npy(bytes, "x.npy");
  } catch (const UserError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a UserError";
  return "";
}

TEST(NpyLimits, ShapeOverTheLimitIsRefusedBeforeThePayload) {
  const std::string err =
      npy_error(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (100000000000, 100000000), }"));
  EXPECT_EQ(err, "x.npy: f32[100000000000, 100000000] has 10000000000000000000 elements of 4 bytes "
                 "(40000000000000000000 bytes); the limit is " + kLimit + " per tensor");
}

TEST(NpyLimits, ShapeWhoseProductOverflowsIsRefusedNotWrapped) {
  // 2^32 * 2^32 * 4 wraps to 0 in 64 bits.
  const std::string err =
      npy_error(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }"));
  EXPECT_NE(err.find("has 18446744073709551616 elements"), std::string::npos) << err;
  EXPECT_NE(err.find(kLimit), std::string::npos) << err;
}

TEST(NpyLimits, EmptyArrayWithHugeExtentsIsRefused) {
  const std::string err =
      npy_error(npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (0, 4294967296, 4294967296), }"));
  EXPECT_NE(err.find("x.npy: f64[0, 4294967296, 4294967296] has 0 elements"), std::string::npos) << err;
  EXPECT_NE(err.find(kLimit), std::string::npos) << err;
}

TEST(NpyLimits, HeaderLengthOverTheLimitIsRefused) {
  // Version 2.0: a 4-byte header length, here 2^21, and that many bytes.
  std::string bytes = "\x93NUMPY";
  bytes += '\x02';
  bytes += '\x00';
  bytes += std::string("\x00\x00\x20\x00", 4);
  bytes += std::string(size_t{1} << 21, ' ');
  EXPECT_EQ(npy_error(bytes), "x.npy: the .npy header claims 2097152 bytes; the limit is 1048576 (docs/limits.md)");
}

TEST(NpyLimits, LargestShapeWithinTheLimitStillNeedsItsPayload) {
  const std::string err =
      npy_error(npy_bytes("{'descr': '|i1', 'fortran_order': False, 'shape': (281474976710656,), }"));
  EXPECT_NE(err.find("truncated payload"), std::string::npos) << err;
  EXPECT_NE(err.find("needs 281474976710656 bytes"), std::string::npos) << err;
}

TEST(TensorLimits, ConstructorRefusesAShapeOverTheLimit) {
  try {
    Tensor t(DType::f32, {int64_t{1} << 40, int64_t{1} << 40});
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("tensor: f32[1099511627776, 1099511627776]"), std::string::npos) << e.what();
  }
  try {
    allocate_tensor("input 'x'", DType::f32, {int64_t{1} << 62});
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("input 'x': tensor: f32[4611686018427387904]"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find(kLimit), std::string::npos) << e.what();
  }
}

// Within the limit but over the address space the child may use: the
// allocation fails, and says how many bytes and for what.
TEST(TensorLimitsDeathTest, FailedAllocationNamesTheBytesAndTheTensor) {
#ifdef STITCH_SANITIZED
  // AddressSanitizer reserves terabytes of address space for its shadow
  // memory, so RLIMIT_AS cannot bound the child; the unsanitized build runs this.
  GTEST_SKIP() << "RLIMIT_AS and AddressSanitizer do not mix";
#endif
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const auto allocate_under_rlimit = [](int64_t elements) {
    const rlimit limit{rlim_t{1} << 30, rlim_t{1} << 30};
    if (setrlimit(RLIMIT_AS, &limit) != 0) std::exit(9);
    try {
      Tensor t = allocate_tensor("input 'x'", DType::f32, {elements});
    } catch (const UserError& e) {
      std::cerr << e.what() << "\n";
      std::exit(2);
    }
    std::exit(0);
  };
  // 2^33 bytes: a large tensor, mapped on its own, under a 1 GiB address space.
  EXPECT_EXIT(allocate_under_rlimit(int64_t{1} << 31), ::testing::ExitedWithCode(2),
              "input 'x': out of memory: the host did not give the 8589934592 bytes of a f32\\[2147483648\\] tensor");
}

TEST(BindingLimits, SymbolsThatMakeAValueTooLargeAreRefusedWhenBound) {
  GraphBuilder b("g");
  ValueId x = b.param("x", DType::f32, {Dim::symbol("N")});
  b.output(b.broadcast(x, {Dim::symbol("N"), Dim::symbol("N"), Dim::symbol("N")}, "y"));
  Graph g = b.finish();
  EXPECT_NO_THROW(bind_input_types(g, {{DType::f32, {1000}}}));
  try {
    bind_input_types(g, {{DType::f32, {100000}}});
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()),
              "value 'y' of graph 'g': f32[N, N, N] has 1000000000000000 elements of 4 bytes (4000000000000000 "
              "bytes; with N = 100000); the limit is " + kLimit + " per tensor");
  }
}

TEST(BindingLimits, InputExtentOverTheLimitIsRefused) {
  GraphBuilder b("g");
  ValueId x = b.param("x", DType::f32, {Dim::symbol("N")});
  b.output(b.op(OpKind::Exp, {x}));
  Graph g = b.finish();
  try {
    bind_input_types(g, {{DType::f32, {int64_t{1} << 50}}});
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()),
              "input 'x': dim 0 is 1125899906842624, more than the limit of 281474976710656 on any extent "
              "(docs/limits.md)");
  }
}

}  // namespace
}  // namespace stitch
