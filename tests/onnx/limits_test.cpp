// Sizes an ONNX model claims are checked before anything is allocated for
// them (docs/limits.md): dims against the limit on one tensor, raw_data and
// typed values against the dims; the CLI exits 2 naming both.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "onnx_model_builder.h"
#include "stitch/shape.h"

namespace stitch::onnx_import::testing {
namespace {

const std::string kLimit = "281474976710656 bytes (2^48)";

class OnnxLimitsTest : public OnnxModelTest {
 protected:
  // `stitch print MODEL` on the saved model: its exit status and output.
  std::pair<int, std::string> print_cli() {
    const std::string path = save();
    const std::string log = (dir() / "log").string();
    const int status = std::system((std::string(STITCH_CLI) + " print " + path + " > " + log + " 2>&1").c_str());
    std::ifstream in(log);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, std::string(std::istreambuf_iterator<char>(in), {})};
  }
};

TEST_F(OnnxLimitsTest, InitializerDimsOverTheLimitAreRefusedBeforeAllocating) {
  input("x", {"2"});
  // 2^46 floats = 2^48 bytes is the largest tensor; one more row is over.
  auto* w = float_init("W", {(int64_t{1} << 46) + 1, 1}, {});
  w->set_raw_data(std::string(8, '\0'));
  node("Add", {"x", "W"}, "y");
  output("y");
  const std::string msg = import_error();
  expect_contains(msg, "tensor 'W'");
  expect_contains(msg, "f32[70368744177665, 1]");
  expect_contains(msg, "281474976710660 bytes");
  expect_contains(msg, kLimit);
}

TEST_F(OnnxLimitsTest, DimsWhoseProductOverflowsInt64AreRefused) {
  input("x", {"2"});
  float_init("W", {int64_t{1} << 40, int64_t{1} << 40}, {1.f});
  node("Add", {"x", "W"}, "y");
  output("y");
  const std::string msg = import_error();
  expect_contains(msg, "tensor 'W': f32[1099511627776, 1099511627776] has 1208925819614629174706176 elements");
  expect_contains(msg, kLimit);
}

TEST_F(OnnxLimitsTest, RawDataShorterThanItsDimsIsRefusedBeforeAllocating) {
  input("x", {"2"});
  // 2^40 bytes is within the limit: the mismatch must be found without
  // allocating them.
  auto* w = float_init("W", {int64_t{1} << 38}, {});
  w->set_raw_data(std::string(8, '\0'));
  node("Add", {"x", "W"}, "y");
  output("y");
  expect_contains(import_error(), "tensor 'W': raw_data holds 8 bytes, its type needs 1099511627776");
}

TEST_F(OnnxLimitsTest, TypedValuesFewerThanTheDimsAreRefusedBeforeAllocating) {
  input("x", {"2"});
  float_init("W", {int64_t{1} << 38}, {1.f, 2.f});
  node("Add", {"x", "W"}, "y");
  output("y");
  expect_contains(import_error(), "tensor 'W' holds 2 values, its shape needs 274877906944");
}

TEST_F(OnnxLimitsTest, InputDimsOverTheLimitAreRefused) {
  input("x", {"100000000000", "100000000"});
  node("Exp", {"x"}, "y");
  output("y");
  const std::string msg = import_error();
  expect_contains(msg, "parameter 'x': f32[100000000000, 100000000] has 10000000000000000000 elements");
  expect_contains(msg, kLimit);
}

TEST_F(OnnxLimitsTest, TheCliExitsTwoNamingTheValueAndTheLimit) {
  input("x", {"2"});
  float_init("W", {int64_t{1} << 40, int64_t{1} << 40}, {1.f});
  node("Add", {"x", "W"}, "y");
  output("y");
  auto [status, out] = print_cli();
  EXPECT_EQ(status, 2) << out;
  expect_contains(out, "tensor 'W'");
  expect_contains(out, kLimit);
  EXPECT_EQ(out.find("bug in Stitch"), std::string::npos) << out;
}

}  // namespace
}  // namespace stitch::onnx_import::testing
