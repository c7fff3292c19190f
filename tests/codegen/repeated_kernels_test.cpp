// Repeated kernels: a kernel whose code equals an earlier one's up to the
// names of the kernel, its buffers and its scalars becomes an alias of it in the
// translation unit, and both names run right; kernels that differ in anything
// else (a constant, which position a name is read from) stay two definitions.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/cpu/cpp_emitter.h"
#include "codegen/cpu/repeated_kernels.h"
#include "kir/kernel_builder.h"
#include "runtime/cpu/cpu_compiler.h"

namespace stitch::codegen::cpu::testing {
namespace {

using namespace stitch::kir;

// out[b, t] = in[b, t] * scale + 1, over N rows of 8, under the names given.
Kernel scaled(const std::string& name, const std::string& in, const std::string& out, const std::string& rows,
              double scale) {
  KernelBuilder kb(name);
  Expr n = kb.scalar_param(rows);
  kb.buffer_param(in, DType::f32, {n, int_const(8)}, Access::Read);
  kb.buffer_param(out, DType::f32, {n, int_const(8)}, Access::Write);
  kb.launch(n, 8);
  kb.grid("b", n, [&](const Expr& b) {
    kb.block("t", 8, [&](const Expr& t) {
      kb.store(out, {b, t}, kb.load(in, {b, t}) * float_const(scale, DType::f32) + float_const(1.0, DType::f32));
    });
  });
  return kb.finish();
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(RepeatedKernels, ALayersKernelUnderOtherNamesIsAnAliasAndRunsRight) {
  const std::vector<Kernel> kernels = {scaled("layer0", "x", "h", "N", 2.0), scaled("layer1", "h1", "out_h1", "M", 2.0)};
  const std::string tu = emit_cpp_translation_unit(kernels);
  EXPECT_EQ(count(tu, "extern \"C\" void layer0("), 1u);
  EXPECT_NE(tu.find("extern \"C\" void layer1(void* const* stitch_buffers, const int64_t* stitch_scalars) "
                    "__attribute__((alias(\"layer0\")));"),
            std::string::npos);
  const runtime::cpu::CpuModule module = runtime::cpu::compile_and_load(tu);
  for (const char* name : {"layer0", "layer1"}) {
    std::vector<float> in(3 * 8), out(3 * 8, 0.0f);
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i);
    void* buffers[] = {in.data(), out.data()};
    const int64_t scalars[] = {3};
    module.function(name)(buffers, scalars);
    for (size_t i = 0; i < in.size(); ++i) EXPECT_EQ(out[i], in[i] * 2.0f + 1.0f) << name << " at " << i;
  }
}

TEST(RepeatedKernels, KernelsThatDifferInAConstantStayTwo) {
  const std::vector<Kernel> kernels = {scaled("a", "x", "y", "N", 2.0), scaled("b", "x", "y", "N", 3.0)};
  const std::string tu = emit_cpp_translation_unit(kernels);
  EXPECT_EQ(count(tu, "alias("), 0u);
  EXPECT_EQ(count(tu, "extern \"C\" void"), 2u + count(std::string(cpu_runtime_header_text()), "extern \"C\" void"));
}

TEST(RepeatedKernels, TheIdentityFollowsPositionsNotNames) {
  // The same names in other roles: the first reads x and writes y, the second
  // reads y and writes x. Renamed by position, they are the same function.
  EXPECT_EQ(code_identity(scaled("k", "x", "y", "N", 2.0), emit_cpp_kernel(scaled("k", "x", "y", "N", 2.0))),
            code_identity(scaled("j", "y", "x", "N", 2.0), emit_cpp_kernel(scaled("j", "y", "x", "N", 2.0))));
  // A name that begins other words (p: pragma, parallel) renames only itself.
  const Kernel prefixed = scaled("k", "p", "pragma_in", "N", 2.0);
  const Kernel plain = scaled("k", "x", "y", "N", 2.0);
  EXPECT_EQ(code_identity(prefixed, emit_cpp_kernel(prefixed)), code_identity(plain, emit_cpp_kernel(plain)));
  EXPECT_NE(code_identity(plain, emit_cpp_kernel(plain)).find("#pragma omp parallel for"), std::string::npos);
  // What is not a chosen name stays: the scale's digits tell the two apart.
  const Kernel other = scaled("k", "x", "y", "N", 4.0);
  EXPECT_NE(code_identity(other, emit_cpp_kernel(other)), code_identity(plain, emit_cpp_kernel(plain)));
}

}  // namespace
}  // namespace stitch::codegen::cpu::testing
