#include "schedule/candidates.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdlib>

#include "schedule/row_schedule.h"

namespace stitch::schedule {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
double log2_of(int64_t n) { return n <= 1 ? 0.0 : static_cast<double>(std::bit_width(static_cast<uint64_t>(n - 1))); }

// Registers a thread of these simple loops needs: addressing, the loop, the
// accumulator and a few unrolled loads; the emitters stay well below this.
constexpr int64_t kRegistersPerThread = 32;
// Bytes of one partial result in shared memory (an fp32 or a 32-bit index).
constexpr int64_t kPartialBytes = 4;
// DRAM sectors are this many bytes: a warp touching scattered elements
// fetches a whole sector for each (CUDA C++ Best Practices Guide, coalescing).
constexpr int64_t kSectorBytes = 32;

KernelCandidate make(std::string strategy, const std::string& text, int64_t blocks, int64_t threads,
                     const GroupDescription& g) {
  KernelCandidate k;
  k.strategy = std::move(strategy);
  k.schedule = parse_template(text);
  k.blocks = blocks;
  k.threads_per_block = threads;
  k.registers_per_thread = kRegistersPerThread;
  k.bytes_moved = g.bytes_moved();
  return k;
}

// The work of reading `n` elements per thread and applying the group's ops.
void read_elements(KernelCandidate& k, const GroupDescription& g, double n) {
  k.per_thread.memory += n * static_cast<double>(g.inputs);
  k.per_thread.alu += n * g.alu_per_element;
  k.per_thread.sfu += n * g.sfu_per_element;
}

// Re-read rows. A stitched group's kernel passes over each row g.passes
// times (softmax: the max, the sum, the output). Under a block per row the
// row is cached in shared memory when it fits a block's static shared memory
// (docs/shared-memory.md, Stitched kernels), so only the first pass reads
// DRAM. Otherwise every later pass reads the row again: from the L1 when the
// rows resident on an SM fit the L1 left beside their blocks' shared memory,
// else from L2/DRAM, as more DRAM bytes and memory instructions. Half the L1
// counts: the carve-out does not give the L1 all of the array, and other
// lines (outputs, broadcast operands) share it; rows of 1024 floats, 64 per
// SM (the whole 256 KiB), already ran as fast block-per-row as warp-per-row.
// Measured on an H200 (bench/results/gpu-2026-11-26-h200-b-rows.json):
// softmax over rows of 4096 floats ran at 0.24 of copy warp-per-row (64 rows
// of 16 KiB resident per SM) and 0.91 block-per-row; rows of 512 floats at
// 0.71 and 0.42.
void account_rereads(KernelCandidate& k, const GroupDescription& g, const GpuTarget& t, int64_t rows_per_block,
                     double loads_per_pass, bool block_per_row) {
  const int64_t extra = g.passes - 1;
  if (extra <= 0) return;
  const int64_t row_bytes = g.cols * g.element_bytes * g.row_inputs;
  const double reread_loads = loads_per_pass * static_cast<double>(g.row_inputs * extra);
  if (block_per_row && row_bytes + k.shared_bytes_per_block <= t.shared_bytes_per_block) {
    k.shared_bytes_per_block += row_bytes;
    // The later passes, and the stores that fill the cache.
    k.per_thread.shared += reread_loads + loads_per_pass * static_cast<double>(g.row_inputs);
    return;
  }
  const Occupancy o = occupancy(t, k.threads_per_block, k.registers_per_thread, k.shared_bytes_per_block);
  const int64_t l1_bytes = (t.l1_shared_bytes_per_sm - o.blocks_per_sm * k.shared_bytes_per_block) / 2;
  if (o.blocks_per_sm * rows_per_block * row_bytes <= l1_bytes) {
    k.per_thread.shared += reread_loads;  // L1 hits: a shared-memory load's cost
    return;
  }
  k.per_thread.memory += reread_loads;
  k.bytes_moved += extra * g.rows * row_bytes;
}

void row_reduction(const GroupDescription& g, const GpuTarget& t, std::vector<KernelCandidate>& out) {
  const int64_t m = g.rows, l = g.cols, warp = t.warp_size;
  for (int64_t threads : kBlockSizes) {
    const int64_t warps = threads / warp;
    // Block per row: the block's threads stride over the row, then a warp
    // shuffle tree, partials through shared memory, and warp 0 combines them.
    if (threads <= std::max<int64_t>(64, ceil_div(l, warp) * warp)) {
      KernelCandidate k = make("block-per-row", "[GRID,CTA];", m, threads, g);
      const double n = static_cast<double>(ceil_div(l, threads));
      read_elements(k, g, n);
      k.per_thread.alu += n;  // accumulate
      k.per_thread.shared = log2_of(warp) + 2 + log2_of(warps);
      k.per_thread.sync = 1;
      k.per_thread.memory += static_cast<double>(g.outputs);
      k.shared_bytes_per_block = warps * kPartialBytes;
      account_rereads(k, g, t, 1, n, true);
      out.push_back(std::move(k));
    }
    // Warp per row: each warp owns a row, its lanes stride over it, and one
    // shuffle tree reduces it: no barrier, no shared memory.
    {
      KernelCandidate k = make("warp-per-row", fmt::format("[GRID-WARP_{},CTA];", warps), ceil_div(m, warps), threads, g);
      const double n = static_cast<double>(ceil_div(l, warp));
      read_elements(k, g, n);
      k.per_thread.alu += n;
      k.per_thread.shared = log2_of(warp);
      k.per_thread.memory += static_cast<double>(g.outputs);
      account_rereads(k, g, t, warps, n, false);
      out.push_back(std::move(k));
    }
    // Rows shorter than a warp: `rows_per_warp` rows share a warp, each on a
    // power-of-two group of lanes.
    if (const std::optional<int64_t> segment = multi_row_lanes(l); segment && warp == kRowScheduleWarpSize) {
      const int64_t lanes = *segment;
      const int64_t rows_per_warp = warp / lanes;
      KernelCandidate k = make("multi-row-per-warp", fmt::format("[GRID-WARP_{}-CTA_{},CTA];", warps, rows_per_warp),
                               ceil_div(m, warps * rows_per_warp), threads, g);
      const double n = static_cast<double>(ceil_div(l, lanes));
      read_elements(k, g, n);
      k.per_thread.alu += n;
      k.per_thread.shared = log2_of(lanes);
      k.per_thread.memory += static_cast<double>(g.outputs);
      account_rereads(k, g, t, warps * rows_per_warp, n, false);
      out.push_back(std::move(k));
    }
    // Thread per row (paper §5.2's THREAD: a reduction treated as elementwise):
    // lanes read elements a row apart, so a warp's load touches up to 32 sectors.
    {
      KernelCandidate k = make("thread-per-row", fmt::format("[GRID-CTA_{},THREAD];", threads), ceil_div(m, threads),
                               threads, g);
      const double n = static_cast<double>(l);
      read_elements(k, g, n);
      k.per_thread.alu += n;
      k.per_thread.memory += static_cast<double>(g.outputs);
      const int64_t sectors = std::min(warp, ceil_div(warp * l * g.element_bytes, kSectorBytes));
      k.fetch_per_useful_byte =
          std::max(1.0, static_cast<double>(sectors * kSectorBytes) / static_cast<double>(warp * g.element_bytes));
      account_rereads(k, g, t, threads, n, false);
      out.push_back(std::move(k));
    }
  }
}

void column_reduction(const GroupDescription& g, std::vector<KernelCandidate>& out) {
  const int64_t r = g.rows, c = g.cols;
  for (int64_t threads : kBlockSizes) {
    // Thread per column: neighbouring threads read neighbouring columns
    // (coalesced) and walk down the rows alone.
    {
      KernelCandidate k = make("thread-per-column", fmt::format("[THREAD,GRID-CTA_{}];", threads),
                               ceil_div(c, threads), threads, g);
      const double n = static_cast<double>(r);
      read_elements(k, g, n);
      k.per_thread.alu += n;
      k.per_thread.memory += static_cast<double>(g.outputs);
      out.push_back(std::move(k));
    }
    // Block tile: `row_groups` groups of `width` threads split the rows, then
    // combine their partials through shared memory.
    for (int64_t width : {32, 64, 128}) {
      const int64_t row_groups = threads / width;
      if (row_groups < 2) continue;
      KernelCandidate k = make("block-tile-column",
                               fmt::format("[THREAD-CTA_{},GRID-CTA_{}];", row_groups, width), ceil_div(c, width),
                               threads, g);
      const double n = static_cast<double>(ceil_div(r, row_groups));
      read_elements(k, g, n);
      k.per_thread.alu += n + static_cast<double>(row_groups);
      k.per_thread.shared = 1 + static_cast<double>(row_groups);
      k.per_thread.sync = 1;
      k.per_thread.memory += static_cast<double>(g.outputs);
      k.shared_bytes_per_block = threads * kPartialBytes;
      out.push_back(std::move(k));
    }
  }
}

void elementwise(const GroupDescription& g, std::vector<KernelCandidate>& out) {
  const int64_t n = g.rows * g.cols;
  for (int64_t threads : kBlockSizes) {
    for (int64_t per_thread : {1, 2, 4}) {
      const std::string text = per_thread == 1 ? fmt::format("[GRID-CTA_{}];", threads)
                                               : fmt::format("[GRID-CTA_{}-THREAD_{}];", threads, per_thread);
      KernelCandidate k = make(per_thread == 1 ? "element-per-thread" : fmt::format("{}-elements-per-thread", per_thread),
                               text, ceil_div(n, threads * per_thread), threads, g);
      const double v = static_cast<double>(per_thread);
      read_elements(k, g, v);
      k.per_thread.memory += v * static_cast<double>(g.outputs);
      out.push_back(std::move(k));
    }
  }
  // Fewer elements than the smallest block: one block, a thread each.
  if (n < kBlockSizes[0]) {
    KernelCandidate k = make("one-block", "[CTA];", 1, std::max<int64_t>(n, 1), g);
    read_elements(k, g, 1);
    k.per_thread.memory += static_cast<double>(g.outputs);
    out.push_back(std::move(k));
  }
}

}  // namespace

std::string_view group_pattern_name(GroupPattern p) {
  switch (p) {
    case GroupPattern::Elementwise: return "elementwise";
    case GroupPattern::RowReduction: return "row reduction";
    case GroupPattern::ColumnReduction: return "column reduction";
  }
  return "";
}

int64_t GroupDescription::bytes_moved() const {
  if (bytes > 0) return bytes;
  const int64_t full = rows * cols * element_bytes;
  switch (pattern) {
    case GroupPattern::Elementwise: return (inputs + outputs) * full;
    case GroupPattern::RowReduction: return inputs * full + outputs * rows * element_bytes;
    case GroupPattern::ColumnReduction: return inputs * full + outputs * cols * element_bytes;
  }
  return 0;
}

OpDomain GroupDescription::domain() const {
  OpDomain d;
  d.name = std::string(group_pattern_name(pattern));
  d.element_bytes = element_bytes;
  switch (pattern) {
    case GroupPattern::Elementwise: d.dims = {LoopDim{rows * cols, false}}; break;
    case GroupPattern::RowReduction: d.dims = {LoopDim{rows, false}, LoopDim{cols, true}}; break;
    case GroupPattern::ColumnReduction: d.dims = {LoopDim{rows, true}, LoopDim{cols, false}}; break;
  }
  return d;
}

std::string GroupDescription::summary() const {
  const std::string shape = pattern == GroupPattern::Elementwise ? fmt::format("{}", rows * cols)
                                                                 : fmt::format("{} x {}", rows, cols);
  std::string text = fmt::format("{} {}, {}-byte elements, {} input{}, {} output{}", group_pattern_name(pattern),
                                 shape, element_bytes, inputs, inputs == 1 ? "" : "s", outputs, outputs == 1 ? "" : "s");
  if (passes > 1) text += fmt::format(", {} passes over each row", passes);
  return text;
}

std::vector<KernelCandidate> enumerate_candidates(const GroupDescription& group, const GpuTarget& target) {
  std::vector<KernelCandidate> all;
  switch (group.pattern) {
    case GroupPattern::Elementwise: elementwise(group, all); break;
    case GroupPattern::RowReduction: row_reduction(group, target, all); break;
    case GroupPattern::ColumnReduction: column_reduction(group, all); break;
  }
  const OpDomain domain = group.domain();
  std::vector<KernelCandidate> valid;
  for (KernelCandidate& k : all) {
    // A tile that covers more than the dimension (4 rows per block for 2 rows) is not a candidate.
    if (k.threads_per_block > target.max_threads_per_block) continue;
    if (!schedule_problem(k.schedule.schedules.front(), domain, target.limits()).empty()) continue;
    valid.push_back(std::move(k));
  }
  return valid;
}

std::vector<RankedCandidate> rank_candidates(const GroupDescription& group, const GpuTarget& target) {
  std::vector<RankedCandidate> ranked;
  for (KernelCandidate& k : enumerate_candidates(group, target)) {
    LatencyEstimate e = estimate_latency(target, k);
    if (e.launchable) ranked.push_back({std::move(k), e});
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const RankedCandidate& a, const RankedCandidate& b) {
    if (a.estimate.cycles != b.estimate.cycles) return a.estimate.cycles < b.estimate.cycles;
    const auto from_256 = [](int64_t threads) { return std::abs(static_cast<int>(std::bit_width(static_cast<uint64_t>(threads))) - 9); };
    if (from_256(a.kernel.threads_per_block) != from_256(b.kernel.threads_per_block))
      return from_256(a.kernel.threads_per_block) < from_256(b.kernel.threads_per_block);
    return print_template(a.kernel.schedule) < print_template(b.kernel.schedule);
  });
  return ranked;
}

std::string render_ranking(const GroupDescription& group, const GpuTarget& target,
                           const std::vector<RankedCandidate>& ranking, size_t limit, const CandidateModel& model) {
  std::string out = fmt::format("{} on {} ({}): {} candidates, best first\n", group.summary(), target.arch,
                                target.product, ranking.size());
  out += fmt::format("  {:>4} {:>12} {:>5} {:>8} {:>7} {:>6} {:<9} {:>6}  ", "rank", "latency_us", "waves", "blocks",
                     "threads", "blk/SM", "limit", "CPI");
  out += model ? fmt::format("{:>8}  {:<20} {}\n", "model_us", "strategy", "template")
               : fmt::format("{:<20} {}\n", "strategy", "template");
  for (size_t i = 0; i < ranking.size() && (limit == 0 || i < limit); ++i) {
    const KernelCandidate& k = ranking[i].kernel;
    const LatencyEstimate& e = ranking[i].estimate;
    out += fmt::format("  {:>4} {:>12.3f} {:>5} {:>8} {:>7} {:>6} {:<9} {:>6.1f}  ", i + 1, e.seconds * 1e6, e.waves,
                       k.blocks, k.threads_per_block, e.occ.blocks_per_sm, occupancy_limit_name(e.occ.limit), e.cpi);
    if (model) out += fmt::format("{:>8.1f}  ", model(group, k) * 1e6);
    out += fmt::format("{:<20} {}\n", k.strategy, print_template(k.schedule));
  }
  if (limit != 0 && ranking.size() > limit) out += fmt::format("  ... {} more\n", ranking.size() - limit);
  return out;
}

}  // namespace stitch::schedule
