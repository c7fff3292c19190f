// The on-disk cache of compiled CUDA kernels (docs/kernel-cache.md, Cubins):
// NVRTC's cubin for one translation unit and one architecture, stored under a
// key that hashes everything deciding its bytes, so a second run with the
// same kernels loads the cubin instead of running NVRTC. Needs no GPU: the
// cubin is compiled for a named architecture ("sm_90").
#pragma once

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>

#include "runtime/common/cache_counts.h"
#include "runtime/common/entry_signature.h"
#include "runtime/common/remote_cache.h"
#include "runtime/cuda/driver.h"

namespace stitch::runtime::cuda {

// What the driver loads: a cubin on a GPU, PTX text on the simulated driver
// (docs/cuda-sim.md), which interprets it. Both come from the same NVRTC run.
enum class ModuleImage { Cubin, Ptx };

inline ModuleImage module_image_for(const DriverApi& api) { return api.loads_ptx ? ModuleImage::Ptx : ModuleImage::Cubin; }

// hits, remote_hits, misses, recompiled_corrupt, rejected_unsigned
// (runtime/common/cache_counts.h), as the CPU kernel cache counts them.
using CubinCacheStats = EntryCounts;

// "nvrtc 13.0": the NVRTC library's own version, which the key includes
// (a newer NVRTC may generate different code for the same source).
std::string nvrtc_version();

// Thread-safe; several processes may share one directory.
class CubinCache {
 public:
  // Entries live in <directory>/cuda/<arch>/; the directory is created on the
  // first store. The default is the CPU kernel cache's directory. The size
  // bound is $STITCH_CACHE_MAX_BYTES (cpu::cache_max_bytes; UserError when bad).
  // `secret` signs and checks the entries as the CPU kernel cache's
  // (runtime/common/entry_signature.h); the default is the environment's,
  // and so is the remote tier shared with other workers (remote_cache.h).
  explicit CubinCache(std::filesystem::path directory, std::optional<std::string> secret = cache_secret(),
                      std::shared_ptr<RemoteCache> remote = environment_remote_cache());
  CubinCache();

  // The cubin of `source` for `arch` ("sm_90"): from the local directory,
  // else from the remote tier (then stored locally), else compiled and stored
  // in both. A compile stores the PTX of the same NVRTC run beside the
  // cubin, under the PTX image's key, so that cuda-sim can run it and a newer
  // GPU's driver can JIT it. Throws CompileError with NVRTC's log when NVRTC
  // rejects the source.
  // With ModuleImage::Ptx, NVRTC's PTX for `arch` instead (NUL-terminated, as
  // cuModuleLoadData reads text). A hit marks the entry as used; a store runs
  // cpu::maintain_cache over the whole directory.
  std::string load_or_compile(const std::string& source, const std::string& arch,
                              ModuleImage image = ModuleImage::Cubin);

  // SHA-256 over the source, NVRTC's options and version, and the architecture;
  // a PTX entry's key also says so (a cubin's key is what it always was).
  std::string key(const std::string& source, const std::string& arch, ModuleImage image = ModuleImage::Cubin) const;
  // <key>.cubin, or <key>.ptx for a PTX entry.
  std::filesystem::path cubin_path(const std::string& key, const std::string& arch,
                                   ModuleImage image = ModuleImage::Cubin) const;
  std::filesystem::path checksum_path(const std::string& key, const std::string& arch) const;
  std::filesystem::path tag_path(const std::string& key, const std::string& arch) const;

  const std::filesystem::path& directory() const { return directory_; }
  CubinCacheStats stats() const;

 private:
  // Writes one image's entry: its bytes, tag and checksum, in that order.
  void store_local(const std::string& key, const std::string& arch, ModuleImage image, const std::string& bytes);
  void count(int EntryCounts::*field);

  std::filesystem::path directory_;
  uint64_t max_bytes_;
  std::optional<std::string> secret_;
  std::shared_ptr<RemoteCache> remote_;
  mutable std::mutex mutex_;  // guards stats_
  CubinCacheStats stats_;
};

}  // namespace stitch::runtime::cuda
