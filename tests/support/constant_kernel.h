// A tiny kernel-ABI translation unit for the kernel cache's tests: a function
// `answer` that writes `value` through its first buffer, so a loaded object is
// checked by calling it, not just by dlopen succeeding.
#pragma once

#include <string>

#include "runtime/cpu/cpu_compiler.h"

namespace stitch::runtime::cpu::testing {

inline std::string constant_kernel_source(int value) {
  return "#include <cstdint>\nextern \"C\" void answer(void* const* b, const int64_t*) { *static_cast<int*>(b[0]) = " +
         std::to_string(value) + "; }\n";
}

inline int call_answer(const CpuModule& module) {
  int result = -1;
  void* buffers[] = {&result};
  module.function("answer")(buffers, nullptr);
  return result;
}

}  // namespace stitch::runtime::cpu::testing
