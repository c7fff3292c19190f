// What the CPU back end needs on the machine it runs on (docs/cpu-backend.md,
// The toolchain): a C++17 compiler with OpenMP, SLEEF's vector math to link,
// a kernel that loads, and a writable kernel cache. Each is checked by trying
// it; `stitch doctor` prints the checks, and a failed compile's message names
// the missing piece with the same words.
#pragma once

#include <string>
#include <vector>

#include "runtime/cpu/cpu_compiler.h"
#include "stitch/error.h"

namespace stitch::runtime::cpu {

struct ToolchainCheck {
  std::string name;    // "compiler", "openmp", "sleef", "load", "cache"
  bool ok = false;
  bool checked = true;  // false: an earlier check's failure left nothing to try
  std::string detail;  // what was found, or what failed (the first lines of the compiler's output)
  std::string fix;     // how to install what is missing; empty when ok
};

// Every check in order; a check whose requirement an earlier one lacks is
// reported as not run (ok false, detail says why).
std::vector<ToolchainCheck> check_cpu_toolchain(const CompilerOptions& options = {});

// For a failed compile's message: which requirement `diagnostics` (the
// compiler's or the shell's output, never the command line, which names the
// libraries) shows missing and how to install it, as one sentence; empty when
// it shows none of them.
std::string missing_toolchain_hint(const std::string& compiler, const std::string& diagnostics);

// A compile that failed because this machine lacks part of the toolchain: the
// environment, not a Stitch bug, so no fallback hides it behind a slow result.
// A UserError: exit status 2 on the command line, stitch.Error in Python. The
// message is missing_toolchain_hint's sentence, then the compiler's words.
class ToolchainMissing : public UserError {
 public:
  using UserError::UserError;
};

// Rethrows `e` as ToolchainMissing when its output shows a missing piece of
// the toolchain; returns otherwise (a compile the compiler rejected).
void throw_if_toolchain_missing(const std::string& compiler, const CompileError& e);

}  // namespace stitch::runtime::cpu
