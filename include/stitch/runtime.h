// Compiling and running a graph from C++ (docs/library.md): the pipeline that
// `stitch run` takes (canonicalize, plan, schedule, lower, emit, compile
// through the kernel cache), behind one class.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "stitch/graph.h"
#include "stitch/tensor.h"

namespace stitch {

enum class Backend { Cpu, Cuda };

// "cpu" or "cuda".
std::string backend_name(Backend backend);

struct CompileOptions {
  Backend backend = Backend::Cpu;
  // none, xla, stitch, ilp or greedy (docs/fusion.md); another name is a UserError.
  std::string planner = "stitch";
  // Measure schedules (and, on the CPU, contested fusion decisions) on this
  // machine and keep the fastest, cached beside the kernels (docs/tuning.md).
  bool tune = false;
  // The kernel cache's directory; empty: $STITCH_CACHE_DIR, else
  // $XDG_CACHE_HOME/stitch, else $HOME/.cache/stitch (docs/kernel-cache.md).
  std::string cache_dir;
  // Pipeline stages to print to stderr, comma-separated as STITCH_DUMP takes
  // them ("plan,kir", "all"; docs/pipeline.md); empty: whatever $STITCH_DUMP
  // names, "none": nothing.
  std::string dump;
  // Parameters (by name) that the caller passes as the same, unchanged array
  // on every run, such as an ONNX model's initializers: on the CPU, a
  // convolution whose weights are one packs them into oneDNN's layout once,
  // keyed by the array's address, instead of on every call. Writing into such
  // an array between runs, or passing another array at the same address,
  // leaves the old weights in use. The CUDA back end ignores it.
  std::vector<std::string> constant_params;
  // Compute the f16 and bf16 values of the graph in f32 from op to op, casts
  // to them included, rounding to their own dtype only where the graph hands
  // them on: its outputs and the operands of dots, attention and convolutions
  // (docs/semantics.md, f32 intermediates). That is how Inductor
  // and XLA compute narrow floats; off, every op's result is rounded as
  // written, as PyTorch's eager mode rounds it.
  bool f32_intermediates = false;
};

// What one compile found in the kernel cache.
struct CacheStats {
  int memory_hits = 0;  // a structurally equal graph was compiled before in this process
  int disk_hits = 0;    // compiled code loaded from the cache directory, no compiler run
  int misses = 0;       // compiled and stored (a corrupt or unverified entry replaced included)
  int remote_hits = 0;  // compiled code from the shared remote tier (STITCH_REMOTE_CACHE), no compiler run
};

// Where Executable::run_into writes output `index`: the address of memory for
// a dense row-major array of `dtype` and `shape`, which the caller owns (it
// may throw UserError when it has none of that type).
using OutputMemory = std::function<std::byte*(size_t index, DType dtype, const std::vector<int64_t>& shape)>;

// A graph compiled for one back end. Move-only: it owns the intermediate
// buffers it reuses across runs. Not for concurrent run() calls; compile one
// executable per thread instead (a second compile of an equal graph is a
// memory hit of the kernel cache).
class Executable {
 public:
  // Canonicalizes `graph` and compiles it. Throws UserError for an unknown
  // planner, a graph the back end cannot run, or Backend::Cuda where this
  // build has no CUDA support or the machine no usable GPU.
  static Executable compile(const Graph& graph, const CompileOptions& options = {});
  // A package that `stitch package` wrote (docs/packages.md): its graph, plan
  // and compiled kernels, with no compiler run (none need be installed), on
  // the CPU or, for a CUDA package, the GPU. Throws UserError naming the
  // mismatch for a package of another format version, or built for targets
  // this CPU or GPU cannot run.
  static Executable load(const std::string& path);

  Executable(Executable&&) noexcept;
  Executable& operator=(Executable&&) noexcept;
  ~Executable();

  // One tensor per graph output, in order, from one host tensor per graph
  // parameter, in order. A wrong count, dtype or shape is a UserError naming
  // the parameter.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs);
  // The same, writing into `outputs`: a tensor of the right dtype and shape
  // is reused in place (on the CPU), anything else replaced.
  void run(const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);
  // The same on memory the caller owns (docs/library.md, Running on your own
  // memory): each input is a dense row-major array read in place, and each
  // output is written where `output` says, once its shape is known. On the
  // CPU nothing is copied (a graph output that is a parameter, or an output
  // returned twice, is copied into its place); Backend::Cuda copies to and
  // from the device as run() does. Outputs must not overlap the inputs.
  void run_into(const std::vector<ArrayView>& inputs, const OutputMemory& output);
  // Backend::Cuda on device memory the caller owns (docs/library.md, Running
  // on device memory): each input's `data` and each address `output` returns
  // is a device address of device 0 (its primary context, the one the CUDA
  // runtime and so PyTorch use); nothing is copied through the host. The work
  // runs after what `stream` (a CUstream; 0, the legacy default stream) has
  // queued, and what the caller queues on `stream` afterwards runs after it.
  // Returns without waiting for the device, unless a kernel can reject its
  // input (a gather index out of range). UserError on the CPU back end, or
  // when an output overlaps an input.
  void run_on_device(const std::vector<ArrayView>& inputs, const OutputMemory& output, std::uintptr_t stream = 0);

  Backend backend() const;
  const std::string& planner() const;
  // Kernels launched plus library calls (dots) made per run.
  int kernel_count() const;
  // The fusion groups, one line each, and why neighbours were not fused:
  // what `stitch plan` prints first.
  std::string plan_text() const;
  // Empty unless the generated kernels did not compile; then what failed and
  // what runs instead (the unfused plan, or the reference interpreter).
  const std::string& fallback() const;
  const CacheStats& cache_stats() const;
  // The graph that runs: canonical, after the back end's rewrites.
  const Graph& graph() const;

 private:
  struct Impl;
  explicit Executable(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Whether Backend::Cuda can compile here: a build with CUDA support, an
// NVIDIA driver and a device. Opens the device on the first call.
bool cuda_available();

// "0.1.0".
std::string version();

}  // namespace stitch
