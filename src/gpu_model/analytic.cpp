#include "gpu_model/analytic.h"

#include <algorithm>
#include <cmath>

#include "schedule/held_rows.h"
#include "schedule/row_schedule.h"

namespace stitch::gpu_model {

namespace {

// Warp instructions the generated code issues per operation the candidate
// counts (schedule/candidates.h, InstructionMix), from NVRTC's PTX of the row
// kernels: a load with its address arithmetic, an elementwise op, a special
// function with its range reduction (expf: ex2 and three FMAs), a shuffle
// step with its add, a barrier; and per loop step its index update, compare
// and branch; and per thread the index set-up and the parameters.
constexpr double kPerMemory = 3;
constexpr double kPerAlu = 1;
constexpr double kPerSfu = 4;
constexpr double kPerShared = 2;
constexpr double kPerSync = 1;
constexpr double kPerLoopStep = 3;
constexpr double kPerThread = 24;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

struct RowShape {
  int64_t rows_per_block = 1;
  int64_t steps_per_pass = 1;  // loop steps of one thread over its share of a row
};

RowShape row_shape(const schedule::GroupDescription& g, const schedule::KernelCandidate& k, int64_t warp) {
  const int64_t threads = k.threads_per_block, warps = std::max<int64_t>(threads / warp, 1);
  if (k.strategy == "block-per-row") return {1, ceil_div(g.cols, threads)};
  if (k.strategy == "warp-per-row") return {warps, ceil_div(g.cols, warp)};
  if (k.strategy == "multi-row-per-warp") {
    const int64_t lanes = schedule::multi_row_lanes(g.cols).value_or(warp);
    return {warps * (warp / lanes), ceil_div(g.cols, lanes)};
  }
  if (k.strategy == "thread-per-row") return {threads, g.cols};
  // Elementwise and column shapes: one pass, the candidate's own loads.
  return {1, std::max<int64_t>(static_cast<int64_t>(std::ceil(k.per_thread.memory)), 1)};
}

}  // namespace

AnalyticPrediction analytic_prediction(const GpuTarget& t, const FittedConstants& constants,
                                       const schedule::GroupDescription& g, const schedule::KernelCandidate& k) {
  const schedule::GpuTarget& d = t.device;
  AnalyticPrediction out;
  const RowShape shape = row_shape(g, k, d.warp_size);
  const int64_t extra = g.pattern == schedule::GroupPattern::RowReduction ? std::max<int64_t>(g.passes - 1, 0) : 0;
  // A stitched row whose values fit the thread's registers is held there
  // (schedule/held_rows.h): the first pass issues its loads unrolled, as one batch.
  const bool in_registers = extra > 0 && g.held_values > 0 && k.strategy != "thread-per-row" &&
                            shape.steps_per_pass * g.held_values <= schedule::held_values_limit(k.threads_per_block);
  const int64_t registers =
      k.registers_per_thread + (in_registers ? shape.steps_per_pass * g.held_values : 0);
  const schedule::Occupancy o = schedule::occupancy(d, k.threads_per_block, registers, k.shared_bytes_per_block);
  const double sms = static_cast<double>(d.sm_count);
  const double blocks = static_cast<double>(std::max<int64_t>(k.blocks, 1));
  const double held = sms * static_cast<double>(std::max<int64_t>(o.blocks_per_sm, 1));
  const double sms_used = std::min(sms, blocks);

  // Later passes over a row: from the block's shared-memory copy (the
  // candidate put it there), else from the L2 when what the resident CTAs
  // touch in one pass fits it (the simulated L2 model's reuse distance),
  // else from DRAM again.
  const double row_bytes = static_cast<double>(g.cols * g.element_bytes * std::max<int64_t>(g.row_inputs, 1));
  const double reread_bytes = static_cast<double>(extra) * static_cast<double>(g.rows) * row_bytes;
  if (in_registers) {
    out.rereads = RereadSource::Registers;
  } else if (extra > 0) {
    const bool cached = k.strategy == "block-per-row" && static_cast<double>(k.shared_bytes_per_block) >= row_bytes;
    const double distance = static_cast<double>(shape.rows_per_block) * row_bytes * held;
    out.rereads = cached                                        ? RereadSource::SharedCache
                  : distance <= static_cast<double>(d.l2_bytes) ? RereadSource::L2
                                                                : RereadSource::Dram;
  }
  const double first_bytes = static_cast<double>(g.bytes_moved()) * k.fetch_per_useful_byte;
  const bool reread_memory = out.rereads == RereadSource::L2 || out.rereads == RereadSource::Dram;
  const double dram_bytes = first_bytes + (out.rereads == RereadSource::Dram ? reread_bytes : 0);

  Terms terms;
  terms.dram_at_peak_s = dram_bytes / d.memory_bytes_per_second;
  terms.l2_s = (first_bytes + (reread_memory ? reread_bytes : 0)) / t.l2_bytes_per_s;
  const schedule::InstructionMix& n = k.per_thread;
  const double passes = static_cast<double>(1 + extra);
  const double per_thread = kPerThread + kPerLoopStep * static_cast<double>(shape.steps_per_pass) * passes +
                            kPerMemory * n.memory + kPerAlu * n.alu + kPerSfu * n.sfu + kPerShared * n.shared +
                            kPerSync * n.sync;
  const double warps = blocks * static_cast<double>(ceil_div(k.threads_per_block, d.warp_size));
  const double clock = d.clock_hz * sms_used;
  terms.issue_s = std::max(warps * per_thread / (kIssuePerSmClock * clock), warps * n.sfu / (t.issue.sfu * clock));
  // One batch of loads a loop step; a later pass's batches wait an L2 or a
  // DRAM round trip as its bytes come from one or the other.
  const double steps = in_registers ? 1 : static_cast<double>(shape.steps_per_pass);
  const double dram_batches = steps * (1 + (out.rereads == RereadSource::Dram ? static_cast<double>(extra) : 0));
  const double l2_batches = out.rereads == RereadSource::L2 ? steps * static_cast<double>(extra) : 0;
  const double waves = blocks / held;
  terms.latency_unscaled_s = std::ceil(waves) * (dram_batches * t.dram_latency_s + l2_batches * t.l2_latency_s);

  out.prediction = finish(terms, constants);
  out.prediction.dram_read_bytes = dram_bytes;  // reads and writes together: the description does not split them
  out.prediction.waves = waves;
  out.prediction.batches_per_warp = dram_batches + l2_batches;
  out.prediction.issue_class = "all";
  return out;
}

std::optional<GpuTarget> model_target_for(const schedule::GpuTarget& device) {
  if (device.arch != "sm_90") return std::nullopt;
  std::optional<GpuTarget> best;
  for (const std::string& name : target_names()) {
    std::optional<GpuTarget> t = target_named(name);
    if (!best || std::abs(t->device.memory_bytes_per_second - device.memory_bytes_per_second) <
                     std::abs(best->device.memory_bytes_per_second - device.memory_bytes_per_second)) {
      best = std::move(t);
    }
  }
  best->device = device;
  return best;
}

schedule::RowScheduleTarget with_row_model(schedule::RowScheduleTarget rows, const std::string& target_name) {
  if (rows.machine != schedule::RowScheduleTarget::Machine::Gpu) return rows;
  const std::optional<schedule::GpuTarget> device = rows.ranking_target();
  const std::optional<GpuTarget> target = !target_name.empty() ? target_or_error(target_name, "the GPU model's target")
                                          : device                ? model_target_for(*device)
                                                                  : std::nullopt;
  if (!target) return rows;
  const FittedConstants constants = fitted_constants(*target);
  rows.model_name = target->name;
  rows.model = [target = *target, constants](const schedule::GroupDescription& g, const schedule::KernelCandidate& k) {
    return analytic_prediction(target, constants, g, k).prediction.seconds;
  };
  return rows;
}

}  // namespace stitch::gpu_model
