// Helpers for the PTX interpreter's tests: a kernel from a parameter list and
// a body, run over buffers the test owns.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ptx/sim/interpreter.h"
#include "ptx/parser.h"

namespace stitch::ptx::testing {

// A module with one kernel `k`; `body` may declare registers itself.
inline std::string kernel_text(const std::string& params, const std::string& body, const std::string& before = "") {
  return ".version 8.0\n.target sm_90\n.address_size 64\n" + before + "\n.visible .entry k(" + params + ")\n{\n" +
         body + "\n}\n";
}

// Registers enough for small hand-written kernels.
inline const char* kRegs =
    ".reg .pred %p<16>;\n.reg .b16 %rs<16>;\n.reg .b32 %r<64>;\n.reg .b64 %rd<64>;\n.reg .f32 %f<32>;\n"
    ".reg .f64 %fd<16>;\n";

template <class T>
KernelArg buffer_arg(std::vector<T>& v, const std::string& name = "") {
  return KernelArg::buffer(v.data(), v.size() * sizeof(T), name);
}

inline RunStats run_text(const std::string& text, LaunchConfig config, const std::vector<KernelArg>& args,
                         const std::string& kernel = "k", InterpreterOptions options = {}) {
  Interpreter interp(parse_module(text, "test.ptx"));
  return interp.run(kernel, config, args, options);
}

inline LaunchConfig launch(uint32_t grid, uint32_t block) {
  LaunchConfig c;
  c.grid = {grid, 1, 1};
  c.block = {block, 1, 1};
  return c;
}

// Runs `body` in one thread of one CTA. The body stores its results through
// %rd1, a global buffer of `n` words of type T, each 0xdeadbeef beforehand so
// that a word the body does not write shows.
template <class T>
std::vector<T> run_one_thread(const std::string& body, size_t n) {
  std::vector<T> out(n, static_cast<T>(0xdeadbeef));
  const std::string text = kernel_text(".param .u64 out", std::string(kRegs) +
                                                              "ld.param.u64 %rd1, [out];\n"
                                                              "cvta.to.global.u64 %rd1, %rd1;\n" +
                                                              body + "\nret;");
  run_text(text, launch(1, 1), {buffer_arg(out)});
  return out;
}

// The message of the UserError `f` throws ("" when it does not throw).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.formatted();
  }
  return "";
}

}  // namespace stitch::ptx::testing
