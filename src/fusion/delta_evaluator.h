// The delta evaluator every planner shares (DESIGN.md, Fusion planners):
//   score = T_saved_memory + T_saved_launches - T_penalty
// for fusing two groups into one. Memory time comes from the target's
// measured bandwidth curve M(V) (bytes moved by one kernel -> effective
// bytes/s), launch time is measured per target, and the penalty is the
// compute of ops that fusion duplicates. docs/fusion.md, Delta evaluator.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "fusion/cost_model.h"
#include "fusion/fusion_plan.h"

namespace stitch {

struct TargetModel {
  std::string name;
  // (bytes moved by one kernel, effective bytes per second), ascending in
  // bytes; interpolated log-linearly in bytes, clamped at both ends.
  std::vector<std::pair<int64_t, double>> bandwidth_curve;
  double launch_seconds = 0;
  // Seconds per element of one expensive elementwise op (exp, tanh, div...)
  // with every core busy; cheap ops are taken as free next to memory. Ops
  // measured one by one override it (op_seconds).
  double expensive_op_seconds = 0;
  std::map<OpKind, double> op_seconds;

  // An expensive op's seconds per element: its own measurement, else the rate.
  double expensive_seconds_of(OpKind op) const;

  // M(V): the effective bandwidth of a kernel that moves `bytes`.
  double bandwidth(int64_t bytes) const;
  // bytes / M(bytes), 0 for no bytes.
  double memory_seconds(int64_t bytes) const;
};

// The CPU this project is developed on: the bandwidth curve measured with
// scripts/measure_bandwidth_curve.sh, the launch and the expensive ops with
// bench/calibration/cpu_costs.py (values and dates in docs/fusion.md).
TargetModel cpu_target_model();
// A GPU from published figures until one measures it (docs/fusion.md, Delta
// evaluator): 90% of the datasheet's DRAM bandwidth for a large kernel, a
// fixed 2 us to fill the machine that small kernels do not amortise, a 3 us
// launch, and the SFU rate for expensive ops. "sm_90": H100-SXM5; "sm_80":
// A100-SXM4-40GB; another sm_8x takes sm_80's figures, anything newer
// sm_90's, and the model's name says so.
TargetModel gpu_target_model(const std::string& arch = "sm_90");

struct FusionDelta {
  double saved_memory = 0;    // seconds
  double saved_launches = 0;  // seconds
  double penalty = 0;         // seconds of recompute the fusion adds
  double score() const { return saved_memory + saved_launches - penalty; }
};

class DeltaEvaluator {
 public:
  explicit DeltaEvaluator(TargetModel target = cpu_target_model(), FusionCostModel bytes = FusionCostModel())
      : target_(std::move(target)), bytes_(std::move(bytes)) {}

  // Estimated time of one group as one kernel: its memory time at M(V), one
  // launch, and the compute of its expensive ops.
  double group_seconds(const Graph& g, const FusionGroup& group) const;
  double plan_seconds(const Graph& g, const FusionPlan& plan) const;
  // What replacing kernel `a` by `merged` (a with `b`'s nodes) saves and
  // costs. When `b_still_runs` (b's result is still needed in memory by
  // another kernel or as an output), b's nodes are duplicated: no launch is
  // saved, b's traffic remains, and recomputing b's expensive ops inside
  // `merged` is the penalty. Otherwise b's kernel and its traffic go away.
  FusionDelta delta(const Graph& g, const FusionGroup& a, const FusionGroup& b, const FusionGroup& merged,
                    bool b_still_runs) const;

  const TargetModel& target() const { return target_; }

 private:
  double expensive_seconds(const Graph& g, const FusionGroup& group) const;

  TargetModel target_;
  FusionCostModel bytes_;
};

}  // namespace stitch
