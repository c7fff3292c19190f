// A whole graph compiled for one GPU (DESIGN.md, Runtime; docs/cuda-runtime.md),
// as it runs: the launch list the compile layer made (pipeline/cuda/cuda_route.h:
// plan, lower every group with the schedules ranked for the device, emit all
// kernels into one CUDA C translation unit, compile it with NVRTC to a cubin
// for the device's own architecture through the cubin cache, load it), run in
// plan order on the context's stream. Dots are cuBLAS calls.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/fusion_plan.h"
#include "runtime/common/caller_memory.h"
#include "runtime/cuda/context.h"
#include "runtime/cuda/step_profile.h"
#include "runtime/cuda/cubin_cache.h"
#include "stitch/graph.h"
#include "stitch/interpreter.h"
#include "stitch/tensor.h"

namespace stitch::runtime::cuda {

struct CompiledCudaGraph;  // plan, launch list, loaded module

// A dense row-major array at a device address the caller owns.
struct DeviceArrayView {
  CUdeviceptr data = 0;
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
};
// Where run_at writes output `index` (a dense row-major array of `dtype` and
// `shape`): a device address the caller owns.
using DeviceOutputMemory = std::function<CUdeviceptr(size_t index, DType dtype, const std::vector<int64_t>& shape)>;

class CudaExecutable {
 public:
  // `graph`, the graph that runs, on `context`, and what the compile layer
  // made of it (pipeline::compile_cuda).
  CudaExecutable(Graph graph, std::shared_ptr<CudaContext> context, std::shared_ptr<const CompiledCudaGraph> compiled);

  // Host tensors in and out: uploads the inputs, runs, downloads the outputs.
  // Checks the inputs as the interpreter does.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs);

  // Device tensors in and out, all work queued on the context's stream; it
  // returns without waiting unless a kernel can reject its input (a gather
  // index out of range), whose status is read back. An output of the right
  // dtype and shape is written in place, anything else replaced; so is an
  // output whose memory overlaps an input's (the kernels' pointers are
  // __restrict__).
  void run_on_device(const std::vector<const DeviceTensor*>& inputs, std::vector<DeviceTensor>& outputs);

  // The same on device memory the caller owns (a framework's tensors): inputs
  // read where they lie, each output written where `output` says (no output
  // may overlap an input: UserError). The work is queued on the context's
  // stream after what `caller` has queued, and `caller` is made to wait for
  // it (an event each way, none when `caller` is the context's stream);
  // returns without waiting unless a kernel can reject its input.
  void run_at(const std::vector<DeviceArrayView>& inputs, const DeviceOutputMemory& output, CUstream caller);
  // The public API's form (Executable::run_on_device): each view's data and
  // each address `output` returns are device addresses; `caller` a CUstream.
  void run_at(const std::vector<ArrayView>& inputs, const OutputMemory& output, std::uintptr_t caller);

  int kernel_count() const;  // kernels plus library calls per run (a woven pair counts as two)
  int woven_launches() const;  // launches that run a woven pair of kernels (pipeline::CudaCompileOptions::weave)
  // One line per adjacent independent pair the weaver refused, with its reason.
  const std::string& weave_refusals() const;
  const Graph& graph() const { return graph_; }
  const FusionPlan& plan() const;
  const std::string& source() const;
  const std::string& fallback() const;  // empty unless the compile fell back
  CudaContext& context() const { return *context_; }

  // One step of the launch list and its device time over the runs profiled
  // (stitch report --run; docs/report.md), as CpuExecutable::StepTime.
  struct StepTime {
    std::string kind;   // "kernel", "interpreter", or the library call's op: "dot"
    std::string label;  // the kernel's name (a woven pair: both, joined by " & "), or "dot <result>"
    double seconds = 0;
  };
  // On: every later run records an event before and after each step on the
  // stream; the times add up until it is turned on again. Off: nothing recorded.
  void set_step_profiling(bool on);
  // Waits for the stream; each step's summed time (a woven pair's under its first step).
  std::vector<StepTime> step_times();
  int64_t profiled_runs() const;

 private:
  struct BoundRun;
  BoundRun bind_run(std::vector<InputType> types, std::vector<CUdeviceptr> inputs) const;
  static bool overlaps_an_input(const BoundRun& run, CUdeviceptr begin, size_t bytes);
  // Queues every step on the context's stream, intermediates from the
  // caching allocator, each kernel's status word zeroed first.
  void launch_steps(BoundRun& run);
  // Where output `slot` is copied from after the launches (a parameter, or
  // the value's first slot) and its type; nullopt when a kernel writes it.
  std::optional<std::pair<CUdeviceptr, InputType>> copy_source(const BoundRun& run, size_t slot) const;
  void copy_on_stream(CUdeviceptr to, CUdeviceptr from, size_t bytes) const;
  void run_interpreted_at(const BoundRun& run);
  // Waits for the statuses and throws the interpreter's UserError for a
  // rejected input.
  void read_statuses(BoundRun& run);

  Graph graph_;
  std::shared_ptr<CudaContext> context_;
  std::shared_ptr<const CompiledCudaGraph> compiled_;
  std::shared_ptr<StepProfile> profile_;  // while set_step_profiling(true)
};

}  // namespace stitch::runtime::cuda
