#include "runtime/cpu/kernel_cache.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "options/options.h"
#include "runtime/cpu/toolchain_check.h"
#include "stitch/error.h"

namespace stitch::runtime::cpu {
namespace {

// Whole file as bytes; a missing file reads as empty, which every caller
// treats as "not a valid entry".
std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  out.close();
  if (!out) throw CompileError("kernel cache: cannot write " + path.string(), "");
}

// Each field is length-prefixed so that no two different inputs concatenate to
// the same key material (a source ending in "x" plus a command starting with "y").
void append_field(std::string& material, std::string_view name, std::string_view value) {
  material += fmt::format("{} {}\n", name, value.size());
  material += value;
  material += '\n';
}

std::string first_cpuinfo_line(const std::string& cpuinfo, std::string_view field) {
  std::istringstream lines(cpuinfo);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(field, 0) == 0) return line;
  }
  return "";
}

// Renames `from` over `to`, replacing any existing file atomically: a reader
// sees either the old complete file or the new complete file, never a mix.
void rename_into_place(const std::filesystem::path& from, const std::filesystem::path& to) {
  if (std::rename(from.c_str(), to.c_str()) != 0) {
    throw CompileError(
        fmt::format("kernel cache: cannot rename {} to {}: {}", from.string(), to.string(), std::strerror(errno)), "");
  }
}

}  // namespace

std::string read_cache_file(const std::filesystem::path& path) { return read_bytes(path); }

void write_cache_file_atomically(const std::filesystem::path& path, const std::string& bytes) {
  std::error_code error;
  std::filesystem::create_directories(path.parent_path(), error);
  if (error) {
    throw CompileError(fmt::format("kernel cache: cannot create {}: {}", path.parent_path().string(), error.message()), "");
  }
  std::string scratch = path.string() + ".tmp-" + temporary_tag() + "-XXXXXX";
  const int fd = mkstemp(scratch.data());
  if (fd < 0) {
    throw CompileError(fmt::format("kernel cache: cannot create a temporary file beside {}: {}", path.string(),
                                   std::strerror(errno)),
                       "");
  }
  close(fd);
  try {
    write_bytes(scratch, bytes);
    rename_into_place(scratch, path);
  } catch (...) {
    std::filesystem::remove(scratch, error);
    throw;
  }
}

std::filesystem::path default_cache_directory() {
  if (std::string dir = environment_options().cache_dir; !dir.empty()) return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::filesystem::path(xdg) / "stitch";
  if (const char* home = std::getenv("HOME"); home && *home) {
    return std::filesystem::path(home) / ".cache" / "stitch";
  }
  throw UserError("no kernel cache directory: set STITCH_CACHE_DIR, XDG_CACHE_HOME or HOME");
}

std::string compiler_version(const std::string& compiler) {
  static std::mutex mutex;
  static std::map<std::string, std::string> versions;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = versions.find(compiler); it != versions.end()) return it->second;

  const std::string command = compiler + " --version 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) throw CompileError(fmt::format("cannot run {}: {}", command, std::strerror(errno)), "");
  std::string output;
  std::array<char, 4096> buffer;
  for (size_t n; (n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0;) output.append(buffer.data(), n);
  const int status = pclose(pipe);
  if (status != 0) {
    throw CompileError(fmt::format("{} failed (status {}): {}", command, status, output), output);
  }
  versions.emplace(compiler, output);
  return output;
}

std::string target_description() {
  static const std::string description = [] {
    utsname machine{};
    uname(&machine);
    const std::string cpuinfo = read_bytes("/proc/cpuinfo");
    // x86 names the CPU in "model name" and its ISA in "flags"; AArch64 uses
    // "CPU part" and "Features".
    std::string text = std::string("machine ") + machine.machine + "\n";
    for (std::string_view field : {"model name", "flags", "CPU part", "Features"}) {
      text += first_cpuinfo_line(cpuinfo, field) + "\n";
    }
    return text;
  }();
  return description;
}

KernelCache::KernelCache(std::filesystem::path directory, uint64_t max_bytes, std::optional<std::string> secret,
                         std::shared_ptr<RemoteCache> remote)
    : directory_(std::move(directory)), max_bytes_(max_bytes), secret_(std::move(secret)), remote_(std::move(remote)) {}

namespace {

// The file `compiler` names: itself when it holds a '/', else the first
// executable of that name on $PATH; symlinks resolved (Debian's alternatives
// chain c++ -> g++ -> g++-12). Empty when not found.
std::filesystem::path resolve_compiler(const std::string& compiler) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (compiler.find('/') != std::string::npos) {
    fs::path p = fs::canonical(compiler, ec);
    return ec ? fs::path() : p;
  }
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (dir.empty()) continue;
    fs::path candidate = fs::path(dir) / compiler;
    if (::access(candidate.c_str(), X_OK) == 0) {
      fs::path p = fs::canonical(candidate, ec);
      if (!ec) return p;
    }
  }
  return {};
}

// The toolchain's identity without a process where that is sound: a compiler
// binary's own bytes (GCC's and Clang's drivers embed their version, so an
// upgrade changes them, and every machine with the same package has the same
// bytes); a script (a wrapper such as ccache's, "#!") hides the compiler it
// runs, so it is asked for `--version`.
std::string toolchain_identity(const std::string& compiler, const std::filesystem::path& binary) {
  std::string bytes = binary.empty() ? std::string() : read_bytes(binary);
  if (bytes.empty() || bytes.rfind("#!", 0) == 0) return "version\n" + compiler_version(compiler);
  return "binary sha256 " + sha256_hex(bytes) + "\n";
}

}  // namespace

std::string KernelCache::stamped_toolchain_identity(const std::string& compiler) const {
  namespace fs = std::filesystem;
  const fs::path binary = resolve_compiler(compiler);
  std::error_code ec;
  const auto size = binary.empty() ? 0 : fs::file_size(binary, ec);
  if (binary.empty() || ec) return toolchain_identity(compiler, {});
  const auto mtime = fs::last_write_time(binary, ec).time_since_epoch().count();
  if (ec) return toolchain_identity(compiler, {});
  // The stamp names the binary, its size and modification time; a reinstalled
  // or upgraded compiler changes them and the stamp is rewritten.
  const std::string header = fmt::format("{}\n{} {}\n", binary.string(), size, mtime);
  const fs::path stamp = directory_ / "cpu" / "compilers" / (sha256_hex(binary.string()) + ".txt");
  if (fs::exists(stamp, ec)) {
    const std::string text = read_bytes(stamp);
    if (text.size() > header.size() && text.compare(0, header.size(), header) == 0) {
      return text.substr(header.size());
    }
  }
  const std::string toolchain = toolchain_identity(compiler, binary);
  fs::create_directories(stamp.parent_path(), ec);
  if (!ec) {
    // Same protocol as the entries: a complete temporary file renamed into place.
    static std::atomic<int> counter{0};
    const fs::path tmp = stamp.parent_path() / fmt::format(".stamp-{}-{}", temporary_tag(), counter++);
    try {
      write_bytes(tmp, header + toolchain);
      rename_into_place(tmp, stamp);
    } catch (const std::exception&) {
      fs::remove(tmp, ec);  // a cache that cannot store a stamp still works, only slower
    }
  }
  return toolchain;
}

std::string KernelCache::key(const std::string& source, const CompilerOptions& options) const {
  std::string material = "stitch-kernel-cache-v2\n";
  append_field(material, "source", source);
  // Fixed placeholder paths: the real ones are temporary and differ every compile.
  append_field(material, "command", compile_command(options, "kernel.cpp", "kernel.so"));
  append_field(material, "toolchain", stamped_toolchain_identity(options.compiler));
  append_field(material, "target", target_description());
  return sha256_hex(material);
}

std::filesystem::path KernelCache::shared_object_path(const std::string& key) const {
  return directory_ / "cpu" / (key + ".so");
}

std::filesystem::path KernelCache::checksum_path(const std::string& key) const {
  return directory_ / "cpu" / (key + ".sum");
}

std::filesystem::path KernelCache::tag_path(const std::string& key) const { return directory_ / "cpu" / (key + ".tag"); }

CacheStats KernelCache::stats() const {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  return stats_;
}

std::shared_ptr<const CompiledGraph> KernelCache::find_compiled_graph(const std::string& key) {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  auto it = compiled_graphs_.find(key);
  if (it == compiled_graphs_.end()) return nullptr;
  ++stats_.memory_hits;
  return it->second;
}

void KernelCache::store_compiled_graph(const std::string& key, std::shared_ptr<const CompiledGraph> compiled) {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  compiled_graphs_[key] = std::move(compiled);
}

KernelCache::EntryState KernelCache::entry_state(const std::string& key) const {
  const std::string checksum = read_bytes(checksum_path(key));
  if (checksum.empty()) return EntryState::Invalid;
  const std::string shared_object = read_bytes(shared_object_path(key));
  if (shared_object.empty() || sha256_hex(shared_object) != checksum) return EntryState::Invalid;
  if (secret_ && !entry_tag_verifies(*secret_, key, shared_object, read_bytes(tag_path(key)))) {
    return EntryState::Unsigned;
  }
  return EntryState::Valid;
}

CpuModule KernelCache::install_entry(const std::string& key,
                                     const std::function<void(const std::filesystem::path&)>& produce,
                                     std::string& bytes) {
  const std::filesystem::path entries = directory_ / "cpu";
  std::error_code error;
  std::filesystem::create_directories(entries, error);
  if (error) throw CompileError(fmt::format("kernel cache: cannot create {}: {}", entries.string(), error.message()), "");

  // A private directory next to the entries: same file system, so rename() is
  // atomic, and no other writer can touch the half-written files.
  std::string scratch = (entries / (".tmp-" + temporary_tag() + "-XXXXXX")).string();
  if (!mkdtemp(scratch.data())) {
    throw CompileError(fmt::format("kernel cache: cannot create a temporary directory in {}: {}", entries.string(),
                                   std::strerror(errno)),
                       "");
  }
  const std::filesystem::path scratch_dir = scratch;
  std::optional<CpuModule> module;
  try {
    // Named for the key: dlopen takes an object already loaded under the same
    // name for this one, which is then the same key, so the same object.
    const std::filesystem::path object = scratch_dir / (key + ".so");
    produce(object);
    bytes = read_bytes(object);
    const std::filesystem::path checksum = scratch_dir / "kernel.sum";
    write_bytes(checksum, sha256_hex(bytes));
    const std::filesystem::path tag = scratch_dir / "kernel.tag";
    if (secret_) write_bytes(tag, entry_tag(*secret_, key, bytes));
    // Loaded before it is published: once renamed, another process may evict
    // it at any moment, and the mapping outlives the unlink.
    module = CpuModule::load(object);
    // The object first, its tag next, its checksum last: a crash in between
    // leaves an entry without (or with a stale) checksum or tag, which the
    // next load recompiles.
    rename_into_place(object, shared_object_path(key));
    if (secret_) rename_into_place(tag, tag_path(key));
    rename_into_place(checksum, checksum_path(key));
  } catch (...) {
    // The compiler's diagnostics travel in the CompileError; the scratch
    // files would only accumulate in the cache.
    std::filesystem::remove_all(scratch_dir, error);
    throw;
  }
  std::filesystem::remove_all(scratch_dir, error);
  maintain_cache(directory_, max_bytes_, {shared_object_path(key), checksum_path(key), tag_path(key)});
  return std::move(*module);
}

void KernelCache::count(int EntryCounts::*field) {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  ++(stats_.*field);
}

CpuModule KernelCache::load_or_compile(const std::string& source, const CompilerOptions& options) {
  try {
    return load_or_compile_entry(source, options);
  } catch (const CompileError& e) {
    throw_if_toolchain_missing(options.compiler, e);
    throw;
  }
}

CpuModule KernelCache::load_or_compile_entry(const std::string& source, const CompilerOptions& options) {
  const std::string entry_key = key(source, options);
  const EntryState state = entry_state(entry_key);
  if (state == EntryState::Valid) {
    touch_cache_file(checksum_path(entry_key));
    // Another process may evict the entry between the check and dlopen: then
    // it is a miss like any other.
    if (std::optional<CpuModule> module = CpuModule::try_load(shared_object_path(entry_key))) {
      count(&EntryCounts::hits);
      return std::move(*module);
    }
  }
  std::error_code ignored;
  bool bad_entry = std::filesystem::exists(shared_object_path(entry_key), ignored) ||
                   std::filesystem::exists(checksum_path(entry_key), ignored);
  bool unverified = state == EntryState::Unsigned;
  if (unverified) warn_unverified_entry_once(shared_object_path(entry_key).string());

  // The remote tier: its entry, or the key's lease while this process compiles.
  bool leased = false;
  if (remote_) {
    RemoteEntry remote_entry = remote_->get_or_lease("cpu", entry_key, leased);
    if (remote_entry.state == RemoteEntry::State::Hit) {
      std::string bytes;
      CpuModule module = install_entry(
          entry_key, [&](const std::filesystem::path& p) { write_bytes(p, remote_entry.bytes); }, bytes);
      count(&EntryCounts::remote_hits);
      return module;
    }
    if (remote_entry.state == RemoteEntry::State::Unverified) {
      warn_unverified_entry_once(RemoteCache::entry_name("cpu", entry_key) + " (remote)");
      unverified = true;
    }
    bad_entry = bad_entry || remote_entry.state == RemoteEntry::State::Corrupt;
  }
  RemoteLease lease(remote_.get(), "cpu", entry_key, leased);
  std::string bytes;
  CpuModule module = install_entry(
      entry_key, [&](const std::filesystem::path& p) { compile_shared_object(source, p, options); }, bytes);
  // Stored before the lease is released: a waiting worker finds it.
  if (remote_) remote_->put("cpu", entry_key, bytes);
  count(unverified ? &EntryCounts::rejected_unsigned : bad_entry ? &EntryCounts::recompiled_corrupt : &EntryCounts::misses);
  return module;
}

}  // namespace stitch::runtime::cpu
