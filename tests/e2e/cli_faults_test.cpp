// Fault injection (docs/testing.md, Faults): a compiler that fails, a kernel
// cache directory that cannot be created, a disk that fills up under the
// cache (a file-size limit, and a full tmpfs), a corrupt cache entry. Each run must still return the
// interpreter's result, and say loudly what went wrong. A missing compiler is
// the machine's fault, not Stitch's: bad input, exit status 2, with the fix.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli_runner.h"
#include "stitch/npy.h"

namespace stitch {
namespace {

namespace fs = std::filesystem;

// softmax_small's result as the reference interpreter computes it, and the
// same graph on the CPU back end with `env`: the bytes must be the same
// (the fallback is the interpreter) or close (a compiled run).
class FaultRun : public CliTest {
 protected:
  std::string args(const fs::path& out) const {
    return "run " + std::string(STITCH_SOURCE_DIR) +
           "/bench/workloads/softmax.stitch --graph softmax_small --random-inputs 3 --output-dir " + out.string();
  }
  Tensor reference() {
    const fs::path out = dir_ / "reference";
    const CliResult r = run_cli(args(out) + " --backend interp");
    EXPECT_EQ(r.status, 0) << r.output;
    return read_npy((out / "y.npy").string());
  }
  Tensor result(const fs::path& out) { return read_npy((out / "y.npy").string()); }
  static bool same_bytes(const Tensor& a, const Tensor& b) {
    return a.nbytes() == b.nbytes() && std::equal(a.raw(), a.raw() + a.nbytes(), b.raw());
  }
};

TEST_F(FaultRun, AFailingCompilerFallsBackLoudlyToTheInterpreter) {
  const fs::path out = dir_ / "out";
  const CliResult r = run_cli(args(out) + " --backend cpu", "STITCH_CXX=false");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("warning"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("reference interpreter"), std::string::npos) << r.output;
  EXPECT_TRUE(same_bytes(result(out), reference()));
}

TEST_F(FaultRun, AMissingCompilerIsBadInputNamingHowToInstallOne) {
  // The machine, not Stitch: no fallback hides it behind the interpreter's slow
  // result. Exit status 2, what is missing and how to install it, no result file.
  const fs::path out = dir_ / "out";
  const CliResult r = run_cli(args(out) + " --backend cpu", "STITCH_CXX=stitch-no-such-compiler");
  ASSERT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("error: the CPU back end needs a C++ compiler, and `stitch-no-such-compiler` is not on PATH: "
                          "apt-get install g++"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("stitch doctor"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("reference interpreter"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(out / "y.npy"));
}

TEST_F(FaultRun, DoctorSaysWhatTheCpuBackEndLacks) {
  const CliResult fine = run_cli("doctor");
  EXPECT_EQ(fine.status, 0) << fine.output;
  EXPECT_NE(fine.output.find("the CPU back end has everything it needs"), std::string::npos) << fine.output;
  const CliResult lacking = run_cli("doctor", "STITCH_CXX=stitch-no-such-compiler");
  EXPECT_EQ(lacking.status, 1) << lacking.output;
  EXPECT_NE(lacking.output.find("missing  compiler"), std::string::npos) << lacking.output;
  EXPECT_NE(lacking.output.find("fix: apt-get install g++"), std::string::npos) << lacking.output;
}

TEST_F(FaultRun, ACacheDirectoryThatCannotBeCreatedFallsBackLoudly) {
  write("a_file", "not a directory\n");
  const fs::path out = dir_ / "out";
  const CliResult r = run_cli(args(out) + " --backend cpu", "STITCH_CACHE_DIR=" + (dir_ / "a_file" / "cache").string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("Not a directory"), std::string::npos) << r.output;
  EXPECT_TRUE(same_bytes(result(out), reference()));
}

TEST_F(FaultRun, AFullDiskUnderTheCacheFallsBackLoudlyAndLeavesNoTemporaries) {
  // A file-size limit of 512 bytes makes every cache write fail as a full
  // disk does (SIGXFSZ ignored, so the write returns an error instead). The
  // result is printed: an output file would meet the same limit (and fail
  // with exit 2, as it should).
  const std::string print = "run " + std::string(STITCH_SOURCE_DIR) +
                            "/bench/workloads/softmax.stitch --graph softmax_small --random-inputs 3 --print";
  const fs::path cache = dir_ / "full_cache";
  const testing::CommandRun r = testing::run_command(
      "sh -c 'trap \"\" XFSZ; ulimit -f 1; exec env STITCH_CACHE_DIR=" + cache.string() + " " + STITCH_CLI + " " +
      print + " --backend cpu'");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("warning"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("reference interpreter"), std::string::npos) << r.output;
  const CliResult want = run_cli(print + " --backend interp");
  ASSERT_EQ(want.status, 0) << want.output;
  EXPECT_NE(r.output.find(want.output), std::string::npos) << "got:\n" << r.output << "\nwant:\n" << want.output;
  for (const auto& entry : fs::recursive_directory_iterator(cache)) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp-"), std::string::npos) << entry.path();
  }
}

TEST_F(FaultRun, AFullTmpfsUnderTheCacheFallsBackLoudlyAndLeavesNoTemporaries) {
  // A real full disk: the cache on a 16 KiB tmpfs, mounted in a private user
  // and mount namespace (no privileges needed where the kernel allows
  // unprivileged user namespaces), so writes fail with ENOSPC.
  const fs::path mount = dir_ / "tmpfs";
  fs::create_directories(mount);
  const testing::CommandRun probe = testing::run_command(
      "unshare --user --map-root-user --mount sh -c 'mount -t tmpfs -o size=16k none " + mount.string() + "'");
  if (probe.status != 0) {
    GTEST_SKIP() << "this machine does not allow an unprivileged tmpfs mount (the ulimit -f test above covers a "
                    "full disk): "
                 << probe.output;
  }
  const std::string print = "run " + std::string(STITCH_SOURCE_DIR) +
                            "/bench/workloads/softmax.stitch --graph softmax_small --random-inputs 3 --print";
  const testing::CommandRun r = testing::run_command(
      "unshare --user --map-root-user --mount sh -c 'mount -t tmpfs -o size=16k none " + mount.string() +
      " && STITCH_CACHE_DIR=" + mount.string() + "/cache " + STITCH_CLI + " " + print +
      " --backend cpu; status=$?; echo \"left behind:\"; find " + mount.string() +
      " -name \".tmp-*\"; df -k " + mount.string() + " | tail -n 1; exit $status'");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("No space left on device"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("reference interpreter"), std::string::npos) << r.output;
  const CliResult want = run_cli(print + " --backend interp");
  ASSERT_EQ(want.status, 0) << want.output;
  EXPECT_NE(r.output.find(want.output), std::string::npos) << "got:\n" << r.output << "\nwant:\n" << want.output;
  const size_t left = r.output.find("left behind:\n");
  ASSERT_NE(left, std::string::npos) << r.output;
  EXPECT_EQ(r.output.find(".tmp-", left), std::string::npos) << r.output;
}

TEST_F(FaultRun, ACorruptCacheEntryIsRecompiled) {
  const fs::path cache = dir_ / "cache";
  const std::string env = "STITCH_CACHE_DIR=" + cache.string();
  CliResult r = run_cli(args(dir_ / "first") + " --backend cpu", env);
  ASSERT_EQ(r.status, 0) << r.output;
  int corrupted = 0;
  for (const auto& entry : fs::recursive_directory_iterator(cache)) {
    if (entry.path().extension() != ".so") continue;
    std::ofstream(entry.path(), std::ios::binary | std::ios::trunc) << "garbage, not an ELF file";
    ++corrupted;
  }
  ASSERT_GT(corrupted, 0);
  r = run_cli(args(dir_ / "second") + " --backend cpu", env);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output.find("warning"), std::string::npos) << "a corrupt entry is a miss, not a failure\n" << r.output;
  EXPECT_TRUE(same_bytes(result(dir_ / "second"), result(dir_ / "first")));
}

}  // namespace
}  // namespace stitch
