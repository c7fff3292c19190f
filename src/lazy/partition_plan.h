// Cutting a trace partition into fused kernels (docs/lazy.md, Partition
// cuts): an exact dynamic program over the partition's calls in order, each
// segment legal (every pair of its calls passes the safety check at the
// segment's rank, the smallest of its calls' ranges, at most one reduction,
// no call reading the value of a reduction in the same segment) and scored
// by a memory-traffic and launch cost model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fusion/delta_evaluator.h"
#include "lazy/index_safety.h"

namespace stitch::lazy {

struct PlannedCall {
  CallView view;
  bool reduction = false;
  // Indices (in the partition) of the calls whose reduction value this call reads.
  std::vector<int> reads_results_of;
  std::vector<int64_t> extents;  // its range's extents
  // Per storage the call touches (by id): its bytes and whether the call reads / writes it.
  struct Touch {
    int storage;
    int64_t bytes;
    bool read;
    bool write;
  };
  std::vector<Touch> touches;
};

// The delta evaluator's machine model (fusion/delta_evaluator.h): the
// measured launch time and bandwidth curve M(V) of the CPU, which the graph
// planners score fusions with too; plus what a guard costs per index.
struct CostModel {
  TargetModel target = cpu_target_model();
  double seconds_per_guarded_index = 2e-10;
  // The bandwidth every kernel of a partition streams at; plan_partition sets
  // it to M(V) of the partition's footprint (the distinct storages it
  // touches): whether the data stays in a cache between kernels depends on
  // all of them, not on one kernel's bytes. 0: M(V) of each kernel's bytes.
  double bytes_per_second = 0;
};

struct Segment {
  int begin = 0;  // calls [begin, end) of the partition
  int end = 0;
  double predicted_seconds = 0;
};

struct PartitionPlan {
  std::vector<Segment> segments;
  // One line per adjacent pair of calls that may not share a kernel, and why.
  std::vector<std::string> refusals;
  double predicted_seconds = 0;
  double unfused_seconds = 0;  // every call alone, by the same model
};

// Storages that nothing reads after the partition (temporaries), and the
// first and last call touching each: a temporary every touch of which lies in
// one kernel costs no traffic there (it lives in registers; build_fused_kernel
// has the exact conditions, which the model does not check).
struct Temporaries {
  std::vector<char> temporary;  // per storage
  std::vector<int> first, last;
  Temporaries() = default;
  Temporaries(const std::vector<PlannedCall>& calls, std::vector<char> temporary);
  bool in_registers(int storage, int begin, int end) const {
    const size_t s = static_cast<size_t>(storage);
    return s < temporary.size() && temporary[s] && first[s] >= begin && last[s] < end;
  }
};

// The predicted time of calls [begin, end) as one kernel: a launch, each
// storage crossing memory once per direction at M(V) of the kernel's bytes,
// and the guards: per call, the index count of the largest call over the
// fused dimensions less its own, times the indices its trailing dimensions add.
double segment_seconds(const std::vector<PlannedCall>& calls, int begin, int end, const CostModel& model,
                       const Temporaries& temporaries = {});

// `overlapping`: pairs of distinct storages (views) that share memory; two
// calls touching the two of a pair, either writing, never share a kernel.
// `temporary` (per storage, or empty): which storages nothing reads after the partition.
PartitionPlan plan_partition(const std::vector<PlannedCall>& calls,
                             const std::vector<std::pair<int, int>>& overlapping = {}, const CostModel& model = {},
                             const std::vector<char>& temporary = {});

}  // namespace stitch::lazy
