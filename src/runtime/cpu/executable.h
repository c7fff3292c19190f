// A whole graph compiled for the CPU (DESIGN.md, Runtime): plan, lower every
// group, emit all kernels into one translation unit, load it through the
// kernel cache, then run the kernels in plan order with planned buffers.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "fusion/planner.h"
#include "lower/lower_plan.h"
#include "runtime/cpu/kernel_cache.h"
#include "stitch/graph.h"
#include "stitch/tensor.h"

namespace stitch::runtime::cpu {

// Called with ("plan" | "kir" | "source", text) as each artefact becomes
// available, so a caller can dump the plan even when lowering then fails.
using DumpHook = std::function<void(std::string_view stage, const std::string& text)>;

class CpuExecutable {
 public:
  // Throws UserError naming the first group that does not lower yet (the CPU
  // back end has no fallback), or for a planner that is not implemented.
  static CpuExecutable compile(const Graph& canonical_graph, PlannerKind planner, KernelCache& cache,
                               const DumpHook& dump = {});

  // One tensor per graph output, in order. Checks the inputs as the
  // interpreter does (bind_inputs). Intermediates live in pooled buffers that
  // are reused once their last consumer has run.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs);

  int kernel_count() const { return static_cast<int>(groups_.size()); }
  // Bytes of intermediate buffers the last run() allocated: the peak, since
  // the pool only grows within a run. 0 before the first run.
  int64_t peak_intermediate_bytes() const { return peak_intermediate_bytes_; }
  // How many pooled buffers the last run() used for how many intermediates.
  int intermediate_buffer_count() const { return intermediate_buffer_count_; }
  int intermediate_value_count() const { return intermediate_value_count_; }
  // The cache's hits and misses caused by this compile (one load per graph).
  const CacheStats& cache_stats() const { return cache_stats_; }

  const FusionPlan& plan() const { return plan_; }
  const std::string& source() const { return source_; }

 private:
  CpuExecutable(Graph graph, FusionPlan plan, std::vector<lower::LoweredGroup> groups, std::string source,
                CpuModule module);

  Graph graph_;
  FusionPlan plan_;
  std::vector<lower::LoweredGroup> groups_;  // every one with a kernel
  std::vector<KernelFunction> functions_;    // parallel to groups_
  std::string source_;
  CpuModule module_;
  CacheStats cache_stats_;
  int64_t peak_intermediate_bytes_ = 0;
  int intermediate_buffer_count_ = 0;
  int intermediate_value_count_ = 0;
};

}  // namespace stitch::runtime::cpu
