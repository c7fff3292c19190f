#include "api/kernel_caches.h"

#include <map>
#include <mutex>

namespace stitch::api {

std::filesystem::path resolve_cache_directory(const std::string& requested) {
  const std::filesystem::path dir = requested.empty() ? runtime::cpu::default_cache_directory()
                                                      : std::filesystem::path(requested);
  std::filesystem::path resolved = std::filesystem::absolute(dir).lexically_normal();
  if (!resolved.has_filename() && resolved.has_parent_path()) resolved = resolved.parent_path();  // "dir/" is "dir"
  return resolved;
}

runtime::cpu::KernelCache& kernel_cache(const std::filesystem::path& directory) {
  static std::mutex mutex;
  // Map nodes never move, so a cache (which owns a mutex) lives in place.
  static std::map<std::filesystem::path, runtime::cpu::KernelCache> caches;
  std::lock_guard<std::mutex> lock(mutex);
  return caches.try_emplace(directory, directory).first->second;
}

}  // namespace stitch::api
