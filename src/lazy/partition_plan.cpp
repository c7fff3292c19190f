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
  // The fused range is the first `rank` dimensions: a call's "lead" is its
  // index count there, and its trailing dimensions repeat its guard's cost.
  size_t rank = calls[static_cast<size_t>(begin)].extents.size();
  for (int c = begin; c < end; ++c) rank = std::min(rank, calls[static_cast<size_t>(c)].extents.size());
  auto lead_and_trailing = [rank](const std::vector<int64_t>& ext) {
    double lead = 1;
    double trailing = 1;
    for (size_t d = 0; d < ext.size(); ++d) (d < rank ? lead : trailing) *= static_cast<double>(ext[d]);
    return std::pair<double, double>(lead, trailing);
  };
  double largest = 0;
  for (int c = begin; c < end; ++c) largest = std::max(largest, lead_and_trailing(calls[static_cast<size_t>(c)].extents).first);
  double guarded = 0;
  for (int c = begin; c < end; ++c) {
    const auto [lead, trailing] = lead_and_trailing(calls[static_cast<size_t>(c)].extents);
    guarded += (largest - lead) * trailing;
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
  // fuse_rank[i][j]: the largest rank of a fused range in which calls i < j
  // may share a kernel, by themselves (0: none).
  std::vector<std::vector<int8_t>> fuse_rank(static_cast<size_t>(n), std::vector<int8_t>(static_cast<size_t>(n), 0));
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
          SafetyVerdict v;
          const int rank = fusable_rank(a.view, b.view, &v);
          fuse_rank[static_cast<size_t>(i)][static_cast<size_t>(j)] = static_cast<int8_t>(std::min(rank, 127));
          if (rank == 0) reason = v.reason;
        }
      }
      if (reason.empty()) continue;
      if (i == j - 1) plan.refusals.push_back(fmt::format("calls {} ({}) and {} ({}): {}", i, a.view.kernel->name, j,
                                                          b.view.kernel->name, reason));
    }
  }
  // best[j]: the least predicted time of calls [0, j); cut[j]: where its last segment starts.
  std::vector<double> best(static_cast<size_t>(n) + 1, std::numeric_limits<double>::infinity());
  std::vector<int> cut(static_cast<size_t>(n) + 1, 0);
  best[0] = 0;
  for (int j = 1; j <= n; ++j) {
    // Grow the last segment [i, j) leftwards while no pair in it is refused
    // outright. It is legal when every pair may fuse at the segment's rank,
    // the smallest of its calls' ranges (which only falls as it grows).
    int pairs_rank = std::numeric_limits<int>::max();
    size_t rank = calls[static_cast<size_t>(j - 1)].extents.size();
    for (int i = j - 1; i >= 0 && j - i <= kMaxSegmentCalls; --i) {
      for (int k = i + 1; k < j; ++k) pairs_rank = std::min<int>(pairs_rank, fuse_rank[static_cast<size_t>(i)][static_cast<size_t>(k)]);
      if (pairs_rank == 0) break;
      rank = std::min(rank, calls[static_cast<size_t>(i)].extents.size());
      if (pairs_rank < static_cast<int>(rank)) continue;
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
