// Candidate templates x launch dims for one fused group, ranked by the latency
// evaluator (paper 2019, Alg. 3's TemplatesGeneration + KernelEvalUpdate;
// docs/schedule.md, Candidates). This is what `stitch plan --explain` prints.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "schedule/latency.h"

namespace stitch::schedule {

enum class GroupPattern : uint8_t {
  Elementwise,      // `rows` independent elements (cols is 1)
  RowReduction,     // `rows` rows of `cols` contiguous elements, each row reduced to one value
  ColumnReduction,  // `rows` x `cols`, reduced over the rows: `cols` results, neighbours contiguous
};

std::string_view group_pattern_name(GroupPattern p);

// What the evaluator needs to know about a group: its iteration shape and
// what each element costs.
struct GroupDescription {
  GroupPattern pattern = GroupPattern::Elementwise;
  int64_t rows = 1;
  int64_t cols = 1;
  int64_t element_bytes = 4;
  int64_t inputs = 1;            // tensors read: one load per element each (broadcast ones hit in cache)
  int64_t outputs = 1;           // tensors written (reduced size for reductions)
  double alu_per_element = 0;    // cheap elementwise ops applied to each element read
  double sfu_per_element = 0;    // expensive ones (exp, log, division, ...)
  int64_t bytes = 0;             // DRAM bytes when known (the plan's cost model); 0: from the shape
  // Row reductions: how often a kernel that keeps nothing between phases reads
  // each row (a stitched softmax: the max, the sum, the output: 3); 1 for a
  // plain reduction (candidates.cpp, Re-read rows).
  int64_t passes = 1;
  // Row reductions: the inputs read a whole row per row (not broadcast along
  // it: LayerNorm's x, not its gamma); at least 1.
  int64_t row_inputs = 1;
  // GPU stitched rows: the values a thread holds in registers per row
  // position where the candidate's steps leave room (held_rows.h); 0: none.
  int64_t held_values = 0;

  int64_t bytes_moved() const;
  // The op's iteration domain for template validation.
  OpDomain domain() const;
  // "row reduction 1024 x 16384, 4-byte elements, 1 input, 1 output"
  std::string summary() const;
};

struct RankedCandidate {
  KernelCandidate kernel;
  LatencyEstimate estimate;
};

// Block sizes the enumeration tries.
inline constexpr int64_t kBlockSizes[] = {64, 128, 256, 512, 1024};

// Every strategy that applies to the group's pattern, at every block size,
// whose template validates against the group's domain and the target's limits.
std::vector<KernelCandidate> enumerate_candidates(const GroupDescription& group, const GpuTarget& target);

// The launchable candidates, best (lowest estimated latency) first; ties go to
// the block size nearest 256 threads, then by template text, so the ranking is
// deterministic.
std::vector<RankedCandidate> rank_candidates(const GroupDescription& group, const GpuTarget& target);

// Seconds for a candidate of a group: the GPU model's analytical form
// (gpu_model/analytic.h), which the schedule stage cannot call itself.
using CandidateModel = std::function<double(const GroupDescription&, const KernelCandidate&)>;

// A table, one line per candidate, best first; at most `limit` lines (0: all);
// with `model`, a column of its time for each candidate beside the latency evaluator's.
std::string render_ranking(const GroupDescription& group, const GpuTarget& target,
                           const std::vector<RankedCandidate>& ranking, size_t limit = 0,
                           const CandidateModel& model = {});

}  // namespace stitch::schedule
