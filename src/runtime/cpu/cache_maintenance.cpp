#include "runtime/cpu/cache_maintenance.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "options/options.h"
#include "stitch/error.h"

namespace stitch::runtime::cpu {
namespace {

namespace fs = std::filesystem;

// Held (flock) by the process that evicts or clears; the kernel releases it
// when that process dies, however it dies.
constexpr const char* kLockName = ".maintenance.lock";
// A writer alive for longer than this is taken for a dead one whose pid
// lives on in an unrelated process (or on another host).
constexpr int64_t kStaleTemporaryNs = int64_t{3600} * 1'000'000'000;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t mtime_ns(const struct stat& st) { return int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec; }

const std::string& host_tag() {
  static const std::string host = [] {
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) != 0) return std::string("unknown");
    std::string tag;
    for (const char* c = name; *c && tag.size() < 32; ++c) {
      tag += std::isalnum(static_cast<unsigned char>(*c)) || *c == '.' ? *c : '_';
    }
    return tag.empty() ? std::string("unknown") : tag;
  }();
  return host;
}

bool is_temporary_name(const std::string& name) {
  return name.find(".tmp-") != std::string::npos || name.rfind(".stamp-", 0) == 0;
}

// A temporary is stale when it is old, or when its name says it was written
// on this host by a process that no longer exists. Names without a tag (older
// versions) fall to the age rule alone.
bool temporary_is_stale(const std::string& name, int64_t modified_ns) {
  if (now_ns() - modified_ns > kStaleTemporaryNs) return true;
  size_t at = name.find(".tmp-");
  at = at != std::string::npos ? at + 5 : name.rfind(".stamp-", 0) == 0 ? 7 : std::string::npos;
  if (at == std::string::npos) return false;
  const size_t sign = name.find('@', at);
  const size_t dash = name.rfind('-');
  if (sign == std::string::npos || dash == std::string::npos || dash < sign) return false;
  long pid = 0;
  const auto [end, ec] = std::from_chars(name.data() + at, name.data() + sign, pid);
  if (ec != std::errc() || end != name.data() + sign || pid <= 0) return false;
  if (name.compare(sign + 1, dash - sign - 1, host_tag()) != 0) return false;
  return ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

struct ScannedFile {
  fs::path path;
  uint64_t bytes = 0;
};

struct Entry {
  std::string kind;
  std::vector<ScannedFile> files;
  uint64_t bytes = 0;
  int64_t last_used = 0;  // the newest modification time of its files
};

struct Temporary {
  fs::path path;
  uint64_t bytes = 0;
  bool stale = false;
};

struct Scan {
  std::vector<Entry> entries;
  std::vector<Temporary> temporaries;
  uint64_t total_bytes = 0;
};

// A scratch directory's bytes and newest time: its own and its files'.
void measure_temporary_directory(const fs::path& dir, uint64_t& bytes, int64_t& newest) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0) continue;
    bytes += static_cast<uint64_t>(st.st_size);
    newest = std::max(newest, mtime_ns(st));
  }
}

// Files vanish under a scan (other processes evict, rename and clean up);
// each one that does is skipped, never an error.
void walk(const fs::path& dir, const std::string& kind, Scan& scan, std::map<fs::path, Entry>& groups) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path p = it->path();
    const std::string name = p.filename().string();
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) continue;
    if (is_temporary_name(name)) {
      Temporary t{p, static_cast<uint64_t>(st.st_size), false};
      int64_t newest = mtime_ns(st);
      if (S_ISDIR(st.st_mode)) measure_temporary_directory(p, t.bytes, newest);
      t.stale = temporary_is_stale(name, newest);
      scan.total_bytes += t.bytes;
      scan.temporaries.push_back(std::move(t));
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      const bool top = kind.empty();
      walk(p, top ? (name == "cpu" || name == "cuda" || name == "tuning" ? name : "other") : kind, scan, groups);
      continue;
    }
    if (!S_ISREG(st.st_mode) || name == kLockName) continue;
    std::string file_kind = kind.empty() ? "other" : kind;
    if (file_kind == "cpu" && dir.filename() == "compilers") file_kind = "stamps";
    // An entry is its files of one key: <key>.so and <key>.sum, <key>.cubin
    // (or .ptx) and <key>.sha256, each with <key>.tag when signed, or one
    // tuning file.
    Entry& entry = groups[dir / name.substr(0, name.find('.'))];
    entry.kind = file_kind;
    entry.files.push_back({p, static_cast<uint64_t>(st.st_size)});
    entry.bytes += static_cast<uint64_t>(st.st_size);
    entry.last_used = std::max(entry.last_used, mtime_ns(st));
    scan.total_bytes += static_cast<uint64_t>(st.st_size);
  }
}

Scan scan_directory(const fs::path& directory) {
  Scan scan;
  std::map<fs::path, Entry> groups;
  walk(directory, "", scan, groups);
  for (auto& [key, entry] : groups) scan.entries.push_back(std::move(entry));
  return scan;
}

bool is_checksum(const fs::path& p) {
  return p.extension() == ".sum" || p.extension() == ".sha256" || p.extension() == ".tag";
}

// The checksum first: from then on every reader sees a miss (an object
// without its checksum), and the object can go. A file already gone is fine.
void remove_entry(const Entry& entry) {
  for (bool checksums : {true, false}) {
    for (const ScannedFile& f : entry.files) {
      if (is_checksum(f.path) == checksums) ::unlink(f.path.c_str());
    }
  }
}

int remove_temporaries(Scan& scan) {
  int removed = 0;
  for (const Temporary& t : scan.temporaries) {
    if (!t.stale) continue;
    std::error_code ec;
    fs::remove_all(t.path, ec);
    removed += !ec;
    scan.total_bytes -= std::min(scan.total_bytes, t.bytes);
  }
  return removed;
}

// An flock on <dir>/.maintenance.lock for the object's lifetime.
class MaintenanceLock {
 public:
  MaintenanceLock(const fs::path& directory, bool wait) {
    fd_ = ::open((directory / kLockName).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd_ < 0) {
      error_ = std::strerror(errno);
      return;
    }
    while (::flock(fd_, LOCK_EX | (wait ? 0 : LOCK_NB)) != 0) {
      if (errno == EINTR) continue;
      error_ = std::strerror(errno);
      ::close(fd_);
      fd_ = -1;
      return;
    }
  }
  ~MaintenanceLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  MaintenanceLock(const MaintenanceLock&) = delete;
  MaintenanceLock& operator=(const MaintenanceLock&) = delete;
  bool held() const { return fd_ >= 0; }
  const std::string& error() const { return error_; }

 private:
  int fd_ = -1;
  std::string error_;
};

}  // namespace

uint64_t parse_cache_max_bytes(std::string_view text, std::string_view variable) {
  return parse_byte_count(text, variable);
}

uint64_t cache_max_bytes() {
  return environment_options().cache_max_bytes.value_or(kDefaultCacheMaxBytes);
}

std::string temporary_tag() { return fmt::format("{}@{}", static_cast<long>(::getpid()), host_tag()); }

void touch_cache_file(const fs::path& path) { ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0); }

CacheSummary summarize_cache(const fs::path& directory) {
  CacheSummary summary;
  const Scan scan = scan_directory(directory);
  for (const Entry& e : scan.entries) {
    CacheKindSummary& kind = summary.kinds[e.kind];
    ++kind.entries;
    kind.bytes += e.bytes;
  }
  for (const Temporary& t : scan.temporaries) {
    ++summary.temporaries;
    summary.stale_temporaries += t.stale;
    summary.temporary_bytes += t.bytes;
  }
  summary.total_bytes = scan.total_bytes;
  return summary;
}

int remove_stale_temporaries(const fs::path& directory) {
  Scan scan = scan_directory(directory);
  return remove_temporaries(scan);
}

MaintenanceResult maintain_cache(const fs::path& directory, uint64_t max_bytes, const std::vector<fs::path>& keep) {
  MaintenanceResult result;
  const MaintenanceLock lock(directory, false);
  if (!lock.held()) {
    result.skipped = true;
    return result;
  }
  Scan scan = scan_directory(directory);
  result.removed_temporaries = remove_temporaries(scan);
  if (max_bytes != 0 && scan.total_bytes > max_bytes) {
    std::sort(scan.entries.begin(), scan.entries.end(),
              [](const Entry& a, const Entry& b) { return a.last_used < b.last_used; });
    for (const Entry& entry : scan.entries) {
      if (scan.total_bytes <= max_bytes) break;
      // Stamps are a few hundred bytes and spare a `--version` process per run.
      if (entry.kind == "stamps") continue;
      const bool kept = std::any_of(entry.files.begin(), entry.files.end(), [&](const ScannedFile& f) {
        return std::find(keep.begin(), keep.end(), f.path) != keep.end();
      });
      if (kept) continue;
      remove_entry(entry);
      ++result.evicted_entries;
      result.evicted_bytes += entry.bytes;
      scan.total_bytes -= entry.bytes;
    }
  }
  result.total_bytes = scan.total_bytes;
  return result;
}

ClearResult clear_cache(const fs::path& directory) {
  ClearResult result;
  std::error_code ec;
  if (!fs::exists(directory, ec)) return result;
  const MaintenanceLock lock(directory, true);
  if (!lock.held()) {
    throw UserError(fmt::format("cache clear: cannot lock {}: {}", (directory / kLockName).string(), lock.error()));
  }
  Scan scan = scan_directory(directory);
  for (const Entry& entry : scan.entries) remove_entry(entry);
  result.removed_entries = static_cast<int>(scan.entries.size());
  result.removed_temporaries = remove_temporaries(scan);
  result.live_temporaries = static_cast<int>(scan.temporaries.size()) - result.removed_temporaries;
  return result;
}

}  // namespace stitch::runtime::cpu
