// Compiles a C++ translation unit from the CPU emitter into a shared object,
// loads it with dlopen and runs its kernels on host tensors
// (DESIGN.md, Runtime; docs/cpu-backend.md). The compile step is a function of
// its own so the kernel cache can wrap it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "kir/kernel.h"
#include "stitch/tensor.h"

namespace stitch::runtime::cpu {

// The system compiler rejected a generated translation unit; what() carries the
// command and the compiler's own diagnostics.
class CompileError : public std::runtime_error {
 public:
  CompileError(const std::string& message, std::string diagnostics)
      : std::runtime_error(message), diagnostics_(std::move(diagnostics)) {}
  const std::string& diagnostics() const { return diagnostics_; }

 private:
  std::string diagnostics_;
};

// The system compiler for generated code: $STITCH_CXX when set (a command
// name or path, e.g. g++-13 or clang++), else `c++`.
std::string default_compiler();

struct CompilerOptions {
  std::string compiler = default_compiler();
  // OpenMP and -march=native apply to generated code only, never to Stitch itself.
  // -ffp-contract=off: a*b+c stays two roundings, as docs/semantics.md requires.
  // -fno-math-errno and -fno-trapping-math change no value (generated code never
  // reads errno or the FP exception flags) but let sqrt, floor, ceil and
  // nearbyint vectorise; no -ffast-math (docs/cpu-backend.md, Vector math).
  // 512-bit vectors: exp-heavy loops run about twice as fast as with GCC's
  // default 256 on this AVX-512 machine (swish kernel 49.5 -> 16.0 ms back to
  // back in stitch_bench_reference).
  std::vector<std::string> flags = {"-std=c++17",        "-O3",   "-march=native",    "-fopenmp",
                                    "-fPIC",             "-shared", "-ffp-contract=off", "-fno-math-errno",
                                    "-fno-trapping-math", "-mprefer-vector-width=512"
#ifdef STITCH_SANITIZED
                                    // A sanitized Stitch (-DSTITCH_SANITIZE=ON) checks its generated kernels too.
                                    ,
                                    "-fsanitize=address,undefined", "-fno-sanitize-recover=undefined",
                                    "-fno-omit-frame-pointer"
#endif
  };
  // After the source, so the linker sees the vector-math references first:
  // SLEEF's GNU-ABI vector variants of the `declare simd` functions.
  std::vector<std::string> libraries = {"-lsleefgnuabi"};
};

// The exact command line that compiles `source_path` into `output_path`.
std::string compile_command(const CompilerOptions& options, const std::filesystem::path& source_path,
                            const std::filesystem::path& output_path);

// Writes `source` next to `output_path` and compiles it into the shared object
// `output_path`; throws CompileError with the compiler's stderr on failure.
void compile_shared_object(const std::string& source, const std::filesystem::path& output_path,
                           const CompilerOptions& options = {});

using KernelFunction = void (*)(void* const*, const int64_t*);

// A loaded shared object; unloaded (dlclose) when the last handle goes.
class CpuModule {
 public:
  static CpuModule load(const std::filesystem::path& shared_object);
  // As load, but nullopt when dlopen fails (a cache entry that vanished or
  // does not load is a miss, not an error).
  static std::optional<CpuModule> try_load(const std::filesystem::path& shared_object);
  // The kernel's entry point; throws InternalError when the symbol is missing.
  KernelFunction function(const std::string& kernel_name) const;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::shared_ptr<void> handle_;
  std::filesystem::path path_;
};

// compile_shared_object into a fresh temporary directory, then load; the
// directory is removed once loaded, and kept (named in the error) on failure.
CpuModule compile_and_load(const std::string& source, const CompilerOptions& options = {});

// A scalar argument in its 64-bit ABI slot (docs/cpu-backend.md, ABI).
int64_t scalar_slot(int64_t value);
int64_t scalar_slot_f64(double value);

// Runs `kernel` from `module` on `buffers` (one tensor per buffer parameter, in
// order) and `scalars` (one slot per scalar parameter). Checks counts, dtypes and
// that each tensor holds every element the kernel may address, evaluated from
// the buffer's shape and strides; a mismatch is a UserError.
void run_kernel(const CpuModule& module, const kir::Kernel& kernel, const std::vector<Tensor*>& buffers,
                const std::vector<int64_t>& scalars);
// The same on arrays in memory owned elsewhere (views of a lazy array's storage).
void run_kernel_on_views(const CpuModule& module, const kir::Kernel& kernel, const std::vector<ArrayView>& buffers,
                         const std::vector<int64_t>& scalars);

}  // namespace stitch::runtime::cpu
