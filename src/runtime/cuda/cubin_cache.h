// The on-disk cache of compiled CUDA kernels (docs/kernel-cache.md, Cubins):
// NVRTC's cubin for one translation unit and one architecture, stored under a
// key that hashes everything deciding its bytes, so a second run with the
// same kernels loads the cubin instead of running NVRTC. Needs no GPU: the
// cubin is compiled for a named architecture ("sm_90").
#pragma once

#include <filesystem>
#include <mutex>
#include <string>

namespace stitch::runtime::cuda {

struct CubinCacheStats {
  int hits = 0;                // a verified cubin was read, NVRTC not run
  int misses = 0;              // no entry: compiled and stored
  int recompiled_corrupt = 0;  // an entry failed verification: compiled and replaced
};

// "nvrtc 13.0": the NVRTC library's own version, which the key includes
// (a newer NVRTC may generate different code for the same source).
std::string nvrtc_version();

// Thread-safe; several processes may share one directory.
class CubinCache {
 public:
  // Entries live in <directory>/cuda/<arch>/; the directory is created on the
  // first store. The default is the CPU kernel cache's directory.
  explicit CubinCache(std::filesystem::path directory);
  CubinCache();

  // The cubin of `source` for `arch` ("sm_90"), compiling and storing it on a
  // miss or a corrupt entry. Throws CompileError with NVRTC's log when NVRTC
  // rejects the source.
  std::string load_or_compile(const std::string& source, const std::string& arch);

  // SHA-256 over the source, NVRTC's options and version, and the architecture.
  std::string key(const std::string& source, const std::string& arch) const;
  std::filesystem::path cubin_path(const std::string& key, const std::string& arch) const;
  std::filesystem::path checksum_path(const std::string& key, const std::string& arch) const;

  const std::filesystem::path& directory() const { return directory_; }
  CubinCacheStats stats() const;

 private:
  std::filesystem::path directory_;
  mutable std::mutex mutex_;  // guards stats_
  CubinCacheStats stats_;
};

}  // namespace stitch::runtime::cuda
