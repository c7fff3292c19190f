#include "schedule/select.h"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>

#include "fusion/stitched_group.h"
#include "options/options.h"
#include "schedule/group_shared_memory.h"
#include "schedule/held_rows.h"
#include "schedule/plan_explain.h"
#include "stitch/error.h"

namespace stitch::schedule {

namespace {

constexpr int64_t kThreads = 256;


// The lowering's schedule for a ranked candidate, or nullopt for a strategy it
// does not implement (thread-per-row).
std::optional<RowSchedule> lowered_schedule(const KernelCandidate& k, int64_t static_len) {
  const std::optional<RowScheduleKind> kind = parse_row_schedule_kind(k.strategy);
  if (!kind) return std::nullopt;
  RowSchedule s{*kind, k.threads_per_block, kRowScheduleWarpSize};
  if (*kind == RowScheduleKind::MultiRowPerWarp) {
    const std::optional<int64_t> lanes = multi_row_lanes(static_len);
    if (!lanes) return std::nullopt;
    s.lanes = *lanes;
  }
  return s;
}

// Measured on the 2-core development machine with `stitch bench --row-schedule`
// (docs/schedule.md, Row schedules on the CPU): warp-per-row is as fast as
// block-per-row or faster on the bench workloads' rows of 1024 and 4096
// elements (best time lower on all four, median on three); on rows shorter
// than a warp multi-row-per-warp is the fastest for a one-phase reduction
// (reduce_sum 1M x 12: 19-24 ms against 37-60 ms), but a stitched group keeps
// its per-row values per thread across phases there and is fastest with a
// short block per row (softmax 1M x 8: 191-210 ms against 234-352 ms).
// Fewer rows than a block has warps (a full reduction's last stage: one row)
// would leave most warps re-reading the last row: a block per row instead.
RowSchedule cpu_schedule(int64_t rows, int64_t static_len, int phases) {
  const RowSchedule block{RowScheduleKind::BlockPerRow, kThreads, kRowScheduleWarpSize};
  if (std::optional<int64_t> lanes = multi_row_lanes(static_len)) {
    if (phases > 1) return block;
    return {RowScheduleKind::MultiRowPerWarp, kThreads, *lanes};
  }
  if (rows < kThreads / kRowScheduleWarpSize) return block;
  return {RowScheduleKind::WarpPerRow, kThreads, kRowScheduleWarpSize};
}

// The most warps a block (8, 4, 2 or 1) whose rows of `row_bytes` together
// fit in `limit_bytes`; 8 when either is unknown (<= 0).
int64_t warps_within(int64_t row_bytes, int64_t limit_bytes) {
  int64_t warps = kThreads / kRowScheduleWarpSize;
  if (row_bytes <= 0 || limit_bytes <= 0) return warps;
  while (warps > 1 && warps * row_bytes > limit_bytes) warps /= 2;
  return warps;
}

// The most warps a CPU block (8, 4, 2 or 1) whose held rows of `row_bytes`
// each fill at most a quarter of a core's L2: eight rows of a stitched
// LayerNorm over 16384 floats (512 KiB) ran 20.7 ms on the 1 MiB L2 of the
// 2-core EPYC, four (256 KiB) 17.5 ms; at 12288 floats 12.4 against 11.4 ms;
// at 8192 (256 KiB) eight and four tie (docs/schedule.md, Warps a block by
// the L2). `row_bytes` <= 0 (symbolic, or nothing held) keeps all eight.
int64_t cpu_warps_for_l2(int64_t row_bytes, int64_t l2_bytes) {
  return warps_within(row_bytes, l2_bytes / 4);
}

// The most warps a CPU block whose held rows of `row_bytes`, when a row
// fills at most a quarter of the L1 data cache, fill at most half of it:
// rows of a power-of-two length lie a multiple of 4 KiB apart, in the same L1
// sets, and eight of them evict each other. In one process on the 2-core
// EPYC (32 KiB L1): a stitched LayerNorm over rows of 1024 floats 1.03 ->
// 0.77 ms with four warps, over 2048 1.81 -> 1.69 ms with two; softmax over
// 1024 and 2048 within 4% (docs/schedule.md, Warps a block by the L1).
// Longer rows keep what the L2 rule gives: LayerNorm over 4096 floats ran
// 8-15% slower with fewer warps. So this rule leaves at least 2 warps.
int64_t cpu_warps_for_l1(int64_t row_bytes, int64_t l1_bytes) {
  if (row_bytes > l1_bytes / 4) return kThreads / kRowScheduleWarpSize;
  return warps_within(row_bytes, l1_bytes / 2);
}

// The bytes one warp of a stitched group re-reads between phases (its held
// row); -1 when symbolic.
int64_t cpu_held_row_bytes(const Graph& g, const FusionGroup& group, const StitchedDomain& domain) {
  const StitchedReread reread = stitched_reread(g, group.nodes, group.roots, domain);
  if (reread.reduced_extent < 0) return -1;
  return reread.bytes_per_element * reread.reduced_extent;
}

// A stitched group under warp-per-row on the CPU: the warps of a block (8,
// 4, 2 or 1) whose row caches hold the most values, the most warps among
// equals. Eight rows advancing together keep eight accumulator chains and
// prefetch streams going, but their row caches (softmax's exp: 16 KiB a row
// of 4096) may not fit the block's budget, and then every exp is computed
// twice; two rows that fit were measured faster (docs/schedule.md, Row
// schedules on the CPU: softmax 4096 x 4096, 6.5 -> 5.1 ms).
int64_t cpu_stitched_warps(const Graph& g, const FusionGroup& group, const StitchedDomain& domain,
                           int64_t budget_bytes) {
  constexpr int64_t kMostWarps = kThreads / kRowScheduleWarpSize;
  int64_t static_len = 1;
  for (size_t a : domain.axes) {
    if (!domain.shape[a].is_static()) return kMostWarps;  // no row cache for a symbolic row
    static_len *= domain.shape[a].extent();
  }
  int64_t best = kMostWarps;
  size_t best_cached = 0;
  for (int64_t warps = kMostWarps; warps >= 1; warps /= 2) {
    const StitchedLayout layout{static_len, warps, 0, budget_bytes};
    const size_t cached = plan_group_shared_memory(g, group, domain, layout).cached.size();
    if (cached > best_cached) best = warps, best_cached = cached;
  }
  return best;
}

// Reductions of the group that run one after the other over a row (a
// stitched softmax: 2); 1 for a reduction group.
int row_phases(const Graph& g, const FusionGroup& group) {
  if (group.kind != GroupKind::Stitched) return 1;
  int reductions = 0;
  for (int n : group.nodes) reductions += is_reduction(g.nodes()[static_cast<size_t>(n)].op) ? 1 : 0;
  return std::max(reductions, 1);
}

// A data cache of `level` as Linux describes the first CPU's (the share one
// core sees: a VM's L3 there is its CCX's, where sysconf may report the whole
// host's), else as the C library reports it (CPUID on x86); 0 when neither.
int64_t cpu_cache_bytes(int level) {
  for (int index = 0; index < 8; ++index) {
    const std::string dir = fmt::format("/sys/devices/system/cpu/cpu0/cache/index{}/", index);
    std::ifstream level_file(dir + "level"), type_file(dir + "type"), size_file(dir + "size");
    int file_level = 0;
    std::string type;
    int64_t kib = 0;
    char unit = 0;
    if (!(level_file >> file_level) || file_level != level || !(type_file >> type) || type == "Instruction") continue;
    if (size_file >> kib >> unit && kib > 0 && unit == 'K') return kib * 1024;
  }
  const long reported = sysconf(level == 1   ? _SC_LEVEL1_DCACHE_SIZE
                                : level == 2 ? _SC_LEVEL2_CACHE_SIZE
                                             : _SC_LEVEL3_CACHE_SIZE);
  return reported > 0 ? static_cast<int64_t>(reported) : 0;
}

bool cpu_is_amd() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  return __builtin_cpu_is("amd");
#else
  return false;
#endif
}

// The GPU model's time for a forced choice, from the candidate it lowers from.
void add_model_time(const GroupDescription& d, int64_t static_len, const RowScheduleTarget& target,
                    RowScheduleChoice& choice) {
  const std::optional<GpuTarget> gpu = target.ranking_target();
  if (!gpu) return;
  for (const KernelCandidate& k : enumerate_candidates(d, *gpu)) {
    if (lowered_schedule(k, static_len) != choice.schedule) continue;
    choice.model_seconds = target.model(d, k);
    choice.reason += fmt::format("; the {} model: {:.1f} us", target.model_name, choice.model_seconds * 1e6);
    return;
  }
}

// The GPU model's choice among the ranked candidates the lowering implements:
// the fastest by the model, ties to the latency evaluator's order; `evaluator`
// is the evaluator's own first choice, kept beside it.
RowScheduleChoice by_model(const GroupDescription& d, int64_t static_len, const RowScheduleTarget& target,
                           const std::vector<RankedCandidate>& ranking, RowScheduleChoice evaluator) {
  RowScheduleChoice best;
  for (size_t i = 0; i < ranking.size(); ++i) {
    const std::optional<RowSchedule> s = lowered_schedule(ranking[i].kernel, static_len);
    if (!s) continue;
    const double seconds = target.model(d, ranking[i].kernel);
    if (static_cast<int>(i) + 1 == evaluator.rank) evaluator.model_seconds = seconds;
    if (best.rank == 0 || seconds < best.model_seconds) {
      best.schedule = *s;
      best.rank = static_cast<int>(i) + 1;
      best.model_seconds = seconds;
    }
  }
  best.evaluator_choice = evaluator.schedule;
  best.reason = fmt::format("the {} model's fastest, {:.1f} us; rank {} of {} by the latency evaluator", target.model_name,
                            best.model_seconds * 1e6, best.rank, ranking.size());
  if (best.schedule != evaluator.schedule) {
    best.reason += fmt::format(", whose first, {}, the model puts at {:.1f} us", evaluator.schedule.describe(),
                               evaluator.model_seconds * 1e6);
  }
  return best;
}

// The rows of a stitched domain (the product of its axes not reduced), or -1
// when one of them is symbolic.
int64_t static_domain_rows(const StitchedDomain& domain) {
  int64_t rows = 1;
  for (const Dim& d : domain.outer_shape()) {
    if (!d.is_static()) return -1;
    rows *= d.extent();
  }
  return rows;
}

// The most warps (`warps`, halved down to 1) that divide `rows` (unknown: -1,
// `warps` as it is). A block past the last row guards its rows, and its last
// phase, the stores, then keeps the guard and the steps inside the lane loop,
// which GCC leaves scalar: a softmax over [1, 12, 197, 197] (2,364 rows) ran
// its stores in scalar code in blocks of 8 rows, and in vectors in blocks of 4
// (docs/schedule.md, Warps a block that divide the rows).
int64_t cpu_warps_dividing(int64_t rows, int64_t warps) {
  if (rows <= 0) return warps;
  while (warps > 1 && rows % warps != 0) warps /= 2;
  return warps;
}

}  // namespace

std::string RowScheduleTarget::name() const {
  std::string text = machine == Machine::Cpu ? "cpu" : gpu_arch;
  if (machine == Machine::Gpu && device) text += fmt::format(" ({}, {} SMs)", device->product, device->sm_count);
  if (forced) text += fmt::format(" (forced {})", row_schedule_kind_name(*forced));
  if (forced_column_groups > 0) text += fmt::format(" (column tiles of {} row groups)", forced_column_groups);
  return text;
}

// STITCH_STREAM_MIN_BYTES when set. Otherwise on AMD CPUs the L3 (an output
// it cannot hold leaves it anyway), elsewhere never. The 2-core EPYC ran
// every kernel measured faster with streaming stores, outputs reused (add
// 5.6 -> 4.0 ms, rmsnorm 4.3 -> 3.1, layernorm 4.9 -> 4.0, softmax 6.2 ->
// 5.3, swish 4.3 -> 3.9) and as fast or faster with fresh ones; the Xeon was
// 5-20% faster in one sitting and 25-60% slower in another, and slower with
// fresh outputs (docs/cpu-backend.md, Streaming stores). Choosing per machine
// by measurement is the tuner's.
int64_t RowScheduleTarget::default_stream_min_bytes() {
  if (const std::optional<int64_t> set = environment_options().stream_min_bytes) return *set;
  static const int64_t machine_default = [] {
    if (!cpu_is_amd()) return int64_t{-1};
    const int64_t l3 = cpu_cache_bytes(3);
    return l3 > 0 ? l3 : int64_t{32} << 20;
  }();
  return machine_default;
}

bool RowScheduleTarget::default_prefetch() {
  return environment_options().prefetch;
}

bool RowScheduleTarget::default_held_rows() {
  return environment_options().held_rows;
}

// The first CPU's L2 (cpu_cache_bytes), else 1 MiB.
int64_t RowScheduleTarget::default_cpu_l2_bytes() {
  static const int64_t bytes = [] {
    const int64_t l2 = cpu_cache_bytes(2);
    return l2 > 0 ? l2 : int64_t{1} << 20;
  }();
  return bytes;
}

// The first CPU's L1 data cache (cpu_cache_bytes), else 32 KiB.
int64_t RowScheduleTarget::default_cpu_l1_bytes() {
  static const int64_t bytes = [] {
    const int64_t l1 = cpu_cache_bytes(1);
    return l1 > 0 ? l1 : int64_t{32} << 10;
  }();
  return bytes;
}

int64_t RowScheduleTarget::shared_budget_bytes() const {
  constexpr int64_t kStatic = 48 * 1024;
  if (machine != Machine::Gpu || !device) return kStatic;
  return std::max(kStatic, device->shared_bytes_per_block_optin / 2 / 1024 * 1024);
}

std::optional<GpuTarget> RowScheduleTarget::ranking_target() const {
  if (device) return device;
  return schedule::gpu_target(gpu_arch);
}

RowScheduleChoice choose_row_schedule(const GroupDescription& d, int64_t static_len, const RowScheduleTarget& target,
                                      int phases) {
  RowScheduleChoice choice;
  if (target.forced) {
    choice.schedule = {*target.forced, kThreads, kRowScheduleWarpSize};
    choice.reason = fmt::format("forced by --row-schedule {}", row_schedule_kind_name(*target.forced));
    if (*target.forced == RowScheduleKind::MultiRowPerWarp) {
      if (std::optional<int64_t> lanes = multi_row_lanes(static_len)) {
        choice.schedule.lanes = *lanes;
      } else {
        choice.schedule.kind = RowScheduleKind::WarpPerRow;
        choice.reason += " (rows of 32 elements or more, or symbolic: warp-per-row)";
      }
    }
    if (target.machine == RowScheduleTarget::Machine::Gpu && target.model) add_model_time(d, static_len, target, choice);
    return choice;
  }
  if (target.machine == RowScheduleTarget::Machine::Cpu) {
    choice.schedule = cpu_schedule(d.rows, static_len, phases);
    choice.reason = "the CPU rule of docs/schedule.md, from one machine's measurements; not tuned here";
    return choice;
  }
  const std::optional<GpuTarget> gpu = target.ranking_target();
  const std::vector<RankedCandidate> ranking = gpu ? rank_candidates(d, *gpu) : std::vector<RankedCandidate>{};
  for (size_t i = 0; i < ranking.size(); ++i) {
    if (std::optional<RowSchedule> s = lowered_schedule(ranking[i].kernel, static_len)) {
      choice.schedule = *s;
      choice.rank = static_cast<int>(i) + 1;
      choice.reason = fmt::format("rank {} of {} on {}", choice.rank, ranking.size(), target.gpu_arch);
      return target.model ? by_model(d, static_len, target, ranking, std::move(choice)) : choice;
    }
  }
  choice.reason = fmt::format("no ranked candidate the lowering implements on {}: block-per-row", target.gpu_arch);
  return choice;
}

int64_t static_row_length(const Graph& g, const FusionGroup& group) {
  for (int r : group.roots) {
    const Node& n = g.nodes()[static_cast<size_t>(r)];
    if (!is_reduction(n.op) || !n.attrs.has("axes") || n.inputs.empty()) continue;
    const Shape& shape = g.type(n.inputs[0]).shape;
    int64_t len = 1;
    for (int64_t a : n.attrs.get("axes").as_ints()) {
      const Dim& d = shape[static_cast<size_t>(a < 0 ? a + static_cast<int64_t>(shape.size()) : a)];
      if (!d.is_static()) return -1;
      len *= d.extent();
    }
    return len;
  }
  return -1;
}

int64_t row_group_length(const Graph& g, const FusionGroup& group) {
  if (group.kind != GroupKind::Stitched) return static_row_length(g, group);
  StitchedDomain domain;
  if (!stitched_group_problem(g, group.nodes, group.roots, &domain).empty()) return -1;
  int64_t len = 1;
  for (size_t a : domain.axes) {
    if (!domain.shape[a].is_static()) return -1;
    len *= domain.shape[a].extent();
  }
  return len;
}

std::optional<RowScheduleChoice> choose_row_schedule(const Graph& g, const FusionGroup& group,
                                                     const RowScheduleTarget& target, const SymbolBindings& bindings) {
  if (group.kind != GroupKind::Reduction && group.kind != GroupKind::Stitched) return std::nullopt;
  auto described = describe_group(g, group, bindings);
  GroupDescription* d = std::get_if<GroupDescription>(&described);
  if (!d || d->pattern != GroupPattern::RowReduction) return std::nullopt;
  if (target.machine == RowScheduleTarget::Machine::Gpu && target.held_rows) {
    d->held_values = held_values_per_position(g, group);
  }
  const int64_t len = static_row_length(g, group);
  RowScheduleChoice choice = choose_row_schedule(*d, len, target, row_phases(g, group));
  if (target.machine != RowScheduleTarget::Machine::Cpu || target.forced ||
      choice.schedule.kind != RowScheduleKind::WarpPerRow) {
    return choice;
  }
  // A one-phase reduction keeps nothing between phases: one warp a block, so
  // that a core streams one row at a time (docs/schedule.md, Warps a block by
  // the L1: rows of 1024 floats 6.03 -> 4.07 ms, the dot's split stage 8.51
  // -> 7.96 ms on the 2-core EPYC).
  StitchedDomain domain;
  if (group.kind != GroupKind::Stitched || !stitched_group_problem(g, group.nodes, group.roots, &domain).empty()) {
    choice.schedule.threads = kRowScheduleWarpSize;
    choice.reason += "; 1 warp a block: a row is a stream of its own on the CPU";
    return choice;
  }
  int64_t warps = choice.schedule.threads / kRowScheduleWarpSize;
  const int64_t cached = cpu_stitched_warps(g, group, domain, target.shared_budget_bytes());
  if (cached < warps) {
    warps = cached;
    choice.reason += fmt::format("; {} warp(s) a block, so that the row caches fit", warps);
  }
  const int64_t row_bytes = cpu_held_row_bytes(g, group, domain);
  const int64_t l2_warps = cpu_warps_for_l2(row_bytes, target.cpu_l2_bytes);
  if (l2_warps < warps) {
    warps = l2_warps;
    choice.reason += fmt::format("; {} warp(s) a block, so that the rows it holds ({} KiB each) fill at most a "
                                 "quarter of the {} KiB L2",
                                 warps, row_bytes / 1024, target.cpu_l2_bytes / 1024);
  }
  const int64_t l1_warps = cpu_warps_for_l1(row_bytes, target.cpu_l1_bytes);
  if (l1_warps < warps) {
    warps = l1_warps;
    choice.reason += fmt::format("; {} warp(s) a block, so that its rows ({} KiB each) fill at most half the {} KiB L1",
                                 warps, row_bytes / 1024, target.cpu_l1_bytes / 1024);
  }
  const int64_t rows = static_domain_rows(domain);
  const int64_t dividing = cpu_warps_dividing(rows, warps);
  if (dividing < warps) {
    warps = dividing;
    choice.reason += fmt::format("; {} warp(s) a block, which divide the {} rows: no block runs past the last row",
                                 warps, rows);
  }
  choice.schedule.threads = warps * kRowScheduleWarpSize;
  return choice;
}

}  // namespace stitch::schedule
