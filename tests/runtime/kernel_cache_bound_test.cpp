// The kernel cache's size bound, LRU eviction and temporaries
// (docs/kernel-cache.md, Size bound and eviction). Library level: a cache
// object with an explicit bound, and tiny unoptimised compiles.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "runtime/cpu/cache_maintenance.h"
#include "constant_kernel.h"
#include "runtime/cpu/kernel_cache.h"
#include "stitch/error.h"
#include "scratch_directory.h"

namespace stitch::runtime::cpu::testing {
namespace {

namespace fs = std::filesystem;

class KernelCacheBoundTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = root_ / "cache";
    options_.flags = {"-std=c++17", "-O0", "-fPIC", "-shared"};
  }

  uint64_t entry_bytes(const KernelCache& cache, const std::string& key) const {
    return fs::file_size(cache.shared_object_path(key)) + fs::file_size(cache.checksum_path(key));
  }
  bool present(const KernelCache& cache, const std::string& key) const {
    return fs::exists(cache.shared_object_path(key)) || fs::exists(cache.checksum_path(key));
  }

  stitch::testing::ScratchDirectory scratch_{"stitch-cache-bound-test"};
  const fs::path root_ = scratch_.path();
  fs::path dir_;
  CompilerOptions options_;
};

TEST(CacheMaxBytes, ParsesByteCountsAndRejectsTheRest) {
  EXPECT_EQ(parse_cache_max_bytes("0"), 0u);
  EXPECT_EQ(parse_cache_max_bytes("12345"), 12345u);
  EXPECT_EQ(parse_cache_max_bytes("4K"), 4096u);
  EXPECT_EQ(parse_cache_max_bytes("3MiB"), 3u << 20);
  EXPECT_EQ(parse_cache_max_bytes("2G"), uint64_t{2} << 30);
  for (const char* bad : {"", "abc", "-1", "1.5G", "10 M", "1X", "1KB", "99999999999999999999", "9000000000G"}) {
    try {
      parse_cache_max_bytes(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("STITCH_CACHE_MAX_BYTES"), std::string::npos) << e.what();
    }
  }
}

TEST(CacheMaxBytes, ABadVariableFailsWhenACacheIsOpened) {
  ::setenv("STITCH_CACHE_MAX_BYTES", "lots", 1);
  EXPECT_THROW(KernelCache("/nonexistent-cache-dir"), UserError);
  ::setenv("STITCH_CACHE_MAX_BYTES", "64M", 1);
  EXPECT_EQ(KernelCache("/nonexistent-cache-dir").max_bytes(), uint64_t{64} << 20);
  ::unsetenv("STITCH_CACHE_MAX_BYTES");
  EXPECT_EQ(KernelCache("/nonexistent-cache-dir").max_bytes(), kDefaultCacheMaxBytes);
}

// A full cache evicts the least recently used entry (a hit counts as a use),
// ends under the bound, and every entry, evicted or not, still loads.
TEST_F(KernelCacheBoundTest, AFullCacheEvictsTheLeastRecentlyUsed) {
  KernelCache unbounded(dir_, 0);
  std::string keys[4];
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(call_answer(unbounded.load_or_compile(constant_kernel_source(i), options_)), i);
    keys[i] = unbounded.key(constant_kernel_source(i), options_);
  }
  keys[3] = unbounded.key(constant_kernel_source(3), options_);
  // Entry 0 is used again: now entry 1 is the least recently used.
  ASSERT_EQ(call_answer(unbounded.load_or_compile(constant_kernel_source(0), options_)), 0);
  EXPECT_EQ(unbounded.stats().hits, 1);

  const uint64_t full = summarize_cache(dir_).total_bytes;
  const uint64_t bound = full + entry_bytes(unbounded, keys[0]) / 2;
  KernelCache bounded(dir_, bound);
  ASSERT_EQ(call_answer(bounded.load_or_compile(constant_kernel_source(3), options_)), 3);
  EXPECT_FALSE(present(bounded, keys[1])) << "the least recently used entry stays";
  EXPECT_TRUE(present(bounded, keys[0]));
  EXPECT_TRUE(present(bounded, keys[2]));
  EXPECT_TRUE(present(bounded, keys[3]));
  EXPECT_LE(summarize_cache(dir_).total_bytes, bound);

  // The evicted entry is a plain miss; the others are hits.
  ASSERT_EQ(call_answer(bounded.load_or_compile(constant_kernel_source(1), options_)), 1);
  ASSERT_EQ(call_answer(bounded.load_or_compile(constant_kernel_source(3), options_)), 3);
  EXPECT_EQ(bounded.stats().misses, 2);
  EXPECT_EQ(bounded.stats().hits, 1);
  EXPECT_EQ(bounded.stats().recompiled_corrupt, 0);
  EXPECT_LE(summarize_cache(dir_).total_bytes, bound);
}

// An entry larger than the bound is kept (the process just loaded it), and
// everything else goes.
TEST_F(KernelCacheBoundTest, TheEntryJustStoredIsNeverEvicted) {
  KernelCache tiny(dir_, 1);
  ASSERT_EQ(call_answer(tiny.load_or_compile(constant_kernel_source(7), options_)), 7);
  ASSERT_EQ(call_answer(tiny.load_or_compile(constant_kernel_source(8), options_)), 8);
  EXPECT_FALSE(present(tiny, tiny.key(constant_kernel_source(7), options_)));
  EXPECT_TRUE(present(tiny, tiny.key(constant_kernel_source(8), options_)));
  const CacheSummary s = summarize_cache(dir_);
  EXPECT_EQ(s.kinds.at("cpu").entries, 1);
  EXPECT_EQ(s.temporaries, 0);
}

// Half-present entries, as an eviction or a crash leaves them, are misses.
TEST_F(KernelCacheBoundTest, HalfPresentEntriesAreMisses) {
  KernelCache cache(dir_, 0);
  const std::string source = constant_kernel_source(5);
  ASSERT_EQ(call_answer(cache.load_or_compile(source, options_)), 5);
  const std::string key = cache.key(source, options_);
  fs::remove(cache.checksum_path(key));
  KernelCache second(dir_, 0);
  ASSERT_EQ(call_answer(second.load_or_compile(source, options_)), 5);
  fs::remove(cache.shared_object_path(key));
  KernelCache third(dir_, 0);
  ASSERT_EQ(call_answer(third.load_or_compile(source, options_)), 5);
  EXPECT_EQ(second.stats().hits + third.stats().hits, 0);
}

fs::file_time_type hours_ago(int hours) { return fs::file_time_type::clock::now() - std::chrono::hours(hours); }

// Temporaries of a dead writer or older than an hour go; a live writer's stay.
TEST_F(KernelCacheBoundTest, StaleTemporariesAreRemoved) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  const std::string self = temporary_tag();
  const std::string dead = std::to_string(child) + self.substr(self.find('@'));
  const fs::path cpu = dir_ / "cpu";
  fs::create_directories(cpu / (".tmp-" + dead + "-abcdef"));
  std::ofstream(cpu / (".tmp-" + dead + "-abcdef") / "kernel.cpp") << "int x;";
  fs::create_directories(cpu / (".tmp-" + self + "-ghijkl"));
  std::ofstream(cpu / ("k.so.tmp-" + dead + "-mnopqr")) << "half";
  fs::create_directories(cpu / "compilers");
  std::ofstream(cpu / "compilers" / ("x.txt.tmp-" + self + "-stuvwx")) << "live";
  std::ofstream(cpu / "compilers" / (".stamp-" + dead + "-3")) << "dead stamp";
  fs::create_directories(cpu / ".tmp-OLDxyz");
  fs::last_write_time(cpu / ".tmp-OLDxyz", hours_ago(2));
  fs::create_directories(cpu / ".tmp-NEWxyz");
  fs::create_directories(dir_ / "tuning");
  std::ofstream(dir_ / "tuning" / ("a.tune.tmp" "-99999999@elsewhere-zzzzzz")) << "other host";

  EXPECT_EQ(summarize_cache(dir_).stale_temporaries, 4);
  EXPECT_EQ(remove_stale_temporaries(dir_), 4);
  EXPECT_FALSE(fs::exists(cpu / (".tmp-" + dead + "-abcdef")));
  EXPECT_FALSE(fs::exists(cpu / ("k.so.tmp-" + dead + "-mnopqr")));
  EXPECT_FALSE(fs::exists(cpu / "compilers" / (".stamp-" + dead + "-3")));
  EXPECT_FALSE(fs::exists(cpu / ".tmp-OLDxyz"));
  EXPECT_TRUE(fs::exists(cpu / (".tmp-" + self + "-ghijkl")));
  EXPECT_TRUE(fs::exists(cpu / ".tmp-NEWxyz"));
  EXPECT_TRUE(fs::exists(dir_ / "tuning" / "a.tune.tmp-99999999@elsewhere-zzzzzz"));
  EXPECT_EQ(summarize_cache(dir_).temporaries, 4);
}

// clear removes every kind of entry and stale temporaries, keeps a live
// writer's, and the cache works afterwards.
TEST_F(KernelCacheBoundTest, ClearRemovesEntriesOfEveryKind) {
  KernelCache cache(dir_, 0);
  ASSERT_EQ(call_answer(cache.load_or_compile(constant_kernel_source(1), options_)), 1);
  fs::create_directories(dir_ / "cuda" / "sm_90");
  std::ofstream(dir_ / "cuda" / "sm_90" / "k.cubin") << "cubin";
  std::ofstream(dir_ / "cuda" / "sm_90" / "k.sha256") << "sum";
  fs::create_directories(dir_ / "tuning");
  std::ofstream(dir_ / "tuning" / "t.tune") << "choice";
  fs::create_directories(dir_ / "cpu" / (".tmp-" + temporary_tag() + "-livexx"));

  const CacheSummary before = summarize_cache(dir_);
  EXPECT_EQ(before.kinds.at("cpu").entries, 1);
  EXPECT_EQ(before.kinds.at("cuda").entries, 1);
  EXPECT_EQ(before.kinds.at("tuning").entries, 1);
  EXPECT_EQ(before.kinds.at("stamps").entries, 1);
  const ClearResult cleared = clear_cache(dir_);
  EXPECT_EQ(cleared.removed_entries, 4);
  EXPECT_EQ(cleared.live_temporaries, 1);
  const CacheSummary after = summarize_cache(dir_);
  EXPECT_TRUE(after.kinds.empty());
  EXPECT_EQ(after.temporaries, 1);

  KernelCache again(dir_, 0);
  ASSERT_EQ(call_answer(again.load_or_compile(constant_kernel_source(1), options_)), 1);
  EXPECT_EQ(again.stats().misses, 1);
}

}  // namespace
}  // namespace stitch::runtime::cpu::testing
