// The kernel cache directory as a whole (docs/kernel-cache.md, Size bound and
// eviction): its size bound, least-recently-used eviction over every kind of
// entry (CPU shared objects, CUDA cubins and PTX, tuning results), and the
// removal of temporaries that dead writers left behind. Every reader treats a
// vanished or half-present entry as a miss, which is what makes deleting an
// entry while other processes use the directory safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace stitch::runtime::cpu {

// 2 GiB: thousands of compiled graphs (an entry is tens to hundreds of KiB),
// yet small beside any disk a compiler runs on (docs/kernel-cache.md).
inline constexpr uint64_t kDefaultCacheMaxBytes = uint64_t{2} << 30;

// A byte count: decimal digits with an optional K, M, G or T suffix (powers of
// 1024, "KiB" etc. also accepted). 0 means no bound. UserError naming
// `variable` for anything else or for a value over 2^63.
uint64_t parse_cache_max_bytes(std::string_view text, std::string_view variable = "STITCH_CACHE_MAX_BYTES");

// $STITCH_CACHE_MAX_BYTES parsed as above; unset or empty: the default.
uint64_t cache_max_bytes();

// "<pid>@<host>": what every temporary name carries after ".tmp-" or
// ".stamp-", so that a cleanup pass can tell a dead writer's file from a live one's.
std::string temporary_tag();

// Marks a cache file as used now (its modification time), the recency that
// eviction orders by. One system call; failures (a vanished or read-only
// file) are ignored.
void touch_cache_file(const std::filesystem::path& path);

struct CacheKindSummary {
  int entries = 0;
  uint64_t bytes = 0;
};

struct CacheSummary {
  // "cpu", "cuda", "tuning", "stamps" (compiler version stamps), "other".
  std::map<std::string, CacheKindSummary> kinds;
  int temporaries = 0;        // files or scratch directories of writers
  int stale_temporaries = 0;  // of those, ones a cleanup pass would remove
  uint64_t temporary_bytes = 0;
  uint64_t total_bytes = 0;  // everything above
};

// A read-only scan of `directory` (nothing when it does not exist).
CacheSummary summarize_cache(const std::filesystem::path& directory);

// Removes the temporaries whose writer is gone (same host, kill(pid, 0)
// fails with ESRCH) or that are older than an hour. Returns how many.
int remove_stale_temporaries(const std::filesystem::path& directory);

struct MaintenanceResult {
  bool skipped = false;  // another process was maintaining the directory
  int removed_temporaries = 0;
  int evicted_entries = 0;
  uint64_t evicted_bytes = 0;
  uint64_t total_bytes = 0;  // after the pass
};

// The pass after a store: stale temporaries removed, then whole entries, the
// least recently used first, until the directory holds at most `max_bytes`
// (0: no bound). An entry holding a path in `keep` (what the caller just
// stored) is never evicted. One process at a time: when another holds the
// directory's maintenance lock the pass is skipped, since that one does the work.
MaintenanceResult maintain_cache(const std::filesystem::path& directory, uint64_t max_bytes,
                                 const std::vector<std::filesystem::path>& keep = {});

struct ClearResult {
  int removed_entries = 0;
  int removed_temporaries = 0;
  int live_temporaries = 0;  // of running writers: left, they become entries
};

// Removes every entry, stamp and stale temporary; directories stay, so that a
// concurrent writer never finds its parent directory gone. Waits for a
// running maintenance pass.
ClearResult clear_cache(const std::filesystem::path& directory);

}  // namespace stitch::runtime::cpu
