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

constexpr std::array<uint32_t, 64> kSha256RoundConstants = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

uint32_t rotate_right(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

// One 64-byte block of FIPS 180-4 §6.2.2.
void sha256_compress(std::array<uint32_t, 8>& state, const unsigned char* block) {
  std::array<uint32_t, 64> w{};
  for (int i = 0; i < 16; ++i) {
    w[i] = uint32_t(block[4 * i]) << 24 | uint32_t(block[4 * i + 1]) << 16 | uint32_t(block[4 * i + 2]) << 8 |
           uint32_t(block[4 * i + 3]);
  }
  for (int i = 16; i < 64; ++i) {
    const uint32_t s0 = rotate_right(w[i - 15], 7) ^ rotate_right(w[i - 15], 18) ^ (w[i - 15] >> 3);
    const uint32_t s1 = rotate_right(w[i - 2], 17) ^ rotate_right(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
  uint32_t e = state[4], f = state[5], g = state[6], h = state[7];
  for (int i = 0; i < 64; ++i) {
    const uint32_t s1 = rotate_right(e, 6) ^ rotate_right(e, 11) ^ rotate_right(e, 25);
    const uint32_t choose = (e & f) ^ (~e & g);
    const uint32_t t1 = h + s1 + choose + kSha256RoundConstants[i] + w[i];
    const uint32_t s0 = rotate_right(a, 2) ^ rotate_right(a, 13) ^ rotate_right(a, 22);
    const uint32_t majority = (a & b) ^ (a & c) ^ (b & c);
    const uint32_t t2 = s0 + majority;
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  state[0] += a;
  state[1] += b;
  state[2] += c;
  state[3] += d;
  state[4] += e;
  state[5] += f;
  state[6] += g;
  state[7] += h;
}

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

std::string sha256_hex(std::string_view data) {
  std::array<uint32_t, 8> state = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  const size_t full_blocks = data.size() / 64;
  const auto* bytes = reinterpret_cast<const unsigned char*>(data.data());
  for (size_t i = 0; i < full_blocks; ++i) sha256_compress(state, bytes + 64 * i);

  // Padding: the tail, a 1 bit, zeros, then the message length in bits (big endian).
  std::array<unsigned char, 128> tail{};
  const size_t tail_size = data.size() - 64 * full_blocks;
  std::memcpy(tail.data(), bytes + 64 * full_blocks, tail_size);
  tail[tail_size] = 0x80;
  const size_t tail_blocks = tail_size + 1 + 8 <= 64 ? 1 : 2;
  const uint64_t bit_length = uint64_t(data.size()) * 8;
  for (int i = 0; i < 8; ++i) tail[64 * tail_blocks - 1 - i] = static_cast<unsigned char>(bit_length >> (8 * i));
  for (size_t i = 0; i < tail_blocks; ++i) sha256_compress(state, tail.data() + 64 * i);

  std::string hex;
  for (uint32_t word : state) hex += fmt::format("{:08x}", word);
  return hex;
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

KernelCache::KernelCache(std::filesystem::path directory, uint64_t max_bytes, std::optional<std::string> secret)
    : directory_(std::move(directory)), max_bytes_(max_bytes), secret_(std::move(secret)) {}

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

CpuModule KernelCache::compile_into_entry(const std::string& key, const std::string& source,
                                          const CompilerOptions& options) {
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
    const std::filesystem::path compiled = scratch_dir / (key + ".so");
    compile_shared_object(source, compiled, options);
    const std::string bytes = read_bytes(compiled);
    const std::filesystem::path checksum = scratch_dir / "kernel.sum";
    write_bytes(checksum, sha256_hex(bytes));
    const std::filesystem::path tag = scratch_dir / "kernel.tag";
    if (secret_) write_bytes(tag, entry_tag(*secret_, key, bytes));
    // Loaded before it is published: once renamed, another process may evict
    // it at any moment, and the mapping outlives the unlink.
    module = CpuModule::load(compiled);
    // The object first, its tag next, its checksum last: a crash in between
    // leaves an entry without (or with a stale) checksum or tag, which the
    // next load recompiles.
    rename_into_place(compiled, shared_object_path(key));
    if (secret_) rename_into_place(tag, tag_path(key));
    rename_into_place(checksum, checksum_path(key));
  } catch (...) {
    // The compiler's diagnostics travel in the CompileError; the scratch
    // files would only accumulate in the cache.
    std::filesystem::remove_all(scratch_dir, error);
    throw;
  }
  std::filesystem::remove_all(scratch_dir, error);
  return std::move(*module);
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
      std::lock_guard<std::mutex> lock(stats_mutex_);
      ++stats_.hits;
      return std::move(*module);
    }
  }
  std::error_code ignored;
  const bool had_entry = std::filesystem::exists(shared_object_path(entry_key), ignored) ||
                         std::filesystem::exists(checksum_path(entry_key), ignored);
  if (state == EntryState::Unsigned) warn_unverified_entry_once(shared_object_path(entry_key).string());
  CpuModule module = compile_into_entry(entry_key, source, options);
  maintain_cache(directory_, max_bytes_, {shared_object_path(entry_key), checksum_path(entry_key), tag_path(entry_key)});
  std::lock_guard<std::mutex> lock(stats_mutex_);
  ++(state == EntryState::Unsigned ? stats_.rejected_unsigned : had_entry ? stats_.recompiled_corrupt : stats_.misses);
  return module;
}

}  // namespace stitch::runtime::cpu
