#include "gpu_model/counters.h"

#include <algorithm>
#include <bit>

namespace stitch::gpu_model {

using ptx::sim::DInst;
using ptx::sim::MemoryAccess;
using ptx::sim::OperandKind;
using ptx::sim::Space;

const char* class_name(InstructionClass c) {
  static constexpr const char* kNames[kInstructionClasses] = {
      "fp32", "fp64", "sfu", "integer", "convert", "global_load", "global_store", "shared_load",
      "shared_store", "local", "atomic", "shuffle", "control", "barrier", "other"};
  return kNames[static_cast<int>(c)];
}

namespace {

bool starts(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }

std::string_view opcode_of(std::string_view text) { return text.substr(0, text.find('.')); }

std::string_view last_part(std::string_view text) {
  const size_t dot = text.rfind('.');
  return dot == std::string_view::npos ? std::string_view{} : text.substr(dot + 1);
}

bool is_one_of(std::string_view op, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), op) != names.end();
}

}  // namespace

InstructionClass class_of(std::string_view text, const MemoryAccess* access) {
  const std::string_view op = opcode_of(text);
  if (access != nullptr) {
    if (access->atomic) return InstructionClass::Atomic;
    if (access->space == Space::Local) return InstructionClass::LocalMemory;
    if (access->space == Space::Shared) return access->write ? InstructionClass::SharedStore : InstructionClass::SharedLoad;
    return access->write ? InstructionClass::GlobalStore : InstructionClass::GlobalLoad;
  }
  if (is_one_of(op, {"bra", "ret", "exit", "call", "trap", "brx"})) return InstructionClass::Control;
  if (is_one_of(op, {"bar", "barrier", "membar", "fence"})) return InstructionClass::Barrier;
  if (is_one_of(op, {"shfl", "vote", "match", "redux", "activemask"})) return InstructionClass::Shuffle;
  // The multi-function unit: approximations, and the IEEE division and square
  // root that ptxas builds around one (a reciprocal and Newton steps).
  if (is_one_of(op, {"ex2", "lg2", "rcp", "rsqrt", "sin", "cos", "tanh"}) ||
      (is_one_of(op, {"sqrt", "div"}) && (last_part(text) == "f32" || last_part(text) == "f64"))) {
    return last_part(text) == "f64" && !starts(text, "rcp.approx") ? InstructionClass::Fp64 : InstructionClass::Sfu;
  }
  if (op == "cvt") {
    // A conversion between integers of the same width class is a move; others use the conversion unit.
    return InstructionClass::Convert;
  }
  if (is_one_of(op, {"ld", "ldu", "st", "mov", "cvta", "prefetch", "isspacep", "nanosleep"})) {
    return op == "cvta" ? InstructionClass::Integer : InstructionClass::Other;
  }
  const std::string_view type = last_part(text);
  if (type == "f64") return InstructionClass::Fp64;
  if (starts(type, "f") || starts(type, "bf")) return InstructionClass::Fp32;  // f32, f16, f16x2, bf16, bf16x2
  return InstructionClass::Integer;
}

double KernelCounters::sectors_per_request() const {
  const uint64_t requests = global_load.requests + global_store.requests;
  return requests == 0 ? 0 : static_cast<double>(global_load.sectors + global_store.sectors) / static_cast<double>(requests);
}

std::vector<uint64_t> sample_ctas(uint64_t ctas, uint64_t budget) {
  std::vector<uint64_t> out;
  if (ctas <= budget || budget < 8) {
    if (ctas <= budget) {
      out.resize(ctas);
      for (uint64_t i = 0; i < ctas; ++i) out[i] = i;
      return out;
    }
    budget = 8;
  }
  const uint64_t edge = budget / 4, middle = budget - 2 * edge;
  for (uint64_t i = 0; i < edge; ++i) out.push_back(i);
  const uint64_t span = ctas - 2 * edge;
  for (uint64_t i = 0; i < middle; ++i) out.push_back(edge + (2 * i + 1) * span / (2 * middle));
  for (uint64_t i = ctas - edge; i < ctas; ++i) out.push_back(i);
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

CounterCollector::CounterCollector(uint64_t ctas_in_grid, uint64_t concurrent_ctas, double l2_bytes)
    : concurrent_ctas_(std::max<uint64_t>(concurrent_ctas, 1)), l2_bytes_(l2_bytes) {
  counts_.ctas_in_grid = ctas_in_grid;
}

void CounterCollector::begin_cta(const std::array<uint32_t, 3>&, uint32_t warps) {
  warps_.assign(warps, WarpState{});
  counts_.warps_per_cta = warps;
  cta_clock_ = 0;
}

void CounterCollector::end_cta() {
  for (WarpState& w : warps_) {
    close_batch(w);
    counts_.max_batches_per_warp = std::max(counts_.max_batches_per_warp, w.batches);
  }
  ++counts_.ctas_run;
  ++cta_index_;
}

void CounterCollector::close_batch(WarpState& w) {
  if (w.batch_bytes == 0) return;
  ++counts_.load_batches;
  if (w.batch_dram) ++counts_.load_batches_dram;
  counts_.load_batch_bytes += w.batch_bytes;
  w.batch_dram = false;
  ++w.batches;
  w.batch_bytes = 0;
  w.waited = false;
  w.stored = false;
  w.pending.clear();
}

void CounterCollector::issue(uint32_t warp, const ptx::sim::DFunction& function, uint32_t pc, const DInst& in,
                             uint32_t reg_base, uint32_t mask, const MemoryAccess* access) {
  InstructionClass c;
  if (access != nullptr) {
    c = class_of(function.info[pc].text, access);
  } else {
    // Classified once per instruction: a text parse per issue would cost more than the interpreter's step.
    std::vector<uint8_t>& known = classes_[&function];
    if (known.empty()) known.assign(function.code.size(), 0);
    if (known[pc] == 0) known[pc] = static_cast<uint8_t>(class_of(function.info[pc].text, nullptr)) + 1;
    c = static_cast<InstructionClass>(known[pc] - 1);
  }
  ++counts_.issued[static_cast<int>(c)];
  counts_.thread_instructions += static_cast<uint64_t>(std::popcount(mask));
  if (c == InstructionClass::Barrier) ++counts_.barriers;
  bool dram = false;
  if (access != nullptr && mask != 0) {
    switch (c) {
      case InstructionClass::GlobalLoad:
      case InstructionClass::GlobalStore:
      case InstructionClass::Atomic: dram = global_access(*access, mask, c != InstructionClass::GlobalLoad, warp); break;
      case InstructionClass::SharedLoad:
      case InstructionClass::SharedStore: shared_access(*access, mask); break;
      case InstructionClass::LocalMemory:
        ++counts_.local.requests;
        counts_.local.bytes += uint64_t{access->bytes} * static_cast<uint64_t>(std::popcount(mask));
        break;
      default: break;
    }
  }
  if (warp < warps_.size()) {
    const bool non_coherent = c == InstructionClass::GlobalLoad && function.info[pc].text.find(".nc") != std::string::npos;
    track_dependencies(warps_[warp], in, reg_base, mask, access, c, non_coherent, dram);
  }
}


namespace {

int width_slot(uint32_t bytes) {
  switch (bytes) {
    case 1: return 0;
    case 2: return 1;
    case 4: return 2;
    case 8: return 3;
    default: return 4;
  }
}

// Distinct units of 2^shift bytes the active lanes touch, into `out` (sorted).
void distinct_units(const MemoryAccess& a, uint32_t mask, int shift, std::vector<uint64_t>& out) {
  out.clear();
  for (uint32_t m = mask; m != 0; m &= m - 1) {
    const int l = std::countr_zero(m);
    const uint64_t first = a.address[l] >> shift, last = (a.address[l] + a.bytes - 1) >> shift;
    for (uint64_t u = first; u <= last; ++u) out.push_back(u);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
}

}  // namespace

bool CounterCollector::global_access(const MemoryAccess& a, uint32_t mask, bool write, uint32_t warp) {
  bool dram = false;
  AccessCounts& counts = a.atomic ? counts_.atomic : write ? counts_.global_store : counts_.global_load;
  static thread_local std::vector<uint64_t> units;
  ++counts.requests;
  counts.bytes += uint64_t{a.bytes} * static_cast<uint64_t>(std::popcount(mask));
  if (!a.atomic) ++counts_.access_width[width_slot(a.bytes)];
  distinct_units(a, mask, 7, units);
  counts.lines += units.size();
  distinct_units(a, mask, 5, units);
  counts.sectors += units.size();
  // The L2 model: a sector's first touch goes to DRAM; a sampled CTA's second
  // touch hits L2 when what the CTAs running beside it touched in between fits.
  // The distance is the bytes of every sector the CTA touched since, not of
  // the distinct ones: an upper bound that is exact for a loop touching each
  // sector once per pass (a row read twice). The interpreter runs a CTA's
  // warps one after another between barriers, where a GPU runs them side by
  // side: a warp reading its own sector again counts its own touches since
  // times the CTA's warps (all progressing alike), when that is more.
  WarpState* w = warp < warps_.size() ? &warps_[warp] : nullptr;
  for (uint64_t u : units) {
    cta_clock_ += 32;
    if (w) w->clock += 32;
    auto [it, inserted] = sectors_.try_emplace(u);
    Sector& s = it->second;
    if (inserted) {
      s.cta = cta_index_;
      s.read_first = !write || a.atomic;
      dram = dram || s.read_first;
    } else if (s.cta != cta_index_) {
      s.shared = true;
    } else if (!write) {
      double touched = static_cast<double>(cta_clock_ - s.last_touch);
      if (w && s.warp == warp) {
        touched = std::max(touched, static_cast<double>(w->clock - s.warp_touch) * static_cast<double>(warps_.size()));
      }
      const double distance = touched * static_cast<double>(concurrent_ctas_);
      if (distance > l2_bytes_) {
        ++s.reread_misses;
        ++counts_.l2_reread_misses;
        dram = true;
      } else {
        ++counts_.l2_reread_hits;
      }
    }
    if (s.cta == cta_index_) {
      s.last_touch = cta_clock_;
      s.warp = warp;
      s.warp_touch = w ? w->clock : 0;
    }
    if (write) s.written = true;
  }
  return dram;
}

void CounterCollector::shared_access(const MemoryAccess& a, uint32_t mask) {
  // Shared memory serves 32 banks of 4 bytes per wavefront; wider accesses
  // split the warp into phases (8-byte: 16 lanes, 16-byte: 8), and lanes
  // reading one word share it.
  ++counts_.shared_requests;
  const uint32_t words_per_lane = std::max<uint32_t>(a.bytes / 4, 1);
  const uint32_t lanes_per_phase = std::max<uint32_t>(32 / words_per_lane, 1);
  for (uint32_t phase = 0; phase < 32; phase += lanes_per_phase) {
    std::array<std::array<uint64_t, 32>, 32> words{};  // per bank, distinct words
    std::array<uint32_t, 32> count{};
    uint32_t wavefronts = 0;
    for (uint32_t l = phase; l < phase + lanes_per_phase && l < 32; ++l) {
      if (((mask >> l) & 1) == 0) continue;
      for (uint32_t k = 0; k < words_per_lane; ++k) {
        const uint64_t word = a.address[l] / 4 + k;
        const uint32_t bank = static_cast<uint32_t>(word % 32);
        auto& w = words[bank];
        if (std::find(w.begin(), w.begin() + count[bank], word) != w.begin() + count[bank]) continue;
        if (count[bank] < 32) w[count[bank]++] = word;
        wavefronts = std::max(wavefronts, count[bank]);
      }
    }
    counts_.shared_wavefronts += wavefronts;
  }
}

void CounterCollector::track_dependencies(WarpState& w, const DInst& in, uint32_t reg_base, uint32_t mask,
                                          const MemoryAccess* access, InstructionClass c, bool non_coherent,
                                          bool dram) {
  // Sources: a load's address; every operand of a store; an atomic's address
  // and values; an arithmetic instruction's operands after its destination.
  auto reads_pending = [&](size_t first, size_t last) {
    for (size_t i = first; i <= last && i < in.ops.size(); ++i) {
      const auto& o = in.ops[i];
      if (o.kind != OperandKind::Reg) continue;
      if (std::find(w.pending.begin(), w.pending.end(), reg_base + o.index) != w.pending.end()) return true;
    }
    return false;
  };
  const bool global_load = c == InstructionClass::GlobalLoad && mask != 0;
  bool uses = false;
  if (access == nullptr) {
    uses = reads_pending(1, in.ops.size() - 1);
  } else if (access->atomic) {
    uses = reads_pending(0, 0) || reads_pending(2, 3);
  } else if (access->write) {
    uses = reads_pending(0, in.width);
  }
  // ptxas schedules a basic block's independent loads above the first use of
  // one, so on SASS a batch is what a block issues before it waits, not what
  // PTX issues before its first use: a use only marks the batch as waited on,
  // and the block's end (a branch, a barrier, the exit) closes a waited batch.
  // A load stays out of the batch when its address depends on it (a pointer
  // chase), or when a store came between and the load may alias it (plain
  // ld.global; ld.global.nc, a __restrict__ const pointer's, may move above stores).
  if (uses) w.waited = true;
  if (global_load) {
    if (reads_pending(0, 0) || (w.waited && w.stored && !non_coherent)) close_batch(w);
    w.batch_bytes += uint64_t{access->bytes} * static_cast<uint64_t>(std::popcount(mask));
    w.batch_dram = w.batch_dram || dram;
    for (uint32_t i = 1; i <= in.width && i < in.ops.size(); ++i) {
      if (in.ops[i].kind == OperandKind::Reg) w.pending.push_back(reg_base + in.ops[i].index);
    }
    return;
  }
  if (access != nullptr && (access->write || access->atomic) && w.batch_bytes != 0) w.stored = true;
  if ((c == InstructionClass::Control || c == InstructionClass::Barrier) && w.waited) close_batch(w);
}

KernelCounters CounterCollector::counters() const {
  KernelCounters out = counts_;
  for (const auto& [unit, s] : sectors_) {
    const uint64_t reads = (s.read_first ? 32 : 0) + uint64_t{s.reread_misses} * 32;
    const uint64_t writes = s.written ? 32 : 0;
    if (s.shared) {
      out.dram_read_shared += s.read_first ? 32 : 0;
      out.dram_write_shared += writes;
    } else {
      out.dram_read_private += reads;
      out.dram_write_private += writes;
    }
  }
  return out;
}

}  // namespace stitch::gpu_model
