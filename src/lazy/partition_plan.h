// Cutting a trace partition into fused kernels (docs/lazy.md, Partition
// cuts): an exact dynamic program over the partition's calls in order, each
// segment legal (every pair of its calls passes the safety check, ranges of
// one rank, at most one reduction, no call reading the value of a reduction
// in the same segment) and scored by a memory-traffic and launch cost model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lazy/index_safety.h"

namespace stitch::lazy {

struct PlannedCall {
  CallView view;
  bool reduction = false;
  // Indices (in the partition) of the calls whose reduction value this call reads.
  std::vector<int> reads_results_of;
  int64_t indices = 0;  // the call's index count
  // Per storage the call touches (by id): its bytes and whether the call reads / writes it.
  struct Touch {
    int storage;
    int64_t bytes;
    bool read;
    bool write;
  };
  std::vector<Touch> touches;
};

struct CostModel {
  // Defaults measured on the development machines (docs/lazy.md): an OpenMP
  // parallel region costs a few microseconds to enter and leave; streaming
  // memory runs at a few GB/s per core.
  double launch_seconds = 4e-6;
  double bytes_per_second = 10e9;
  double seconds_per_guarded_index = 2e-10;
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

// The predicted time of calls [begin, end) as one kernel.
double segment_seconds(const std::vector<PlannedCall>& calls, int begin, int end, const CostModel& model);

// `overlapping`: pairs of distinct storages (views) that share memory; two
// calls touching the two of a pair, either writing, never share a kernel.
PartitionPlan plan_partition(const std::vector<PlannedCall>& calls,
                             const std::vector<std::pair<int, int>>& overlapping = {}, const CostModel& model = {});

}  // namespace stitch::lazy
