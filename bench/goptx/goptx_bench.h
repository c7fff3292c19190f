// GoPTX's comparison (docs/goptx-bench.md): pairs of independent kernels run
// sequentially, concurrently on two streams, packed into one launch
// (horizontal fusion, src/ptx/weave/pack.h) and woven (src/ptx/weave/weave.h,
// concat and latency), timed with CUDA events on a GPU, or, without one,
// described by static estimates (ptxas registers, H100 occupancy, and the
// weaver's latency model over interpreter block counts).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ptx/ptx_ast.h"

namespace stitch::bench::goptx {

enum class Scale { Small, Full };

// One kernel argument's initial host bytes: a device buffer, or a scalar.
struct HostArg {
  bool buffer = false;
  std::vector<std::byte> bytes;
};

// One kernel of a pair, as it is launched alone (one-dimensional grid).
struct KernelSpec {
  std::string name;      // the .entry
  std::string ptx_file;  // under the PTX directory
  std::string kind;      // "memory-bound" or "compute-bound", for the report
  uint32_t grid = 1;
  uint32_t block = 256;
  uint32_t dynamic_shared = 0;
  std::vector<HostArg> args;
};

struct Pair {
  std::string name;    // "triad+collatz"
  std::string source;  // "hand-written" or "corpus"
  KernelSpec a, b;
};

// The pairs, at `scale`. Every kernel writes its outputs from its inputs
// alone (rerunning it gives the same bytes), so repeated timed runs and the
// final comparison see one answer.
std::vector<Pair> bench_pairs(Scale scale);

enum class Variant { Sequential, Concurrent, Packed, WovenConcat, WovenLatency };
inline constexpr Variant kVariants[] = {Variant::Sequential, Variant::Concurrent, Variant::Packed,
                                        Variant::WovenConcat, Variant::WovenLatency};
const char* variant_name(Variant v);
// What the variant is, one line, for the reports.
const char* variant_description(Variant v);

// One launch: a kernel of a module, its grid and the arguments, each one of
// A's (side 0), B's (side 1) or an extra .u32 (side 2, `value`).
struct ArgRef {
  int side = 0;
  size_t index = 0;
  uint32_t value = 0;
};
struct Launch {
  std::string module;  // the PTX text
  std::string entry;
  uint32_t grid = 1;
  uint32_t block = 256;
  uint32_t dynamic_shared = 0;
  std::vector<ArgRef> args;
};

// The PTX modules of a pair and the launches of each variant: Sequential and
// Concurrent are A's launch and B's; the others one launch each.
struct PairVariants {
  ptx::Module a, b;  // as compiled by nvcc
  std::vector<Launch> sequential;  // A, B
  Launch packed, woven_concat, woven_latency;
  std::vector<Launch> launches(Variant v) const;
};

// UserError when a kernel's PTX is missing or a pair cannot be packed or woven.
PairVariants build_variants(const Pair& pair, const std::string& ptx_dir);

// Reports: what each mode writes under `out_dir`/`results`.{json,md}.
struct RunOptions {
  Scale scale = Scale::Full;
  std::string ptx_dir;
  std::string out_dir;
  std::string results;
  int warmup = 3;
  int repeats = 20;
  std::string driver;  // "" for the GPU's libcuda.so.1
  std::string ptxas;   // for the estimates, and loading PTX newer than the driver
  std::string only;    // run only the pair of this name ("" for all)
};

// Measure every pair on the device; returns the process exit status.
int run_measurements(const RunOptions& options);
// The static estimates (no GPU); returns the process exit status.
int run_estimates(const RunOptions& options);

}  // namespace stitch::bench::goptx
