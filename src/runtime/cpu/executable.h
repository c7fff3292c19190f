// A whole graph compiled for the CPU (DESIGN.md, Runtime), as it runs: the
// launch list the compile layer made (pipeline/cpu_route.h: plan, lower every
// group, emit all kernels into one translation unit, load it through the
// kernel cache), run in plan order with planned buffers. Dots are library
// calls (dot_call.h). docs/cpu-backend.md describes the fallback when the
// system compiler rejects a fused kernel.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/fusion_plan.h"
#include "runtime/common/buffer_plan.h"
#include "runtime/cpu/conv_call.h"
#include "runtime/cpu/kernel_cache.h"
#include "stitch/graph.h"
#include "stitch/runtime.h"
#include "stitch/tensor.h"

namespace stitch::runtime::cpu {

// Everything the compile layer derives from the graph's structure
// (compiled_graph.h); shared (immutable) by every executable of structurally
// equal graphs through the in-memory level of the kernel cache.
struct CompiledGraph;

class CpuExecutable {
 public:
  // `graph`, the graph that runs, and what the compile layer made of it
  // (pipeline::compile_cpu); `cache_stats`, the cache's hits and misses that
  // compile caused.
  CpuExecutable(Graph graph, std::shared_ptr<const CompiledGraph> compiled, const CacheStats& cache_stats = {});

  // One tensor per graph output, in order. Checks the inputs as the
  // interpreter does (bind_inputs). Intermediates live in pooled buffers that
  // are reused once their last consumer has run, and kept for the next run
  // (a workspace, like a framework's caching allocator), so a repeated run
  // does not page-fault fresh memory. Not for concurrent calls.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs);
  // The same, writing into `outputs`: a tensor of the right dtype and shape
  // is written in place, anything else (or a missing one) is replaced. For
  // repeated runs (benchmarks, serving) that must not allocate.
  void run(const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);
  // The same on memory the caller owns, copying nothing: each input read in
  // place, each output written where `output` says (stitch::OutputMemory,
  // include/stitch/runtime.h). Outputs must not overlap the inputs.
  void run_into(const std::vector<ArrayView>& inputs, const OutputMemory& output);

  // Kernels launched plus library calls made per run.
  int kernel_count() const;

  // Parameters (by name) the caller passes as the same, unchanged array on
  // every run (an ONNX model's initializers): a convolution whose weights
  // are one packs them into oneDNN's layout on the first run and keeps the
  // packed copy, keyed by the array's address, instead of packing them on
  // every call. Writing into such an array between runs, or passing another
  // array that happens to sit at the same address, leaves the old weights in
  // use. UserError for a name that is no parameter.
  void set_constant_params(const std::vector<std::string>& names);
  // How many weights arrays have been packed for constant parameters.
  size_t packed_weights_count() const { return packed_weights_ ? packed_weights_->size() : 0; }

  // One entry of the launch list and the time it took over the runs since
  // profiling was turned on (stitch bench --steps; docs/benchmarks.md).
  struct StepTime {
    std::string kind;   // "kernel", "interpreter", or the library call's op: "dot", "conv", "attention"
    std::string label;  // the kernel's name, or the op and its result's name
    double seconds = 0;
    // A dot step's epilogue kernel, part of `seconds`: timed when it runs in
    // one panel after the gemm (f32), else 0.
    double epilogue_seconds = 0;
  };
  // On: every run from now times each step (a clock read around each); the
  // times add up until it is turned on again. Off: runs time nothing.
  void set_step_profiling(bool on);
  // Each step's summed time and the runs profiled.
  std::vector<StepTime> step_times() const;
  int64_t profiled_runs() const { return profiled_runs_; }
  // Bytes of intermediate buffers the last run() allocated: the peak, since
  // the pool only grows within a run. 0 before the first run.
  int64_t peak_intermediate_bytes() const { return peak_intermediate_bytes_; }
  // How many pooled buffers the last run() used for how many intermediates.
  int intermediate_buffer_count() const { return intermediate_buffer_count_; }
  int intermediate_value_count() const { return intermediate_value_count_; }
  // The cache's hits and misses caused by this executable's compile.
  const CacheStats& cache_stats() const { return cache_stats_; }

  // The graph that runs: the canonical graph compiled after the CPU's
  // target rewrites (split full reductions); plan() indexes its nodes.
  const Graph& graph() const { return graph_; }
  // The plan that runs (after any fallback).
  const FusionPlan& plan() const;
  const std::string& source() const;
  // Empty unless the compile fell back; then what failed and what runs instead.
  const std::string& fallback() const;

 private:
  // Where a run's values live: the output slots, and the workspace plan.
  struct RunPlan {
    std::map<int, size_t> output_slot;  // value index -> first result slot holding it
    BufferPlan buffers;
  };
  // Where a conv step's weights are packed once: when they are a constant parameter.
  PackedWeights* constant_weights(const Node& conv) const;
  // `pool_bytes`: the workspace's buffers as they are.
  RunPlan plan_run(const SymbolBindings& bindings, const std::vector<int64_t>& pool_bytes) const;

  Graph graph_;
  std::shared_ptr<const CompiledGraph> compiled_;
  std::vector<std::vector<std::byte>> workspace_;  // intermediate buffers, kept across runs
  // A graph without symbols plans its runs once: the plan of its last run,
  // valid while the workspace is the one it was made for.
  std::optional<RunPlan> static_run_;
  CacheStats cache_stats_;
  int64_t peak_intermediate_bytes_ = 0;
  int intermediate_buffer_count_ = 0;
  int intermediate_value_count_ = 0;
  std::vector<bool> constant_param_;  // by parameter index
  std::unique_ptr<PackedWeights> packed_weights_;
  bool profiling_ = false;
  std::vector<double> step_seconds_, epilogue_seconds_;
  int64_t profiled_runs_ = 0;
};

}  // namespace stitch::runtime::cpu
