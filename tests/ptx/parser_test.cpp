// The PTX parser, construct by construct (docs/ptx.md, Grammar), and its
// errors: each names the file, line and column of the offending token.
#include <gtest/gtest.h>

#include "ptx/parser.h"
#include "ptx/printer.h"

namespace stitch::ptx {
namespace {

constexpr const char* kHeader = ".version 8.0\n.target sm_90\n.address_size 64\n";

Module parse(const std::string& text) { return parse_module(text, "t.ptx"); }

// The body of the single function in `module_text`.
const Function& only_function(const Module& m) {
  EXPECT_EQ(m.items.size(), 1u);
  return std::get<Function>(m.items.at(0));
}

// Parses one instruction inside a kernel body.
Instruction parse_instruction_text(const std::string& text) {
  Module m = parse(std::string(kHeader) + ".entry k()\n{\n" + text + "\n}\n");
  const Function& f = only_function(m);
  EXPECT_EQ(f.body.size(), 1u);
  return std::get<Instruction>(f.body.at(0).node);
}

std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const UserError& e) {
    return e.formatted();
  }
  return "(parsed)";
}

TEST(PtxParser, ModuleDirectives) {
  Module m = parse(".version 7.8\n.target sm_75, texmode_independent\n.address_size 32\n");
  EXPECT_EQ(m.version, "7.8");
  EXPECT_EQ(m.target, (std::vector<std::string>{"sm_75", "texmode_independent"}));
  EXPECT_EQ(m.address_size, 32);
  EXPECT_TRUE(m.items.empty());
}

TEST(PtxParser, CommentsAreSkipped) {
  Module m = parse("// line\n/* block\n comment */ .version 8.0 // trailing\n.target /* inside */ sm_90\n");
  EXPECT_EQ(m.version, "8.0");
  EXPECT_EQ(m.target.at(0), "sm_90");
}

TEST(PtxParser, EntryParametersAndDirectives) {
  Module m = parse(std::string(kHeader) +
                   ".visible .entry k(\n  .param .u64 .ptr .global .align 16 a,\n  .param .align 8 .b8 b[16],\n"
                   "  .param .f32 c\n)\n.maxntid 256, 1, 1\n.minnctapersm 4\n{\n  ret;\n}\n");
  const Function& f = only_function(m);
  EXPECT_TRUE(f.is_entry);
  EXPECT_EQ(f.linkage, Linkage::Visible);
  EXPECT_EQ(f.name, "k");
  ASSERT_EQ(f.params.size(), 3u);
  EXPECT_EQ(f.params[0].space, StateSpace::Param);
  EXPECT_EQ(f.params[0].type, Type::U64);
  EXPECT_EQ(f.params[0].ptr_space, StateSpace::Global);
  EXPECT_EQ(f.params[0].ptr_align, 16);
  EXPECT_FALSE(f.params[0].align.has_value());
  EXPECT_EQ(f.params[1].align, 8);
  EXPECT_EQ(f.params[1].array_dims, (std::vector<int64_t>{16}));
  EXPECT_EQ(f.params[2].type, Type::F32);
  ASSERT_EQ(f.directives.size(), 2u);
  EXPECT_EQ(f.directives[0].name, "maxntid");
  EXPECT_EQ(f.directives[0].values, (std::vector<int64_t>{256, 1, 1}));
  EXPECT_EQ(f.directives[1].name, "minnctapersm");
  EXPECT_TRUE(f.has_body);
}

TEST(PtxParser, FuncReturnsPrototypesAndNoreturn) {
  Module m = parse(std::string(kHeader) +
                   ".extern .func (.param .b32 r) vprintf(.param .b64 a, .param .b64 b);\n"
                   ".weak .func (.reg .b32 rv) twice(.reg .b32 x) { add.s32 rv, x, x; ret; }\n"
                   ".func die() .noreturn { trap; }\n");
  ASSERT_EQ(m.items.size(), 3u);
  const auto& proto = std::get<Function>(m.items[0]);
  EXPECT_FALSE(proto.is_entry);
  EXPECT_FALSE(proto.has_body);
  EXPECT_EQ(proto.linkage, Linkage::Extern);
  ASSERT_EQ(proto.returns.size(), 1u);
  EXPECT_EQ(proto.returns[0].name, "r");
  EXPECT_EQ(proto.params.size(), 2u);
  const auto& twice = std::get<Function>(m.items[1]);
  EXPECT_EQ(twice.linkage, Linkage::Weak);
  EXPECT_EQ(twice.returns.at(0).space, StateSpace::Reg);
  EXPECT_EQ(twice.params.at(0).space, StateSpace::Reg);
  const auto& die = std::get<Function>(m.items[2]);
  ASSERT_EQ(die.directives.size(), 1u);
  EXPECT_EQ(die.directives[0].name, "noreturn");
  EXPECT_TRUE(die.directives[0].values.empty());
  EXPECT_NE(m.find_function("twice"), nullptr);
}

TEST(PtxParser, ModuleScopeVariables) {
  Module m = parse(std::string(kHeader) +
                   ".global .align 1 .b8 $str[3] = {104, 105, 0};\n"
                   ".extern .shared .align 16 .b8 smem[];\n"
                   ".const .f32 k[2][2] = {{1.0, 2.0}, {0f40400000, -4}};\n"
                   ".visible .global .u32 a = 0x10U, b;\n");
  ASSERT_EQ(m.items.size(), 5u);
  const auto& str = std::get<VarDecl>(m.items[0]);
  EXPECT_EQ(str.space, StateSpace::Global);
  EXPECT_EQ(str.align, 1);
  EXPECT_EQ(str.name, "$str");
  EXPECT_TRUE(str.has_initializer);
  ASSERT_EQ(str.initializer.size(), 3u);
  EXPECT_EQ(str.initializer[1].integer, 105);
  const auto& smem = std::get<VarDecl>(m.items[1]);
  EXPECT_EQ(smem.linkage, Linkage::Extern);
  EXPECT_EQ(smem.array_dims, (std::vector<int64_t>{-1}));
  const auto& k = std::get<VarDecl>(m.items[2]);
  EXPECT_EQ(k.array_dims, (std::vector<int64_t>{2, 2}));
  ASSERT_EQ(k.initializer.size(), 4u);
  EXPECT_EQ(k.initializer[0].kind, Operand::Kind::Float32);
  EXPECT_EQ(k.initializer[0].bits, 0x3F800000u);
  EXPECT_EQ(k.initializer[2].bits, 0x40400000u);
  EXPECT_EQ(k.initializer[3].kind, Operand::Kind::Integer);
  EXPECT_EQ(k.initializer[3].integer, -4);
  const auto& a = std::get<VarDecl>(m.items[3]);
  const auto& b = std::get<VarDecl>(m.items[4]);
  EXPECT_EQ(a.initializer.at(0).integer, 16);
  EXPECT_EQ(b.name, "b");
  EXPECT_EQ(b.linkage, Linkage::Visible);
  EXPECT_FALSE(b.has_initializer);
}

TEST(PtxParser, BodyDeclarationsLabelsBlocksAndPragmas) {
  Module m = parse(std::string(kHeader) +
                   ".entry k()\n{\n  .reg .pred %p<3>;\n  .reg .b32 %r<37>, %x;\n  .reg .v4 .f32 %v;\n"
                   "  .local .align 4 .b8 depot[32];\n  .shared .align 4 .b8 tile[128];\n"
                   "  .pragma \"nounroll\";\n$L__BB0_1:\n  { // callseq 0\n    .param .b32 param0;\n"
                   "    st.param.b32 [param0+0], %r1;\n  }\n  ret;\n}\n");
  const Function& f = only_function(m);
  ASSERT_EQ(f.body.size(), 10u);
  const auto& p = std::get<VarDecl>(f.body[0].node);
  EXPECT_EQ(p.type, Type::Pred);
  EXPECT_EQ(p.parameterized_count, 3);
  EXPECT_EQ(std::get<VarDecl>(f.body[1].node).parameterized_count, 37);
  EXPECT_EQ(std::get<VarDecl>(f.body[2].node).name, "%x");
  EXPECT_EQ(std::get<VarDecl>(f.body[3].node).vector_width, 4);
  EXPECT_EQ(std::get<VarDecl>(f.body[4].node).space, StateSpace::Local);
  EXPECT_EQ(std::get<VarDecl>(f.body[5].node).space, StateSpace::Shared);
  EXPECT_EQ(std::get<Pragma>(f.body[6].node).text, "nounroll");
  EXPECT_EQ(std::get<Label>(f.body[7].node).name, "$L__BB0_1");
  const auto& block = std::get<Block>(f.body[8].node);
  ASSERT_EQ(block.body.size(), 2u);
  EXPECT_EQ(std::get<VarDecl>(block.body[0].node).space, StateSpace::Param);
  EXPECT_EQ(std::get<Instruction>(f.body[9].node).opcode, "ret");
}

TEST(PtxParser, OpcodeModifiersAndGuards) {
  Instruction in = parse_instruction_text("@!%p1 ld.global.nc.v4.f32 {%f1, %f2, _, %f4}, [%rd1+16];");
  EXPECT_EQ(in.opcode, "ld");
  EXPECT_EQ(in.modifiers, (std::vector<std::string>{"global", "nc", "v4", "f32"}));
  ASSERT_TRUE(in.guard.has_value());
  EXPECT_EQ(in.guard->predicate, "%p1");
  EXPECT_TRUE(in.guard->negated);
  ASSERT_EQ(in.operands.size(), 2u);
  EXPECT_EQ(in.operands[0].kind, Operand::Kind::Vector);
  ASSERT_EQ(in.operands[0].elements.size(), 4u);
  EXPECT_EQ(in.operands[0].elements[2].kind, Operand::Kind::Sink);
  EXPECT_EQ(in.operands[1].kind, Operand::Kind::Address);
  EXPECT_EQ(in.operands[1].name, "%rd1");
  EXPECT_EQ(in.operands[1].integer, 16);
  EXPECT_EQ(in.loc.line, 6);
  EXPECT_EQ(in.loc.col, 1);

  Instruction h = parse_instruction_text("fma.rn.ftz.sat.f16x2 %r1, %r2, %r3, %r4;");
  EXPECT_EQ(h.modifiers, (std::vector<std::string>{"rn", "ftz", "sat", "f16x2"}));
  Instruction s = parse_instruction_text("setp.nan.f32 %p1, %f1, %f1;");
  EXPECT_EQ(s.modifiers, (std::vector<std::string>{"nan", "f32"}));
  EXPECT_FALSE(s.guard.has_value());
}

TEST(PtxParser, SpecialRegistersAndPredicatePairs) {
  Instruction in = parse_instruction_text("mov.u32 %r1, %tid.x;");
  EXPECT_EQ(in.operands[1].name, "%tid.x");
  EXPECT_EQ(parse_instruction_text("mov.u32 %r1, %ctaid.y;").operands[1].name, "%ctaid.y");
  EXPECT_EQ(parse_instruction_text("mov.u64 %rd1, %clock64;").operands[1].name, "%clock64");
  EXPECT_EQ(parse_instruction_text("mov.u32 %r1, %envreg3;").operands[1].name, "%envreg3");
  Instruction shfl = parse_instruction_text("shfl.sync.bfly.b32 %r5|%p1, %r4, 1, 31, -1;");
  EXPECT_EQ(shfl.operands[0].name, "%r5");
  EXPECT_EQ(shfl.operands[0].second, "%p1");
  EXPECT_EQ(shfl.operands[4].integer, -1);
  Instruction selp = parse_instruction_text("selp.b32 %r1, 1, 0, !%p2;");
  EXPECT_TRUE(selp.operands[3].negated);
  EXPECT_EQ(selp.operands[3].name, "%p2");
}

TEST(PtxParser, IntegerLiterals) {
  auto value = [](const std::string& literal) {
    return parse_instruction_text("mov.u64 %rd1, " + literal + ";").operands.at(1).integer;
  };
  EXPECT_EQ(value("42"), 42);
  EXPECT_EQ(value("-1024"), -1024);
  EXPECT_EQ(value("0x1F"), 31);
  EXPECT_EQ(value("0X1fU"), 31);
  EXPECT_EQ(value("017"), 15);
  EXPECT_EQ(value("0b101"), 5);
  EXPECT_EQ(value("7U"), 7);
  EXPECT_EQ(value("0"), 0);
  EXPECT_EQ(value("0xFFFFFFFFFFFFFFFF"), -1);
  EXPECT_EQ(value("18446744073709551615"), -1);
}

TEST(PtxParser, FloatLiterals) {
  Instruction hex = parse_instruction_text("mov.f32 %f1, 0f3F800000;");
  EXPECT_EQ(hex.operands[1].kind, Operand::Kind::Float32);
  EXPECT_EQ(hex.operands[1].bits, 0x3F800000u);
  Instruction dbl = parse_instruction_text("mov.f64 %fd1, 0d3FF0000000000000;");
  EXPECT_EQ(dbl.operands[1].kind, Operand::Kind::Float64);
  EXPECT_EQ(dbl.operands[1].bits, 0x3FF0000000000000u);
  // A decimal literal takes the instruction's f32 type, else stays a double.
  Instruction dec32 = parse_instruction_text("add.f32 %f1, %f2, 1.5;");
  EXPECT_EQ(dec32.operands[2].kind, Operand::Kind::Float32);
  EXPECT_EQ(dec32.operands[2].bits, 0x3FC00000u);
  Instruction neg64 = parse_instruction_text("mul.f64 %fd1, %fd2, -2.0e0;");
  EXPECT_EQ(neg64.operands[2].kind, Operand::Kind::Float64);
  EXPECT_EQ(neg64.operands[2].bits, 0xC000000000000000u);
  // Beyond float's range, f32 decimals round as IEEE does: to infinity from FLT_MAX + half an ulp.
  EXPECT_EQ(parse_instruction_text("mov.f32 %f1, 1e39;").operands[1].bits, 0x7F800000u);
  EXPECT_EQ(parse_instruction_text("mov.f32 %f1, -1e39;").operands[1].bits, 0xFF800000u);
  EXPECT_EQ(parse_instruction_text("mov.f32 %f1, 3.4028235e38;").operands[1].bits, 0x7F7FFFFFu);
}

TEST(PtxParser, AddressForms) {
  auto address = [](const std::string& a) { return parse_instruction_text("ld.u32 %r1, " + a + ";").operands.at(1); };
  Operand plain = address("[%rd1]");
  EXPECT_EQ(plain.name, "%rd1");
  EXPECT_EQ(plain.integer, 0);
  EXPECT_EQ(address("[%rd1+8]").integer, 8);
  EXPECT_EQ(address("[%rd1+-1024]").integer, -1024);
  EXPECT_EQ(address("[%rd1-16]").integer, -16);
  Operand sym = address("[smem+4]");
  EXPECT_EQ(sym.name, "smem");
  EXPECT_EQ(sym.integer, 4);
  Operand absolute = address("[1024]");
  EXPECT_TRUE(absolute.name.empty());
  EXPECT_EQ(absolute.integer, 1024);
}

TEST(PtxParser, CallSequences) {
  Instruction call = parse_instruction_text("call.uni (retval0),\n  vprintf,\n  (\n  param0,\n  param1\n  );");
  EXPECT_EQ(call.opcode, "call");
  EXPECT_EQ(call.modifiers, (std::vector<std::string>{"uni"}));
  ASSERT_EQ(call.operands.size(), 3u);
  EXPECT_EQ(call.operands[0].kind, Operand::Kind::List);
  EXPECT_EQ(call.operands[0].elements.at(0).name, "retval0");
  EXPECT_EQ(call.operands[1].kind, Operand::Kind::Symbol);
  EXPECT_EQ(call.operands[2].elements.size(), 2u);
  Instruction no_result = parse_instruction_text("call.uni die, ();");
  EXPECT_EQ(no_result.operands[1].kind, Operand::Kind::List);
  EXPECT_TRUE(no_result.operands[1].elements.empty());
  Instruction bare = parse_instruction_text("call.uni die;");
  EXPECT_EQ(bare.operands.size(), 1u);
}

TEST(PtxParser, InstructionsWithoutOperands) {
  EXPECT_TRUE(parse_instruction_text("ret;").operands.empty());
  EXPECT_EQ(parse_instruction_text("bar.sync 0;").operands.at(0).integer, 0);
  EXPECT_EQ(parse_instruction_text("membar.gl;").modifiers.at(0), "gl");
  EXPECT_EQ(parse_instruction_text("fence.acq_rel.gpu;").modifiers.size(), 2u);
}

TEST(PtxParserErrors, LocatedMessages) {
  const std::string h = kHeader;  // three lines
  EXPECT_EQ(error_of(h + ".entry k()\n{\n  add.s32 %r1, %r2 %r3;\n}\n"),
            "t.ptx:6:20: error: expected ';' after the operands of add, found '%r3'");
  EXPECT_EQ(error_of(h + ".entry k()\n{\n  ret;\n"), "t.ptx:5:1: error: this '{' is never closed");
  EXPECT_EQ(error_of(h + ".entry k(.reg .b32 x)\n{\n}\n"),
            "t.ptx:4:10: error: expected .param for a parameter, found '.reg'");
  EXPECT_EQ(error_of(h + ".entry k()\n{\n  .reg %r<4>;\n}\n"),
            "t.ptx:6:8: error: expected a type such as .b32 in a declaration, found '%r'");
  EXPECT_EQ(error_of(h + ".entry k()\n{\n  mov.f32 %f1, 0f3F80;\n}\n"),
            "t.ptx:6:16: error: a 0f float literal needs exactly 8 hex digits");
  EXPECT_EQ(error_of(h + ".entry k()\n{\n  mov.u32 %r1, 0x;\n}\n"),
            "t.ptx:6:16: error: malformed integer literal: no digits");
  EXPECT_EQ(error_of(h + ".entry k()\n{\n  mov.u32 %r1, 12abc;\n}\n"),
            "t.ptx:6:16: error: malformed number: unexpected 'a' after '12'");
  EXPECT_EQ(error_of(h + ".entry k()\n{\n  mov.u32 %r1, 99999999999999999999;\n}\n"),
            "t.ptx:6:16: error: integer literal does not fit in 64 bits");
  EXPECT_EQ(error_of(h + ".entry k()\n{\n  mov.f64 %fd1, 1e400;\n}\n"),
            "t.ptx:6:17: error: float literal '1e400' is out of range for a double");
  EXPECT_EQ(error_of(h + ".entry k()\n{\n  .pragma nounroll;\n}\n"),
            "t.ptx:6:11: error: expected a string after .pragma, found 'nounroll'");
  EXPECT_EQ(error_of(h + "  .loc 1 2 3\n"),
            "t.ptx:4:3: error: debug directive .loc is not supported (compile without -G or -lineinfo)");
  EXPECT_EQ(error_of(h + ".entry k()\n{\n  # \n}\n"), "t.ptx:6:3: error: unexpected character '#'");
  EXPECT_EQ(error_of(h + ".entry k()\n{\n  ld.u32 %r1, [%rd1+];\n}\n"),
            "t.ptx:6:21: error: expected an offset after '+', found ']'");
  EXPECT_EQ(error_of(h + ".global .align 3 .b8 x;\n"), "t.ptx:4:16: error: .align needs a power of two, not 3");
  EXPECT_EQ(error_of(h + "ret;\n"), "t.ptx:4:1: error: expected a directive at module scope, found 'ret'");
  EXPECT_EQ(error_of(".version 8\n"), "t.ptx:1:10: error: expected a version such as 8.5 after .version, found '8'");
  EXPECT_EQ(error_of(".version 8.0\n.version 8.1\n"), "t.ptx:2:1: error: duplicate .version directive");
  EXPECT_EQ(error_of(".address_size 48\n"), "t.ptx:1:15: error: .address_size must be 32 or 64, not 48");
  EXPECT_EQ(error_of(h + ".entry k()\n{\n  \"x\n}\n"), "t.ptx:6:3: error: unterminated string");
  EXPECT_EQ(error_of(h + "/* open\n"), "t.ptx:4:1: error: unterminated comment");
  EXPECT_EQ(error_of(h + ".entry k() .maxntid 32 .pragma \"x\";\n"),
            "t.ptx:4:24: error: unexpected '.pragma' between a function's parameters and its body");
  EXPECT_EQ(error_of(h + ".entry k()\n{\n  .global .u32 g;\n}\n"),
            "t.ptx:6:3: error: unexpected directive '.global' in a function body");
  EXPECT_EQ(error_of(h + ".entry k()\n{\n  @%p1;\n}\n"), "t.ptx:6:7: error: expected an instruction, found ';'");
}

}  // namespace
}  // namespace stitch::ptx
