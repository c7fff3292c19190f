// The PTX printer's canonical form (docs/ptx.md): golden text for a file of
// hand-written constructs, and print(parse(print(x))) == print(x).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "ptx/parser.h"
#include "ptx/printer.h"

namespace stitch::ptx {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string canonical(const std::string& text) { return print_module(parse_module(text, "t.ptx")); }

void expect_fixed_point(const std::string& text) {
  std::string once = canonical(text);
  EXPECT_EQ(canonical(once), once);
}

TEST(PtxPrinter, ConstructsMatchGolden) {
  const std::string dir = STITCH_SOURCE_DIR "/tests/ptx/golden/";
  std::string printed = canonical(read_file(dir + "constructs.ptx"));
  EXPECT_EQ(printed, read_file(dir + "constructs.canonical.ptx"));
  EXPECT_EQ(canonical(printed), printed);
}

TEST(PtxPrinter, CanonicalSpellings) {
  std::string out = canonical(
      ".version 8.0\n.target sm_90\n.address_size 64\n"
      ".entry k(.param .u64 a)\n{\n.reg .b32 %r<3>, %x;\n"
      "mov.u32 %r1, 0x10;\nmov.f32 %f1, 2.0;\nld.param.u64 %rd1, [a+0];\nst.u32 [%rd1-4], %r1;\n"
      "L1: bra.uni L1;\n}\n");
  EXPECT_EQ(out,
            ".version 8.0\n.target sm_90\n.address_size 64\n\n"
            ".entry k(\n\t.param .u64 a\n)\n{\n"
            "\t.reg .b32 %r<3>;\n\t.reg .b32 %x;\n"
            "\tmov.u32 %r1, 16;\n\tmov.f32 %f1, 0f40000000;\n\tld.param.u64 %rd1, [a];\n\tst.u32 [%rd1+-4], %r1;\n"
            "L1:\n\tbra.uni L1;\n}\n");
}

TEST(PtxPrinter, NestedBlocksIndent) {
  std::string out = canonical(".version 8.0\n.target sm_90\n.address_size 64\n.func f()\n{\n{\n{\nA: ret;\n}\n}\n}\n");
  EXPECT_EQ(out, ".version 8.0\n.target sm_90\n.address_size 64\n\n.func f()\n{\n\t{\n\t\t{\n\t\tA:\n\t\t\tret;\n\t\t}\n\t}\n}\n");
  expect_fixed_point(out);
}

TEST(PtxPrinter, FixedPointOnAwkwardInput) {
  expect_fixed_point(".version 7.0 .target sm_75 .address_size 64 .global .u32 a = {1}, b[2] = {1, 2};");
  expect_fixed_point(".version 7.0 .target sm_75 .address_size 64 .const .b8 t[2][2] = {1, 2, 3};");
  expect_fixed_point(".version 7.0 .target sm_75 .address_size 64 .global .f32 x[] = {1.5, -0.0};");
  expect_fixed_point(".version 7.0 .target sm_75 .address_size 64 .entry k() { mov.f32 %f1, -0.0; ret; }");
  expect_fixed_point(".version 7.0 .target sm_75 .address_size 64 .extern .func f(.param .b32 a) .noreturn;");
  expect_fixed_point(".version 7.0 .target sm_75 .address_size 64 .entry k() { ld.u8 %r1, [-8]; }");
}

TEST(PtxPrinter, OperandsPrintCanonically) {
  Operand negated = Operand::reg("%p1");
  negated.negated = true;
  EXPECT_EQ(print_operand(negated), "!%p1");
  Operand pair = Operand::reg("%r1");
  pair.second = "%p2";
  EXPECT_EQ(print_operand(pair), "%r1|%p2");
  Operand f;
  f.kind = Operand::Kind::Float32;
  f.bits = 0x7FC00000;
  EXPECT_EQ(print_operand(f), "0f7FC00000");
  Operand address;
  address.kind = Operand::Kind::Address;
  address.name = "%rd1";
  address.integer = -1024;
  EXPECT_EQ(print_operand(address), "[%rd1+-1024]");
}

}  // namespace
}  // namespace stitch::ptx
