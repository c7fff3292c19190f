#include "gpu_model/time_model.h"

#include <algorithm>
#include <cmath>

namespace stitch::gpu_model {

namespace {

double rate_of(const IssueRates& r, InstructionClass c) {
  switch (c) {
    case InstructionClass::Fp32: return r.fp32;
    case InstructionClass::Fp64: return r.fp64;
    case InstructionClass::Sfu: return r.sfu;
    case InstructionClass::Integer: return r.integer;
    case InstructionClass::Convert: return r.convert;
    case InstructionClass::GlobalLoad:
    case InstructionClass::GlobalStore:
    case InstructionClass::SharedLoad:
    case InstructionClass::SharedStore:
    case InstructionClass::LocalMemory:
    case InstructionClass::Atomic: return r.memory;
    case InstructionClass::Shuffle: return r.shuffle;
    case InstructionClass::Control:
    case InstructionClass::Barrier: return r.control;
    case InstructionClass::Other: return r.other;
  }
  return r.other;
}

}  // namespace

Prediction finish(const Terms& t, const FittedConstants& k) {
  Prediction p;
  p.terms = t;
  p.dram_s = t.dram_at_peak_s / k.dram_efficiency;
  p.l2_s = t.l2_s;
  p.issue_s = t.issue_s;
  p.latency_s = t.latency_unscaled_s * k.latency_scale;
  p.launch_s = k.launch_s;
  const double body = std::max({p.dram_s, p.l2_s, p.issue_s, p.latency_s});
  double combined = body;
  if (std::isfinite(k.overlap_power) && body > 0) {
    double sum = 0;
    for (double term : {p.dram_s, p.l2_s, p.issue_s, p.latency_s}) sum += std::pow(term / body, k.overlap_power);
    combined = body * std::pow(sum, 1 / k.overlap_power);
  }
  p.seconds = p.launch_s + combined;
  // The bound names the largest term of the kernel's body; the launch's fixed
  // cost is added to every launch and reported apart.
  p.bound = body == p.dram_s ? "dram" : body == p.latency_s ? "latency" : body == p.issue_s ? "issue" : "l2";
  return p;
}

Prediction predict(const KernelCounters& c, const schedule::Occupancy& occupancy, const GpuTarget& t,
                   const FittedConstants& k) {
  const double scale = c.scale();
  const double ctas = static_cast<double>(c.ctas_in_grid);
  const schedule::GpuTarget& d = t.device;
  const double sms = static_cast<double>(d.sm_count);
  const double held = sms * static_cast<double>(std::max<int64_t>(occupancy.blocks_per_sm, 1));
  const double sms_used = std::min(sms, ctas);
  Terms b;
  const double read = c.dram_read_bytes(), write = c.dram_write_bytes();
  b.dram_at_peak_s = (read + write) / d.memory_bytes_per_second;
  const double sectors = static_cast<double>(c.global_load.sectors + c.global_store.sectors + c.atomic.sectors);
  b.l2_s = sectors * 32 * scale / t.l2_bytes_per_s;
  std::string issue_class = "all";
  double total = 0;
  for (int i = 0; i < kInstructionClasses; ++i) total += static_cast<double>(c.issued[i]);
  b.issue_s = total * scale / (kIssuePerSmClock * sms_used * d.clock_hz);
  for (int i = 0; i < kInstructionClasses; ++i) {
    const auto cls = static_cast<InstructionClass>(i);
    const double s = static_cast<double>(c.issued[i]) * scale / (rate_of(t.issue, cls) * sms_used * d.clock_hz);
    if (s > b.issue_s) {
      b.issue_s = s;
      issue_class = class_name(cls);
    }
  }
  // Shared memory serves one wavefront a clock per SM.
  const double shared = static_cast<double>(c.shared_wavefronts) * scale / (sms_used * d.clock_hz);
  if (shared > b.issue_s) {
    b.issue_s = shared;
    issue_class = "shared_wavefronts";
  }
  const double warps_run = static_cast<double>(c.ctas_run) * std::max<uint32_t>(c.warps_per_cta, 1);
  const double batches = warps_run == 0 ? 0 : static_cast<double>(c.load_batches) / warps_run;
  const double dram_batches = warps_run == 0 ? 0 : static_cast<double>(c.load_batches_dram) / warps_run;
  const double waves = ctas / held;
  // A batch waits a DRAM round trip when one of its sectors misses the L2, else an L2 one.
  b.latency_unscaled_s =
      std::ceil(waves) * (dram_batches * t.dram_latency_s + (batches - dram_batches) * t.l2_latency_s);
  Prediction p = finish(b, k);
  p.dram_read_bytes = read;
  p.dram_write_bytes = write;
  p.waves = waves;
  p.batches_per_warp = batches;
  p.bytes_in_flight_per_warp =
      c.load_batches == 0 ? 0 : static_cast<double>(c.load_batch_bytes) / static_cast<double>(c.load_batches);
  p.issue_class = issue_class;
  return p;
}

double copy_seconds(const GpuTarget& t, const FittedConstants& k, double footprint_bytes) {
  const schedule::GpuTarget& d = t.device;
  const double sms = static_cast<double>(d.sm_count);
  const double elements = footprint_bytes / 2 / 16;
  const double ctas = std::ceil(elements / 256);
  const double ctas_per_sm = static_cast<double>(std::min<int64_t>(d.max_threads_per_sm / 256, d.max_blocks_per_sm));
  Terms b;
  b.dram_at_peak_s = footprint_bytes / d.memory_bytes_per_second;
  b.l2_s = footprint_bytes / t.l2_bytes_per_s;
  // About six instructions a thread: index, bounds check, load, store.
  b.issue_s = ctas * 8 * 6 / (kIssuePerSmClock * std::min(sms, ctas) * d.clock_hz);
  b.latency_unscaled_s = std::ceil(ctas / (sms * ctas_per_sm)) * t.dram_latency_s;
  return finish(b, k).seconds;
}

}  // namespace stitch::gpu_model
