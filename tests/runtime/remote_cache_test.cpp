// The kernel cache's remote tier (docs/kernel-cache.md, A cache shared by many
// workers) against a real redis-server that each test starts on a free
// loopback port and stops after. A "worker" is a KernelCache with its own
// local directory and its own connection, as in another process.
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "constant_kernel.h"
#include "redis_server.h"
#include "runtime/common/remote_cache.h"
#include "runtime/cpu/kernel_cache.h"
#include "stitch/error.h"
#include "scratch_directory.h"

namespace stitch::runtime::cpu::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using stitch::testing::RedisServer;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

class RemoteCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.flags = {"-std=c++17", "-O0", "-fPIC", "-shared"};
  }

  RemoteSettings settings() const {
    RemoteSettings s;
    s.address = parse_remote_address(redis_.url());
    s.timeout = 300ms;
    s.retry_after = 50ms;
    return s;
  }
  std::shared_ptr<RemoteCache> connection(const std::optional<std::string>& secret,
                                          std::optional<RemoteSettings> custom = std::nullopt) const {
    return std::make_shared<RemoteCache>(custom ? *custom : settings(), secret);
  }
  // A worker: its own directory and connection.
  KernelCache worker(const std::string& name, const std::optional<std::string>& secret,
                     std::shared_ptr<RemoteCache> remote = nullptr) const {
    return KernelCache(root_ / name, 0, secret, remote ? remote : connection(secret));
  }
  // The compiled object of `value`'s kernel, compiled without any store.
  std::string object_bytes(int value) const {
    KernelCache local(root_ / "objects", 0, std::nullopt, nullptr);
    local.load_or_compile(constant_kernel_source(value), options_);
    return read_file(local.shared_object_path(local.key(constant_kernel_source(value), options_)));
  }
  std::string key_of(int value) const {
    return KernelCache(root_ / "keys", 0, std::nullopt, nullptr).key(constant_kernel_source(value), options_);
  }
  std::string entries() const { return redis_.cli("--scan --pattern 'stitch:v1:cpu:*'"); }

  RedisServer redis_;
  stitch::testing::ScratchDirectory scratch_{"stitch-remote-cache-test"};
  const fs::path root_ = scratch_.path();
  CompilerOptions options_;
};

TEST_F(RemoteCacheTest, ASecondWorkerLoadsTheFirstWorkersEntryAndKeepsItLocally) {
  KernelCache first = worker("first", "secret");
  EXPECT_EQ(call_answer(first.load_or_compile(constant_kernel_source(7), options_)), 7);
  EXPECT_EQ(first.stats().misses, 1);
  EXPECT_EQ(entries(), RemoteCache::entry_name("cpu", key_of(7)));

  KernelCache second = worker("second", "secret");
  EXPECT_EQ(call_answer(second.load_or_compile(constant_kernel_source(7), options_)), 7);
  EXPECT_EQ(second.stats().remote_hits, 1);
  EXPECT_EQ(second.stats().compiles(), 0);
  // Written to the second worker's own directory: the store is not asked again.
  KernelCache again(root_ / "second", 0, "secret", nullptr);
  EXPECT_EQ(call_answer(again.load_or_compile(constant_kernel_source(7), options_)), 7);
  EXPECT_EQ(again.stats().hits, 1);
  EXPECT_EQ(cache_dump_line(second.stats()), "cache: hits=0 remote_hits=1 misses=0\n");
}

TEST_F(RemoteCacheTest, WorkersMissingTheSameKernelAtOnceCompileItOnce) {
  constexpr int kWorkers = 4;
  std::vector<std::unique_ptr<KernelCache>> workers;
  for (int i = 0; i < kWorkers; ++i) {
    workers.push_back(std::make_unique<KernelCache>(root_ / ("w" + std::to_string(i)), 0, "secret", connection("secret")));
  }
  std::barrier start(kWorkers);
  std::vector<std::thread> threads;
  std::atomic<int> right{0};
  for (int i = 0; i < kWorkers; ++i) {
    threads.emplace_back([&, i] {
      start.arrive_and_wait();
      if (call_answer(workers[i]->load_or_compile(constant_kernel_source(11), options_)) == 11) ++right;
    });
  }
  for (std::thread& t : threads) t.join();
  int compiles = 0, remote_hits = 0;
  for (const auto& w : workers) {
    compiles += w->stats().compiles();
    remote_hits += w->stats().remote_hits;
  }
  EXPECT_EQ(right, kWorkers);
  EXPECT_EQ(compiles, 1);
  EXPECT_EQ(remote_hits, kWorkers - 1);
  EXPECT_EQ(redis_.cli("--scan --pattern 'stitch:v1:lease:*'"), "");  // released
}

TEST_F(RemoteCacheTest, AWaiterTakesTheLeaseOverWhenItsHolderDies) {
  RemoteSettings short_lease = settings();
  short_lease.lease = 400ms;
  // A worker that took the lease and died: it never stores nor releases.
  bool leased = false;
  connection("secret", short_lease)->get_or_lease("cpu", key_of(5), leased);
  ASSERT_TRUE(leased);
  KernelCache waiter = worker("waiter", "secret", connection("secret", short_lease));
  const auto begin = std::chrono::steady_clock::now();
  EXPECT_EQ(call_answer(waiter.load_or_compile(constant_kernel_source(5), options_)), 5);
  EXPECT_GE(std::chrono::steady_clock::now() - begin, 300ms);  // it waited for the lease
  EXPECT_EQ(waiter.stats().misses, 1);
  EXPECT_EQ(entries(), RemoteCache::entry_name("cpu", key_of(5)));
}

// A compile longer than the lease keeps it (renewed every third of it): the
// waiting worker gets the entry instead of compiling too.
TEST_F(RemoteCacheTest, ACompileLongerThanItsLeaseKeepsIt) {
  const fs::path slow = root_ / "slow-c++";
  std::ofstream(slow) << "#!/bin/sh\nsleep 2\nexec c++ \"$@\"\n";
  fs::permissions(slow, fs::perms::owner_all);
  options_.compiler = slow.string();
  RemoteSettings short_lease = settings();
  short_lease.lease = 500ms;
  KernelCache first = worker("first", "secret", connection("secret", short_lease));
  KernelCache second = worker("second", "secret", connection("secret", short_lease));
  std::thread compiling([&] { EXPECT_EQ(call_answer(first.load_or_compile(constant_kernel_source(14), options_)), 14); });
  // The second starts once the first holds the lease (a loaded machine may
  // take a while to get the first that far).
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (redis_.cli("--scan --pattern 'stitch:v1:lease:*'").empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(call_answer(second.load_or_compile(constant_kernel_source(14), options_)), 14);
  compiling.join();
  EXPECT_EQ(first.stats().compiles() + second.stats().compiles(), 1);
  EXPECT_EQ(second.stats().remote_hits, 1);
}

TEST_F(RemoteCacheTest, AnEntryForgedWithoutTheSecretIsNeverLoaded) {
  KernelCache first = worker("first", "secret");
  first.load_or_compile(constant_kernel_source(1), options_);
  // Someone who can write to the store but has no secret puts another
  // kernel's object under the key, with a well-formed record and tag.
  ASSERT_TRUE(connection("guessed")->put("cpu", key_of(1), object_bytes(2)));
  KernelCache reader = worker("reader", "secret");
  EXPECT_EQ(call_answer(reader.load_or_compile(constant_kernel_source(1), options_)), 1);
  EXPECT_EQ(reader.stats().rejected_unsigned, 1);
  EXPECT_EQ(reader.stats().remote_hits, 0);
  // The reader's compile replaced the forgery: the next worker hits.
  KernelCache next = worker("next", "secret");
  EXPECT_EQ(call_answer(next.load_or_compile(constant_kernel_source(1), options_)), 1);
  EXPECT_EQ(next.stats().remote_hits, 1);
}

TEST_F(RemoteCacheTest, AWorkerWithAnotherSecretLoadsNothingFromTheStore) {
  worker("first", "secret").load_or_compile(constant_kernel_source(3), options_);
  KernelCache other = worker("other", "another secret");
  EXPECT_EQ(call_answer(other.load_or_compile(constant_kernel_source(3), options_)), 3);
  EXPECT_EQ(other.stats().rejected_unsigned, 1);
  EXPECT_EQ(other.stats().remote_hits, 0);
}

TEST_F(RemoteCacheTest, AnEntryMovedToAnotherKeyIsNeverLoaded) {
  worker("first", "secret").load_or_compile(constant_kernel_source(1), options_);
  const std::string from = RemoteCache::entry_name("cpu", key_of(1));
  const std::string to = RemoteCache::entry_name("cpu", key_of(2));
  // Copied as it is (its header still names its key), then with the header
  // rewritten to name the new key (only the tag still tells).
  redis_.cli("COPY " + from + " " + to);
  KernelCache copied = worker("copied", "secret");
  EXPECT_EQ(call_answer(copied.load_or_compile(constant_kernel_source(2), options_)), 2);
  EXPECT_EQ(copied.stats().recompiled_corrupt, 1);
  redis_.cli("EVAL \"return redis.call('set', KEYS[2], (string.gsub(redis.call('get', KEYS[1]), ARGV[1], ARGV[2], 1)))\" 2 " +
             from + " " + to + " " + key_of(1) + " " + key_of(2));
  ASSERT_NE(redis_.cli("GETRANGE " + to + " 0 100").find(key_of(2)), std::string::npos);
  KernelCache rewritten = worker("rewritten", "secret");
  EXPECT_EQ(call_answer(rewritten.load_or_compile(constant_kernel_source(2), options_)), 2);
  EXPECT_EQ(rewritten.stats().rejected_unsigned, 1);
}

TEST_F(RemoteCacheTest, ATruncatedEntryIsRecompiled) {
  worker("first", std::nullopt).load_or_compile(constant_kernel_source(4), options_);
  const std::string name = RemoteCache::entry_name("cpu", key_of(4));
  redis_.cli("EVAL \"local v = redis.call('get', KEYS[1]) return redis.call('set', KEYS[1], string.sub(v, 1, #v - 100))\" 1 " + name);
  KernelCache reader = worker("reader", std::nullopt);
  EXPECT_EQ(call_answer(reader.load_or_compile(constant_kernel_source(4), options_)), 4);
  EXPECT_EQ(reader.stats().recompiled_corrupt, 1);
}

TEST_F(RemoteCacheTest, ARedisThatIsDownOrRestartedCostsNoFailedRun) {
  std::shared_ptr<RemoteCache> remote = connection("secret");
  KernelCache w = worker("w", "secret", remote);
  redis_.kill();
  EXPECT_EQ(call_answer(w.load_or_compile(constant_kernel_source(6), options_)), 6);
  EXPECT_EQ(w.stats().misses, 1);
  EXPECT_GT(remote->failures(), 0);
  // Restarted (empty): after the pause the same connection object stores again.
  redis_.restart();
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(call_answer(w.load_or_compile(constant_kernel_source(8), options_)), 8);
  EXPECT_EQ(entries(), RemoteCache::entry_name("cpu", key_of(8)));
}

TEST_F(RemoteCacheTest, ASlowRedisTimesOutAndTheWorkerCompiles) {
  redis_.pause();
  KernelCache w = worker("w", "secret");
  const auto begin = std::chrono::steady_clock::now();
  EXPECT_EQ(call_answer(w.load_or_compile(constant_kernel_source(9), options_)), 9);
  const auto waited = std::chrono::steady_clock::now() - begin;
  redis_.resume();
  EXPECT_EQ(w.stats().misses, 1);
  EXPECT_LT(waited, 20s);  // the timeout, not forever (the compile is most of it)
  EXPECT_GT(w.remote()->failures(), 0);
}

TEST_F(RemoteCacheTest, AFullRedisRefusesTheEntryAndTheWorkerGoesOn) {
  redis_.cli("CONFIG SET maxmemory 1");
  KernelCache w = worker("w", "secret");
  EXPECT_EQ(call_answer(w.load_or_compile(constant_kernel_source(10), options_)), 10);
  EXPECT_EQ(w.stats().misses, 1);
  EXPECT_EQ(entries(), "");
  EXPECT_GT(w.remote()->failures(), 0);
}

TEST_F(RemoteCacheTest, AnEntryOverTheLimitStaysLocal) {
  RemoteSettings small = settings();
  small.max_entry = 64;
  KernelCache w = worker("w", "secret", connection("secret", small));
  EXPECT_EQ(call_answer(w.load_or_compile(constant_kernel_source(12), options_)), 12);
  EXPECT_EQ(entries(), "");
  EXPECT_TRUE(fs::exists(w.shared_object_path(key_of(12))));
}

TEST_F(RemoteCacheTest, InfoShowsTheServerAndItsEntries) {
  worker("w", "secret").load_or_compile(constant_kernel_source(13), options_);
  const RemoteInfo info = connection("secret")->info();
  EXPECT_TRUE(info.reachable) << info.error;
  EXPECT_EQ(info.entries, 1);
  EXPECT_EQ(info.server.rfind("redis ", 0), 0u) << info.server;
  EXPECT_GT(info.used_bytes, 0);
  redis_.kill();
  const RemoteInfo down = connection("secret")->info();
  EXPECT_FALSE(down.reachable);
  EXPECT_NE(down.error.find("cannot connect"), std::string::npos) << down.error;
}

TEST(RemoteAddress, TheNormativeSpelling) {
  const RemoteAddress a = parse_remote_address("redis://cache.example:6380");
  EXPECT_EQ(a.host, "cache.example");
  EXPECT_EQ(a.port, 6380);
  EXPECT_EQ(a.db, 0);
  EXPECT_EQ(a.password, "");
  const RemoteAddress b = parse_remote_address("redis://:p@ss:word@10.0.0.2:6379/3");
  EXPECT_EQ(b.password, "p@ss:word");
  EXPECT_EQ(b.host, "10.0.0.2");
  EXPECT_EQ(b.db, 3);
  EXPECT_EQ(b.text(), "redis://10.0.0.2:6379/3");  // no password in messages
  for (const char* bad : {"cache.example:6379", "rediss://h:6379", "redis://h", "redis://h:0", "redis://h:x",
                          "redis://user:pw@h:6379", "redis://:6379", "redis://h:6379/db"}) {
    EXPECT_THROW(parse_remote_address(bad), UserError) << bad;
  }
}

// The environment's tier: refused without a secret unless the store is trusted.
TEST(RemoteSettingsFromEnvironment, AStoreWithoutASecretMustBeTrustedExplicitly) {
  unsetenv("STITCH_CACHE_KEY");
  unsetenv("STITCH_CACHE_KEY_FILE");
  setenv("STITCH_REMOTE_CACHE", "redis://127.0.0.1:6379", 1);
  try {
    remote_settings();
    ADD_FAILURE() << "an unsigned store was accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("STITCH_REMOTE_CACHE_TRUST=1"), std::string::npos) << e.what();
  }
  setenv("STITCH_REMOTE_CACHE_TRUST", "1", 1);
  EXPECT_TRUE(remote_settings().has_value());
  unsetenv("STITCH_REMOTE_CACHE_TRUST");
  setenv("STITCH_CACHE_KEY", "secret", 1);
  setenv("STITCH_REMOTE_CACHE_MAX_ENTRY", "1M", 1);
  setenv("STITCH_REMOTE_CACHE_TIMEOUT_MS", "250", 1);
  const std::optional<RemoteSettings> s = remote_settings();
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->max_entry, 1u << 20);
  EXPECT_EQ(s->timeout, 250ms);
  setenv("STITCH_REMOTE_CACHE_TIMEOUT_MS", "0", 1);
  EXPECT_THROW(remote_settings(), UserError);
  for (const char* v : {"STITCH_REMOTE_CACHE", "STITCH_CACHE_KEY", "STITCH_REMOTE_CACHE_MAX_ENTRY", "STITCH_REMOTE_CACHE_TIMEOUT_MS"}) {
    unsetenv(v);
  }
  EXPECT_FALSE(remote_settings().has_value());
}

TEST(CacheDumpLine, CountsEveryCompileAsAMiss) {
  EntryCounts c;
  c.hits = 2;
  c.remote_hits = 3;
  c.misses = 1;
  c.rejected_unsigned = 1;
  EXPECT_EQ(cache_dump_line(c), "cache: hits=2 remote_hits=3 misses=2 rejected_unsigned=1\n");
}

}  // namespace
}  // namespace stitch::runtime::cpu::testing
