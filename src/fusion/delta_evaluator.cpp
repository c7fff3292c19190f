#include "fusion/delta_evaluator.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace stitch {

double TargetModel::bandwidth(int64_t bytes) const {
  const auto& c = bandwidth_curve;
  if (c.empty()) return 1e10;
  if (bytes <= c.front().first) return c.front().second;
  if (bytes >= c.back().first) return c.back().second;
  auto hi = std::lower_bound(c.begin(), c.end(), bytes, [](const auto& p, int64_t b) { return p.first < b; });
  auto lo = hi - 1;
  const double t = (std::log(static_cast<double>(bytes)) - std::log(static_cast<double>(lo->first))) /
                   (std::log(static_cast<double>(hi->first)) - std::log(static_cast<double>(lo->first)));
  return lo->second + t * (hi->second - lo->second);
}

double TargetModel::memory_seconds(int64_t bytes) const {
  return bytes <= 0 ? 0.0 : static_cast<double>(bytes) / bandwidth(bytes);
}

TargetModel cpu_target_model() {
  TargetModel t;
  t.name = "cpu";
  // GB/s of an OpenMP copy at each footprint (bytes read + written), median
  // of repeats, 2 cores; docs/fusion.md gives the machine and the date.
  const std::pair<int64_t, double> measured[] = {
      {int64_t{1} << 12, 4.1e9},   {int64_t{1} << 14, 15.2e9}, {int64_t{1} << 16, 56.2e9},
      {int64_t{1} << 18, 100.1e9}, {int64_t{1} << 20, 135.0e9}, {int64_t{1} << 22, 79.2e9},
      {int64_t{1} << 24, 51.8e9},  {int64_t{1} << 26, 47.3e9},  {int64_t{1} << 28, 21.7e9},
      {int64_t{1} << 30, 22.0e9}};
  t.bandwidth_curve.assign(std::begin(measured), std::end(measured));
  // bench/calibration/cpu_costs.py on the same machine, 2026-11-26: one more
  // kernel of a 64-kernel chain of tiny ops (the call and an OpenMP parallel
  // region), and per op the seconds per element with both cores busy, as
  // the generated code computes it (SLEEF's vector functions, Stitch's own
  // tanh, erf, sigmoid); medians of 3 rounds.
  t.launch_seconds = 1.25e-6;
  t.expensive_op_seconds = 0.5e-9;  // an op not listed below
  t.op_seconds = {
      {OpKind::Exp, 0.31e-9},   {OpKind::Exp2, 0.26e-9},       {OpKind::Expm1, 0.96e-9}, {OpKind::Log, 0.57e-9},
      {OpKind::Log2, 0.63e-9},  {OpKind::Log1p, 1.03e-9},      {OpKind::Sqrt, 0.095e-9}, {OpKind::Rsqrt, 0.19e-9},
      {OpKind::Reciprocal, 0.08e-9}, {OpKind::Div, 0.077e-9}, {OpKind::Sin, 0.58e-9},   {OpKind::Cos, 0.71e-9},
      {OpKind::Tan, 1.12e-9},   {OpKind::Tanh, 0.60e-9},       {OpKind::Sigmoid, 0.46e-9}, {OpKind::Erf, 0.32e-9},
      {OpKind::Pow, 2.0e-9},    {OpKind::Rem, 1.21e-9},        {OpKind::Atan2, 1.18e-9},
  };
  return t;
}

double TargetModel::expensive_seconds_of(OpKind op) const {
  auto it = op_seconds.find(op);
  return it != op_seconds.end() ? it->second : expensive_op_seconds;
}

namespace {

// A GPU's model from its datasheet: DRAM bandwidth, SMs, SFU results per SM
// per cycle and boost clock.
TargetModel published_gpu(std::string name, double dram_bytes_per_second, int sms, double sfu_per_sm_cycle,
                          double clock_hz) {
  TargetModel t;
  t.name = std::move(name);
  // A kernel moving V bytes is taken to need V / (0.9 x peak) plus 2 us to
  // fill the SMs with requests (memory latency ~1 us, ramp-up), so
  // M(V) = V / (2 us + V / (0.9 peak)).
  const double peak = 0.9 * dram_bytes_per_second;
  const double fill = 2e-6;
  for (int e = 12; e <= 30; e += 2) {
    const int64_t bytes = int64_t{1} << e;
    t.bandwidth_curve.emplace_back(bytes, static_cast<double>(bytes) / (fill + static_cast<double>(bytes) / peak));
  }
  // A kernel launch from the host, a few microseconds (CUDA streams, no graph).
  t.launch_seconds = 3e-6;
  t.expensive_op_seconds = 1.0 / (sfu_per_sm_cycle * sms * clock_hz);
  return t;
}

}  // namespace

TargetModel gpu_target_model(const std::string& arch) {
  // Compute capability 8.x or older: the A100's figures.
  const bool ampere = arch.rfind("sm_", 0) == 0 && arch.size() >= 4 && arch[3] <= '8' && arch.size() == 5;
  // NVIDIA A100 datasheet (SXM4, 40 GB): 1,555 GB/s HBM2, 108 SMs at 1.41 GHz;
  // H100 datasheet (SXM5): 3.35 TB/s HBM3, 132 SMs at 1.98 GHz. Special-function
  // units: 16 results a cycle per SM for compute capability 8.0 and 9.0 (CUDA
  // C++ Programming Guide, arithmetic instruction throughput).
  if (ampere) {
    return published_gpu(arch == "sm_80" ? "sm_80 (published figures)" : arch + " (sm_80's published figures)",
                         1.555e12, 108, 16.0, 1.41e9);
  }
  return published_gpu(arch == "sm_90" ? "sm_90 (published figures)" : arch + " (sm_90's published figures)",
                       3.35e12, 132, 16.0, 1.98e9);
}

double DeltaEvaluator::expensive_seconds(const Graph& g, const FusionGroup& group) const {
  double seconds = 0;
  for (int n : group.nodes) {
    OpCategory c = op_info(g.nodes()[n].op).category;
    if (c != OpCategory::HeavyElementwise) continue;
    const ValueId out = g.nodes()[n].output;
    const double elements = static_cast<double>(bytes_.value_bytes(g, out)) / dtype_size(g.type(out).dtype);
    seconds += elements * target_.expensive_seconds_of(g.nodes()[n].op);
  }
  return seconds;
}

double DeltaEvaluator::group_seconds(const Graph& g, const FusionGroup& group) const {
  PlanCost c = bytes_.group_cost(g, group);
  return target_.memory_seconds(c.bytes_moved()) + static_cast<double>(c.launches) * target_.launch_seconds +
         expensive_seconds(g, group);
}

double DeltaEvaluator::plan_seconds(const Graph& g, const FusionPlan& plan) const {
  double total = 0;
  for (const FusionGroup& group : plan.groups) total += group_seconds(g, group);
  return total;
}

FusionDelta DeltaEvaluator::delta(const Graph& g, const FusionGroup& a, const FusionGroup& b,
                                  const FusionGroup& merged, bool b_still_runs) const {
  FusionDelta d;
  auto memory = [&](const FusionGroup& group) { return target_.memory_seconds(bytes_.group_cost(g, group).bytes_moved()); };
  d.saved_memory = memory(a) - memory(merged);
  if (b_still_runs) {
    d.penalty = expensive_seconds(g, b);
  } else {
    d.saved_memory += memory(b);
    d.saved_launches = target_.launch_seconds;
  }
  return d;
}

}  // namespace stitch
