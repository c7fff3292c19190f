// The kernel cache under crashes and contention (docs/kernel-cache.md,
// Concurrency): `stitch run --backend cpu` processes killed with SIGKILL at
// random points of a compile, and many processes compiling and evicting at
// once. Each graph is one tiny kernel, so a compile takes well under a second.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "run_command.h"
#include "runtime/cpu/cache_maintenance.h"
#include "runtime/cpu/kernel_cache.h"
#include "scratch_directory.h"

namespace stitch::runtime::cpu::testing {
namespace {

namespace fs = std::filesystem;

// g<k>(x) = (x + k) * 2: no multiply-add for the compiler to contract, so the
// CPU's result equals the interpreter's exactly.
std::string graphs_text(int count) {
  std::string text;
  for (int k = 1; k <= count; ++k) {
    text += "graph g" + std::to_string(k) + "(x: f32[8]) -> (f32[8]) {\n  y = mul(add(x, " + std::to_string(k) +
            ".0), 2.0)\n  return y\n}\n";
  }
  return text;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class KernelCacheCrashTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cache_ = root_ / "cache";
    file_ = root_ / "graphs.stitch";
    std::ofstream(file_) << graphs_text(6);
  }

  std::string run_args(int graph, const std::string& backend) const {
    return "run " + file_.string() + " --graph g" + std::to_string(graph) + " --backend " + backend +
           " --random-inputs 1 --print";
  }
  // `stitch run` through the shell, with this test's cache.
  stitch::testing::CommandRun run(int graph, const std::string& backend = "cpu", const std::string& env = "") const {
    return stitch::testing::run_command("env STITCH_CACHE_DIR=" + cache_.string() + " " + env + " " STITCH_CLI " " +
                                        run_args(graph, backend));
  }
  std::string reference(int graph) const {
    const stitch::testing::CommandRun r = run(graph, "interp");
    EXPECT_EQ(r.status, 0) << r.output;
    return r.output;
  }

  // A `stitch run` in its own process group (it and its compiler die together).
  pid_t spawn(int graph, const std::string& output) const {
    const pid_t pid = fork();
    if (pid != 0) return pid;
    ::setpgid(0, 0);
    ::setenv("STITCH_CACHE_DIR", cache_.c_str(), 1);
    const std::string command = std::string("exec ") + STITCH_CLI + " " + run_args(graph, "cpu") + " >" + output + " 2>&1";
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }

  // Every file under cpu/ is a complete, verified entry or a compiler stamp.
  void expect_only_valid_entries(int expected_entries) const {
    int objects = 0;
    for (const auto& e : fs::directory_iterator(cache_ / "cpu")) {
      const fs::path p = e.path();
      if (p.filename() == "compilers") continue;
      ASSERT_TRUE(p.extension() == ".so" || p.extension() == ".sum") << "garbage: " << p;
      fs::path other = p;
      other.replace_extension(p.extension() == ".so" ? ".sum" : ".so");
      ASSERT_TRUE(fs::exists(other)) << "half an entry: " << p;
      if (p.extension() == ".so") {
        ++objects;
        EXPECT_EQ(sha256_hex(read_text(p)), read_text(other)) << p;
      }
    }
    EXPECT_EQ(objects, expected_entries);
  }

  stitch::testing::ScratchDirectory scratch_{"stitch-cache-crash-test"};
  const fs::path root_ = scratch_.path();
  fs::path cache_, file_;
};

TEST_F(KernelCacheCrashTest, KilledCompilesLeaveNoGarbage) {
  // A cold compile's duration sets the range of the kill delays.
  const auto start = std::chrono::steady_clock::now();
  const stitch::testing::CommandRun first = run(6);
  const auto cold = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
  ASSERT_EQ(first.status, 0) << first.output;
  ASSERT_EQ(first.output, reference(6));

  std::mt19937 random(20260);
  std::uniform_int_distribution<int> delay_ms(0, static_cast<int>(cold.count()));
  for (int graph = 1; graph <= 5; ++graph) {
    const pid_t child = spawn(graph, (root_ / "killed.txt").string());
    ASSERT_GT(child, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms(random)));
    ::kill(-child, SIGKILL);
    ::kill(child, SIGKILL);
    ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  }
  // The kills must have caught compiles in flight, or the test shows nothing.
  const CacheSummary killed = summarize_cache(cache_);
  const int complete = killed.kinds.count("cpu") ? killed.kinds.at("cpu").entries : 0;
  EXPECT_TRUE(killed.temporaries > 0 || complete < 6) << "no kill interrupted a compile";
  std::cerr << "after the kills: " << complete << " complete entries, " << killed.temporaries << " temporaries\n";
  // Whatever the kills left, every run succeeds with the right result.
  for (int graph = 1; graph <= 5; ++graph) {
    const stitch::testing::CommandRun r = run(graph);
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(r.output, reference(graph));
  }
  // The killed writers are gone: the cleanup pass leaves no temporary.
  remove_stale_temporaries(cache_);
  EXPECT_EQ(summarize_cache(cache_).temporaries, 0);
  expect_only_valid_entries(6);
}

// 8 processes run 3 graphs each, in different orders, into one cache whose
// bound (1 byte) makes every store evict every other entry: loads race
// evictions and concurrent stores of the same key.
TEST_F(KernelCacheCrashTest, ManyProcessesCompileAndEvictAtOnce) {
  std::vector<std::string> expected;
  for (int graph = 1; graph <= 3; ++graph) expected.push_back(reference(graph));
  ::setenv("STITCH_CACHE_MAX_BYTES", "1", 1);
  std::vector<pid_t> workers;
  for (int w = 0; w < 8; ++w) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      for (int i = 0; i < 3; ++i) {
        const int graph = 1 + (w + i) % 3;
        const stitch::testing::CommandRun r = run(graph);
        if (r.status != 0 || r.output != expected[graph - 1]) {
          std::ofstream(root_ / ("failed-" + std::to_string(w))) << r.status << "\n" << r.output;
          _exit(1);
        }
      }
      _exit(0);
    }
    workers.push_back(pid);
  }
  ::unsetenv("STITCH_CACHE_MAX_BYTES");
  for (size_t w = 0; w < workers.size(); ++w) {
    int status = 0;
    ASSERT_EQ(::waitpid(workers[w], &status, 0), workers[w]);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "worker " << w << ": " << read_text(root_ / ("failed-" + std::to_string(w)));
  }
  EXPECT_EQ(summarize_cache(cache_).temporaries, 0);
  const stitch::testing::CommandRun after = run(2);
  ASSERT_EQ(after.status, 0) << after.output;
  EXPECT_EQ(after.output, expected[1]);
}

}  // namespace
}  // namespace stitch::runtime::cpu::testing
