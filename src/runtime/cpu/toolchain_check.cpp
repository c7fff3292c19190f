#include "runtime/cpu/toolchain_check.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/cpu/kernel_cache.h"
#include "stitch/error.h"

namespace stitch::runtime::cpu {
namespace {

namespace fs = std::filesystem;

constexpr const char* kCompilerFix = "apt-get install g++ (or set STITCH_CXX to a C++17 compiler's command)";
constexpr const char* kOpenMpFix =
    "the compiler needs OpenMP (-fopenmp): g++ brings libgomp; for clang++, apt-get install libomp-dev";
constexpr const char* kSleefFix = "apt-get install libsleef-dev";

// The compiler command's program: its first word, looked up on PATH unless it names a path.
std::string find_program(const std::string& command) {
  const std::string program = command.substr(0, command.find(' '));
  if (program.find('/') != std::string::npos) return access(program.c_str(), X_OK) == 0 ? program : "";
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const fs::path candidate = fs::path(dir.empty() ? "." : dir) / program;
    if (access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return "";
}

// The first `lines` lines of `text`, each indented, for a detail.
std::string first_lines(const std::string& text, int lines) {
  std::stringstream in(text);
  std::string out;
  for (std::string line; lines > 0 && std::getline(in, line); --lines) out += (out.empty() ? "" : "\n  ") + line;
  return out;
}

// What a generated kernel uses: C++17, an OpenMP parallel SIMD loop, and a
// vectorised expf that links against SLEEF's GNU-ABI variants.
constexpr const char* kProbe = R"(#include <cmath>
#include <cstdint>
extern "C" void stitch_doctor_probe(void* const* buffers, const int64_t* scalars) {
  const float* x = static_cast<const float*>(buffers[0]);
  float s = 0;
#pragma omp parallel for simd reduction(+ : s)
  for (int64_t i = 0; i < scalars[0]; ++i) s += std::exp(x[i]);
  *static_cast<float*>(buffers[1]) = s;
}
)";

ToolchainCheck not_run(const std::string& name, const std::string& because) {
  return ToolchainCheck{name, false, false, "not checked: " + because, ""};
}

// Compiles the probe with `options` into a fresh directory; "" or the output.
std::string try_compile(const CompilerOptions& options, fs::path* object) {
  std::string pattern = (fs::temp_directory_path() / "stitch-doctor-XXXXXX").string();
  if (!mkdtemp(pattern.data())) return "cannot create a temporary directory";
  *object = fs::path(pattern) / "probe.so";
  try {
    compile_shared_object(kProbe, *object, options);
  } catch (const CompileError& e) {
    return e.diagnostics().empty() ? e.what() : e.diagnostics();
  }
  return "";
}

ToolchainCheck cache_check() {
  ToolchainCheck check{"cache", false, true, "", "set STITCH_CACHE_DIR to a writable directory"};
  try {
    const fs::path dir = default_cache_directory();
    std::error_code ec;
    fs::create_directories(dir, ec);
    const fs::path probe = dir / fmt::format(".doctor-{}", getpid());
    std::ofstream(probe) << "probe";
    check.ok = fs::exists(probe, ec);
    fs::remove(probe, ec);
    check.detail = check.ok ? dir.string() + " (writable)" : dir.string() + " is not writable";
  } catch (const UserError& e) {
    check.detail = e.what();
  }
  if (check.ok) check.fix.clear();
  return check;
}

}  // namespace

std::vector<ToolchainCheck> check_cpu_toolchain(const CompilerOptions& options) {
  std::vector<ToolchainCheck> checks;
  const std::string program = find_program(options.compiler);
  if (program.empty()) {
    checks.push_back({"compiler", false, true, fmt::format("`{}` is not on PATH", options.compiler), kCompilerFix});
    for (const char* name : {"openmp", "sleef", "load"}) checks.push_back(not_run(name, "no compiler"));
    checks.push_back(cache_check());
    return checks;
  }
  std::string version;
  try {
    version = first_lines(compiler_version(options.compiler), 1);
  } catch (const CompileError& e) {
    version = first_lines(e.what(), 1);
  }
  checks.push_back({"compiler", true, true, fmt::format("{} ({}): {}", options.compiler, program, version), ""});

  CompilerOptions no_libraries = options;
  no_libraries.libraries.clear();
  fs::path object;
  std::string failure = try_compile(no_libraries, &object);
  std::error_code ec;
  fs::remove_all(object.parent_path(), ec);
  checks.push_back({"openmp", failure.empty(), true,
                    failure.empty() ? "compiles C++17 with -fopenmp, -O3 and -march=native" : first_lines(failure, 3),
                    failure.empty() ? "" : kOpenMpFix});
  if (!failure.empty()) {
    checks.push_back(not_run("sleef", "the compiler cannot build a kernel"));
    checks.push_back(not_run("load", "the compiler cannot build a kernel"));
    checks.push_back(cache_check());
    return checks;
  }
  failure = try_compile(options, &object);
  checks.push_back({"sleef", failure.empty(), true, failure.empty() ? "links SLEEF's vector math (-lsleefgnuabi)" : first_lines(failure, 3),
                    failure.empty() ? "" : kSleefFix});
  if (failure.empty()) {
    std::optional<CpuModule> module = CpuModule::try_load(object);
    bool right = false;
    if (module) {
      float x[4] = {0, 0, 0, 0}, sum = 0;
      void* buffers[2] = {x, &sum};
      const int64_t n = 4;
      module->function("stitch_doctor_probe")(buffers, &n);
      right = sum == 4.0f;
    }
    checks.push_back({"load", right, true, right ? "a compiled kernel loads and runs" : "a compiled kernel did not load or run",
                      right ? "" : "check that the compiler's output runs on this machine (-march=native)"});
  } else {
    checks.push_back(not_run("load", "nothing to load"));
  }
  fs::remove_all(object.parent_path(), ec);
  checks.push_back(cache_check());
  return checks;
}

std::string missing_toolchain_hint(const std::string& compiler, const std::string& diagnostics) {
  std::string hint;
  if (find_program(compiler).empty()) {
    hint = fmt::format("the CPU back end needs a C++ compiler, and `{}` is not on PATH: {}", compiler, kCompilerFix);
  } else if (diagnostics.find("cannot find -lsleefgnuabi") != std::string::npos) {
    hint = fmt::format("the CPU back end links SLEEF's vector math, which is not installed: {}", kSleefFix);
  } else if (diagnostics.find("omp.h: No such file") != std::string::npos ||
             diagnostics.find("cannot find -lgomp") != std::string::npos ||
             diagnostics.find("cannot find -lomp") != std::string::npos) {
    hint = fmt::format("the CPU back end needs OpenMP: {}", kOpenMpFix);
  } else {
    return "";
  }
  return hint + " (`stitch doctor` checks everything the CPU back end needs)";
}

void throw_if_toolchain_missing(const std::string& compiler, const CompileError& e) {
  // The compiler's own output only: the command line names -lsleefgnuabi too.
  const std::string hint = missing_toolchain_hint(compiler, e.diagnostics());
  if (!hint.empty()) throw ToolchainMissing(hint + "\n" + e.what());
}

}  // namespace stitch::runtime::cpu
