#include "gpu_model/resources.h"

#include <fmt/format.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <mutex>
#include <sstream>
#include <unordered_map>
#include <string_view>

#include "stitch/error.h"

namespace stitch::gpu_model {
namespace {

namespace fs = std::filesystem;

#ifdef STITCH_PTXAS_PATH
constexpr const char* kPtxasPath = STITCH_PTXAS_PATH;
#else
// CMake found no ptxas: resources stay unknown and say why, and the model
// falls back to what it can estimate without them.
constexpr const char* kPtxasPath = nullptr;
#endif

// The integer just before `unit` in `line` ("964" in "964 bytes spill
// stores" for " bytes spill stores"); nullopt when `unit` is absent.
std::optional<int> count_before(std::string_view line, std::string_view unit) {
  const size_t end = line.find(unit);
  if (end == std::string_view::npos) return std::nullopt;
  size_t begin = end;
  while (begin > 0 && line[begin - 1] >= '0' && line[begin - 1] <= '9') --begin;
  int value = 0;
  const auto [ptr, ec] = std::from_chars(line.data() + begin, line.data() + end, value);
  if (ec != std::errc() || ptr != line.data() + end) return std::nullopt;
  return value;
}

// The function whose report `line` begins, or nullopt for a line that
// continues the current report. ptxas names an entry in "Compiling entry
// function 'k' for 'sm_90'" and any function, entry or not, in "Function
// properties for k".
std::optional<std::string> function_reported(std::string_view line) {
  constexpr std::string_view kEntry = "Compiling entry function '";
  constexpr std::string_view kProperties = "Function properties for ";
  if (const size_t at = line.find(kEntry); at != std::string_view::npos) {
    const size_t begin = at + kEntry.size();
    const size_t end = line.find('\'', begin);
    return std::string(line.substr(begin, end == std::string_view::npos ? end : end - begin));
  }
  if (const size_t at = line.find(kProperties); at != std::string_view::npos) {
    std::string_view name = line.substr(at + kProperties.size());
    while (!name.empty() && (name.back() == ' ' || name.back() == '\r')) name.remove_suffix(1);
    return std::string(name);
  }
  return std::nullopt;
}

// Single-quoted for /bin/sh: TMPDIR and the arch come from the user.
std::string shell_quote(const std::string& s) {
  std::string quoted = "'";
  for (char c : s) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// A fresh directory under TMPDIR, removed with everything in it when the
// scope ends, failed run or not: ptxas's output travels in the error.
class ScratchDirectory {
 public:
  ScratchDirectory() {
    std::string pattern = (fs::temp_directory_path() / "stitch-ptxas-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      throw UserError(fmt::format("cannot create a temporary directory for ptxas in {}: {}",
                                  fs::temp_directory_path().string(), std::strerror(errno)));
    }
    path_ = pattern;
  }
  ~ScratchDirectory() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  ScratchDirectory(const ScratchDirectory&) = delete;
  ScratchDirectory& operator=(const ScratchDirectory&) = delete;

  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// Runs `command` through /bin/sh with stderr joined to stdout; the exit
// status goes to `status` (pclose's wait status).
std::string run_capturing(const std::string& command, int* status) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) throw UserError(fmt::format("cannot run {}: {}", command, std::strerror(errno)));
  std::string output;
  std::array<char, 4096> buffer;
  for (size_t n; (n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0;) output.append(buffer.data(), n);
  *status = pclose(pipe);
  return output;
}


}  // namespace

KernelResources parse_ptxas_verbose(const std::string& output, const std::string& kernel) {
  KernelResources r;
  bool in_kernel = false;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    if (std::optional<std::string> name = function_reported(line)) {
      in_kernel = *name == kernel;
      continue;
    }
    if (!in_kernel) continue;
    if (line.find(" bytes stack frame") != std::string::npos) {
      r.stack_frame_bytes = count_before(line, " bytes stack frame").value_or(0);
      r.spill_store_bytes = count_before(line, " bytes spill stores").value_or(0);
      r.spill_load_bytes = count_before(line, " bytes spill loads").value_or(0);
    } else if (std::optional<int> registers = count_before(line, " registers");
               registers && line.find("Used ") != std::string::npos) {
      r.known = true;
      r.registers = *registers;
      r.static_shared_bytes = count_before(line, " bytes smem").value_or(0);
    }
  }
  if (!r.known) r.source = fmt::format("ptxas -v reported no registers for kernel '{}'", kernel);
  return r;
}

namespace {

KernelResources run_ptxas(const std::string& ptx_text, const std::string& kernel, const std::string& arch) {
  ScratchDirectory scratch;
  const fs::path input = scratch.path() / "kernel.ptx";
  {
    std::ofstream file(input);
    file << ptx_text;
    if (!file.flush()) throw UserError(fmt::format("cannot write the PTX for ptxas to {}", input.string()));
  }
  const std::string command =
      fmt::format("{} -v -arch={} {} -o {}", shell_quote(kPtxasPath), shell_quote(arch), shell_quote(input.string()),
                  shell_quote((scratch.path() / "kernel.cubin").string()));
  int status = 0;
  const std::string output = run_capturing(command, &status);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    const std::string_view text(output.data(), output.find_last_not_of("\n") + 1);
    throw UserError(fmt::format("ptxas failed on the PTX of kernel '{}' for {}:\n{}", kernel, arch, text));
  }
  KernelResources r = parse_ptxas_verbose(output, kernel);
  r.source = r.known ? command : fmt::format("{} ({})", r.source, command);
  return r;
}

}  // namespace

KernelResources ptxas_resources(const std::string& ptx_text, const std::string& kernel, const std::string& arch) {
  if (kPtxasPath == nullptr) {
    KernelResources unknown;
    unknown.source = "ptxas not found at build time";
    return unknown;
  }
  // A benchmark launches each kernel many times; ptxas runs once per kernel
  // (tens of milliseconds each), remembered by the text's hash.
  static std::mutex mutex;
  static std::unordered_map<size_t, KernelResources> known;
  const size_t key = std::hash<std::string>{}(arch + '\n' + kernel + '\n' + ptx_text);
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = known.find(key); it != known.end()) return it->second;
  }
  KernelResources r = run_ptxas(ptx_text, kernel, arch);
  std::lock_guard<std::mutex> lock(mutex);
  known.emplace(key, r);
  return r;
}

}  // namespace stitch::gpu_model
