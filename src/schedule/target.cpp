#include "schedule/target.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <fstream>
#include <thread>

namespace stitch::schedule {

namespace {

// Per-SM and per-block limits: NVIDIA CUDA C++ Programming Guide, "Technical
// Specifications per Compute Capability" (8.0 and 9.0 columns) and the
// compute-capability sections on shared memory (the 1 KB reserved per block,
// the opt-in maxima). Instruction throughputs per SM and cycle: the same
// guide's "Arithmetic Instructions" table (fp32 add/mul/fma: 64 lanes on 8.0,
// 128 on 9.0; special functions: 16; warp shuffle: 32). Latencies are
// estimates, see docs/schedule.md.
GpuTarget make_sm80() {
  GpuTarget t;
  t.arch = "sm_80";
  t.product = "A100-SXM4-40GB";
  t.sm_count = 108;
  t.warp_size = 32;
  t.max_threads_per_sm = 2048;
  t.max_threads_per_block = 1024;
  t.max_blocks_per_sm = 32;
  t.registers_per_sm = 65536;
  t.max_registers_per_block = 65536;
  t.max_registers_per_thread = 255;
  t.register_alloc_unit = 256;
  t.shared_bytes_per_sm = 164 * 1024;
  t.shared_bytes_per_block = 48 * 1024;
  t.shared_bytes_per_block_optin = 163 * 1024;
  t.shared_reserved_per_block = 1024;
  t.shared_alloc_unit = 128;
  // CUDA C++ Programming Guide, compute capability 8.0: 192 KB of combined
  // L1 and shared memory per SM (9.0: 256 KB).
  t.l1_shared_bytes_per_sm = 192 * 1024;
  // NVIDIA A100 datasheet (SXM4 40GB): 1410 MHz boost, 1555 GB/s HBM2, 40 MB L2.
  t.clock_hz = 1.41e9;
  t.memory_bytes_per_second = 1555e9;
  t.l2_bytes = int64_t{40} << 20;
  t.alu = {4, 64.0 / 32};
  t.sfu = {20, 16.0 / 32};
  t.shared = {30, 32.0 / 32};
  t.sync = {40, 1};
  t.memory_latency = 800;
  t.source = "CUDA C++ Programming Guide, compute capability 8.0; NVIDIA A100 datasheet";
  return t;
}

GpuTarget make_sm90() {
  GpuTarget t = make_sm80();
  t.arch = "sm_90";
  t.product = "H100-SXM5-80GB";
  t.sm_count = 132;
  t.shared_bytes_per_sm = 228 * 1024;
  t.shared_bytes_per_block_optin = 227 * 1024;
  t.l1_shared_bytes_per_sm = 256 * 1024;
  // NVIDIA H100 datasheet (SXM5): 1980 MHz boost, 3.35 TB/s HBM3, 50 MB L2.
  t.clock_hz = 1.98e9;
  t.memory_bytes_per_second = 3.35e12;
  t.l2_bytes = int64_t{50} << 20;
  t.alu = {4, 128.0 / 32};
  t.memory_latency = 1000;
  t.source = "CUDA C++ Programming Guide, compute capability 9.0; NVIDIA H100 datasheet";
  return t;
}

int64_t host_vector_bytes() {
#if defined(__x86_64__) || defined(__i386__)
  if (__builtin_cpu_supports("avx512f")) return 64;
  if (__builtin_cpu_supports("avx2") || __builtin_cpu_supports("avx")) return 32;
  return 16;
#else
  // NEON and most other SIMD extensions are 128 bits wide.
  return 16;
#endif
}

std::optional<std::string> read_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
  return line;
}

}  // namespace

const GpuTarget& sm80_target() {
  static const GpuTarget t = make_sm80();
  return t;
}

const GpuTarget& sm90_target() {
  static const GpuTarget t = make_sm90();
  return t;
}

std::optional<GpuTarget> gpu_target(std::string_view arch) {
  if (arch == "sm_80") return sm80_target();
  if (arch == "sm_90") return sm90_target();
  return std::nullopt;
}

std::vector<std::string> gpu_target_names() { return {"sm_80", "sm_90"}; }

std::optional<int64_t> parse_cache_size(std::string_view text) {
  if (text.empty()) return std::nullopt;
  int64_t value = 0;
  size_t i = 0;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
    if (value > (int64_t{1} << 40)) return std::nullopt;
    value = value * 10 + (text[i] - '0');
  }
  if (i == 0) return std::nullopt;
  std::string_view unit = text.substr(i);
  if (unit.empty()) return value;
  if (unit == "K") return value << 10;
  if (unit == "M") return value << 20;
  if (unit == "G") return value << 30;
  return std::nullopt;
}

CpuTarget host_cpu_target(const std::string& cache_dir) {
  CpuTarget t;
  t.cores = std::max<int64_t>(1, std::thread::hardware_concurrency());
  t.vector_bytes = host_vector_bytes();
  t.memory = cpu_target_model();
  // index0..: one directory per cache; the data/unified ones at each level count.
  for (int index = 0; index < 16; ++index) {
    const std::string dir = cache_dir + "/index" + std::to_string(index);
    std::optional<std::string> level = read_line(dir + "/level");
    std::optional<std::string> type = read_line(dir + "/type");
    std::optional<std::string> size_text = read_line(dir + "/size");
    if (!level || !type || !size_text) continue;
    std::optional<int64_t> size = parse_cache_size(*size_text);
    if (!size || *type == "Instruction") continue;
    if (*level == "1") t.l1d_bytes = *size;
    if (*level == "2") t.l2_bytes = *size;
    if (*level == "3") t.l3_bytes = *size;
    t.caches_from_sysfs = true;
  }
  return t;
}

}  // namespace stitch::schedule
