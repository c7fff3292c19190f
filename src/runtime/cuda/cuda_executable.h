// A whole graph compiled for one GPU (DESIGN.md, Runtime; docs/cuda-runtime.md):
// plan, lower every group with the schedules ranked for the device, emit all
// kernels into one CUDA C translation unit, compile it with NVRTC to a cubin
// for the device's own architecture (through the cubin cache), load it, then
// run the launch list in plan order on the context's stream. Dots are cuBLAS
// calls. Like the CPU executable, a translation unit that does not compile
// costs speed, never the result: the unfused plan, then the interpreter.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fusion/planner.h"
#include "runtime/common/caller_memory.h"
#include "pipeline/pipeline.h"
#include "runtime/cuda/context.h"
#include "runtime/cuda/step_profile.h"
#include "runtime/cuda/cubin_cache.h"
#include "schedule/select.h"
#include "stitch/graph.h"
#include "stitch/interpreter.h"
#include "stitch/tensor.h"

namespace stitch::runtime::cuda {

struct CudaCompileOptions {
  PlanOptions plan;  // max_fusions: -1 reads STITCH_MAX_FUSIONS
  // Row schedules are ranked on the device; a forced kind or column tile
  // overrides the ranking (stitch bench --row-schedule, tests).
  std::optional<schedule::RowScheduleKind> forced_rows;
  int64_t forced_column_groups = 0;
  // The GPU model's target ("h200", gpu_model/target.h) whose numbers choose the
  // row schedules, instead of the device's nearest: what `stitch bench --backend
  // cuda-sim --profile T` predicts for, since the simulated device is an H100.
  std::string model_target;
  pipeline::StageDump dump;  // the pipeline stages to print (STITCH_DUMP)
  // Replaces groups' default schedules: the tuner measuring on this device
  // (runtime/cuda/cuda_tuning.h) or a test's choice. compile() only.
  pipeline::Compilation::Tuner tuner;
  // Where the loud report of a compile failure and its fallback goes; stderr
  // ("stitch: warning: ...") when empty.
  std::function<void(const std::string&)> warn;
  // Test seam: a plan for which this returns true is treated as if NVRTC had
  // rejected its translation unit.
  std::function<bool(const FusionPlan&)> reject_plan;
  // Test seam: a translation unit holding the kernel of a group for which
  // this returns true is treated as rejected too, so the fallback of one
  // group can be tested.
  std::function<bool(const FusionGroup&)> reject_group;
  // Weave adjacent independent kernels into one launch at the PTX level
  // (docs/goptx.md, In Stitch): 1 on, 0 off, -1 as $STITCH_WEAVE says (off
  // when unset). Off by default: not yet measured on a GPU.
  int weave = -1;
};

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
  // Throws UserError naming the first group that does not lower. NVRTC
  // rejecting the fused kernels is reported through options.warn and
  // replaced by the unfused plan, and if that fails too, by the interpreter.
  static CudaExecutable compile(const Graph& canonical_graph, PlannerKind planner,
                                std::shared_ptr<CudaContext> context, CubinCache& cache,
                                const CudaCompileOptions& options = {});

  // For test suites: every graph's kernels in one translation unit, one NVRTC
  // run, one module. No fallback: a compile failure throws CompileError.
  static std::vector<CudaExecutable> compile_batch(const std::vector<Graph>& canonical_graphs, PlannerKind planner,
                                                   std::shared_ptr<CudaContext> context, CubinCache& cache,
                                                   const CudaCompileOptions& options = {});

  // "" when compile() would lower every group of `canonical_graph`'s plan;
  // otherwise why not (the first group that does not lower), as
  // CpuExecutable::unsupported_reason. Needs no GPU: `rows` is the table
  // entry of an architecture unless a caller with a context passes
  // RowScheduleTarget::for_device, whose ranking compile() uses.
  static std::string unsupported_reason(const Graph& canonical_graph, PlannerKind planner,
                                        const schedule::RowScheduleTarget& rows = schedule::RowScheduleTarget::gpu(),
                                        const PlanOptions& plan_options = PlanOptions::for_gpu());

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
  int woven_launches() const;  // launches that run a woven pair of kernels (CudaCompileOptions::weave)
  // One line per adjacent independent pair the weaver refused, with its reason.
  const std::string& weave_refusals() const;
  const Graph& graph() const { return graph_; }
  const FusionPlan& plan() const;
  const std::string& source() const;
  const std::string& fallback() const;  // empty unless compile() fell back
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

  CudaExecutable(Graph graph, std::shared_ptr<CudaContext> context, std::shared_ptr<const CompiledCudaGraph> compiled);

  Graph graph_;
  std::shared_ptr<CudaContext> context_;
  std::shared_ptr<const CompiledCudaGraph> compiled_;
  std::shared_ptr<StepProfile> profile_;  // while set_step_profiling(true)
};

}  // namespace stitch::runtime::cuda
