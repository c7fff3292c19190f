// A SIMT interpreter for PTX (docs/ptx-interpreter.md): runs a kernel of a
// parsed module over a grid of CTAs of warps of 32 threads with CUDA's
// semantics for the instructions it supports, so that the PTX made from
// Stitch's CUDA kernels can be executed and checked without a GPU.
//
//   ptx::Interpreter interp(ptx::parse_module(text, "k.ptx"));
//   std::vector<ptx::KernelArg> args{ptx::KernelArg::buffer(x.raw(), x.nbytes(), "x"),
//                                    ptx::KernelArg::scalar<int32_t>(n)};
//   interp.run("k", {.grid = {4, 1, 1}, .block = {128, 1, 1}}, args);
//
// Errors in the program or its run (an unsupported instruction, a trap, an
// out-of-bounds or misaligned access, a barrier reached divergently or by
// part of a CTA, a shared-memory race between warps in one barrier
// interval) are UserErrors at the instruction's source location.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "ptx/ptx_ast.h"

namespace stitch::ptx {

namespace sim {
class Decoder;
class Observer;
}

struct LaunchConfig {
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> block{1, 1, 1};
  uint32_t dynamic_shared_bytes = 0;
};

// One kernel argument: a global buffer the caller owns (the kernel receives
// its address and reads and writes it in place), or a scalar's bytes.
struct KernelArg {
  bool is_buffer = false;
  std::byte* data = nullptr;  // buffer
  uint64_t size = 0;          // buffer bytes
  std::string name;           // buffer, for messages ("arg0")
  std::vector<std::byte> bytes;  // scalar

  static KernelArg buffer(void* data, uint64_t size, std::string name) {
    KernelArg a;
    a.is_buffer = true;
    a.data = static_cast<std::byte*>(data);
    a.size = size;
    a.name = std::move(name);
    return a;
  }
  template <class T>
  static KernelArg scalar(T value) {
    KernelArg a;
    a.bytes.resize(sizeof(T));
    std::memcpy(a.bytes.data(), &value, sizeof(T));
    return a;
  }
};

// Global memory its owner places at a fixed address: the simulated CUDA
// driver's device allocations (src/runtime/cuda_sim), which live across
// launches, so kernels receive raw device addresses instead of buffers.
struct GlobalRegion {
  uint64_t address = 0;  // at least kFirstRegionAddress
  std::byte* data = nullptr;
  uint64_t size = 0;
  std::string name;  // for messages
};

// Region addresses start here: above every module variable (placed from
// 4 GiB up) and below the generic windows of shared and local memory.
inline constexpr uint64_t kFirstRegionAddress = uint64_t{1} << 44;
inline constexpr uint64_t kEndRegionAddress = uint64_t{0x7e} << 40;

struct InterpreterOptions {
  // Stop with an error after this many warp instructions (0: no limit).
  uint64_t max_warp_instructions = uint64_t{1} << 34;
  // Find races between warps on shared memory (docs/ptx-interpreter.md).
  bool detect_races = true;
  // Count how often warps issued each instruction (RunStats::instruction_counts),
  // for latency-model estimates (bench/goptx); off by default, as it costs a
  // counter increment per warp instruction.
  bool count_instructions = false;
  // Told every warp instruction as it issues, with its memory addresses
  // (ptx/sim/observer.h): the GPU model's counters (docs/gpu-model.md).
  sim::Observer* observer = nullptr;
  // Run only these CTAs (linear indices, x fastest, ascending; empty: all):
  // the GPU model samples a large grid. The others' outputs are not written.
  std::vector<uint64_t> only_ctas;
};

// How often warps issued one instruction of the program (a guarded
// instruction whose guard fails for every lane still counts: it was issued).
struct InstructionCount {
  std::string function;
  SourceLoc loc;  // the instruction's location in the module's source text
  uint64_t warp_executions = 0;
};

struct RunStats {
  uint64_t warp_instructions = 0;    // instructions issued per warp
  uint64_t thread_instructions = 0;  // of those, summed over active lanes
  uint64_t ctas = 0;
  // With InterpreterOptions::count_instructions: every instruction issued at
  // least once, by function, then in code order.
  std::vector<InstructionCount> instruction_counts;
};

class Interpreter {
 public:
  // Keeps a copy of the module; decodes each kernel when first run.
  explicit Interpreter(Module module);
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  // Runs kernel `name` once. Buffers are bound in argument order, each at
  // its own address with unmapped gaps around it. UserError for a missing
  // kernel, arguments that do not match its parameters, or a failing run.
  RunStats run(const std::string& name, const LaunchConfig& config, const std::vector<KernelArg>& args,
               const InterpreterOptions& options = {});

  // Runs kernel `name` as cuLaunchKernel does: `params[i]` points at the
  // bytes of parameter i, as many as the .entry declares, and addresses in
  // them resolve to `memory` (sorted or not; they must not overlap). UserError
  // as run().
  RunStats run_with_memory(const std::string& name, const LaunchConfig& config,
                           const std::vector<GlobalRegion>& memory, const void* const* params,
                           const InterpreterOptions& options = {});

  // The kernel's parameters as declared (for checking command-line arguments).
  std::vector<VarDecl> kernel_params(const std::string& name) const;

 private:
  Module module_;
  std::unique_ptr<sim::Decoder> decoder_;
};

}  // namespace stitch::ptx
