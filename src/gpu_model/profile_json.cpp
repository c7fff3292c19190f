#include "gpu_model/profile_json.h"

#include <fmt/format.h>

namespace stitch::gpu_model {

using json = nlohmann::ordered_json;

namespace {

json access_json(const AccessCounts& a) {
  return {{"requests", a.requests}, {"bytes", a.bytes}, {"sectors", a.sectors}, {"lines", a.lines}};
}

}  // namespace

json profile_json(const KernelProfile& p) {
  const KernelCounters& c = p.counters;
  const Prediction& m = p.prediction;
  json issued = json::object();
  for (int i = 0; i < kInstructionClasses; ++i) {
    if (c.issued[i] != 0) issued[class_name(static_cast<InstructionClass>(i))] = c.issued[i];
  }
  json out = {
      {"kernel", p.kernel},
      {"target", p.target},
      {"grid", p.config.grid},
      {"block", p.config.block},
      {"predicted_s", m.seconds},
      {"bound", m.bound},
      {"footprint_bytes", p.footprint_bytes},
      {"copy_predicted_s", p.copy_s},
      {"predicted_of_copy", m.seconds > 0 ? p.copy_s / m.seconds : 0.0},
      {"dram_read_bytes", m.dram_read_bytes},
      {"dram_write_bytes", m.dram_write_bytes},
      {"sectors_per_request", c.sectors_per_request()},
      {"registers", p.registers_used},
      {"registers_source", p.resources.known ? p.resources.source
                                             : fmt::format("assumed {} ({})", p.registers_used, p.resources.source)},
      {"spill_store_bytes", p.resources.spill_store_bytes},
      {"spill_load_bytes", p.resources.spill_load_bytes},
      {"shared_bytes_per_cta", p.shared_bytes},
      {"occupancy", p.occupancy.fraction},
      {"ctas_per_sm", p.occupancy.blocks_per_sm},
      {"occupancy_limit", schedule::occupancy_limit_name(p.occupancy.limit)},
      {"times_s", {{"dram", m.dram_s}, {"l2", m.l2_s}, {"issue", m.issue_s}, {"latency", m.latency_s},
                   {"launch", m.launch_s}}},
      {"terms_s", {{"dram_at_peak", m.terms.dram_at_peak_s}, {"l2", m.terms.l2_s}, {"issue", m.terms.issue_s},
                   {"latency_unscaled", m.terms.latency_unscaled_s}}},
      {"issue_class", m.issue_class},
      {"waves", m.waves},
      {"batches_per_warp", m.batches_per_warp},
      {"bytes_in_flight_per_warp", m.bytes_in_flight_per_warp},
      {"sampling", {{"ctas_in_grid", c.ctas_in_grid}, {"ctas_run", c.ctas_run}, {"scale", c.scale()},
                    {"method", "the first and last quarter of the budget's CTAs and the rest evenly spaced; per-CTA "
                               "counts times scale, sectors touched by several sampled CTAs counted once"},
                    {"interpreted_s", p.interpreted_s}}},
      {"counters", {{"issued", issued},
                    {"thread_instructions", c.thread_instructions},
                    {"global_load", access_json(c.global_load)},
                    {"global_store", access_json(c.global_store)},
                    {"atomic", access_json(c.atomic)},
                    {"local", access_json(c.local)},
                    {"shared_requests", c.shared_requests},
                    {"shared_wavefronts", c.shared_wavefronts},
                    {"barriers", c.barriers},
                    {"access_width_bytes", {{"1", c.access_width[0]}, {"2", c.access_width[1]}, {"4", c.access_width[2]},
                                            {"8", c.access_width[3]}, {"16", c.access_width[4]}}},
                    {"l2_reread_hits", c.l2_reread_hits},
                    {"l2_reread_misses", c.l2_reread_misses}}},
  };
  return out;
}

}  // namespace stitch::gpu_model
