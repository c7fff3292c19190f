#include "runtime/common/remote_cache.h"

#include <hiredis/hiredis.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <cstdio>
#include <random>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "options/options.h"
#include "runtime/common/entry_signature.h"
#include "stitch/error.h"

namespace stitch::runtime {
namespace {

// Every Redis key Stitch writes starts so; the version changes with the
// record's format, so older workers and newer ones never read each other's.
constexpr std::string_view kPrefix = "stitch:v1:";
constexpr std::string_view kRecordHeader = "stitch-remote-entry 1\n";

// Releases the lease only when this process still holds it (it may have
// expired and been taken by another worker).
constexpr std::string_view kReleaseScript =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

// Extends the lease only when this process still holds it.
constexpr std::string_view kRenewScript =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end";

std::optional<int> parse_int(std::string_view text, int low, int high) {
  int n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || n < low || n > high) return std::nullopt;
  return n;
}

// The record a store holds: a header naming the key, the bytes' SHA-256 and
// tag ("none" unsigned), a blank line, the bytes.
std::string record_of(std::string_view key, std::string_view bytes, const std::optional<std::string>& secret) {
  std::string record(kRecordHeader);
  record += fmt::format("key {}\nsha256 {}\ntag {}\n\n", key, sha256_hex(bytes),
                        secret ? entry_tag(*secret, key, bytes) : std::string("none"));
  record += bytes;
  return record;
}

// The header line `name` at `pos` ("name value\n"); advances pos. nullopt
// when the record does not have it there.
std::optional<std::string_view> header_field(std::string_view record, size_t& pos, std::string_view name) {
  if (record.substr(pos, name.size() + 1) != fmt::format("{} ", name)) return std::nullopt;
  const size_t end = record.find('\n', pos);
  if (end == std::string_view::npos) return std::nullopt;
  std::string_view value = record.substr(pos + name.size() + 1, end - pos - name.size() - 1);
  pos = end + 1;
  return value;
}

RemoteEntry check_record(std::string_view record, std::string_view key, const std::optional<std::string>& secret) {
  RemoteEntry corrupt{RemoteEntry::State::Corrupt, {}};
  if (record.substr(0, kRecordHeader.size()) != kRecordHeader) return corrupt;
  size_t pos = kRecordHeader.size();
  const auto stored_key = header_field(record, pos, "key");
  const auto checksum = header_field(record, pos, "sha256");
  const auto tag = header_field(record, pos, "tag");
  if (!stored_key || !checksum || !tag || record.substr(pos, 1) != "\n") return corrupt;
  std::string_view bytes = record.substr(pos + 1);
  // Without a secret these catch truncation and accident, not an attacker
  // (who can rewrite the header too): that is what STITCH_REMOTE_CACHE_TRUST trusts.
  if (*stored_key != key || bytes.empty() || sha256_hex(bytes) != *checksum) return corrupt;
  if (secret && !entry_tag_verifies(*secret, key, bytes, *tag)) return {RemoteEntry::State::Unverified, {}};
  return {RemoteEntry::State::Hit, std::string(bytes)};
}

// One warning per process for everything the store does wrong: a worker
// goes on without it, and a log of thousands of workers stays readable.
void warn_once(const std::string& what) {
  static std::atomic<bool> warned{false};
  if (warned.exchange(true)) return;
  std::fprintf(stderr, "stitch: warning: %s; compiling locally (further problems with the store are counted, not warned about)\n",
               what.c_str());
}

}  // namespace

std::string RemoteAddress::text() const { return fmt::format("redis://{}:{}/{}", host, port, db); }

RemoteAddress parse_remote_address(std::string_view url, std::string_view variable) {
  const auto bad = [&](std::string_view why) {
    return UserError(fmt::format("{}={}: {} (expected redis://[:PASSWORD@]HOST:PORT[/DB])", variable, url, why));
  };
  constexpr std::string_view scheme = "redis://";
  if (url.substr(0, scheme.size()) != scheme) {
    throw bad(url.substr(0, 9) == "rediss://" ? "TLS is not supported (Debian 12's hiredis 0.14 has none)"
                                              : "not a redis:// URL");
  }
  std::string_view rest = url.substr(scheme.size());
  RemoteAddress address;
  if (const size_t at = rest.rfind('@'); at != std::string_view::npos) {
    std::string_view user_info = rest.substr(0, at);
    if (user_info.empty() || user_info[0] != ':') throw bad("a user name is not supported: give ':PASSWORD@'");
    address.password = std::string(user_info.substr(1));
    rest = rest.substr(at + 1);
  }
  if (const size_t slash = rest.find('/'); slash != std::string_view::npos) {
    const auto db = parse_int(rest.substr(slash + 1), 0, 1 << 20);
    if (!db) throw bad("the database is not a number");
    address.db = *db;
    rest = rest.substr(0, slash);
  }
  const size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos) throw bad("no port");
  address.host = std::string(rest.substr(0, colon));
  const auto port = parse_int(rest.substr(colon + 1), 1, 65535);
  if (address.host.empty()) throw bad("no host");
  if (!port) throw bad("the port is not a number from 1 to 65535");
  address.port = *port;
  return address;
}

std::optional<RemoteSettings> remote_settings() {
  const EnvironmentOptions env = environment_options();
  if (env.remote_cache.empty()) return std::nullopt;
  RemoteSettings settings;
  settings.address = parse_remote_address(env.remote_cache);
  if (env.remote_cache_max_entry) settings.max_entry = *env.remote_cache_max_entry;
  if (env.remote_cache_timeout_ms) settings.timeout = std::chrono::milliseconds(*env.remote_cache_timeout_ms);
  if (!env.cache_secret && !env.remote_cache_trust) {
    throw UserError(fmt::format(
        "STITCH_REMOTE_CACHE={}: no secret signs the entries, so anyone who can write to the store could run code in "
        "this process; set STITCH_CACHE_KEY or STITCH_CACHE_KEY_FILE (the same secret on every worker), or "
        "STITCH_REMOTE_CACHE_TRUST=1 to trust the store as it is (docs/kernel-cache.md)",
        settings.address.text()));
  }
  return settings;
}

struct RemoteCache::Reply {
  redisReply* reply;
  explicit Reply(redisReply* r) : reply(r) {}
  ~Reply() { freeReplyObject(reply); }
  bool is(int type) const { return reply->type == type; }
  std::string_view text() const { return {reply->str, reply->len}; }
};

RemoteCache::RemoteCache(RemoteSettings settings, std::optional<std::string> secret)
    : settings_(std::move(settings)), secret_(std::move(secret)) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  token_ = fmt::format("{}:{}:{:x}", host, getpid(), std::random_device{}());
}

RemoteCache::~RemoteCache() {
  if (context_) redisFree(context_);
}

std::string RemoteCache::entry_name(std::string_view space, std::string_view key) {
  return fmt::format("{}{}:{}", kPrefix, space, key);
}

std::string RemoteCache::lease_name(std::string_view space, std::string_view key) {
  return fmt::format("{}lease:{}:{}", kPrefix, space, key);
}

int RemoteCache::failures() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failures_;
}

void RemoteCache::fail_locked(const std::string& why, bool drop_connection) {
  ++failures_;
  last_error_ = why;
  warn_once(fmt::format("the remote kernel cache {}: {}", settings_.address.text(), why));
  if (drop_connection) {
    if (context_) redisFree(context_);
    context_ = nullptr;
    unavailable_until_ = std::chrono::steady_clock::now() + settings_.retry_after;
  }
}

bool RemoteCache::connect_locked() {
  if (context_) return true;
  if (std::chrono::steady_clock::now() < unavailable_until_) return false;
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(settings_.timeout).count();
  const timeval tv{static_cast<time_t>(micros / 1000000), static_cast<suseconds_t>(micros % 1000000)};
  context_ = redisConnectWithTimeout(settings_.address.host.c_str(), settings_.address.port, tv);
  if (!context_ || context_->err) {
    fail_locked(context_ ? fmt::format("cannot connect ({})", context_->errstr) : "cannot connect", true);
    return false;
  }
  redisSetTimeout(context_, tv);
  // AUTH and SELECT: a wrong password or database is the store refusing,
  // like a store that is down.
  std::vector<std::vector<std::string>> setup;
  if (!settings_.address.password.empty()) setup.push_back({"AUTH", settings_.address.password});
  if (settings_.address.db != 0) setup.push_back({"SELECT", std::to_string(settings_.address.db)});
  for (const auto& args : setup) {
    std::vector<const char*> argv;
    std::vector<size_t> lengths;
    for (const std::string& a : args) {
      argv.push_back(a.data());
      lengths.push_back(a.size());
    }
    auto* r = static_cast<redisReply*>(redisCommandArgv(context_, int(argv.size()), argv.data(), lengths.data()));
    const bool ok = r && r->type != REDIS_REPLY_ERROR;
    const std::string why = r && r->type == REDIS_REPLY_ERROR ? std::string(r->str, r->len)
                                                                : std::string(context_->errstr);
    if (r) freeReplyObject(r);
    if (!ok) {
      fail_locked(fmt::format("{} refused: {}", args[0], why), true);
      return false;
    }
  }
  return true;
}

std::unique_ptr<RemoteCache::Reply> RemoteCache::command(std::initializer_list<std::string_view> args) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!connect_locked()) return nullptr;
  std::vector<const char*> argv;
  std::vector<size_t> lengths;
  for (std::string_view a : args) {
    argv.push_back(a.data());
    lengths.push_back(a.size());
  }
  auto* r = static_cast<redisReply*>(redisCommandArgv(context_, int(argv.size()), argv.data(), lengths.data()));
  if (!r) {
    // An I/O error or a timeout leaves the connection unusable.
    fail_locked(fmt::format("{} failed ({})", *args.begin(), context_->errstr), true);
    return nullptr;
  }
  auto reply = std::make_unique<Reply>(r);
  if (reply->is(REDIS_REPLY_ERROR)) {
    // The store answered but refused (full under maxmemory, read-only replica):
    // the connection stays.
    fail_locked(fmt::format("{} refused: {}", *args.begin(), reply->text()), false);
    return nullptr;
  }
  return reply;
}

RemoteEntry RemoteCache::get(std::string_view space, std::string_view key) {
  const std::string name = entry_name(space, key);
  std::unique_ptr<Reply> reply = command({"GET", name});
  if (!reply || !reply->is(REDIS_REPLY_STRING)) return {};
  return check_record(reply->text(), key, secret_);
}

RemoteEntry RemoteCache::get_or_lease(std::string_view space, std::string_view key, bool& leased) {
  leased = false;
  const std::string lease = lease_name(space, key);
  const std::string lease_ms = std::to_string(settings_.lease.count());
  // The holder renews its lease while it compiles; a holder that dies stops
  // renewing and the lease ends within settings_.lease. A compile that hangs
  // keeps its lease alive, so waiting has a cap of its own.
  const auto deadline = std::chrono::steady_clock::now() + settings_.max_wait;
  auto pause = std::chrono::milliseconds(10);
  for (;;) {
    RemoteEntry entry = get(space, key);
    if (entry.state != RemoteEntry::State::Missing) return entry;
    std::unique_ptr<Reply> taken = command({"SET", lease, token_, "NX", "PX", lease_ms});
    if (!taken) return {};  // the store is unavailable: compile without it
    if (taken->is(REDIS_REPLY_STATUS)) {
      leased = true;
      return {};
    }
    // Another worker compiles this key: wait for its entry.
    if (std::chrono::steady_clock::now() > deadline) return {};
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(100));
  }
}

void RemoteCache::release(std::string_view space, std::string_view key) {
  command({"EVAL", kReleaseScript, "1", lease_name(space, key), token_});
}

void RemoteCache::renew(std::string_view space, std::string_view key) {
  command({"EVAL", kRenewScript, "1", lease_name(space, key), token_, std::to_string(settings_.lease.count())});
}

RemoteLease::RemoteLease(RemoteCache* cache, std::string_view space, std::string_view key, bool held)
    : cache_(held ? cache : nullptr), space_(space), key_(key) {
  if (!cache_) return;
  renewer_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!done_.wait_for(lock, cache_->settings().lease / 3, [this] { return stopping_; })) {
      lock.unlock();
      cache_->renew(space_, key_);
      lock.lock();
    }
  });
}

RemoteLease::~RemoteLease() {
  if (!cache_) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  done_.notify_one();
  renewer_.join();
  cache_->release(space_, key_);
}

bool RemoteCache::put(std::string_view space, std::string_view key, std::string_view bytes) {
  if (bytes.size() > settings_.max_entry) return false;
  const std::string record = record_of(key, bytes, secret_);
  return command({"SET", entry_name(space, key), record}) != nullptr;
}

RemoteInfo RemoteCache::info() {
  RemoteInfo info;
  info.address = settings_.address.text();
  {
    // A fresh attempt, whatever a failure before said.
    std::lock_guard<std::mutex> lock(mutex_);
    unavailable_until_ = {};
  }
  std::unique_ptr<Reply> server = command({"INFO", "server"});
  if (!server) {
    std::lock_guard<std::mutex> lock(mutex_);
    info.error = last_error_;
    return info;
  }
  info.reachable = true;
  const auto field = [](std::string_view text, std::string_view name) -> std::string {
    const std::string needle = fmt::format("{}:", name);
    const size_t at = text.find(needle);
    if (at == std::string_view::npos) return "";
    const size_t end = text.find_first_of("\r\n", at);
    return std::string(text.substr(at + needle.size(), end - at - needle.size()));
  };
  info.server = "redis " + field(server->text(), "redis_version");
  if (std::unique_ptr<Reply> memory = command({"INFO", "memory"})) {
    info.used_bytes = std::atoll(field(memory->text(), "used_memory").c_str());
    info.max_bytes = std::atoll(field(memory->text(), "maxmemory").c_str());
    info.policy = field(memory->text(), "maxmemory_policy");
  }
  // Entries, not leases: SCAN in steps, so a large store is not blocked.
  const std::string pattern = fmt::format("{}*", kPrefix);
  const std::string lease_prefix = fmt::format("{}lease:", kPrefix);
  std::string cursor = "0";
  do {
    std::unique_ptr<Reply> page = command({"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"});
    if (!page || !page->is(REDIS_REPLY_ARRAY) || page->reply->elements != 2) break;
    cursor = std::string(page->reply->element[0]->str, page->reply->element[0]->len);
    const redisReply* keys = page->reply->element[1];
    for (size_t i = 0; i < keys->elements; ++i) {
      std::string_view k(keys->element[i]->str, keys->element[i]->len);
      if (k.substr(0, lease_prefix.size()) != lease_prefix) ++info.entries;
    }
  } while (cursor != "0");
  return info;
}

std::shared_ptr<RemoteCache> environment_remote_cache() {
  static std::mutex mutex;
  static std::string opened_for;
  static std::shared_ptr<RemoteCache> opened;
  const std::optional<RemoteSettings> settings = remote_settings();
  const std::optional<std::string> secret = cache_secret();
  const std::string identity =
      settings ? fmt::format("{}\n{}\n{}\n{}\n{}", settings->address.text(), settings->address.password,
                             settings->max_entry, settings->timeout.count(), secret.value_or("\x01none"))
               : "";
  std::lock_guard<std::mutex> lock(mutex);
  if (identity != opened_for || (settings && !opened)) {
    opened = settings ? std::make_shared<RemoteCache>(*settings, secret) : nullptr;
    opened_for = identity;
  }
  return opened;
}

}  // namespace stitch::runtime
