// `stitch cache info|clear` and $STITCH_CACHE_MAX_BYTES (docs/cli.md, stitch
// cache; docs/kernel-cache.md).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "cli_runner.h"
#include "redis_server.h"

namespace stitch {
namespace {

namespace fs = std::filesystem;

class CliCache : public CliTest {
 protected:
  std::string add_graph() { return src("bench/workloads/add.stitch") + " --graph add_small --random-inputs 1"; }
  fs::path cache() const { return dir_ / "cache"; }
};

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST_F(CliCache, InfoAndClearReportTheCache) {
  CliResult empty = run_cli("cache info");
  ASSERT_EQ(empty.status, 0) << empty.output;
  EXPECT_TRUE(contains(empty.output, "directory   " + cache().string() + " (not created yet)")) << empty.output;
  EXPECT_TRUE(contains(empty.output, "bound       2147483648 bytes (2.0 GiB, default)")) << empty.output;
  EXPECT_TRUE(contains(empty.output, "cpu         0 entries, 0 bytes")) << empty.output;

  ASSERT_EQ(run_cli("run " + add_graph()).status, 0);
  CliResult full = run_cli("cache info", "STITCH_CACHE_MAX_BYTES=64M");
  ASSERT_EQ(full.status, 0) << full.output;
  EXPECT_TRUE(contains(full.output, "cpu         1 entries,")) << full.output;
  EXPECT_TRUE(contains(full.output, "stamps      1 entries,")) << full.output;
  EXPECT_TRUE(contains(full.output, "temporaries 0 (0 stale), 0 bytes")) << full.output;
  EXPECT_TRUE(contains(full.output, "bound       67108864 bytes (64.0 MiB, STITCH_CACHE_MAX_BYTES)")) << full.output;

  CliResult cleared = run_cli("cache clear");
  ASSERT_EQ(cleared.status, 0) << cleared.output;
  EXPECT_TRUE(contains(cleared.output, "removed 2 entries and 0 temporaries from " + cache().string()))
      << cleared.output;
  CliResult after = run_cli("cache info --dir " + cache().string());
  ASSERT_EQ(after.status, 0) << after.output;
  EXPECT_TRUE(contains(after.output, "cpu         0 entries, 0 bytes")) << after.output;
  EXPECT_TRUE(contains(after.output, "total       0 bytes")) << after.output;
  // The cache works after a clear.
  ASSERT_EQ(run_cli("run " + add_graph(), "STITCH_DUMP=cache").status, 0);
}

// Signed entries (docs/kernel-cache.md): `cache info` says whether they are on and
// from where; a run under a secret writes each entry's tag; a secret given twice
// is bad input.
TEST_F(CliCache, InfoSaysWhetherEntriesAreSigned) {
  CliResult off = run_cli("cache info");
  EXPECT_TRUE(contains(off.output, "signing     off")) << off.output;
  ASSERT_EQ(run_cli("run " + add_graph()).status, 0);  // an unsigned entry, then a reader under a secret
  CliResult signed_run = run_cli("run " + add_graph(), "STITCH_CACHE_KEY=s3cret STITCH_DUMP=cache");
  ASSERT_EQ(signed_run.status, 0) << signed_run.output;
  EXPECT_TRUE(contains(signed_run.output, "does not carry a valid signature under STITCH_CACHE_KEY")) << signed_run.output;
  EXPECT_TRUE(contains(signed_run.output, "cache: hits=0 remote_hits=0 misses=1 rejected_unsigned=1")) << signed_run.output;
  int tags = 0;
  for (const auto& entry : std::filesystem::directory_iterator(cache() / "cpu")) tags += entry.path().extension() == ".tag";
  EXPECT_EQ(tags, 1);
  CliResult on = run_cli("cache info", "STITCH_CACHE_KEY=s3cret");
  EXPECT_TRUE(contains(on.output, "signing     on (STITCH_CACHE_KEY)")) << on.output;
  const std::string file = write("cache-key", "s3cret\n");
  CliResult both = run_cli("run " + add_graph(), "STITCH_CACHE_KEY=s3cret STITCH_CACHE_KEY_FILE=" + file);
  EXPECT_EQ(both.status, 2) << both.output;
  EXPECT_TRUE(contains(both.output, "STITCH_CACHE_KEY and STITCH_CACHE_KEY_FILE are both set")) << both.output;
}

TEST_F(CliCache, BadInputExitsTwo) {
  const std::string file = write("not-a-dir", "x");
  for (const char* command : {"cache info", "cache clear"}) {
    CliResult r = run_cli(std::string(command) + " --dir " + file);
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_TRUE(contains(r.output, file + " is not a directory")) << r.output;
  }
  CliResult none = run_cli("cache");
  EXPECT_EQ(none.status, 2) << none.output;
}

TEST_F(CliCache, ABadMaxBytesExitsTwo) {
  for (const char* value : {"lots", "-5", "1.5G", "12Q"}) {
    const std::string env = std::string("STITCH_CACHE_MAX_BYTES=") + value;
    CliResult info = run_cli("cache info", env);
    EXPECT_EQ(info.status, 2) << info.output;
    EXPECT_TRUE(contains(info.output, env + ": expected a byte count")) << info.output;
    CliResult run = run_cli("run " + add_graph() + " --backend cpu", env);
    EXPECT_EQ(run.status, 2) << run.output;
    EXPECT_TRUE(contains(run.output, "STITCH_CACHE_MAX_BYTES")) << run.output;
  }
}

// The remote tier (docs/kernel-cache.md, A cache shared by many workers): a
// second worker with its own empty directory compiles nothing; `cache info`
// shows the store; a store without a secret must be trusted explicitly; a
// store that is down is a warning, not a failed run.
TEST_F(CliCache, ASecondWorkerGetsItsKernelsFromTheSharedStore) {
  stitch::testing::RedisServer redis;
  const std::string shared = "STITCH_REMOTE_CACHE=" + redis.url() + " STITCH_CACHE_KEY=s3cret STITCH_DUMP=cache ";
  CliResult first = run_cli("run " + add_graph(), shared + "STITCH_CACHE_DIR=" + (dir_ / "first").string());
  ASSERT_EQ(first.status, 0) << first.output;
  EXPECT_TRUE(contains(first.output, "cache: hits=0 remote_hits=0 misses=1\n")) << first.output;
  CliResult second = run_cli("run " + add_graph(), shared + "STITCH_CACHE_DIR=" + (dir_ / "second").string());
  ASSERT_EQ(second.status, 0) << second.output;
  EXPECT_TRUE(contains(second.output, "cache: hits=0 remote_hits=1 misses=0\n")) << second.output;

  CliResult info = run_cli("cache info", "STITCH_REMOTE_CACHE=" + redis.url() + " STITCH_CACHE_KEY=s3cret");
  EXPECT_TRUE(contains(info.output, "remote      " + redis.url() + "/0: reachable, redis ")) << info.output;
  EXPECT_TRUE(contains(info.output, ", 1 entries, ")) << info.output;
  CliResult untrusted = run_cli("run " + add_graph(), "STITCH_REMOTE_CACHE=" + redis.url());
  EXPECT_EQ(untrusted.status, 2) << untrusted.output;
  EXPECT_TRUE(contains(untrusted.output, "STITCH_REMOTE_CACHE_TRUST=1")) << untrusted.output;
  CliResult malformed = run_cli("run " + add_graph(), "STITCH_REMOTE_CACHE=localhost:6379 STITCH_REMOTE_CACHE_TRUST=1");
  EXPECT_EQ(malformed.status, 2) << malformed.output;
  EXPECT_TRUE(contains(malformed.output, "expected redis://[:PASSWORD@]HOST:PORT[/DB]")) << malformed.output;

  redis.kill();
  CliResult down = run_cli("run " + add_graph(), shared + "STITCH_CACHE_DIR=" + (dir_ / "third").string());
  ASSERT_EQ(down.status, 0) << down.output;
  EXPECT_TRUE(contains(down.output, "stitch: warning: the remote kernel cache")) << down.output;
  EXPECT_TRUE(contains(down.output, "cache: hits=0 remote_hits=0 misses=1\n")) << down.output;
}

}  // namespace
}  // namespace stitch
