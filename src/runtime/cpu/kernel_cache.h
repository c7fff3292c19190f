// The on-disk level of the kernel cache (DESIGN.md, Runtime; docs/kernel-cache.md):
// a compiled shared object is stored under a key that hashes everything that
// decides its bytes, so a second run with the same kernels skips the system
// compiler. The in-memory level (by graph structural hash) sits above this one.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "runtime/common/cache_counts.h"
#include "runtime/common/entry_signature.h"
#include "runtime/common/remote_cache.h"
#include "runtime/cpu/cache_maintenance.h"
#include "runtime/cpu/cpu_compiler.h"

namespace stitch::runtime::cpu {

// SHA-256 as hex (runtime/common/entry_signature.h), which the keys and checksums use.
using runtime::sha256_hex;

// A cache file's bytes; a missing or unreadable file reads as empty, which
// every caller treats as "no valid entry".
std::string read_cache_file(const std::filesystem::path& path);

// Writes `bytes` to a temporary file beside `path` (named for this process,
// temporary_tag), then renames it over `path`: a concurrent reader sees the
// old or the new file, never a mix.
// Creates the directory. Throws CompileError when the disk refuses.
void write_cache_file_atomically(const std::filesystem::path& path, const std::string& bytes);

// $STITCH_CACHE_DIR, else $XDG_CACHE_HOME/stitch, else $HOME/.cache/stitch.
// Throws UserError when none of the three is set.
std::filesystem::path default_cache_directory();

// `compiler --version`, run once per compiler per process; throws CompileError
// when the compiler cannot be run.
std::string compiler_version(const std::string& compiler);

// What the generated code may be specialised for: the machine name plus the
// CPU's model name and feature flags from /proc/cpuinfo, since -march=native
// resolves to exactly these features.
std::string target_description();

struct CompiledGraph;  // executable.h

// The entries' counts (runtime/common/cache_counts.h) and the in-memory level's.
struct CacheStats : EntryCounts {
  int memory_hits = 0;  // a structurally equal graph was compiled before: no codegen, no load
};

// Not copyable (it owns a mutex); load_or_compile may be called from several
// threads, and several processes may share one directory.
class KernelCache {
 public:
  // The directory is created on the first store, not here, so constructing a
  // cache never touches the disk. `max_bytes` bounds the whole directory
  // (cache_maintenance.h; 0: no bound); the default reads
  // $STITCH_CACHE_MAX_BYTES and throws UserError when it is not a byte count.
  // `secret` signs the entries written and is required of the entries loaded
  // (runtime/common/entry_signature.h); the default is the environment's.
  // `remote` is the tier shared with other workers (remote_cache.h; none:
  // local only); the default is the environment's (STITCH_REMOTE_CACHE).
  explicit KernelCache(std::filesystem::path directory = default_cache_directory(),
                       uint64_t max_bytes = cache_max_bytes(), std::optional<std::string> secret = cache_secret(),
                       std::shared_ptr<RemoteCache> remote = environment_remote_cache());

  // The cached shared object for `source` compiled with `options`: from the
  // local directory, else from the remote tier (then stored locally), else
  // compiled and stored in both. A hit marks the entry as used
  // (eviction's recency); a store runs maintain_cache over the directory.
  // Throws ToolchainMissing (a UserError) when the compiler's output shows a
  // missing compiler, OpenMP or SLEEF, else CompileError as
  // compile_shared_object does.
  CpuModule load_or_compile(const std::string& source, const CompilerOptions& options = {});

  // The entry key: SHA-256 over source, command line, the toolchain's identity
  // (its binary's bytes, or a wrapper script's `--version`) and target.
  std::string key(const std::string& source, const CompilerOptions& options) const;
  std::filesystem::path shared_object_path(const std::string& key) const;
  std::filesystem::path checksum_path(const std::string& key) const;
  std::filesystem::path tag_path(const std::string& key) const;  // <key>.tag, under a secret

  // The in-memory level (DESIGN.md, Runtime): compiled graphs by their
  // structural key, for the lifetime of this cache object. find counts a
  // memory hit when it finds one.
  std::shared_ptr<const CompiledGraph> find_compiled_graph(const std::string& key);
  void store_compiled_graph(const std::string& key, std::shared_ptr<const CompiledGraph> compiled);

  const std::filesystem::path& directory() const { return directory_; }
  uint64_t max_bytes() const { return max_bytes_; }
  RemoteCache* remote() const { return remote_.get(); }
  CacheStats stats() const;

 private:
  // load_or_compile, before a CompileError is sorted into a missing toolchain.
  CpuModule load_or_compile_entry(const std::string& source, const CompilerOptions& options);
  enum class EntryState { Valid, Invalid, Unsigned };
  // Valid: the checksum matches the object (and, under a secret, the tag
  // verifies); Unsigned: the checksum matches but the tag does not.
  EntryState entry_state(const std::string& key) const;
  // The toolchain's identity: the SHA-256 of the compiler binary's bytes (no
  // process), or for a script (a wrapper) "version" and its `--version` text;
  // remembered in <dir>/cpu/compilers/ against the binary's path, size and
  // modification time, so that a new process neither hashes nor runs it.
  std::string stamped_toolchain_identity(const std::string& compiler) const;
  // Has `produce` write the object into a scratch directory (the compiler,
  // or a remote entry's bytes), loads it from there, then renames it into
  // place with its checksum and tag: the returned module stays valid whatever
  // other processes evict or replace afterwards. `bytes` gets the object's bytes.
  CpuModule install_entry(const std::string& key, const std::function<void(const std::filesystem::path&)>& produce,
                          std::string& bytes);
  // Counts one outcome under the stats' mutex.
  void count(int EntryCounts::*field);

  std::filesystem::path directory_;
  uint64_t max_bytes_;
  std::optional<std::string> secret_;
  std::shared_ptr<RemoteCache> remote_;
  mutable std::mutex stats_mutex_;  // guards stats_ and compiled_graphs_
  CacheStats stats_;
  std::map<std::string, std::shared_ptr<const CompiledGraph>> compiled_graphs_;
};

}  // namespace stitch::runtime::cpu
