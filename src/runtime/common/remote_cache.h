// The remote tier of the kernel cache (docs/kernel-cache.md, A cache shared by
// many workers): one Redis server that every worker of a job reads and writes
// through hiredis, between the local directory and the compiler. Lookups go
// local -> remote -> compile; a compiled entry is written to both; a remote
// hit is written to the local directory. Workers missing the same key at once
// take a lease in Redis: one compiles, the others wait for its entry.
//
// The store is never needed for a result: when it is down, slow (the
// timeout), full or restarted, a worker warns once, compiles locally, and
// tries the store again after a pause.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

struct redisContext;

namespace stitch::runtime {

// redis://[:PASSWORD@]HOST:PORT[/DB], STITCH_REMOTE_CACHE's normative spelling.
struct RemoteAddress {
  std::string host;
  int port = 6379;
  std::string password;
  int db = 0;
  // The URL without its password, for messages.
  std::string text() const;
};

// Throws UserError naming `variable` when `url` is not of that form.
RemoteAddress parse_remote_address(std::string_view url, std::string_view variable = "STITCH_REMOTE_CACHE");

struct RemoteSettings {
  RemoteAddress address;
  uint64_t max_entry = 64ull << 20;            // STITCH_REMOTE_CACHE_MAX_ENTRY: larger entries stay local
  std::chrono::milliseconds timeout{2000};     // STITCH_REMOTE_CACHE_TIMEOUT_MS: connect, and each command
  // A compile's lease on its key lasts this long unless renewed; its holder
  // renews it every third of it while it compiles.
  std::chrono::milliseconds lease{30000};
  std::chrono::milliseconds max_wait{600000};  // how long a worker waits for another's compile at most
  std::chrono::milliseconds retry_after{10000};  // after a failure, no connection attempt before this
};

// The environment's remote tier: none when STITCH_REMOTE_CACHE is unset.
// Throws UserError on a malformed value, and when no secret signs the
// entries (STITCH_CACHE_KEY, STITCH_CACHE_KEY_FILE) unless
// STITCH_REMOTE_CACHE_TRUST=1 says the store itself is trusted.
std::optional<RemoteSettings> remote_settings();

// One entry as the store holds it, checked.
struct RemoteEntry {
  enum class State {
    Hit,          // intact, and under a secret signed for this key: `bytes` holds it
    Missing,      // no entry (or the store is unavailable: compile locally)
    Corrupt,      // truncated, altered without a secret, or stored for another key
    Unverified,   // under a secret, its tag does not verify: never loaded
  };
  State state = State::Missing;
  std::string bytes;
};

// What `stitch cache info` shows of the store.
struct RemoteInfo {
  std::string address;     // without the password
  bool reachable = false;
  std::string error;       // why not, when not
  std::string server;      // "redis 7.0.15"
  int64_t entries = 0;     // keys of this format
  int64_t used_bytes = 0;  // the server's used_memory
  int64_t max_bytes = 0;   // its maxmemory (0: no bound)
  std::string policy;      // its maxmemory-policy
};

// Thread-safe: one connection, used under a mutex (a command is short; a
// worker waiting on a lease sleeps without holding it).
class RemoteCache {
 public:
  RemoteCache(RemoteSettings settings, std::optional<std::string> secret);
  ~RemoteCache();
  RemoteCache(const RemoteCache&) = delete;
  RemoteCache& operator=(const RemoteCache&) = delete;

  // The entry `key` of `space` ("cpu", "cuda/sm_90"), checked.
  RemoteEntry get(std::string_view space, std::string_view key);

  // get, and when the entry is missing: take the key's lease (`leased` is
  // then true: compile, put, release), or while another worker holds it,
  // wait for its entry. When the lease ends without an entry (that worker
  // failed or died) the lease is taken again; after settings().max_wait,
  // Missing with `leased` false.
  RemoteEntry get_or_lease(std::string_view space, std::string_view key, bool& leased);
  void release(std::string_view space, std::string_view key);
  // Extends the lease this process holds to settings().lease again.
  void renew(std::string_view space, std::string_view key);

  // Stores `bytes` under `key` with their checksum and (under a secret) tag.
  // An entry over max_entry is not stored; false then, or when the store
  // refused or is unavailable.
  bool put(std::string_view space, std::string_view key, std::string_view bytes);

  RemoteInfo info();
  const RemoteSettings& settings() const { return settings_; }
  int failures() const;  // commands that failed (the store down, slow or refusing)

  // The Redis key of an entry, and of its lease.
  static std::string entry_name(std::string_view space, std::string_view key);
  static std::string lease_name(std::string_view space, std::string_view key);

 private:
  struct Reply;
  // Runs one command; nullptr (and the store marked unavailable for
  // retry_after) when the connection or the command fails.
  std::unique_ptr<Reply> command(std::initializer_list<std::string_view> args);
  bool connect_locked();
  void fail_locked(const std::string& why, bool drop_connection);

  RemoteSettings settings_;
  std::optional<std::string> secret_;
  std::string token_;  // this process's lease value
  mutable std::mutex mutex_;  // guards the fields below
  redisContext* context_ = nullptr;
  std::string last_error_;
  std::chrono::steady_clock::time_point unavailable_until_{};
  int failures_ = 0;
};

// The process's remote tier as the environment sets it (shared by every
// kernel and cubin cache that does not name one), or nullptr. A changed
// environment opens a new one.
std::shared_ptr<RemoteCache> environment_remote_cache();

// A lease held for a compile: renewed (to settings().lease) every third of
// it while the compile runs, so that a long compile keeps it; released when
// this goes out of scope.
class RemoteLease {
 public:
  RemoteLease(RemoteCache* cache, std::string_view space, std::string_view key, bool held);
  ~RemoteLease();
  RemoteLease(const RemoteLease&) = delete;
  RemoteLease& operator=(const RemoteLease&) = delete;

 private:
  RemoteCache* cache_;
  std::string space_, key_;
  std::mutex mutex_;
  std::condition_variable done_;
  bool stopping_ = false;
  std::thread renewer_;
};

}  // namespace stitch::runtime
