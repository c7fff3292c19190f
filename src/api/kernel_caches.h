// The library's kernel caches (docs/library.md): one per cache directory for
// the whole process, so that every compile of a structurally equal graph
// after the first is a hit of the cache's in-memory level, whichever
// Executable asked.
#pragma once

#include <filesystem>
#include <string>

#include "runtime/cpu/kernel_cache.h"

namespace stitch::api {

// `requested`, or the default directory (runtime::cpu::default_cache_directory)
// when empty; absolute, so that two spellings of one directory share a cache.
// UserError when empty and no default can be found.
std::filesystem::path resolve_cache_directory(const std::string& requested);

// The process's cache for `directory` (resolved), made on first use and kept
// until the process ends.
runtime::cpu::KernelCache& kernel_cache(const std::filesystem::path& directory);

}  // namespace stitch::api
