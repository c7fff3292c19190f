// The memory-traffic half of the delta evaluator (DESIGN.md, Fusion planners:
// score = T_saved_memory + T_saved_launches - T_penalty). For now it counts
// bytes and launches only; turning bytes into time needs the measured
// bandwidth curve M(V) and launch latency of the target, not measured yet.
#pragma once

#include <cstdint>
#include <string>

#include "fusion/fusion_plan.h"
#include "stitch/shape.h"

namespace stitch {

struct PlanCost {
  int64_t bytes_read = 0;     // each group reads each external input once
  int64_t bytes_written = 0;  // each group writes each of its roots once
  int64_t launches = 0;       // one kernel (or library call) per group; none for a dot epilogue
  // Saturates at int64's maximum, as the sums do (cost_model.cpp).
  int64_t bytes_moved() const {
    int64_t sum = 0;
    return __builtin_add_overflow(bytes_read, bytes_written, &sum) ? INT64_MAX : sum;
  }
};

class FusionCostModel {
 public:
  // Symbols absent from `bindings` take `default_extent`, so a plan over a
  // symbolic batch still gets a comparable cost.
  explicit FusionCostModel(SymbolBindings bindings = {}, int64_t default_extent = 1024)
      : bindings_(std::move(bindings)), default_extent_(default_extent) {}

  int64_t default_extent() const { return default_extent_; }
  int64_t value_bytes(const Graph& g, ValueId v) const;
  PlanCost group_cost(const Graph& g, const FusionGroup& group) const;
  PlanCost plan_cost(const Graph& g, const FusionPlan& plan) const;

 private:
  SymbolBindings bindings_;
  int64_t default_extent_;
};

// "plan softmax_small (planner xla): 4 kernels, 59200 bytes read, 44400 bytes written"
std::string plan_summary(const Graph& g, const FusionPlan& plan,
                         const FusionCostModel& model = FusionCostModel());

}  // namespace stitch
