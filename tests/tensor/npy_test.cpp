#include "stitch/npy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>

#include "stitch/error.h"

namespace stitch {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr double kInf = std::numeric_limits<double>::infinity();

std::string golden_path(const std::string& name) {
  return std::string(STITCH_SOURCE_DIR) + "/tests/tensor/golden/" + name;
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A .npy file with a hand-written header, padded as numpy pads it.
std::string npy_with_header(std::string header, const std::string& payload, int major = 1) {
  const size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  for (size_t i = 0; i < prefix - 8; ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xFF);
  return out + header + payload;
}

std::string f32_payload(std::initializer_list<float> values) {
  std::string out(values.size() * sizeof(float), '\0');
  std::memcpy(out.data(), values.begin(), out.size());
  return out;
}

std::string parse_error(const std::string& bytes) {
  try {
    parse_npy(bytes, "x.npy");
  } catch (const UserError& e) {
    return e.what();
  }
  return "<no error>";
}

std::string read_error(const std::string& path) {
  try {
    read_npy(path);
  } catch (const UserError& e) {
    return e.what();
  }
  return "<no error>";
}

std::vector<std::byte> bytes_of(const Tensor& t) { return {t.raw(), t.raw() + t.nbytes()}; }

TEST(NpyRoundTrip, EveryDTypeAndShape) {
  const std::vector<std::vector<int64_t>> shapes = {{2, 3}, {}, {1}, {0}, {3, 0, 2}, {2, 1, 4, 3}};
  for (DType dtype : kAllDTypes) {
    for (const auto& shape : shapes) {
      Tensor t(dtype, shape);
      fill_random(t, 7);
      const Tensor back = parse_npy(serialize_npy(t), "mem");
      EXPECT_EQ(back.dtype(), dtype);
      EXPECT_EQ(back.shape(), shape);
      EXPECT_EQ(bytes_of(back), bytes_of(t)) << t.str();
    }
  }
}

TEST(NpyRoundTrip, ThroughAFile) {
  const std::string path = testing::TempDir() + "stitch_npy_round_trip.npy";
  Tensor t(DType::bf16, {3, 5});
  fill_random(t, 11);
  write_npy(path, t);
  const Tensor back = read_npy(path);
  EXPECT_EQ(back.dtype(), DType::bf16);
  EXPECT_EQ(back.shape(), t.shape());
  EXPECT_EQ(bytes_of(back), bytes_of(t));
  std::filesystem::remove(path);
}

TEST(NpyWrite, HeaderIsWhatNumpyWrites) {
  const std::string bytes = serialize_npy(Tensor(DType::f32, {2, 3}));
  ASSERT_EQ(bytes.size(), 128u + 24u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_EQ(static_cast<unsigned char>(bytes[8]) + 256 * static_cast<unsigned char>(bytes[9]), 118);
  EXPECT_THAT(bytes.substr(10, 118),
              StartsWith("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }    "));
  EXPECT_EQ(bytes[127], '\n');
  EXPECT_THAT(serialize_npy(Tensor(DType::i8, {})), HasSubstr("'shape': (), }"));
  EXPECT_THAT(serialize_npy(Tensor(DType::bf16, {4})),
              HasSubstr("{'descr': '<V2', 'fortran_order': False, 'shape': (4,), }"));
}

TEST(NpyWrite, LongHeaderSwitchesToVersion2) {
  const Tensor t(DType::i32, std::vector<int64_t>(22000, 1));
  const std::string bytes = serialize_npy(t);
  EXPECT_EQ(bytes[6], '\x02');
  EXPECT_EQ((bytes.size() - t.nbytes()) % 64, 0u);
  const Tensor back = parse_npy(bytes, "long");
  EXPECT_EQ(back.shape(), t.shape());
}

TEST(NpyWrite, WriteFailureIsAUserError) {
  Tensor t(DType::f32, {1});
  try {
    write_npy("/nonexistent-dir/out.npy", t);
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()),
              "/nonexistent-dir/out.npy: cannot open for writing: No such file or directory");
  }
}

// Files written by numpy (scripts/gen_npy_golden.py); the values are the ones that script stores.
TEST(NpyGolden, F32Matrix) {
  const Tensor t = read_npy(golden_path("f32_2x3.npy"));
  ASSERT_EQ(t.dtype(), DType::f32);
  ASSERT_EQ(t.shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(t.get_f64(0), 0.0);
  EXPECT_EQ(t.get_f64(1), 1.0);
  EXPECT_EQ(t.get_f64(2), -2.5);
  EXPECT_EQ(t.get_f64(3), 0.100000001490116119384765625);  // 0.1 rounded to f32
  EXPECT_EQ(t.get_f64(4), std::ldexp(1.0, -149));
  EXPECT_EQ(t.get_f64(5), 340282346638528859811704183484516925440.0);
}

TEST(NpyGolden, I64Scalar) {
  const Tensor t = read_npy(golden_path("i64_scalar.npy"));
  ASSERT_EQ(t.dtype(), DType::i64);
  EXPECT_EQ(t.rank(), 0);
  ASSERT_EQ(t.numel(), 1);
  EXPECT_EQ(t.get_i64(0), -9007199254740993LL);
}

TEST(NpyGolden, Bool) {
  const Tensor t = read_npy(golden_path("bool_5.npy"));
  ASSERT_EQ(t.dtype(), DType::boolean);
  ASSERT_EQ(t.shape(), (std::vector<int64_t>{5}));
  const int64_t expected[] = {1, 0, 1, 1, 0};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(t.get_i64(i), expected[i]);
}

TEST(NpyGolden, F16) {
  const Tensor t = read_npy(golden_path("f16_5.npy"));
  ASSERT_EQ(t.dtype(), DType::f16);
  ASSERT_EQ(t.numel(), 5);
  const uint16_t expected_bits[] = {0x3C00, 0x7BFF, 0x0001, 0x8000, 0x2E66};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(t.data<uint16_t>()[i], expected_bits[i]) << i;
  EXPECT_EQ(t.get_f64(1), 65504.0);
  EXPECT_EQ(t.get_f64(2), std::ldexp(1.0, -24));
  EXPECT_EQ(t.get_f64(4), 0.0999755859375);
}

TEST(NpyGolden, I8) {
  const Tensor t = read_npy(golden_path("i8_3.npy"));
  ASSERT_EQ(t.dtype(), DType::i8);
  EXPECT_EQ(t.get_i64(0), -128);
  EXPECT_EQ(t.get_i64(1), 0);
  EXPECT_EQ(t.get_i64(2), 127);
}

TEST(NpyGolden, ZeroSize) {
  const Tensor t = read_npy(golden_path("i32_2x0.npy"));
  EXPECT_EQ(t.dtype(), DType::i32);
  EXPECT_EQ(t.shape(), (std::vector<int64_t>{2, 0}));
  EXPECT_EQ(t.numel(), 0);
}

TEST(NpyGolden, F64Specials) {
  const Tensor t = read_npy(golden_path("f64_special.npy"));
  ASSERT_EQ(t.dtype(), DType::f64);
  ASSERT_EQ(t.numel(), 5);
  EXPECT_EQ(t.get_f64(0), kInf);
  EXPECT_EQ(t.get_f64(1), -kInf);
  EXPECT_TRUE(std::isnan(t.get_f64(2)));
  EXPECT_EQ(t.get_f64(3), 1e308);
  EXPECT_EQ(t.get_f64(4), std::numeric_limits<double>::denorm_min());
}

TEST(NpyGolden, Bf16FromMlDtypesAndFromVoid) {
  const Tensor ml = read_npy(golden_path("bf16_ml_dtypes.npy"));
  ASSERT_EQ(ml.dtype(), DType::bf16);
  EXPECT_EQ(ml.get_f64(0), 1.0);
  EXPECT_EQ(ml.get_f64(1), -2.0);
  EXPECT_EQ(ml.get_f64(2), 0.5);

  const Tensor v = read_npy(golden_path("bf16_void.npy"));
  ASSERT_EQ(v.dtype(), DType::bf16);
  EXPECT_EQ(v.get_f64(0), 1.0);
  EXPECT_EQ(v.get_f64(1), -2.0);
  EXPECT_EQ(v.get_f64(2), kInf);
}

TEST(NpyGolden, Versions2And3) {
  const Tensor v2 = read_npy(golden_path("f32_v2.npy"));
  ASSERT_EQ(v2.dtype(), DType::f32);
  EXPECT_EQ(v2.get_f64(0), 1.5);
  EXPECT_EQ(v2.get_f64(1), -3.0);
  const Tensor v3 = read_npy(golden_path("i32_v3.npy"));
  ASSERT_EQ(v3.dtype(), DType::i32);
  EXPECT_EQ(v3.get_i64(0), 7);
  EXPECT_EQ(v3.get_i64(1), -7);
}

// The writer must produce numpy's bytes exactly, header padding included.
TEST(NpyGolden, WriterMatchesNumpyByteForByte) {
  Tensor f32(DType::f32, {2, 3});
  const double f32_values[] = {0.0, 1.0, -2.5, 0.1, std::ldexp(1.0, -149), std::numeric_limits<float>::max()};
  for (int i = 0; i < 6; ++i) f32.set_f64(i, f32_values[i]);
  EXPECT_EQ(serialize_npy(f32), file_bytes(golden_path("f32_2x3.npy")));

  Tensor i64(DType::i64, {});
  i64.set_i64(0, -9007199254740993LL);
  EXPECT_EQ(serialize_npy(i64), file_bytes(golden_path("i64_scalar.npy")));

  Tensor i8(DType::i8, {3});
  i8.set_i64(0, -128);
  i8.set_i64(2, 127);
  EXPECT_EQ(serialize_npy(i8), file_bytes(golden_path("i8_3.npy")));

  Tensor b(DType::boolean, {5});
  for (int i : {0, 2, 3}) b.set_i64(i, 1);
  EXPECT_EQ(serialize_npy(b), file_bytes(golden_path("bool_5.npy")));

  Tensor f16(DType::f16, {5});
  const double f16_values[] = {1.0, 65504.0, std::ldexp(1.0, -24), -0.0, 0.1};
  for (int i = 0; i < 5; ++i) f16.set_f64(i, f16_values[i]);
  EXPECT_EQ(serialize_npy(f16), file_bytes(golden_path("f16_5.npy")));

  EXPECT_EQ(serialize_npy(Tensor(DType::i32, {2, 0})), file_bytes(golden_path("i32_2x0.npy")));

  Tensor bf16(DType::bf16, {3});
  const double bf16_values[] = {1.0, -2.0, 0.5};
  for (int i = 0; i < 3; ++i) bf16.set_f64(i, bf16_values[i]);
  EXPECT_EQ(serialize_npy(bf16), file_bytes(golden_path("bf16_ml_dtypes.npy")));
}

TEST(NpyGolden, RejectsFortranOrder) {
  const std::string path = golden_path("f32_fortran_2x3.npy");
  EXPECT_EQ(read_error(path),
            path + ": Fortran-order arrays are not supported; save with np.ascontiguousarray");
}

TEST(NpyGolden, RejectsBigEndian) {
  const std::string path = golden_path("f32_big_endian.npy");
  EXPECT_EQ(read_error(path), path +
                                  ": big-endian data (dtype '>f4') is not supported; save with "
                                  "a.astype(a.dtype.newbyteorder('<'))");
}

TEST(NpyGolden, RejectsUnsigned) {
  const std::string path = golden_path("u8_3.npy");
  EXPECT_EQ(read_error(path), path +
                                  ": unsigned dtype '|u1' is not supported (Stitch has no unsigned "
                                  "types); save with a.astype(np.int64)");
}

TEST(NpyParse, AcceptsHeaderVariants) {
  const std::string payload = f32_payload({1, 2, 3, 4, 5, 6});
  for (const char* header : {
           "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
           "{'shape': (2, 3), 'fortran_order': False, 'descr': '<f4'}",
           "{\"descr\":\"<f4\",\"fortran_order\":False,\"shape\":(2,3,)}",
           "  {  'descr' : '<f4' ,\n 'fortran_order' : False , 'shape' : ( 2 , 3 ) , }  ",
       }) {
    const Tensor t = parse_npy(npy_with_header(header, payload), "x.npy");
    EXPECT_EQ(t.shape(), (std::vector<int64_t>{2, 3})) << header;
    EXPECT_EQ(t.get_f64(5), 6.0) << header;
  }
}

TEST(NpyParse, AcceptsHeaderWithoutNewlinePadding) {
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
  const std::string header = "{'descr': '|i1', 'fortran_order': False, 'shape': (2,)}";
  bytes += static_cast<char>(header.size());
  bytes += '\0';
  bytes += header + "\x05\xfb";
  const Tensor t = parse_npy(bytes, "x.npy");
  EXPECT_EQ(t.get_i64(0), 5);
  EXPECT_EQ(t.get_i64(1), -5);
}

TEST(NpyParse, AcceptsAlternativeSpellings) {
  EXPECT_EQ(parse_npy(npy_with_header("{'descr': '<i1', 'fortran_order': False, 'shape': (1,)}", "\x01"), "x")
                .dtype(),
            DType::i8);
  const Tensor bf = parse_npy(npy_with_header("{'descr': 'bfloat16', 'fortran_order': False, 'shape': ()}",
                                              std::string("\x80\x3f", 2)),
                              "x");
  EXPECT_EQ(bf.dtype(), DType::bf16);
  EXPECT_EQ(bf.get_f64(0), 1.0);
}

TEST(NpyParse, NormalisesBoolBytes) {
  const Tensor t = parse_npy(npy_with_header("{'descr': '|b1', 'fortran_order': False, 'shape': (3,)}",
                                             std::string("\x02\x00\xff", 3)),
                             "x");
  EXPECT_EQ(t.data<uint8_t>()[0], 1);
  EXPECT_EQ(t.data<uint8_t>()[1], 0);
  EXPECT_EQ(t.data<uint8_t>()[2], 1);
}

TEST(NpyParse, ZeroSizeWithLargeOtherDims) {
  const Tensor t = parse_npy(
      npy_with_header("{'descr': '<f8', 'fortran_order': False, 'shape': (0, 1000000000000)}", ""), "x");
  EXPECT_EQ(t.numel(), 0);
  // numpy refuses these too ("array is too big"): the other dims still bound the size.
  EXPECT_EQ(parse_error(npy_with_header(
                "{'descr': '<f8', 'fortran_order': False, 'shape': (0, 4000000000000000000)}", "")),
            "x.npy: f64[0, 4000000000000000000] has 0 elements of 8 bytes (32000000000000000000 bytes counting "
            "each zero extent as 1); the limit is 281474976710656 bytes (2^48) per tensor");
}

TEST(NpyErrors, MissingFile) {
  EXPECT_EQ(read_error("/nonexistent/in.npy"), "/nonexistent/in.npy: cannot open: No such file or directory");
}

TEST(NpyErrors, Directory) {
  const std::string dir = testing::TempDir();
  EXPECT_EQ(read_error(dir), dir + ": cannot read: is a directory");
}

TEST(NpyErrors, BadMagic) {
  const std::string expected = "x.npy: not a .npy file (it does not start with \\x93NUMPY)";
  EXPECT_EQ(parse_error(""), expected);
  EXPECT_EQ(parse_error("\x93NUMP"), expected);
  EXPECT_EQ(parse_error("PK\x03\x04 this is a zip"), expected);
}

TEST(NpyErrors, Version) {
  EXPECT_EQ(parse_error("\x93NUMPY"), "x.npy: truncated .npy file: no format version");
  EXPECT_EQ(parse_error(std::string("\x93NUMPY\x04\x00", 8) + std::string(60, ' ')),
            "x.npy: unsupported .npy format version 4.0 (Stitch reads 1.0, 2.0 and 3.0)");
  EXPECT_EQ(parse_error(std::string("\x93NUMPY\x01\x01", 8) + std::string(60, ' ')),
            "x.npy: unsupported .npy format version 1.1 (Stitch reads 1.0, 2.0 and 3.0)");
  EXPECT_EQ(parse_error(std::string("\x93NUMPY\x00\x00", 8)),
            "x.npy: unsupported .npy format version 0.0 (Stitch reads 1.0, 2.0 and 3.0)");
}

TEST(NpyErrors, TruncatedHeader) {
  EXPECT_EQ(parse_error(std::string("\x93NUMPY\x01\x00\x10", 9)),
            "x.npy: truncated .npy file: no header length");
  EXPECT_EQ(parse_error(std::string("\x93NUMPY\x02\x00\x10\x00\x00", 11)),
            "x.npy: truncated .npy file: no header length");
  EXPECT_EQ(parse_error(std::string("\x93NUMPY\x01\x00\x76\x00{'descr'", 17)),
            "x.npy: truncated .npy file: the header claims 118 bytes but only 7 follow");
  EXPECT_EQ(parse_error(std::string("\x93NUMPY\x02\x00\xff\xff\xff\xff{}", 14)),
            "x.npy: truncated .npy file: the header claims 4294967295 bytes but only 2 follow");
}

TEST(NpyErrors, MalformedDict) {
  EXPECT_THAT(parse_error(npy_with_header("['descr', '<f4']", "")),
              StartsWith("x.npy: malformed .npy header: expected '{' at offset 0 of "));
  EXPECT_THAT(parse_error(npy_with_header("{'descr' '<f4', 'fortran_order': False, 'shape': ()}", "")),
              StartsWith("x.npy: malformed .npy header: expected ':' at offset 9 of "));
  EXPECT_THAT(parse_error(npy_with_header("{'descr': '<f4' 'fortran_order': False, 'shape': ()}", "")),
              StartsWith("x.npy: malformed .npy header: expected ',' or '}' at offset 16 of "));
  EXPECT_THAT(
      parse_error(npy_with_header("{'descr': '<f4, 'fortran_order': False, 'shape': ()}", "")),
      HasSubstr(
          "malformed .npy header: expected ',' or '}' at offset 17 of '{'descr': '<f4, 'fortran_order': False, ...'"));
  EXPECT_THAT(parse_error(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': ()", "")),
              HasSubstr("malformed .npy header: expected ',' or '}'"));
  EXPECT_THAT(parse_error(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': ()} x", "")),
              HasSubstr("malformed .npy header: unexpected text after the closing '}'"));
  EXPECT_THAT(parse_error(npy_with_header("{'descr': '<f4', 'fortran_order': maybe, 'shape': ()}", "")),
              HasSubstr("malformed .npy header: expected True or False at offset 34"));
  EXPECT_THAT(parse_error(npy_with_header("{'descr': '<f4', 'fortran_order': Falsey, 'shape': ()}", "")),
              HasSubstr("expected True or False"));
  EXPECT_THAT(parse_error(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 'a')}", "")),
              HasSubstr("malformed .npy header: expected an integer dimension"));
  EXPECT_THAT(parse_error(npy_with_header("{'descr': 'a\\'b', 'fortran_order': False, 'shape': ()}", "")),
              HasSubstr("malformed .npy header: unsupported string literal"));
  EXPECT_THAT(parse_error(npy_with_header("{'descr", "")),
              HasSubstr("malformed .npy header: unterminated string"));
}

TEST(NpyErrors, MalformedHeaderTextIsEscaped) {
  const std::string error = parse_error(npy_with_header(std::string("{\x01\xff", 3), ""));
  EXPECT_THAT(error, HasSubstr("expected a string at offset 1 of '{\\x01\\xff"));
}

TEST(NpyErrors, Keys) {
  EXPECT_THAT(parse_error(npy_with_header("{'descr': '<f4', 'shape': ()}", "")),
              StartsWith("x.npy: malformed .npy header: no 'fortran_order' key"));
  EXPECT_THAT(parse_error(npy_with_header("{'fortran_order': False, 'shape': ()}", "")),
              StartsWith("x.npy: malformed .npy header: no 'descr' key"));
  EXPECT_THAT(parse_error(npy_with_header("{'descr': '<f4', 'fortran_order': False}", "")),
              StartsWith("x.npy: malformed .npy header: no 'shape' key"));
  EXPECT_THAT(
      parse_error(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (), 'x': 1}", "")),
      StartsWith("x.npy: malformed .npy header: unexpected key 'x'"));
  EXPECT_THAT(parse_error(npy_with_header("{'shape': (), 'descr': '<f4', 'shape': ()}", "")),
              StartsWith("x.npy: malformed .npy header: duplicate key 'shape'"));
}

TEST(NpyErrors, Dtypes) {
  const auto header = [](const std::string& descr) {
    return npy_with_header("{'descr': " + descr + ", 'fortran_order': False, 'shape': ()}", "");
  };
  const std::string supported = "; Stitch reads <f2 <f4 <f8 |i1 <i4 <i8 |b1 and <V2 (bfloat16, docs/npy.md)";
  EXPECT_EQ(parse_error(header("'<i2'")), "x.npy: unsupported dtype '<i2'" + supported);
  EXPECT_EQ(parse_error(header("'<c8'")), "x.npy: unsupported dtype '<c8'" + supported);
  EXPECT_EQ(parse_error(header("'|O'")), "x.npy: unsupported dtype '|O'" + supported);
  EXPECT_EQ(parse_error(header("'<V4'")), "x.npy: unsupported dtype '<V4'" + supported);
  EXPECT_EQ(parse_error(header("''")), "x.npy: unsupported dtype ''" + supported);
  EXPECT_EQ(
      parse_error(header("'>i8'")),
      "x.npy: big-endian data (dtype '>i8') is not supported; save with a.astype(a.dtype.newbyteorder('<'))");
  EXPECT_THAT(parse_error(header("'<u4'")), StartsWith("x.npy: unsigned dtype '<u4' is not supported"));
  EXPECT_EQ(parse_error(header("[('a', '<f4')]")), "x.npy: structured dtypes are not supported");
}

TEST(NpyErrors, Shapes) {
  const auto header = [](const std::string& shape) {
    return npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + "}", "");
  };
  EXPECT_EQ(parse_error(header("(2, -1)")), "x.npy: negative dimension -1 in shape");
  EXPECT_EQ(parse_error(header("(99999999999999999999,)")),
            "x.npy: dimension in shape does not fit in 64 bits");
  EXPECT_EQ(parse_error(header("(4611686018427387904, 2)")),
            "x.npy: f32[4611686018427387904, 2] has 9223372036854775808 elements of 4 bytes "
            "(36893488147419103232 bytes); the limit is 281474976710656 bytes (2^48) per tensor");
  EXPECT_EQ(parse_error(header("(3037000500, 3037000500)")),
            "x.npy: f32[3037000500, 3037000500] has 9223372037000250000 elements of 4 bytes "
            "(36893488148001000000 bytes); the limit is 281474976710656 bytes (2^48) per tensor");
  EXPECT_THAT(parse_error(header("(3)")),
              HasSubstr("malformed .npy header: shape must be a tuple, as in (3,)"));
  EXPECT_THAT(parse_error(header("[3]")), HasSubstr("malformed .npy header: expected '('"));
  EXPECT_THAT(parse_error(header("(,)")), HasSubstr("malformed .npy header: expected an integer dimension"));
  EXPECT_THAT(parse_error(header("(2 3)")), HasSubstr("malformed .npy header: expected ',' or ')' in shape"));
}

TEST(NpyErrors, PayloadSize) {
  const std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}";
  EXPECT_EQ(parse_error(npy_with_header(header, f32_payload({1, 2, 3, 4, 5}))),
            "x.npy: truncated payload: f32(2, 3) needs 24 bytes of data, the file has 20");
  EXPECT_EQ(parse_error(npy_with_header(header, "")),
            "x.npy: truncated payload: f32(2, 3) needs 24 bytes of data, the file has 0");
  EXPECT_EQ(parse_error(npy_with_header(header, f32_payload({1, 2, 3, 4, 5, 6, 7}))),
            "x.npy: oversized payload: f32(2, 3) needs 24 bytes of data, the file has 28");
  EXPECT_EQ(
      parse_error(npy_with_header("{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000000,)}", "")),
      "x.npy: truncated payload: f64(1000000000000,) needs 8000000000000 bytes of data, the file has 0");
}

// Every truncation and many byte corruptions of valid files must end in a
// tensor or a UserError, never in anything else.
TEST(NpyErrors, CorruptedFilesNeverCrash) {
  std::vector<std::string> seeds = {serialize_npy(Tensor(DType::f32, {2, 3})),
                                    serialize_npy(Tensor(DType::boolean, {})),
                                    file_bytes(golden_path("i32_v3.npy"))};
  int accepted = 0;
  for (const std::string& seed : seeds) {
    for (size_t length = 0; length < seed.size(); ++length) {
      EXPECT_THAT(parse_error(seed.substr(0, length)), StartsWith("x.npy: "));
    }
    for (size_t i = 0; i < seed.size(); ++i) {
      for (int value : {0x00, 0x01, 0x20, 0x27, 0x28, 0x29, 0x2C, 0x2D, 0x30, 0x39, 0x7B, 0x7D, 0x80, 0xFF}) {
        std::string corrupt = seed;
        corrupt[i] = static_cast<char>(value);
        try {
          parse_npy(corrupt, "x.npy");
          ++accepted;
        } catch (const UserError& e) {
          EXPECT_THAT(e.what(), StartsWith("x.npy: "));
        }
      }
    }
  }
  EXPECT_GT(accepted, 0);
}

}  // namespace
}  // namespace stitch
