#include "cache_command.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "cli.h"
#include "options/options.h"
#include "runtime/common/remote_cache.h"
#include "runtime/cpu/cache_maintenance.h"
#include "runtime/cpu/kernel_cache.h"
#include "stitch/error.h"

namespace stitch::cli {
namespace {

namespace fs = std::filesystem;
using runtime::cpu::CacheSummary;

std::string human_bytes(uint64_t bytes) {
  constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  for (; value >= 1024 && unit < 4; ++unit) value /= 1024;
  return unit == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", value, kUnits[unit]);
}

// The directory the command works on; UserError when it exists but is not a
// directory (a file in its place is bad input, not an empty cache).
fs::path checked_directory(const std::string& requested) {
  const fs::path dir = requested.empty() ? runtime::cpu::default_cache_directory() : fs::path(requested);
  std::error_code ec;
  const fs::file_status status = fs::status(dir, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {
    throw UserError(fmt::format("cache: cannot read {}: {}", dir.string(), ec.message()));
  }
  if (fs::exists(status) && !fs::is_directory(status)) {
    throw UserError(fmt::format("cache: {} is not a directory", dir.string()));
  }
  return dir;
}

// The remote tier's state: where, reachable or why not, the server, its
// entries and memory.
std::string remote_line() {
  const std::shared_ptr<runtime::RemoteCache> remote = runtime::environment_remote_cache();
  if (!remote) return "remote      none (STITCH_REMOTE_CACHE is not set)\n";
  const runtime::RemoteInfo i = remote->info();
  if (!i.reachable) return fmt::format("remote      {}: unreachable ({})\n", i.address, i.error);
  return fmt::format("remote      {}: reachable, {}, {} entries, {} used of {} (maxmemory-policy {}), entries over {} stay local\n",
                     i.address, i.server, i.entries, human_bytes(i.used_bytes),
                     i.max_bytes ? human_bytes(i.max_bytes) : std::string("no bound"), i.policy,
                     human_bytes(remote->settings().max_entry));
}

int info(const fs::path& dir) {
  const uint64_t bound = runtime::cpu::cache_max_bytes();
  const bool from_env = environment_options().cache_max_bytes.has_value();
  std::error_code ec;
  const bool exists = fs::exists(dir, ec);
  std::cout << fmt::format("directory   {}{}\n", dir.string(), exists ? "" : " (not created yet)");
  std::cout << fmt::format("bound       {}\n",
                           bound == 0 ? std::string("none (STITCH_CACHE_MAX_BYTES=0)")
                                      : fmt::format("{} bytes ({}, {})", bound, human_bytes(bound),
                                                    from_env ? "STITCH_CACHE_MAX_BYTES" : "default"));
  const EnvironmentOptions env = environment_options();
  std::cout << fmt::format("signing     {}\n",
                           !env.cache_secret ? "off (no STITCH_CACHE_KEY or STITCH_CACHE_KEY_FILE: checksums only)"
                           : env.cache_key_file.empty() ? "on (STITCH_CACHE_KEY)"
                                                        : "on (STITCH_CACHE_KEY_FILE " + env.cache_key_file + ")");
  std::cout << remote_line();
  const CacheSummary summary = runtime::cpu::summarize_cache(dir);
  for (const char* kind : {"cpu", "cuda", "tuning", "stamps", "other"}) {
    auto it = summary.kinds.find(kind);
    const runtime::cpu::CacheKindSummary k = it == summary.kinds.end() ? runtime::cpu::CacheKindSummary{} : it->second;
    if (k.entries == 0 && std::string_view(kind) == "other") continue;
    std::cout << fmt::format("{:<11} {} entries, {} bytes\n", kind, k.entries, k.bytes);
  }
  std::cout << fmt::format("temporaries {} ({} stale), {} bytes\n", summary.temporaries, summary.stale_temporaries,
                           summary.temporary_bytes);
  std::cout << fmt::format("total       {} bytes ({})\n", summary.total_bytes, human_bytes(summary.total_bytes));
  return kExitOk;
}

int clear(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    std::cout << fmt::format("{} does not exist: nothing to clear\n", dir.string());
    return kExitOk;
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    throw UserError(fmt::format("cache clear: cannot write {}: {}", dir.string(), std::strerror(errno)));
  }
  const runtime::cpu::ClearResult r = runtime::cpu::clear_cache(dir);
  std::cout << fmt::format("removed {} entries and {} temporaries from {}", r.removed_entries, r.removed_temporaries,
                           dir.string());
  if (r.live_temporaries > 0) {
    std::cout << fmt::format("; left {} temporaries of running processes", r.live_temporaries);
  }
  std::cout << "\n";
  return kExitOk;
}

}  // namespace

CacheCommand::CacheCommand(CLI::App& app) {
  group_ = app.add_subcommand("cache", "Inspect or empty the kernel cache (docs/kernel-cache.md)");
  group_->require_subcommand(1);
  info_ = group_->add_subcommand("info", "Print the cache's directory, entries and bytes per kind, bound and temporaries");
  clear_ = group_->add_subcommand("clear", "Remove every entry (safe while other processes use the cache)");
  for (CLI::App* command : {info_, clear_}) {
    command->add_option("--dir", directory_, "the cache directory (default: $STITCH_CACHE_DIR, ...)");
  }
}

bool CacheCommand::selected() const { return group_->parsed(); }

int CacheCommand::run() const {
  // A bad bound is reported by both, as by every command that opens the cache.
  runtime::cpu::cache_max_bytes();
  const fs::path dir = checked_directory(directory_);
  if (info_->parsed()) return info(dir);
  if (clear_->parsed()) return clear(dir);
  return kExitBadInput;
}

}  // namespace stitch::cli
