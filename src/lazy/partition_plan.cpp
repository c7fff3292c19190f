// Partition cuts: see partition_plan.h.
#include "lazy/partition_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>

namespace stitch::lazy {

// Bounds the dynamic program's work on long traces (it is cubic in a segment's length).
constexpr int kMaxSegmentCalls = 256;

double segment_seconds(const std::vector<PlannedCall>& calls, int begin, int end, const CostModel& model) {
  // Each storage crosses memory once per kernel that touches it: once if only
  // read or only written, twice if read and written (in and out).
  std::map<int, PlannedCall::Touch> merged;
  int64_t largest = 0;
  int64_t total_indices = 0;
  for (int c = begin; c < end; ++c) {
    largest = std::max(largest, calls[static_cast<size_t>(c)].indices);
    total_indices += calls[static_cast<size_t>(c)].indices;
    for (const PlannedCall::Touch& t : calls[static_cast<size_t>(c)].touches) {
      auto [it, fresh] = merged.emplace(t.storage, t);
      if (!fresh) {
        it->second.read |= t.read;
        it->second.write |= t.write;
      }
    }
  }
  double bytes = 0;
  for (const auto& [storage, t] : merged) bytes += static_cast<double>(t.bytes) * ((t.read ? 1 : 0) + (t.write ? 1 : 0));
  // A call whose range is smaller than the segment's tests its guard at every index of the segment's range.
  double guarded = static_cast<double>(largest) * (end - begin) - static_cast<double>(total_indices);
  return model.launch_seconds + bytes / model.bytes_per_second + std::max(0.0, guarded) * model.seconds_per_guarded_index;
}

namespace {

// Whether calls a and b touch two distinct storages that overlap, one of them writing.
std::string overlap_conflict(const PlannedCall& a, const PlannedCall& b, const std::vector<std::pair<int, int>>& overlapping) {
  for (const auto& [s, t] : overlapping) {
    for (const PlannedCall::Touch& x : a.touches) {
      for (const PlannedCall::Touch& y : b.touches) {
        bool pair = (x.storage == s && y.storage == t) || (x.storage == t && y.storage == s);
        if (pair && (x.write || y.write)) {
          return fmt::format("views x{} and x{} of one storage overlap and one is written", x.storage, y.storage);
        }
      }
    }
  }
  return "";
}

}  // namespace

PartitionPlan plan_partition(const std::vector<PlannedCall>& calls, const std::vector<std::pair<int, int>>& overlapping,
                             const CostModel& model) {
  const int n = static_cast<int>(calls.size());
  PartitionPlan plan;
  // safe[i][j]: calls i < j may share a kernel, by themselves.
  std::vector<std::vector<char>> safe(static_cast<size_t>(n), std::vector<char>(static_cast<size_t>(n), 1));
  for (int j = 0; j < n; ++j) {
    const PlannedCall& b = calls[static_cast<size_t>(j)];
    for (int i = 0; i < j; ++i) {
      const PlannedCall& a = calls[static_cast<size_t>(i)];
      std::string reason;
      if (a.reduction && b.reduction) {
        reason = "two reductions";
      } else if (std::find(b.reads_results_of.begin(), b.reads_results_of.end(), i) != b.reads_results_of.end()) {
        reason = fmt::format("{} reads the value of reduction {}", b.view.kernel->name, a.view.kernel->name);
      } else {
        reason = overlap_conflict(a, b, overlapping);
        if (reason.empty()) {
          SafetyVerdict v = fusion_safety(a.view, b.view);
          if (!v.safe) reason = v.reason;
        }
      }
      if (reason.empty()) continue;
      safe[static_cast<size_t>(i)][static_cast<size_t>(j)] = 0;
      if (i == j - 1) plan.refusals.push_back(fmt::format("calls {} ({}) and {} ({}): {}", i, a.view.kernel->name, j,
                                                          b.view.kernel->name, reason));
    }
  }
  // best[j]: the least predicted time of calls [0, j); cut[j]: where its last segment starts.
  std::vector<double> best(static_cast<size_t>(n) + 1, std::numeric_limits<double>::infinity());
  std::vector<int> cut(static_cast<size_t>(n) + 1, 0);
  best[0] = 0;
  for (int j = 1; j <= n; ++j) {
    // Grow the last segment [i, j) leftwards while every pair in it stays legal.
    for (int i = j - 1; i >= 0 && j - i <= kMaxSegmentCalls; --i) {
      bool legal = true;
      for (int k = i + 1; k < j && legal; ++k) legal = safe[static_cast<size_t>(i)][static_cast<size_t>(k)] != 0;
      if (!legal) break;
      double t = best[static_cast<size_t>(i)] + segment_seconds(calls, i, j, model);
      if (t < best[static_cast<size_t>(j)]) {
        best[static_cast<size_t>(j)] = t;
        cut[static_cast<size_t>(j)] = i;
      }
    }
  }
  for (int j = n; j > 0; j = cut[static_cast<size_t>(j)]) {
    int i = cut[static_cast<size_t>(j)];
    plan.segments.push_back(Segment{i, j, segment_seconds(calls, i, j, model)});
  }
  std::reverse(plan.segments.begin(), plan.segments.end());
  plan.predicted_seconds = best[static_cast<size_t>(n)];
  for (int c = 0; c < n; ++c) plan.unfused_seconds += segment_seconds(calls, c, c + 1, model);
  return plan;
}

}  // namespace stitch::lazy
