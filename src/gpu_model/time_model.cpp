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

// Four schedulers per SM each issue one warp instruction a clock.
constexpr double kIssuePerSmClock = 4;

struct Bounds {
  double dram, l2, issue, latency;
};

Prediction combine(const Bounds& b, double launch_s) {
  Prediction p;
  p.dram_s = b.dram;
  p.l2_s = b.l2;
  p.issue_s = b.issue;
  p.latency_s = b.latency;
  p.launch_s = launch_s;
  const double body = std::max({b.dram, b.l2, b.issue, b.latency});
  p.seconds = launch_s + body;
  // The bound names the largest term of the kernel's body; the launch's fixed
  // cost is added to every launch and reported apart.
  p.bound = body == b.dram ? "dram" : body == b.latency ? "latency" : body == b.issue ? "issue" : "l2";
  return p;
}

}  // namespace

Prediction predict(const KernelCounters& c, const schedule::Occupancy& occupancy, const GpuTarget& t,
                   const FittedConstants& k) {
  const double scale = c.scale();
  const double ctas = static_cast<double>(c.ctas_in_grid);
  const schedule::GpuTarget& d = t.device;
  const double sms = static_cast<double>(d.sm_count);
  const double held = sms * static_cast<double>(std::max<int64_t>(occupancy.blocks_per_sm, 1));
  const double sms_used = std::min(sms, ctas);
  Bounds b{};
  const double read = c.dram_read_bytes(), write = c.dram_write_bytes();
  b.dram = (read + write) / (d.memory_bytes_per_second * k.dram_efficiency);
  const double sectors = static_cast<double>(c.global_load.sectors + c.global_store.sectors + c.atomic.sectors);
  b.l2 = sectors * 32 * scale / t.l2_bytes_per_s;
  std::string issue_class = "all";
  double total = 0;
  for (int i = 0; i < kInstructionClasses; ++i) total += static_cast<double>(c.issued[i]);
  b.issue = total * scale / (kIssuePerSmClock * sms_used * d.clock_hz);
  for (int i = 0; i < kInstructionClasses; ++i) {
    const auto cls = static_cast<InstructionClass>(i);
    const double s = static_cast<double>(c.issued[i]) * scale / (rate_of(t.issue, cls) * sms_used * d.clock_hz);
    if (s > b.issue) {
      b.issue = s;
      issue_class = class_name(cls);
    }
  }
  // Shared memory serves one wavefront a clock per SM.
  const double shared = static_cast<double>(c.shared_wavefronts) * scale / (sms_used * d.clock_hz);
  if (shared > b.issue) {
    b.issue = shared;
    issue_class = "shared_wavefronts";
  }
  const double warps_run = static_cast<double>(c.ctas_run) * std::max<uint32_t>(c.warps_per_cta, 1);
  const double batches = warps_run == 0 ? 0 : static_cast<double>(c.load_batches) / warps_run;
  const double waves = ctas / held;
  b.latency = std::ceil(waves) * batches * t.dram_latency_s * k.latency_scale;
  Prediction p = combine(b, k.launch_s);
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
  Bounds b{};
  b.dram = footprint_bytes / (d.memory_bytes_per_second * k.dram_efficiency);
  b.l2 = footprint_bytes / t.l2_bytes_per_s;
  b.issue = ctas * 8 * 6 / (kIssuePerSmClock * std::min(sms, ctas) * d.clock_hz);
  b.latency = std::ceil(ctas / (sms * ctas_per_sm)) * t.dram_latency_s * k.latency_scale;
  return combine(b, k.launch_s).seconds;
}

}  // namespace stitch::gpu_model
