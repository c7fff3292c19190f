// The on-disk kernel cache (docs/kernel-cache.md). Every test uses its own
// temporary cache directory and a wrapper "compiler" that records each real
// compile in a file, so a hit is shown not to run the compiler without relying
// on timing. Compiles are few, tiny and unoptimised: they are the slow part.
#include <gtest/gtest.h>

#include <chrono>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "constant_kernel.h"
#include "runtime/cpu/kernel_cache.h"
#include "scratch_directory.h"

namespace stitch::runtime::cpu::testing {
namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Unlinks before writing: the test process may have the old file mapped (it
// loaded it), and changing a mapped object in place would crash this process,
// not exercise the cache.
void replace_file(const fs::path& path, const std::string& bytes) {
  fs::remove(path);
  std::ofstream(path, std::ios::binary) << bytes;
}

class KernelCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cache_dir_ = root_ / "cache";
    compile_log_ = root_ / "compiles.log";
    const fs::path wrapper = root_ / "counting-c++";
    // Only real compiles (with -o) are counted; `--version` probes are not.
    std::ofstream(wrapper) << "#!/bin/sh\n"
                              "case \" $* \" in *\" -o \"*) echo compile >> '"
                           << compile_log_.string() << "' ;; esac\nexec c++ \"$@\"\n";
    fs::permissions(wrapper, fs::perms::owner_all);
    options_.compiler = wrapper.string();
    options_.flags = {"-std=c++17", "-O0", "-fPIC", "-shared"};
  }


  // The compiler stamps in the cache (<dir>/cpu/compilers/).
  std::vector<fs::path> stamp_files() const {
    std::vector<fs::path> stamps;
    for (const auto& entry : fs::directory_iterator(cache_dir_ / "cpu" / "compilers")) stamps.push_back(entry.path());
    return stamps;
  }

  int compiles() const {
    std::ifstream in(compile_log_);
    int lines = 0;
    for (std::string line; std::getline(in, line);) ++lines;
    return lines;
  }

  stitch::testing::ScratchDirectory scratch_{"stitch-kernel-cache-test"};
  const fs::path root_ = scratch_.path();
  fs::path cache_dir_;
  fs::path compile_log_;
  CompilerOptions options_;
};

TEST(KernelCacheSha256, MatchesFips180Vectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // 56 bytes: the padding spills into a second block.
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(KernelCacheDirectory, FollowsStitchCacheDirThenXdgThenHome) {
  const auto saved = [](const char* name) {
    const char* value = std::getenv(name);
    return value ? std::optional<std::string>(value) : std::nullopt;
  };
  const auto restore = [](const char* name, const std::optional<std::string>& value) {
    if (value) setenv(name, value->c_str(), 1);
    else unsetenv(name);
  };
  const auto stitch = saved("STITCH_CACHE_DIR"), xdg = saved("XDG_CACHE_HOME"), home = saved("HOME");
  setenv("STITCH_CACHE_DIR", "/tmp/a", 1);
  setenv("XDG_CACHE_HOME", "/tmp/b", 1);
  setenv("HOME", "/tmp/c", 1);
  EXPECT_EQ(default_cache_directory(), fs::path("/tmp/a"));
  unsetenv("STITCH_CACHE_DIR");
  EXPECT_EQ(default_cache_directory(), fs::path("/tmp/b/stitch"));
  unsetenv("XDG_CACHE_HOME");
  EXPECT_EQ(default_cache_directory(), fs::path("/tmp/c/.cache/stitch"));
  restore("STITCH_CACHE_DIR", stitch);
  restore("XDG_CACHE_HOME", xdg);
  restore("HOME", home);
}

TEST_F(KernelCacheTest, MissThenHitWithoutRunningTheCompiler) {
  KernelCache cache(cache_dir_);
  const std::string source = constant_kernel_source(41);
  EXPECT_EQ(call_answer(cache.load_or_compile(source, options_)), 41);
  EXPECT_EQ(compiles(), 1);
  const std::string key = cache.key(source, options_);
  EXPECT_TRUE(fs::is_regular_file(cache.shared_object_path(key)));
  EXPECT_EQ(read_text(cache.checksum_path(key)), sha256_hex(read_text(cache.shared_object_path(key))));

  EXPECT_EQ(call_answer(cache.load_or_compile(source, options_)), 41);
  // A second cache object stands for a later process sharing the directory.
  KernelCache later(cache_dir_);
  EXPECT_EQ(call_answer(later.load_or_compile(source, options_)), 41);
  EXPECT_EQ(compiles(), 1);
  EXPECT_EQ(cache.stats().misses, 1);
  EXPECT_EQ(cache.stats().hits, 1);
  EXPECT_EQ(later.stats().hits, 1);
  EXPECT_EQ(later.stats().misses, 0);
  // Only the entry and the compiler stamps remain: the scratch directory of
  // the compile is gone.
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(cache_dir_ / "cpu")) files.push_back(entry.path().filename());
  EXPECT_EQ(files.size(), 3u);
  EXPECT_TRUE(fs::is_directory(cache_dir_ / "cpu" / "compilers"));
}

TEST_F(KernelCacheTest, CompilerVersionIsStampedSoAHitStartsNoProcess) {
  KernelCache cache(cache_dir_);
  const std::string source = constant_kernel_source(5);
  const std::string key = cache.key(source, options_);
  const std::vector<fs::path> stamps = stamp_files();
  ASSERT_EQ(stamps.size(), 1u);
  const std::string stamp = read_text(stamps[0]);
  // path, then "size mtime", then the version text.
  EXPECT_EQ(stamp.rfind(fs::canonical(options_.compiler).string() + "\n", 0), 0u) << stamp;
  const size_t version_start = stamp.find('\n', stamp.find('\n') + 1) + 1;
  // The test's compiler is a wrapper script, which hides the compiler it runs:
  // it is asked for its version.
  EXPECT_EQ(stamp.substr(version_start), "version\n" + compiler_version(options_.compiler));
  // A later cache reads the stamp instead of asking the compiler: a doctored
  // version in the stamp changes the key.
  replace_file(stamps[0], stamp.substr(0, version_start) + "doctored version\n");
  EXPECT_NE(KernelCache(cache_dir_).key(source, options_), key);
  // Touching the compiler binary invalidates the stamp: the real version is
  // asked for again and the key comes back.
  fs::last_write_time(options_.compiler, fs::last_write_time(options_.compiler) + std::chrono::seconds(5));
  EXPECT_EQ(KernelCache(cache_dir_).key(source, options_), key);
  EXPECT_EQ(compiles(), 0);
}

// A compiler binary is known by its bytes: no process runs to compute a key
// (here the binary fails when run, as a missing toolchain would), and the
// same package's binary gives the same identity on every machine.
TEST_F(KernelCacheTest, ACompilerBinaryIsKnownByItsBytesWithoutRunningIt) {
  const fs::path failing = root_ / "cc-that-fails";
  fs::copy_file(fs::canonical("/bin/false"), failing);
  CompilerOptions options = options_;
  options.compiler = failing.string();
  KernelCache cache(cache_dir_);
  const std::string source = constant_kernel_source(3);
  const std::string key = cache.key(source, options);
  const std::vector<fs::path> stamps = stamp_files();
  ASSERT_EQ(stamps.size(), 1u);
  const std::string stamp = read_text(stamps[0]);
  EXPECT_NE(stamp.find("\nbinary sha256 " + sha256_hex(read_text("/bin/false")) + "\n"), std::string::npos) << stamp;
  EXPECT_EQ(KernelCache(cache_dir_).key(source, options), key);
  // Another binary under the same path (an upgrade) is another toolchain.
  std::ofstream(failing, std::ios::app | std::ios::binary) << '\0';
  fs::last_write_time(failing, fs::last_write_time(failing) + std::chrono::seconds(5));
  EXPECT_NE(KernelCache(cache_dir_).key(source, options), key);
  EXPECT_EQ(compiles(), 0);
}

TEST_F(KernelCacheTest, KeyCoversSourceFlagsAndCompiler) {
  KernelCache cache(cache_dir_);
  const std::string key = cache.key(constant_kernel_source(1), options_);
  EXPECT_EQ(key.size(), 64u);
  EXPECT_EQ(key, cache.key(constant_kernel_source(1), options_));
  EXPECT_NE(key, cache.key(constant_kernel_source(2), options_));
  CompilerOptions other_flags = options_;
  other_flags.flags.push_back("-DSTITCH_UNUSED");
  EXPECT_NE(key, cache.key(constant_kernel_source(1), other_flags));
  CompilerOptions other_compiler = options_;
  other_compiler.compiler = "c++";
  EXPECT_NE(key, cache.key(constant_kernel_source(1), other_compiler));
  EXPECT_EQ(compiles(), 0);
}

TEST_F(KernelCacheTest, CorruptOrIncompleteEntriesAreRecompiled) {
  KernelCache cache(cache_dir_);
  const std::string source = constant_kernel_source(7);
  const std::string key = cache.key(source, options_);
  ASSERT_EQ(call_answer(cache.load_or_compile(source, options_)), 7);
  const fs::path shared_object = cache.shared_object_path(key);
  const std::string good = read_text(shared_object);

  replace_file(shared_object, good.substr(0, good.size() / 2));  // truncated
  EXPECT_EQ(call_answer(cache.load_or_compile(source, options_)), 7);
  EXPECT_EQ(cache.stats().recompiled_corrupt, 1);

  std::string flipped = read_text(shared_object);
  flipped[flipped.size() / 2] ^= 0x5a;
  replace_file(shared_object, flipped);
  EXPECT_EQ(call_answer(cache.load_or_compile(source, options_)), 7);
  EXPECT_EQ(cache.stats().recompiled_corrupt, 2);

  replace_file(shared_object, "");
  EXPECT_EQ(call_answer(cache.load_or_compile(source, options_)), 7);
  EXPECT_EQ(cache.stats().recompiled_corrupt, 3);

  fs::remove(cache.checksum_path(key));
  EXPECT_EQ(call_answer(cache.load_or_compile(source, options_)), 7);
  EXPECT_EQ(cache.stats().recompiled_corrupt, 4);

  EXPECT_EQ(compiles(), 5);
  EXPECT_EQ(cache.stats().misses, 1);
  EXPECT_EQ(cache.stats().hits, 0);
  // The repaired entry is a hit again.
  EXPECT_EQ(call_answer(cache.load_or_compile(source, options_)), 7);
  EXPECT_EQ(cache.stats().hits, 1);
  EXPECT_EQ(compiles(), 5);
}

TEST_F(KernelCacheTest, ConcurrentProcessesCompilingOneKeyAllSucceed) {
  constexpr int kProcesses = 3;
  const std::string source = constant_kernel_source(1234);
  // Children block on the pipe until the parent closes it, so they all find
  // the entry missing and compile at the same time.
  int start[2];
  ASSERT_EQ(pipe(start), 0);
  std::vector<pid_t> children;
  for (int i = 0; i < kProcesses; ++i) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(start[1]);
      char byte;
      while (read(start[0], &byte, 1) > 0) {
      }
      int status = 1;
      try {
        KernelCache cache(cache_dir_);
        status = call_answer(cache.load_or_compile(source, options_)) == 1234 ? 0 : 2;
      } catch (...) {
        status = 3;
      }
      _exit(status);
    }
    children.push_back(pid);
  }
  close(start[0]);
  close(start[1]);
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  }
  EXPECT_GE(compiles(), 1);
  EXPECT_LE(compiles(), kProcesses);

  // Whichever writer won, the entry is complete and a hit.
  KernelCache cache(cache_dir_);
  EXPECT_EQ(call_answer(cache.load_or_compile(source, options_)), 1234);
  EXPECT_EQ(cache.stats().hits, 1);
  int leftover_scratch = 0;
  for (const auto& entry : fs::directory_iterator(cache_dir_ / "cpu")) {
    leftover_scratch += entry.path().filename().string().rfind(".tmp-", 0) == 0;
  }
  EXPECT_EQ(leftover_scratch, 0);
}

// Signed entries (docs/kernel-cache.md, Signed entries): under a secret every
// entry carries an HMAC tag over its key and bytes. What someone who can write
// to the directory but lacks the secret can do: put another object under a
// key with its plain checksum (without a secret that is a hit and runs the
// other object's code), or move a whole entry to another key.
TEST_F(KernelCacheTest, UnderASecretEntriesCarryATagAndLoadWithoutACompile) {
  KernelCache cache(cache_dir_, 0, "first secret");
  const std::string source = constant_kernel_source(41);
  const std::string key = cache.key(source, options_);
  EXPECT_EQ(call_answer(cache.load_or_compile(source, options_)), 41);
  const std::string bytes = read_text(cache.shared_object_path(key));
  EXPECT_EQ(read_text(cache.tag_path(key)), entry_tag("first secret", key, bytes));
  EXPECT_NE(read_text(cache.tag_path(key)), entry_tag("second secret", key, bytes));
  EXPECT_NE(read_text(cache.tag_path(key)), entry_tag("first secret", std::string(64, '0'), bytes));
  KernelCache later(cache_dir_, 0, "first secret");
  EXPECT_EQ(call_answer(later.load_or_compile(source, options_)), 41);
  EXPECT_EQ(later.stats().hits, 1);
  // Without a secret the directory is trusted, as it always was: the checksum suffices.
  KernelCache unsigned_reader(cache_dir_, 0, std::nullopt);
  EXPECT_EQ(call_answer(unsigned_reader.load_or_compile(source, options_)), 41);
  EXPECT_EQ(unsigned_reader.stats().hits, 1);
  EXPECT_EQ(compiles(), 1);
}

TEST_F(KernelCacheTest, AForgedOrMovedEntryIsNeverLoadedUnderTheSecret) {
  KernelCache cache(cache_dir_, 0, "secret");
  const std::string mine = constant_kernel_source(7), theirs = constant_kernel_source(666);
  const std::string key = cache.key(mine, options_), other = cache.key(theirs, options_);
  ASSERT_EQ(call_answer(cache.load_or_compile(mine, options_)), 7);
  ASSERT_EQ(call_answer(cache.load_or_compile(theirs, options_)), 666);
  const std::string forged = read_text(cache.shared_object_path(other));

  // Another object under this key with its own checksum: a hit without the
  // secret, which runs the forged code; rejected under it.
  replace_file(cache.shared_object_path(key), forged);
  replace_file(cache.checksum_path(key), sha256_hex(forged));
  KernelCache trusting(cache_dir_, 0, std::nullopt);
  EXPECT_EQ(call_answer(trusting.load_or_compile(mine, options_)), 666);
  EXPECT_EQ(call_answer(cache.load_or_compile(mine, options_)), 7);
  EXPECT_EQ(cache.stats().rejected_unsigned, 1);

  // The other entry whole (object, checksum and tag) under this key: its tag
  // names its own key.
  for (const auto& [from, to] : {std::pair{cache.shared_object_path(other), cache.shared_object_path(key)},
                                 std::pair{cache.checksum_path(other), cache.checksum_path(key)},
                                 std::pair{cache.tag_path(other), cache.tag_path(key)}}) {
    replace_file(to, read_text(from));
  }
  EXPECT_EQ(call_answer(cache.load_or_compile(mine, options_)), 7);
  EXPECT_EQ(cache.stats().rejected_unsigned, 2);

  // An entry written without a secret, or under another one, is not trusted either.
  fs::remove(cache.tag_path(key));
  EXPECT_EQ(call_answer(cache.load_or_compile(mine, options_)), 7);
  KernelCache other_secret(cache_dir_, 0, "another secret");
  EXPECT_EQ(call_answer(other_secret.load_or_compile(mine, options_)), 7);
  EXPECT_EQ(cache.stats().rejected_unsigned, 3);
  EXPECT_EQ(other_secret.stats().rejected_unsigned, 1);
  EXPECT_EQ(cache.stats().hits, 0);
  EXPECT_EQ(compiles(), 2 + 4);
}

}  // namespace
}  // namespace stitch::runtime::cpu::testing
