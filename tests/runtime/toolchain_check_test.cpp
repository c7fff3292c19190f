// What the CPU back end needs (runtime/cpu/toolchain_check.h): each check by
// trying it, and a failed compile's hint naming what is missing.
#include "runtime/cpu/toolchain_check.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace stitch::runtime::cpu {
namespace {

const ToolchainCheck& named(const std::vector<ToolchainCheck>& checks, const std::string& name) {
  for (const ToolchainCheck& c : checks)
    if (c.name == name) return c;
  throw std::out_of_range(name);
}

TEST(ToolchainCheck, ThisMachineHasEverythingTheCpuBackEndNeeds) {
  // The test suite compiles kernels with this machine's compiler, so all of it is here.
  const std::vector<ToolchainCheck> checks = check_cpu_toolchain();
  ASSERT_EQ(checks.size(), 5u);
  for (const ToolchainCheck& c : checks) {
    EXPECT_TRUE(c.ok) << c.name << ": " << c.detail;
    EXPECT_TRUE(c.fix.empty()) << c.name;
  }
}

TEST(ToolchainCheck, AMissingCompilerIsNamedWithHowToInstallOne) {
  CompilerOptions options;
  options.compiler = "stitch-no-such-compiler";
  const std::vector<ToolchainCheck> checks = check_cpu_toolchain(options);
  const ToolchainCheck& compiler = named(checks, "compiler");
  EXPECT_FALSE(compiler.ok);
  EXPECT_NE(compiler.detail.find("stitch-no-such-compiler"), std::string::npos) << compiler.detail;
  EXPECT_NE(compiler.fix.find("apt-get install g++"), std::string::npos) << compiler.fix;
  for (const char* later : {"openmp", "sleef", "load"}) {
    EXPECT_FALSE(named(checks, later).checked) << later;
  }
  EXPECT_TRUE(named(checks, "cache").ok);
}

TEST(ToolchainCheck, AMissingLibraryIsNamedWithItsPackage) {
  // As if libsleef-dev were not installed: the linker cannot find the library.
  CompilerOptions options;
  options.libraries = {"-lsleefgnuabi_not_installed"};
  const std::vector<ToolchainCheck> checks = check_cpu_toolchain(options);
  EXPECT_TRUE(named(checks, "openmp").ok);
  const ToolchainCheck& sleef = named(checks, "sleef");
  EXPECT_FALSE(sleef.ok);
  EXPECT_EQ(sleef.fix, "apt-get install libsleef-dev");
  EXPECT_FALSE(named(checks, "load").checked);
}

TEST(ToolchainCheck, HintsNameWhatAFailedCompileLacked) {
  EXPECT_NE(missing_toolchain_hint("stitch-no-such-compiler", "sh: 1: stitch-no-such-compiler: not found")
                .find("`stitch-no-such-compiler` is not on PATH"),
            std::string::npos);
  EXPECT_NE(missing_toolchain_hint("c++", "/usr/bin/ld: cannot find -lsleefgnuabi: No such file or directory")
                .find("apt-get install libsleef-dev"),
            std::string::npos);
  EXPECT_NE(missing_toolchain_hint("c++", "fatal error: omp.h: No such file or directory").find("OpenMP"),
            std::string::npos);
  // A compiler that rejected the source for another reason: no hint.
  EXPECT_EQ(missing_toolchain_hint("c++", "error: expected ';' before '}' token"), "");
}

}  // namespace
}  // namespace stitch::runtime::cpu
