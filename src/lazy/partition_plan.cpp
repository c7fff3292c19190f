// Partition cuts: see partition_plan.h.
#include "lazy/partition_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>

namespace stitch::lazy {

// Bounds the dynamic program's work on long traces (it is cubic in a segment's length).
constexpr int kMaxSegmentCalls = 256;

Temporaries::Temporaries(const std::vector<PlannedCall>& calls, std::vector<char> temps) : temporary(std::move(temps)) {
  first.assign(temporary.size(), -1);
  last.assign(temporary.size(), -1);
  for (size_t c = 0; c < calls.size(); ++c) {
    for (const PlannedCall::Touch& t : calls[c].touches) {
      const size_t s = static_cast<size_t>(t.storage);
      if (s >= temporary.size()) continue;
      if (first[s] < 0) first[s] = static_cast<int>(c);
      last[s] = static_cast<int>(c);
    }
  }
}

double segment_seconds(const std::vector<PlannedCall>& calls, int begin, int end, const CostModel& model,
                       const Temporaries& temporaries) {
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
  int64_t bytes = 0;
  for (const auto& [storage, t] : merged) {
    if (temporaries.in_registers(storage, begin, end)) continue;
    bytes += t.bytes * ((t.read ? 1 : 0) + (t.write ? 1 : 0));
  }
  // A call whose range is smaller than the segment's tests its guard at every index of the segment's range.
  double guarded = static_cast<double>(largest) * (end - begin) - static_cast<double>(total_indices);
  const double memory = model.bytes_per_second > 0 ? static_cast<double>(bytes) / model.bytes_per_second
                                                  : model.target.memory_seconds(bytes);
  return model.target.launch_seconds + memory +
         std::max(0.0, guarded) * model.seconds_per_guarded_index;
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
                             const CostModel& given, const std::vector<char>& temporary) {
  const int n = static_cast<int>(calls.size());
  PartitionPlan plan;
  const Temporaries temporaries(calls, temporary);
  CostModel model = given;
  if (model.bytes_per_second <= 0) {
    std::map<int, int64_t> footprint;
    for (const PlannedCall& c : calls) {
      for (const PlannedCall::Touch& t : c.touches) footprint[t.storage] = std::max(footprint[t.storage], t.bytes);
    }
    int64_t bytes = 0;
    for (const auto& [storage, b] : footprint) bytes += b;
    model.bytes_per_second = model.target.bandwidth(std::max<int64_t>(bytes, 1));
  }
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
      double t = best[static_cast<size_t>(i)] + segment_seconds(calls, i, j, model, temporaries);
      if (t < best[static_cast<size_t>(j)]) {
        best[static_cast<size_t>(j)] = t;
        cut[static_cast<size_t>(j)] = i;
      }
    }
  }
  for (int j = n; j > 0; j = cut[static_cast<size_t>(j)]) {
    int i = cut[static_cast<size_t>(j)];
    plan.segments.push_back(Segment{i, j, segment_seconds(calls, i, j, model, temporaries)});
  }
  std::reverse(plan.segments.begin(), plan.segments.end());
  plan.predicted_seconds = best[static_cast<size_t>(n)];
  for (int c = 0; c < n; ++c) plan.unfused_seconds += segment_seconds(calls, c, c + 1, model, temporaries);
  return plan;
}

}  // namespace stitch::lazy
