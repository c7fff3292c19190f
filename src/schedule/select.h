// The row schedule the lowering uses for a row-reduction or stitched group
// (docs/schedule.md, Choosing the row schedule): on a GPU the best launchable
// candidate of the latency evaluator's ranking whose strategy the lowering
// implements; on the CPU a fixed rule from measurements on the development
// machine (not measured on the machine it runs on); or one kind forced from
// the command line (--row-schedule).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "fusion/fusion_plan.h"
#include "schedule/candidates.h"
#include "schedule/row_schedule.h"
#include "schedule/target.h"
#include "stitch/shape.h"

namespace stitch::schedule {

// Which machine the row schedules are chosen for.
struct RowScheduleTarget {
  enum class Machine : uint8_t { Cpu, Gpu };
  Machine machine = Machine::Cpu;
  std::string gpu_arch = "sm_90";         // Gpu: a table entry of gpu_target()
  // Gpu: the queried device (runtime/cuda/device.h) ranks instead of the
  // table entry when set; gpu_arch is then the device's.
  std::optional<GpuTarget> device;
  std::optional<RowScheduleKind> forced;  // every row group takes this kind
  // > 0: every column reduction (argmax/argmin aside) takes a block tile of
  // this many row groups x 32 columns (column_schedule.h); tests force it.
  int64_t forced_column_groups = 0;
  // Cpu: graph outputs of at least this many bytes that no other kernel
  // reads are written with streaming stores (lower/streaming_outputs.h);
  // negative: never. Default: STITCH_STREAM_MIN_BYTES, else the L3 on an
  // AMD CPU and never elsewhere.
  int64_t stream_min_bytes = default_stream_min_bytes();
  static int64_t default_stream_min_bytes();
  // Cpu: loop kernels prefetch the next block of the inputs they read in
  // order (docs/lowering.md, Prefetch); on unless STITCH_PREFETCH=0.
  bool prefetch = default_prefetch();
  static bool default_prefetch();
  // Loop groups whose transposes move the innermost axis to the
  // second-to-last take transpose tiles (lower/transpose_tiles.h: 16 x 16 on
  // the CPU, 32 x 32 on the GPU) instead of column strips; tests turn it off
  // to run the strips.
  bool transpose_tiles = true;
  // Gpu: stitched row kernels hold their rows in registers where they fit
  // (held_rows.h); tests and comparisons turn it off (STITCH_HELD_ROWS=0).
  bool held_rows = default_held_rows();
  static bool default_held_rows();
  // Cpu: the L2 of one core, in bytes (default_cpu_l2_bytes: the machine's).
  // A block under warp-per-row takes fewer warps when its rows would fill
  // more than a quarter of it (docs/schedule.md, Warps a block by the L2).
  int64_t cpu_l2_bytes = default_cpu_l2_bytes();
  static int64_t default_cpu_l2_bytes();
  // Cpu: the L1 data cache of one core, in bytes. A block under warp-per-row
  // whose rows each fill at most a quarter of it takes the warps whose rows
  // fill at most half (docs/schedule.md, Warps a block by the L1).
  int64_t cpu_l1_bytes = default_cpu_l1_bytes();
  static int64_t default_cpu_l1_bytes();

  // Gpu: the GPU model's analytical form (gpu_model/analytic.h; seconds for
  // a candidate of the group), which ranks the candidates the lowering
  // implements when set; the latency evaluator's ranking decides otherwise.
  // Set by gpu_model::with_row_model, which knows the targets it models;
  // `model_name` names that target ("h200").
  CandidateModel model = {};
  std::string model_name = {};

  static RowScheduleTarget cpu() { return {}; }
  static RowScheduleTarget gpu(std::string arch = "sm_90") { return {Machine::Gpu, std::move(arch), std::nullopt, std::nullopt, 0, -1}; }
  static RowScheduleTarget for_device(const GpuTarget& device) {
    return {Machine::Gpu, device.arch, device, std::nullopt, 0, -1};
  }
  // Shared memory a stitched kernel's block may use for row caches and
  // scratch: the static 48 KiB, or on a queried device half its opt-in
  // maximum, so that two blocks still fit on an SM.
  int64_t shared_budget_bytes() const;
  // The GpuTarget ranked on: the device when set, else gpu_arch's table entry.
  std::optional<GpuTarget> ranking_target() const;
  // "cpu", "sm_90", ...; with the forced kind when there is one.
  std::string name() const;
};

struct RowScheduleChoice {
  RowSchedule schedule;
  // Why: "rank 1 of 15 on sm_90", "the CPU rule of docs/schedule.md", "forced by --row-schedule",
  // "the h200 model's fastest: 41.2 us; ...".
  std::string reason;
  int rank = 0;  // 1-based rank in the latency evaluator's GPU ranking; 0 when not from a ranking
  // With a GPU model: its time for the chosen schedule, and the latency
  // evaluator's own first implementable choice (the reason gives the model's time for it).
  double model_seconds = 0;
  std::optional<RowSchedule> evaluator_choice;
};

// The choice for a row reduction described by `d`, whose rows have
// `static_len` elements (-1: symbolic; multi-row-per-warp needs a static row
// shorter than a warp) and are reduced `phases` times in sequence (a stitched
// group's reductions; the CPU's choice for short rows depends on it). A
// forced multi-row-per-warp on longer rows takes warp-per-row.
RowScheduleChoice choose_row_schedule(const GroupDescription& d, int64_t static_len, const RowScheduleTarget& target,
                                      int phases = 1);

// The choice for `group` of a plan, or nullopt when the group has no row
// path: not a reduction or stitched group, or not reducing the innermost
// axes. Symbols absent from `bindings` take describe_group's default extent.
std::optional<RowScheduleChoice> choose_row_schedule(const Graph& g, const FusionGroup& group,
                                                     const RowScheduleTarget& target,
                                                     const SymbolBindings& bindings = {});

// The row length of `group`'s first reduction root when every reduced
// extent is static, else -1.
int64_t static_row_length(const Graph& g, const FusionGroup& group);
// The static length of the row a row group's kernel strides over, as the
// lowering builds it: a stitched group's reduced domain, a reduction group's
// reduced axes; -1 when it is not static or the group has no row.
int64_t row_group_length(const Graph& g, const FusionGroup& group);

}  // namespace stitch::schedule
